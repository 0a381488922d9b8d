"""The release's predecessor stage: a run resumed as a new session is handed what the run
it continues had completed (``duplicate_side_effect``, :mod:`features.session.lineage`).

When a session's start names a predecessor and the session has none yet (the link is
first seen), the release reads the predecessor's tool calls and results once: those the
store holds and those placed earlier in the same release (a file holding both runs is
one release). Their completed side effects
(:func:`detectors.duplicate_side_effect.completed_effects`, the last ``window``) go on the
start step's ``detail`` under
:data:`~detectors.duplicate_side_effect.PREDECESSOR_EFFECTS`, as silence reaches the
detectors as a step: the step is stored with them, so a restore rolled forward, a
re-judgement and a replay of the stored session see what the live run saw, and no
detector reads the store or another session's state.

In Kafka mode the two sessions may be on different lanes: the store is where one lane
sees the other's committed steps, no coordinator is involved. A predecessor whose steps
had not reached the store when its resumer started (its lane lagging by more than the
time between the death and the resume, 20 minutes and more in the incidents) hands over
what was stored then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from detectors.duplicate_side_effect import PREDECESSOR_EFFECTS, completed_effects
from features.session.lineage import predecessor_of
from models.records import Step, StepKind

__all__ = ["CALL_KINDS", "with_predecessor_effects"]

CALL_KINDS = (StepKind.TOOL_CALL, StepKind.TOOL_RESULT)
"""The kinds of the predecessor's steps read."""


def with_predecessor_effects(
    step: Step,
    session_id: str,
    read: Callable[[str], Sequence[Step]],
    *,
    window: int,
) -> Step:
    """``step``, a start of session ``session_id`` that has no predecessor yet, with the
    completed side effects of the predecessor it names on its ``detail``; ``read(session)``
    gives that session's tool calls and results in ``seq`` order. A step naming none, a
    sub-agent's start, or one that carries them already is returned as it is."""
    detail = step.detail
    if step.kind != StepKind.START or detail.get("subagent") or PREDECESSOR_EFFECTS in detail:
        return step
    predecessor = predecessor_of(detail, session_id)
    if predecessor is None:
        return step
    effects = completed_effects(read(predecessor), window=window)
    return step.with_(detail={**detail, PREDECESSOR_EFFECTS: effects})
