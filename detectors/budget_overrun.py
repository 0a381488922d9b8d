"""Budget overrun: a session spending more tokens, dollars, tool calls or time than
its budget allows.

Flags a resource reaching ``warn_fraction`` of its budget (``warn``/NOTIFY) and all of it
(``critical``/KILL, not ROLLBACK: the work so far is not suspect, only its cost); each
(resource, severity) once per session, resources crossing a line on the same step in one
alert naming each; onset = the step that crossed.

Reads the budget from the START step (``step.detail["budget"]``: ``tokens``,
``cost_usd``, ``tool_calls``, ``wall_seconds``; a resource it does not budget falls back
to the detector's parameter, ``None``: not watched) and the usage from the steps: model
calls' ``tokens_in + tokens_out``, ``step.cost`` (but on START/END steps, where it would
be a total), TOOL_CALL steps, and event time (``step.ts``) since the START step, so a
replay raises the live alerts. ``score``: the largest share of a budget spent (1.0: all
of it; above 1 once over); ``thresholds``: ``warn_fraction`` and 1.0; alerts carry the
share, capped at 1. The parameters' meaning: :class:`BudgetOverrun`.

More: ``docs/detectors/single_module.md``.
>>> from detectors.testing import Session
>>> s = Session("doc", budget={"tokens": 100_000, "tool_calls": 10})
>>> steps = [s.start()]
>>> for i in range(12):
...     steps.append(s.model(tokens_in=7_000, tokens_out=500))
...     steps += s.tool("bash", {"command": f"make t{i}"})
>>> detector = BudgetOverrun()
>>> for step in steps:
...     for alert in detector.update(step):
...         print(alert.raised_seq, alert.severity, alert.action, alert.reason)
23 warn notify tool calls at 80% of budget: 8 of 10 tool calls
29 critical kill tool calls at 100% of budget: 10 of 10 tool calls
31 warn notify tokens at 82% of budget: 82,500 of 100,000 tokens
>>> detector.score, detector.thresholds  # 12 tool calls of 10: 120% of that budget
(1.2, {'warn': 0.8, 'critical': 1.0})
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from detectors.base import Detector, make_alert
from detectors.registry import register
from models.records import Action, Alert, Severity, Step, StepKind

__all__ = ["BudgetOverrun"]

# enum members bound once: a module global is cheaper than a class attribute lookup
_START = StepKind.START
_END = StepKind.END
_MODEL_CALL = StepKind.MODEL_CALL
_TOOL_CALL = StepKind.TOOL_CALL
_WARN = Severity.WARN
_CRITICAL = Severity.CRITICAL

_SECOND = 1_000_000_000
RESOURCES = ("tokens", "cost_usd", "tool_calls", "wall_seconds")
_UNITS = {
    "tokens": ("tokens", "{:,.0f}"),
    "cost_usd": ("dollars", "${:,.2f}"),
    "tool_calls": ("tool calls", "{:,.0f}"),
    "wall_seconds": ("seconds", "{:,.0f}"),
}
_NAMES = {
    "tokens": "tokens",
    "cost_usd": "cost",
    "tool_calls": "tool calls",
    "wall_seconds": "wall time",
}


def _limit(value: Any) -> float | None:
    """A usable budget figure, or None (missing, not a number, not positive)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number > 0 else None


@register
class BudgetOverrun(Detector):
    """Flags a session nearing (``warn``) or reaching (``critical``) its budget.

    Contract: one instance per session, steps in ``seq`` order; no I/O, time from
    ``step.ts``; constant state. Each (resource, severity) fires at most once.

    Parameters
    ----------
    tokens, cost_usd, tool_calls, wall_seconds
        Default budgets for sessions whose ``session_start`` does not set one (None:
        that resource is not watched unless the session budgets it).
    warn_fraction
        Share of a budget at which ``warn`` fires (0 < warn_fraction < 1).
    """

    name: ClassVar[str] = "budget_overrun"
    thresholds_fixed = True

    def __init__(
        self,
        *,
        warn_fraction: float = 0.8,  # the brief's default: a fifth of the budget left to react
        tokens: int | None = None,
        cost_usd: float | None = None,
        tool_calls: int | None = None,
        wall_seconds: float | None = None,
    ) -> None:
        self.warn_fraction = warn_fraction
        self.tokens = tokens
        self.cost_usd = cost_usd
        self.tool_calls = tool_calls
        self.wall_seconds = wall_seconds
        if not 0 < warn_fraction < 1:
            raise ValueError(f"warn_fraction must be in (0, 1), got {warn_fraction}")
        for resource in RESOURCES:
            value = getattr(self, resource)
            if value is not None and _limit(value) is None:
                raise ValueError(f"{resource} must be a positive number or None, got {value!r}")
        self._reset()

    def _reset(self) -> None:
        self._limits: dict[str, float] = {
            r: float(getattr(self, r)) for r in RESOURCES if getattr(self, r) is not None
        }
        self._used: dict[str, float] = dict.fromkeys(RESOURCES, 0.0)
        self._start_ts: int | None = None
        self._fired: set[tuple[str, str]] = set()
        self._score = 0.0  # the largest share of a budget spent (1.0: all of it)

    @property
    def thresholds(self) -> dict[str, float]:
        """``warn`` at ``warn_fraction`` of a budget, ``critical`` at all of it."""
        return {"warn": self.warn_fraction, "critical": 1.0}

    def update(self, step: Step) -> list[Alert]:
        kind = step.kind
        if self._start_ts is None:
            self._start_ts = step.ts  # the START step, or the first step seen
        used = self._used
        if kind == _MODEL_CALL:
            used["tokens"] += (step.tokens_in or 0) + (step.tokens_out or 0)
        elif kind == _TOOL_CALL:
            used["tool_calls"] += 1
        elif kind == _START:
            self._read_budget(step.detail)
        if step.cost and kind != _START and kind != _END:
            used["cost_usd"] += step.cost  # a START/END figure would be a session total
        wall = (step.ts - self._start_ts) / _SECOND
        if wall > used["wall_seconds"]:  # max(), without the call
            used["wall_seconds"] = wall
        if not self._limits:
            return []
        crossed: dict[Severity, list[str]] | None = None
        warn_fraction = self.warn_fraction
        top = 0.0
        for resource, limit in self._limits.items():
            share = used[resource] / limit
            if share > top:
                top = share
            if share < warn_fraction:
                continue  # below both lines (warn_fraction < 1): the common case, skip early
            if crossed is None:
                crossed = {_WARN: [], _CRITICAL: []}
            for severity, line in ((_CRITICAL, 1.0), (_WARN, warn_fraction)):
                if share >= line and (resource, str(severity)) not in self._fired:
                    self._fired.add((resource, str(severity)))
                    crossed[severity].append(resource)
        self._score = top
        if crossed is None:
            return []
        alerts = []
        for severity in (_WARN, _CRITICAL):
            if crossed[severity]:
                alerts.append(self._alert(step, severity, crossed[severity]))
        return alerts

    def _read_budget(self, detail: Mapping[str, Any]) -> None:
        budget = detail.get("budget") if isinstance(detail, Mapping) else None
        if not isinstance(budget, Mapping):
            return
        for resource in RESOURCES:
            limit = _limit(budget.get(resource))
            if limit is not None:
                self._limits[resource] = limit  # the session's own budget wins

    def _alert(self, step: Step, severity: Severity, resources: list[str]) -> Alert:
        parts = []
        share = 0.0
        for resource in resources:
            used, limit = self._used[resource], self._limits[resource]
            unit, fmt = _UNITS[resource]
            share = max(share, used / limit)
            parts.append(
                f"{_NAMES[resource]} at {used / limit:.0%} of budget: "
                f"{fmt.format(used)} of {fmt.format(limit)}"
                + ("" if resource == "cost_usd" else f" {unit}")
            )
        critical = severity == Severity.CRITICAL
        return make_alert(
            self.name,
            onset=step,
            raised=step,
            evidence=[step],
            score=min(1.0, share),
            severity=severity,
            reason="; ".join(parts),
            action=Action.KILL if critical else Action.NOTIFY,
        )
