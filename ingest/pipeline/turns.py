"""A conversation's later turns: their start and end get their own identity.

A conversation traced one trace per turn (the same ``gen_ai.conversation.id`` or
``session.id`` on each) has an outermost agent span per turn; each says
``start``/``end``. The first trace to start the session owns those keys (so a
``session_start`` event and the span still fold into one step); any other trace's become
``start/<trace>``/``end/<trace>`` (:func:`later_turn_key`), with ``detail.turn`` (the
turn's index) and, on the end, ``detail.turn_end`` (an end that does not close the
session). Turn 0's end is released before a later turn is known, so it carries no mark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ingest.decoded import Draft
from ingest.pipeline.session import LiveSession
from ingest.semconv.spans import SPAN_SOURCE
from models.records import StepKind

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
