"""The ordering stage's output: a released draft with its session resolved.

A draft's session is its own session id, else the session its trace is known to belong
to (named by a span of it, else by a span's resource: :mod:`ingest.pipeline.trace_index`),
else its trace id. An egress step's cause, the tool call around it, is looked up in the
span tree here too: the tree lives with the ordering stage, which may run in another
process than the sequencing (:mod:`ingest.sources.repartition`).
"""

from __future__ import annotations

from dataclasses import dataclass

from features.session.lineage import PREDECESSOR
from ingest.decoded import Draft
from ingest.pipeline.trace_index import TraceIndex
from ingest.semconv.workspace import PREDECESSOR_TRACE
from models.records import Step, StepKind
from models.storable import clean_id

_EGRESS = StepKind.EGRESS  # read once: a StepKind member read costs an enum lookup
_START = StepKind.START


@dataclass(slots=True)
class Resolved:
    """A released draft with its session known: what the ordering stage hands the
    sequencing stage (in one process, or through Kafka's repartition topic keyed by
    ``session_id``; :mod:`ingest.sources.repartition`)."""

    draft: Draft
    session_id: str
    egress_parent: str | None = None
    """For an egress step: the step id of the tool call that caused it, looked up in
    the span tree when the draft was released (the tree lives with the ordering stage)."""


def resolve(draft: Draft, traces: TraceIndex) -> Resolved:
    """``draft`` with its session (and, for an egress step, its cause; for a start linked
    to another trace, that trace's session as its predecessor) from ``traces``."""
    session_id = session_of(draft, traces)
    if draft.step.kind is _START and PREDECESSOR_TRACE in draft.step.detail:
        draft.step = _linked(draft.step, traces)
    parent = None
    if draft.step.kind == _EGRESS:
        call = traces.enclosing_tool_call(draft.trace_id, draft.parent_span_id)
        parent = call.step_id_for(session_id) if call else None
        if call is None and draft.parent_span_id:
            # its parent span is not in this stage's tree (another partition's, read by
            # another worker): the span it names, for a judgement in order to link
            cause = f"{draft.trace_id}:{draft.parent_span_id}"
            draft.step = draft.step.with_(detail={**draft.step.detail, CAUSE_SPAN: cause})
    return Resolved(draft, session_id, parent)


def _linked(start: Step, traces: TraceIndex) -> Step:
    """``start``, whose agent span links to another trace (:data:`PREDECESSOR_TRACE`),
    naming that trace's session as its predecessor when the index knows the trace: the
    session a span of it named, else the trace itself (a run traced without a session id
    is the session of its trace id). Unknown here (forgotten, or read by another ordering
    stage: another input partition's), it names none."""
    trace = start.detail[PREDECESSOR_TRACE]
    if PREDECESSOR in start.detail or not isinstance(trace, str):
        return start
    found = traces.session_of(trace) or (trace if traces.tree(trace) is not None else None)
    if found is None:
        return start
    return start.with_(detail={**start.detail, PREDECESSOR: clean_id(found)})


CAUSE_SPAN = "cause_span"
"""``detail`` key of an egress step whose cause was not in the span tree when it was
released: the ``trace:span`` reference of its parent span. A re-judgement
(:mod:`ingest.pipeline.rejudge`) links the step to the session's tool call of that span
and drops the key, as a release that knew the span would have."""


def session_of(draft: Draft, traces: TraceIndex) -> str:
    """The draft's own session, else its trace's, else the trace (``unknown`` without
    one). The trace index learns session hints from raw span attributes: repaired here as
    the draft's own fields were (see :mod:`models.storable`)."""
    return clean_id(
        draft.session_hint or traces.session_of(draft.trace_id) or draft.trace_id or "unknown"
    )


CAUSE_STEP = "cause_step"
"""``detail`` key of an egress step whose cause was found in the span tree but was not a
step of its session when it was released (the tool call was placed in another session:
a provisional one, :mod:`ingest.pipeline.adoption`): the step id the cause would have. A
re-judgement links the step to it, and drops the key, when the session holds it."""
