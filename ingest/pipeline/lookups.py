"""Everything a release needs from the store, read in one place before it sequences
anything (:func:`look_up`).

A release reads: the stored state of every session it may open (the cursor, the state
and the steps past its checkpoint), who started the sessions whose conversation turns it
keys (:mod:`ingest.pipeline.turns`), and which of the step ids it may give, and of the
parents it may link, are already stored. The ids asked for are a superset of those the
release gives (a turn edge is asked for under both keys it may get), so the answer to
"is this id stored?" is the same as if each were asked when it was known. All of it is
read in the commit's transaction before anything of the release is written.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial

from ingest.decoded import Draft
from ingest.pipeline.session import Stored, read_stored
from ingest.pipeline.turns import later_turn_key, turn_step_ids
from models.records import StepKind
from models.store import SessionCursor, StoreUnit

_MODEL_CALL = StepKind.MODEL_CALL
_COMPACTIONS = ("compaction-inferred", "compaction-signalled")
"""The suffixes of the compactions placed before a model call (whose ids are the call's
id with the suffix): asked for too, so a re-delivery counts the same steps."""


@dataclass(frozen=True, slots=True)
class Lookups:
    """What a release read from the store (:func:`look_up`)."""

    opening: Mapping[str, Stored]
    """What the store holds of each session the release may open (one not live when it
    began) that the store knows."""
    sources: Mapping[str, tuple[str, str]]
    """``(source, source_ref)`` of the stored steps among the turn edges' ids
    (:func:`ingest.pipeline.turns.turn_step_ids`)."""
    step_ids: AbstractSet[str]
    """The stored ids among those the release may give its steps (and their compactions)
    and the parents it may link."""

    def stored(self, session_id: str) -> Stored:
        """What the store holds of ``session_id`` (a bare cursor for a new session)."""
        found = self.opening.get(session_id)
        return found if found is not None else Stored(SessionCursor(session_id=session_id))


def look_up(
    unit: StoreUnit,
    resolved: Sequence[tuple[Draft, str]],
    parents: Sequence[str | None],
    edges: Sequence[tuple[Draft, str]],
    *,
    live: Container[str],
) -> Lookups:
    """Read what releasing ``resolved`` (drafts with their sessions, not yet keyed by
    turn) needs: the stored sessions among theirs that are not ``live``, the sources of
    the turn ``edges``' ids, and the stored ids among theirs, their compactions' and
    ``parents`` (the parent each may link)."""
    opening = [s for s in dict.fromkeys(s for _, s in resolved) if s not in live]
    cursors = unit.session_cursors(opening) if opening else {}
    stored = {s: read_stored(cursor, partial(unit.steps, s)) for s, cursor in cursors.items()}
    sources = unit.step_sources(turn_step_ids(edges)) if edges else {}
    ids = {draft.step_id_for(session_id) for draft, session_id in resolved}
    wanted = (
        ids
        | {p for p in parents if p}
        | {f"{session_id}/{later_turn_key(draft)}" for draft, session_id in edges}
        | {
            f"{draft.step_id_for(session_id)}/{suffix}"
            for draft, session_id in resolved
            if draft.step.kind == _MODEL_CALL
            for suffix in _COMPACTIONS
        }
    )
    step_ids = unit.existing_step_ids(wanted) if ids else set()
    return Lookups(opening=stored, sources=sources, step_ids=step_ids)
