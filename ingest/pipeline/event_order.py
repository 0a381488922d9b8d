"""A session's steps in event-time order: the one order key every stage agrees on.

A step's place is its event time (``ts``), then a tie-break read from its content, so two
steps of one event time are ordered the same way however they were batched, partitioned
or re-delivered: a session's start before anything else at its instant and its end after,
then a span's ``trace:span`` reference (``source_ref``). Steps read from a log (session
events, transcripts) tie on an empty reference and keep their log's order: a log is read
in one order. The partitions' reorderers release drafts by this key
(:mod:`ingest.pipeline.ordering`), a session notes a step placed behind it
(:mod:`ingest.pipeline.sequencing`), and a re-judgement sorts the stored steps by it
(:mod:`ingest.pipeline.rejudge`).
"""

from __future__ import annotations

from ingest.semconv.spans import SPAN_SOURCE
from models.records import Step, StepKind

_RANK = {StepKind.START: 0, StepKind.END: 2}
"""Among steps of one event time: a start first, an end last, the rest between."""

TieKey = tuple[int, str]
OrderKey = tuple[int, int, str]
BEFORE_ALL: OrderKey = (-(1 << 63), 0, "")
"""A place before every step's."""


def tie_key(step: Step) -> TieKey:
    """How ``step`` is ordered among steps of the same event time (see the module)."""
    reference = step.source_ref if step.source == SPAN_SOURCE and step.source_ref else ""
    return _RANK.get(step.kind, 1), reference


def order_key(step: Step) -> OrderKey:
    """``step``'s place in its session's event-time order: ``(ts, *tie_key(step))``.

    >>> from models.records import Step, StepKind
    >>> end = Step(step_id="e", session_id="s", kind=StepKind.END, ts=5)
    >>> call = Step(step_id="c", session_id="s", kind=StepKind.TOOL_CALL, ts=5,
    ...             source="otlp", source_ref="t:b")
    >>> sorted([end, call], key=order_key) == [call, end]
    True
    """
    rank, reference = tie_key(step)
    return step.ts, rank, reference
