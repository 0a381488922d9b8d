"""What :mod:`detectors.intent_drift.detector` says when it fires, and its answer rule.

- :func:`drift_reason` — the sentence of a drift alert: where the agent went, for how
  long, how heavy, and the tool result its terms came from when they did.
- :func:`unfounded_figures` / :func:`answer_reason` — the sub-goals abandoned: a final
  answer, given before any tool returned anything, stating figures (three digits or
  more, :mod:`features.calls.grounding`) that nothing the session observed held and that its
  own arithmetic did not compute.
- :func:`stretch_severity` — the level a stretch of off-task calls reaches, each
  level alerted once per stretch.
- :func:`step_ref` / :func:`light_step` — the small references the detector's state
  keeps instead of steps, and the stand-in steps alerts are made of.

Pure functions; no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from features.calls.grounding import computed, figures, ungrounded
from models.records import Severity, Step, StepKind

__all__ = [
    "answer_reason",
    "drift_reason",
    "light_step",
    "step_ref",
    "stretch_severity",
    "unfounded_figures",
]


def step_ref(step: Step) -> dict[str, Any]:
    """What the detector keeps of a step: its id, place, source and time."""
    return {"seq": step.seq, "step_id": step.step_id, "source_ref": step.source_ref, "ts": step.ts}


def light_step(ref: Mapping[str, Any], session_id: str) -> Step:
    """A stand-in Step holding only what alerts need (id, seq, source ref): state keeps
    these small references, never whole steps.

    >>> light_step({"seq": 3, "step_id": "s/3", "source_ref": "t:3"}, "s").seq
    3
    """
    return Step(
        step_id=str(ref["step_id"]),
        session_id=session_id,
        kind=StepKind.TOOL_CALL,
        ts=int(ref.get("ts", 0)),
        seq=int(ref["seq"]),
        source_ref=str(ref.get("source_ref", "")),
    )


def drift_reason(
    onset_seq: int,
    labels: Iterable[str],
    goal: str,
    actions: int,
    weight: float,
    injected_from: int | None,
) -> str:
    """The reason of a drift alert.

    >>> drift_reason(9, ["github.com/other/payments"], "fix the parser", 3, 4.0, None)
    "since step 9 the agent works on `github.com/other/payments`, outside the task's scope (task: fix the parser): 3 off-task actions in a row (drift weight 4)"
    """  # noqa: E501
    where = ", ".join(f"`{x}`" for x in list(labels)[:4])
    head = f"since step {onset_seq} the agent "
    head += (
        f"works on {where}, outside the task's scope"
        if where
        else "works on topics unrelated to the task"
    )
    task = f" (task: {goal})" if goal else ""
    tail = f": {actions} off-task actions in a row (drift weight {weight:g})"
    inj = ""
    if injected_from is not None:
        inj = (
            f"; its terms first appeared in the tool result at step "
            f"{injected_from}, not in the task (possible prompt injection)"
        )
    return head + task + tail + inj


def unfounded_figures(
    reasoning: str, arguments: str | None, observed: Collection[str]
) -> list[str]:
    """The figures an answer states (in its arguments, or the reasoning before it) that
    nothing ``observed`` (the goal, results, errors) held; what the reasoning computed
    (``… = 5000``) is derived, not stated, and left out.

    >>> unfounded_figures("The population is 48,213.", '{"answer": "48213"}', {"1990"})
    ['48213']
    >>> unfounded_figures("So 12 * 500 = 6000", '{"answer": "6000"}', {"500"})
    []
    """
    stated = figures(reasoning) | figures(arguments)
    return ungrounded(stated - computed(reasoning), observed)


def answer_reason(tool: str | None, goal: str, missing: list[str]) -> str:
    """The reason of an answer given on figures from nowhere."""
    shown = ", ".join(f"`{f}`" for f in missing[:4])
    more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
    task = f" (task: {goal})" if goal else ""
    return (
        f"the agent answered with `{tool}` before any tool had returned anything"
        f"{task}: the look-ups the task needs were never done, and the figures it "
        f"states ({shown}{more}) appear in nothing the session observed"
    )


def stretch_severity(
    weight: float, *, warned: bool, critical: bool, warn_at: float, critical_at: float
) -> Severity | None:
    """The level a stretch of weight ``weight`` reaches that it has not alerted at yet
    (``warned``, ``critical``): critical from ``critical_at``, else a warning from
    ``warn_at``; None when nothing new. A stretch that jumps past both lines alerts
    once, critical.

    >>> [stretch_severity(w, warned=False, critical=False, warn_at=2, critical_at=4)
    ...  for w in (1, 2, 5)]
    [None, <Severity.WARN: 'warn'>, <Severity.CRITICAL: 'critical'>]
    >>> stretch_severity(3, warned=True, critical=False, warn_at=2, critical_at=4)
    """
    if weight < warn_at:
        return None
    if not critical and weight >= critical_at:
        return Severity.CRITICAL
    return None if warned else Severity.WARN
