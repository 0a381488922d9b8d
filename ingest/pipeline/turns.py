"""A conversation's later turns: their start and end get their own identity.

A conversation traced one trace per turn (the same ``gen_ai.conversation.id`` or
``session.id`` on each) has an outermost agent span per turn; each says
``start``/``end``. The first trace to start the session owns those keys (so a
``session_start`` event and the span still fold into one step); any other trace's become
``start/<trace>``/``end/<trace>`` (:func:`later_turn_key`), with ``detail.turn`` (the
turn's index) and, on the end, ``detail.turn_end`` (an end that does not close the
session). Turn 0's end is released before a later turn is known, so it carries no mark.

Live, the owner is the first trace released; a turn released after the window may be
an earlier one. A re-judgement gives the keys again by event time (:func:`rekeyed_turns`),
so the settled ids are those of a delivery in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ingest.decoded import Draft
from ingest.pipeline.event_order import order_key
from ingest.pipeline.session import LiveSession
from ingest.semconv.spans import SPAN_SOURCE
from models.records import Step, StepKind

_END = StepKind.END
_START_OR_END = (StepKind.START, _END)


def turn_edges(resolved: Iterable[tuple[Draft, str]]) -> list[tuple[Draft, str]]:
    """The drafts (with their sessions) that start or end a turn of a traced
    conversation, in event-time order (partitions release their drafts one after
    another, so a release is not)."""
    return sorted(
        (
            (draft, session_id)
            for draft, session_id in resolved
            if draft.trace_id
            and draft.natural_key in ("start", "end")
            and draft.step.kind in _START_OR_END
        ),
        key=lambda pair: (pair[0].step.ts, pair[0].arrival),
    )


def later_turn_key(draft: Draft) -> str:
    """The natural key a turn edge (:func:`turn_edges`) of a later turn gets."""
    return f"{draft.natural_key or ''}/{draft.trace_id or ''}"


def turn_step_ids(edges: Iterable[tuple[Draft, str]]) -> set[str]:
    """The step ids whose stored source :func:`key_turns` reads for ``edges``: each
    session's start (who started it) and each edge's own later-turn ids (a later turn
    stored before)."""
    return {
        f"{session_id}/{key}"
        for draft, session_id in edges
        for key in ("start", f"start/{draft.trace_id}", f"end/{draft.trace_id}")
    }


def key_turns(
    edges: Iterable[tuple[Draft, str]],
    sources: Mapping[str, tuple[str, str]],
    session_of: Callable[[str], LiveSession],
) -> None:
    """Give the later turns among ``edges`` (:func:`turn_edges`) their own keys, in place.

    Ownership is read from the live session (``session_of``, which opens it), else from
    the stored start's source (``sources``: ``(source, source_ref)`` of the stored steps
    among :func:`turn_step_ids`), so a re-delivery after a restart keeps its ids."""
    for draft, session_id in edges:
        trace = draft.trace_id or ""
        natural = draft.natural_key or ""
        session = session_of(session_id)
        if not session.turns:
            # who started the session: a span of some trace, else nobody yet (or a
            # session_start event, which the first trace's start folds into)
            source = sources.get(f"{session_id}/start")
            if source is not None and source[0] == SPAN_SOURCE:
                session.turns[source[1].partition(":")[0]] = 0
        if f"{session_id}/{natural}/{trace}" in sources:  # a later turn, stored
            index = session.turns.setdefault(trace, max(1, len(session.turns)))
        else:
            index = session.turns.setdefault(trace, len(session.turns))
        if index == 0:
            continue
        detail = {**draft.step.detail, "turn": index}
        if draft.step.kind == _END:
            detail["turn_end"] = True
        draft.natural_key = later_turn_key(draft)
        draft.step = draft.step.with_(detail=detail)


def rekeyed_turns(
    steps: Sequence[Step], session_id: str, turns: Mapping[str, int]
) -> tuple[list[Step], dict[str, int]]:
    """``steps`` (a session's, in event-time order) with its turn edges keyed as a
    delivery in order keys them, and the turn index by trace that goes with them.

    The trace of the first edge in event time owns ``start``/``end`` (turn 0, no mark);
    each other trace, in the order of its first edge, gets the next index and the
    ``start/<trace>``/``end/<trace>`` ids (:func:`later_turn_key`). Traces of ``turns``
    (the live session's) with no stored edge keep their place after these. Unchanged
    when the session's start is not a span's (a ``session_start`` event the first trace's
    start folded into) or no trace ends a turn."""
    prefix = f"{session_id}/"
    edges: dict[int, str] = {}  # position in steps -> trace
    for i, step in enumerate(steps):
        if step.kind not in _START_OR_END or not step.step_id.startswith(prefix):
            continue
        natural = step.step_id[len(prefix) :]
        trace = (step.source_ref or "").partition(":")[0]
        if natural in ("start", "end"):
            if step.source != SPAN_SOURCE:
                return list(steps), dict(turns)
            edges[i] = trace
        elif step.source == SPAN_SOURCE and natural in (f"start/{trace}", f"end/{trace}"):
            edges[i] = trace
    if not edges:
        return list(steps), dict(turns)
    order: dict[str, int] = {}
    for i in sorted(edges, key=lambda i: order_key(steps[i])):
        order.setdefault(edges[i], len(order))
    for trace in sorted(turns, key=turns.__getitem__):
        order.setdefault(trace, len(order))
    out = list(steps)
    for i, trace in edges.items():
        step, index = steps[i], order[trace]
        kind = "end" if step.kind == _END else "start"
        detail = {k: v for k, v in step.detail.items() if k not in ("turn", "turn_end")}
        if index:
            detail["turn"] = index
            if step.kind == _END:
                detail["turn_end"] = True
        natural = kind if index == 0 else f"{kind}/{trace}"
        out[i] = step.with_(step_id=f"{prefix}{natural}", detail=detail)
    return out, order
