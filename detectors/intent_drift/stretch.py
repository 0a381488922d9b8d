"""The current stretch of off-task calls, as :mod:`detectors.intent_drift.detector` keeps it: one
state object, and the functions that extend it, end it and judge it.

A stretch opens with the first off-task call (or the read that led to it), adds up its
calls' drift weights, remembers its words and the labels of the places it went to (for
the reason), and ends after ``gap`` on-task calls. Each on-task call pays back
:data:`PAYBACK` of its weight (ending it at 0): drift is work *sustained* away from the
task, and light calls scattered between on-task ones (a plan update, a ``git status``, a
file touched on the way) are not - they no longer add up over a long session.
:func:`judge` gives the severity its weight has newly reached; every function changes
only the :class:`StretchState` given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from detectors.base import Checkpoints, make_alert, remember
from detectors.intent_drift.calls import CallLog
from detectors.intent_drift.reasons import drift_reason, light_step, stretch_severity
from detectors.intent_drift.scope import MAX_WORD_CHARS
from detectors.intent_drift.weigh import Stretch
from models.records import Action, Alert, Severity, Step

MAX_EPISODE = 20
"""Steps of a stretch kept for the evidence (an alert shows at most 20)."""
MAX_CHANGED = 64
"""Files a stretch's edits changed, kept (an edit of one of them again adds nothing)."""
PAYBACK = 0.5
"""Weight an on-task call takes off the current stretch: one light (0.5) off-task call
between on-task ones never adds up, a run of them does (blind coding set, healthy
sessions: 6 of 30 alerted when they added up without end)."""


@dataclass(slots=True)
class StretchState:
    """The current stretch (empty between stretches) and the on-task calls since."""

    refs: list[dict[str, Any]] = field(default_factory=list)  # its steps (step_ref)
    weight: float = 0.0
    heaviest: float = 0.0
    foreign: bool = False  # led there, and not one word of the task in it
    words: dict[str, None] = field(default_factory=dict)
    labels: dict[str, None] = field(default_factory=dict)
    injected_from: int | None = None  # seq of the result it obeyed
    changed: dict[str, None] = field(default_factory=dict)  # files its edits changed
    quiet: int = 0  # on-task calls since the last off-task one
    warned: bool = False
    critical: bool = False


def view(stretch: StretchState, log: CallLog, hijack: float) -> Stretch:
    """What :func:`detectors.intent_drift.weigh.weigh_call` reads of the stretch and the last
    call (``hijack``: the least weight of obeying a result, the alarm weight)."""
    return Stretch(
        bool(stretch.refs),
        stretch.words,
        stretch.heaviest,
        stretch.foreign,
        log.last_weight,
        log.last_blind,
        log.instructed,
        hijack,
        log.edits,
    )


def extend(
    stretch: StretchState,
    ref: dict[str, Any],
    weight: float,
    *,
    words: set[str],
    labels: Iterable[str],
    pending: dict[str, Any] | None,
    injected: int | None,
    goal_words: set[str],
) -> None:
    """Add an off-task call (``ref``, of ``weight`` > 0) to the stretch; ``pending``, the
    read that led to it, opens the stretch (its onset) and counts half as much: reading
    a file is not yet working away from the task, so one edit alone does not warn."""
    stretch.quiet = 0
    if not stretch.refs and pending is not None:
        stretch.refs.append(pending)
        stretch.weight += weight / 2
    if len(stretch.refs) < MAX_EPISODE:
        stretch.refs.append(ref)
    stretch.weight += weight
    stretch.heaviest = max(stretch.heaviest, weight)
    if weight >= 1.0 and words and not any(w in goal_words for w in words):
        stretch.foreign = True
    for w in sorted(words)[:16]:  # sorted: the same words whatever the hash seed
        if len(w) <= MAX_WORD_CHARS:
            remember(stretch.words, w, None, 64)
    for label in labels:
        remember(stretch.labels, label, None, 8)
    if stretch.injected_from is None and injected is not None:
        stretch.injected_from = injected


def changes_again(stretch: StretchState, targets: Iterable[str]) -> bool:
    """Whether a call changes only files the current stretch has changed already: drift
    is measured in the objects it reaches, and a second edit of one file reaches none
    new (asked to switch a CLI to subcommands, the agent edits its one ``main.go`` five
    times). Otherwise its ``targets`` are recorded as changed by the stretch.

    >>> st = StretchState()
    >>> changes_again(st, ["cmd/main.go"]), changes_again(st, ["cmd/main.go"])
    (False, True)
    """
    targets = list(targets)
    if not targets:
        return False
    if all(t in stretch.changed for t in targets):
        return True
    for t in targets:
        remember(stretch.changed, t, None, MAX_CHANGED)
    return False


def on_task(stretch: StretchState, gap: int, *, payback: float = 0.0) -> None:
    """An on-task call (or a repeat of one): it takes ``payback`` off the stretch's weight,
    and the ``gap``-th in a row, or a weight paid back to 0, ends the stretch."""
    stretch.quiet += 1
    if stretch.refs and payback:
        stretch.weight = max(0.0, stretch.weight - payback)
    if stretch.refs and (stretch.quiet >= gap or stretch.weight <= 0.0):
        stretch.refs = []
        stretch.weight = 0.0
        stretch.heaviest = 0.0
        stretch.foreign = False
        stretch.words = {}
        stretch.labels = {}
        stretch.injected_from = None
        stretch.changed = {}
        stretch.warned = False
        stretch.critical = False


def judge(stretch: StretchState, *, warn_at: float, critical_at: float) -> Severity | None:
    """The severity the stretch's weight has newly reached (each once per stretch), or
    None; recorded as raised."""
    severity = stretch_severity(
        stretch.weight,
        warned=stretch.warned,
        critical=stretch.critical,
        warn_at=warn_at,
        critical_at=critical_at,
    )
    if severity is not None:
        stretch.warned = True
        stretch.critical = stretch.critical or severity == Severity.CRITICAL
    return severity


def stretch_alert(
    stretch: StretchState,
    step: Step,
    severity: Severity,
    *,
    detector: str,
    goal: str,
    score: float,
    checkpoints: Checkpoints,
) -> Alert:
    """The alert of a stretch that reached ``severity`` on ``step``: onset its first
    step, evidence its steps; critical rolls back to the last checkpoint before the
    onset, or kills when there is none."""
    onset = light_step(stretch.refs[0], step.session_id)
    evidence = [light_step(r, step.session_id) for r in stretch.refs]
    checkpoint = checkpoints.before(onset.seq)
    if severity == Severity.CRITICAL:
        action = Action.ROLLBACK if checkpoint else Action.KILL
    else:
        action, checkpoint = Action.NOTIFY, None
    reason = drift_reason(
        onset.seq, stretch.labels, goal, len(stretch.refs), stretch.weight, stretch.injected_from
    )
    return make_alert(
        detector,
        onset=onset,
        raised=step,
        evidence=evidence,
        score=score,
        severity=severity,
        reason=reason,
        action=action,
        checkpoint_id=checkpoint,
    )
