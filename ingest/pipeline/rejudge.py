"""A session judged again in event-time order once it settles.

A step that reaches its session behind the last step placed (later than the lateness
window: a root span exported when the run ended, a turn traced in another trace and read
from another partition, a Kafka worker that restarted) is judged where it arrives and
leaves the session *unsettled* (:func:`ingest.pipeline.sequencing.place`). When the
session settles (its end is placed, it has been idle, or the input ends), the pipeline
judges it again from its first step: the steps stored, in event-time order
(:func:`~ingest.pipeline.event_order.order_key`), placed and judged by the same code as
live steps with fresh detectors and features. What comes out is what an in-order delivery
gives, so a session's settled steps and alerts are a function of its spans alone:

- the steps are stored again with their new ``seq`` (the compactions sequencing derives
  from model calls are derived again, per context window, from the calls in order), the
  turns of a conversation keyed again by event time
  (:func:`~ingest.pipeline.turns.rekeyed_turns`);
- an alert the re-judgement raises again keeps its id (ids come from content:
  :func:`models.records.alert_id`) and takes the new judgement's onset and evidence;
- an alert it no longer raises is marked superseded with the reason (kept; an action
  already sent stays in the outbox's audit trail);
- an alert only it raises is new, and delivered like any other.

Cost: one judgement of the whole session per settling that follows a late step; nothing
at all for a session whose steps arrived in order. A replay (``Pipeline(judge_once=True)``)
does not judge in arrival order the steps a commit places in a session it re-judges: that
judgement would be discarded in the same commit, so the session is judged once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, fields, replace
from functools import partial

from detectors.base import Detector
from detectors.registry import DetectorSet
from features.calls.step_features import analysed_view
from ingest.decoded import Draft
from ingest.formats.step_lines import DERIVED_DETAIL
from ingest.pipeline.event_order import order_key
from ingest.pipeline.options import PipelineOptions
from ingest.pipeline.resolution import CAUSE_SPAN, CAUSE_STEP
from ingest.pipeline.sequencing import sequence
from ingest.pipeline.session import LiveSession, Stored, restore
from ingest.pipeline.turns import rekeyed_turns
from models.records import UNSEQUENCED, Alert, SessionInfo, Step, StepKind
from models.store import SessionCursor

DERIVED_COMPACTIONS = ("/compaction-inferred", "/compaction-signalled")
"""Suffixes of the ids of compaction steps sequencing derives from a model call."""

_TOOL_CALL, _TOOL_RESULT, _EGRESS = StepKind.TOOL_CALL, StepKind.TOOL_RESULT, StepKind.EGRESS
_SILENCE = StepKind.SILENCE

SUPERSEDED = "superseded: the session was judged again in event-time order after a late step"
"""The reason stored on an alert a re-judgement no longer raises."""


@dataclass(frozen=True, slots=True)
class Rejudged:
    """A session judged again (:func:`rejudge`)."""

    session: LiveSession
    """The session as an in-order delivery leaves it (to be checkpointed)."""
    steps: list[Step]
    """Its steps at their new places, in order, as the detectors saw them."""
    storable: list[Step]
    """Those the columns can hold, made storable."""
    unstorable: list[tuple[Step, str]]
    """The others, with the reason."""
    alerts: list[Alert]
    """Every alert the judgement in order raises."""


def in_event_order(stored: Sequence[Step]) -> list[Step]:
    """The stored steps a re-judgement places, in event-time order (stable: steps that
    tie keep their stored order, which is their log's): without the compactions
    sequencing derived (it derives them again), the silence steps the order contradicts
    (:func:`_heard_silences`) and what placing added to their detail."""
    kept = [step for step in stored if not step.step_id.endswith(DERIVED_COMPACTIONS)]
    kept.sort(key=order_key)
    kept = _heard_silences(kept)
    ids = {step.step_id for step in kept}
    calls = {s.source_ref: s.step_id for s in kept if s.kind == _TOOL_CALL and s.source_ref}
    return [_linked(_as_drafted(step), ids, calls) for step in kept]


def _heard_silences(ordered: Sequence[Step]) -> list[Step]:
    """``ordered`` without the silence steps its own event-time order contradicts: one
    placed while a step of the session that comes before it in event time had not
    arrived (a file's batches read minutes out of order), which measured its silence
    (``detail.silence_ms``) from an earlier step than the last one before it. In order,
    that step would have started the silence anew (:mod:`ingest.pipeline.silence`)."""
    out: list[Step] = []
    last: int | None = None
    for step in ordered:
        if step.kind != _SILENCE:
            last = step.ts
        elif last is None or step.detail.get("silence_ms") != (step.ts - last) // 1_000_000:
            continue
        out.append(step)
    return out


def _linked(step: Step, ids: AbstractSet[str], calls: Mapping[str, str]) -> Step:
    """A step whose parent was not a step when it was released, linked as a release in
    order links it: a tool result to its call, an egress step to the tool call it was
    caused by (``detail.cause_step``) or of the span it was caused in
    (``detail.cause_span``), when the session has it."""
    if step.parent_step_id is not None:
        return step
    if step.kind == _TOOL_RESULT and step.call_id:
        call = f"{step.session_id}/tool_call/{step.call_id}"
        return step.with_(parent_step_id=call) if call in ids else step
    if step.kind != _EGRESS:
        return step
    known = step.detail.get(CAUSE_STEP)
    if isinstance(known, str) and known in ids:
        detail = {key: value for key, value in step.detail.items() if key != CAUSE_STEP}
        return step.with_(parent_step_id=known, detail=detail)
    cause = step.detail.get(CAUSE_SPAN)
    spanned = calls.get(cause) if isinstance(cause, str) else None
    if spanned is None:
        return step
    detail = {key: value for key, value in step.detail.items() if key != CAUSE_SPAN}
    return step.with_(parent_step_id=spanned, detail=detail)


def rejudge(
    stored: Sequence[Step],
    previous: LiveSession,
    detectors: DetectorSet,
    options: PipelineOptions,
    failed: Callable[[Step, Detector, Exception], None],
) -> Rejudged:
    """Judge ``stored`` (a session's stored steps) again in event-time order with fresh
    detectors and features, as the pipeline judges live steps; ``previous`` is the live
    session (the facts only it learnt are kept, and its turns no stored step shows).
    ``failed`` is told of a detector's error on a step."""
    session_id = previous.info.session_id
    session = restore(Stored(SessionCursor(session_id=session_id)), detectors, options)
    ordered, session.turns = rekeyed_turns(in_event_order(stored), session_id, previous.turns)
    steps: list[Step] = []
    storable: list[Step] = []
    unstorable: list[tuple[Step, str]] = []
    alerts: list[Alert] = []
    for step in ordered:
        context = step.detail.get("context")
        draft = Draft(
            step=step,
            fallback_id=step.step_id,
            context=context if isinstance(context, str) else "main",
        )
        placed = sequence(session, draft, step.step_id, step.parent_step_id, checked=False)
        for final, features, form in placed:
            steps.append(final)
            if isinstance(form, str):
                unstorable.append((final, form))
            else:
                storable.append(form)
            session.scores.judge(analysed_view(final, features), alerts, partial(failed, final))
    session.info = _kept_facts(session.info, previous.info)
    session.instructions = previous.instructions
    session.checkpoint_due = True
    return Rejudged(session, steps, storable, unstorable, alerts)


def _as_drafted(step: Step) -> Step:
    """A stored step as it was before it was placed: no seq, no model session, none of
    the entries placing adds to its detail."""
    detail = step.detail
    if any(key in detail for key in DERIVED_DETAIL):
        detail = {key: value for key, value in detail.items() if key not in DERIVED_DETAIL}
    return step.with_(seq=UNSEQUENCED, model_session=0, detail=detail)


def _kept_facts(info: SessionInfo, previous: SessionInfo) -> SessionInfo:
    """``info`` (learnt again from the steps in order), with what only ``previous`` knew
    (facts a duplicate start or end taught it) where ``info`` has nothing."""
    missing = {
        f.name: getattr(previous, f.name)
        for f in fields(SessionInfo)
        if getattr(info, f.name) in (None, {}, "")
        and getattr(previous, f.name) not in (None, {}, "")
    }
    return replace(info, **missing) if missing else info


def superseded(alert: Alert) -> Alert:
    """``alert`` marked as no longer raised by its session's judgement in order."""
    return replace(alert, superseded=SUPERSEDED)
