"""Model sessions: the compliance bookkeeping ``compliance_decay`` and ``policy_violation`` share.

A :class:`ComplianceLedger` counts, per session, tool calls, violating tool calls and
how often each scope (:attr:`features.policy.check.Violation.scope`) was honoured, before the
latest context compaction and since (a *model session* is the stretch between
compactions). :meth:`ComplianceLedger.record` classifies a step's violations as a
:class:`Finding`, so both detectors split the cases the same way: decay (an honoured
rule broken, or a significantly higher violation rate) or a plain violation.
Pure: no I/O, no wall clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from features.policy.check import BUDGET, Violation
from models.records import Step, StepKind

__all__ = ["ComplianceLedger", "Finding"]

_TOOL_CALL = StepKind.TOOL_CALL


@dataclass(frozen=True, slots=True)
class Finding:
    """A step's violations, classified.

    ``decay`` is ``"honoured"`` when a violated rule was honoured before the latest
    compaction (at least ``min_honoured`` times), ``"rate"`` when the post-compaction
    violation rate is significantly above the earlier one (one-sided Fisher exact test,
    ``p_value``), else None (a plain violation: ``policy_violation``'s case).
    """

    violations: tuple[Violation, ...]
    decay: str | None
    p_value: float
    decayed: tuple[Violation, ...]
    """The violations that made it decay (the honoured rules broken), or all for ``rate``."""


class ComplianceLedger:
    """Per-session counts by model session: actions (tool calls), violating actions, and
    how often each scope was honoured, before the latest compaction and since.

    Bounded: the scope dictionaries hold at most one entry per rule of the policy plus
    the four prohibition families.
    """

    __slots__ = (
        "after_actions",
        "after_bad",
        "before_actions",
        "before_bad",
        "honoured_after",
        "honoured_before",
        "model_session",
    )

    def __init__(self) -> None:
        self.model_session = 0
        self.before_actions = 0
        self.before_bad = 0
        self.after_actions = 0
        self.after_bad = 0
        self.honoured_before: dict[str, int] = {}
        self.honoured_after: dict[str, int] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComplianceLedger) and self.__getstate__() == other.__getstate__()

    def roll(self, model_session: int) -> bool:
        """Move to ``model_session``; True when a compaction happened since the last call."""
        if model_session <= self.model_session:
            return False
        self.model_session = model_session
        self.before_actions += self.after_actions
        self.before_bad += self.after_bad
        for k, n in self.honoured_after.items():
            self.honoured_before[k] = self.honoured_before.get(k, 0) + n
        self.after_actions = self.after_bad = 0
        self.honoured_after = {}
        return True

    def record(
        self,
        step: Step,
        violations: Sequence[Violation],
        honoured: Sequence[str],
        *,
        min_honoured: int,
        alpha: float,
        min_rate_violations: int,
    ) -> Finding | None:
        """Count one step (call :meth:`roll` first); a :class:`Finding` if it violated."""
        behavioural = tuple(v for v in violations if v.kind != BUDGET) if violations else ()
        if step.kind == _TOOL_CALL:
            self.after_actions += 1
            if behavioural:
                self.after_bad += 1
        if honoured:
            after = self.honoured_after
            for scope in honoured:
                after[scope] = after.get(scope, 0) + 1
        if not violations:
            return None
        if self.model_session == 0 or not behavioural:
            return Finding(tuple(violations), None, 1.0, ())
        broken = tuple(
            v for v in behavioural if self.honoured_before.get(v.scope, 0) >= min_honoured
        )
        p = self.p_value()
        if broken:
            return Finding(tuple(violations), "honoured", p, broken)
        if self.after_bad >= min_rate_violations and p < alpha:
            return Finding(tuple(violations), "rate", p, behavioural)
        return Finding(tuple(violations), None, p, ())

    def p_value(self) -> float:
        """One-sided Fisher exact test: are violating actions more frequent since the
        latest compaction than before it? (1.0 when there is nothing to compare.)"""
        if self.after_actions == 0 or self.before_actions == 0:
            return 1.0
        return _fisher_greater(
            self.after_bad, self.after_actions, self.before_bad, self.before_actions
        )


def _fisher_greater(a_bad: int, a_n: int, b_bad: int, b_n: int) -> float:
    """P(X >= a_bad) for X ~ Hypergeometric(population a_n + b_n, successes a_bad + b_bad,
    draws a_n): the one-sided Fisher exact p-value for "rate after > rate before".
    Same value as ``scipy.stats.fisher_exact(..., alternative="greater")``
    (tests/unit/features/test_compliance_ledger.py checks it), computed directly in log
    space because scipy's call costs ~100 µs and this runs on the hot path of a violating
    step."""
    total, bad = a_n + b_n, a_bad + b_bad
    lo, hi = max(0, bad - b_n), min(bad, a_n)
    if a_bad <= lo:
        return 1.0

    def logpmf(k: int) -> float:
        return _lcomb(bad, k) + _lcomb(total - bad, a_n - k) - _lcomb(total, a_n)

    return min(1.0, sum(math.exp(logpmf(k)) for k in range(a_bad, hi + 1)))


def _lcomb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
