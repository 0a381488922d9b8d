"""Policy violations with no compaction in play.

Flags a broken policy rule, once per model session: before any compaction, or after one
for a rule the agent never exercised before it. What shows decay - a rule honoured before
the latest compaction, broken, or any violation once the rate after it is significantly
higher - is ``compliance_decay``'s, decided by the same
:class:`~features.policy.ledger.ComplianceLedger` with the same parameters: never both
for one finding.

Reads the session's policy as ``compliance_decay`` does
(:class:`~detectors.compliance.decay.PolicyDetector`) and every step, checked by
:mod:`features.policy.check`. Raises ``critical``/KILL for a forbidden command or tool of
a policy file; ``warn``/NOTIFY for every other rule (protected paths, unapproved guarded
actions, tests skipped before a commit, egress outside the allowed hosts) and for every
rule derived from the session's instructions (:mod:`features.policy.instructions`),
unless ``derived_policies = "enforce"``; budget overruns only with ``report_budget``.
``score``: 1.0 on a step that breaks a rule this detector reports, else 0;
``thresholds``: 1.0 for both severities. The parameters' meaning: :class:`PolicyViolation`.

Why, and the split with ``compliance_decay``: ``docs/detectors/compliance.md``.
>>> from detectors.testing import Session
>>> d = PolicyViolation(policies={"p": {"forbidden_commands": [r"git\\s+push\\s+(-f|--force)"],
...                                      "require_approval_for": [r"git\\s+push"]}})
>>> s = Session("demo", policy_id="p")
>>> steps = [s.start(), s.model(), *s.tool("bash", {"command": "git push --force origin x"})]
>>> steps += s.tool("bash", {"command": "git push origin x"})  # same rule again: no 2nd alert
>>> [(a.onset_seq, str(a.severity), str(a.action)) for st in steps for a in d.update(st)]
[(2, 'critical', 'kill')]
>>> again, scores = d.clone(), []  # the score at each step: the pushes broke rules
>>> for st in steps:
...     _ = again.update(st)
...     scores.append(again.score)
>>> scores, again.thresholds
([0.0, 0.0, 1.0, 0.0, 1.0, 0.0], {'warn': 1.0, 'critical': 1.0})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from detectors.base import make_alert
from detectors.compliance.decay import PolicyDetector
from detectors.registry import register
from features.policy.check import BUDGET, FORBIDDEN_COMMAND, FORBIDDEN_TOOL, Violation
from models.records import Action, Alert, Severity, Step

MAX_REPORTED = 64
"""Rules remembered as reported in the current model session (bounded state)."""


@register
class PolicyViolation(PolicyDetector):
    """Reports each broken policy rule once per model session, unless it is
    ``compliance_decay``'s (see the module docstring). Parameters as
    :class:`~detectors.compliance.decay.ComplianceDecay` (keep ``alpha``,
    ``min_honoured`` and ``min_rate_violations`` equal to its values), plus
    ``report_budget = False``."""

    name = "policy_violation"
    thresholds_fixed = True

    def __init__(
        self,
        *,
        policies: Mapping[str, Mapping[str, Any]] | None = None,
        agent_policies: Mapping[str, str] | None = None,
        default_policy: str | None = None,
        alpha: float = 0.01,
        min_honoured: int = 1,
        min_rate_violations: int = 2,
        report_budget: bool = False,
        derived_policies: str = "warn",
    ) -> None:
        self.report_budget = report_budget
        super().__init__(
            policies=policies,
            agent_policies=agent_policies,
            default_policy=default_policy,
            alpha=alpha,
            min_honoured=min_honoured,
            min_rate_violations=min_rate_violations,
            derived_policies=derived_policies,
        )

    def _reset(self) -> None:
        super()._reset()
        self._reported: list[str] = []
        self._reported_session = 0

    @property
    def thresholds(self) -> dict[str, float]:
        """A broken rule is the whole evidence: both severities at 1.0."""
        return {"warn": 1.0, "critical": 1.0}

    def update(self, step: Step) -> list[Alert]:
        finding, _ = self._observe(step)
        self._score = 0.0
        if finding is None:
            return []
        if self._ledger.model_session != self._reported_session:
            self._reported_session = self._ledger.model_session
            self._reported = []
        decayed = set(finding.decayed)
        fresh: list[Violation] = []
        for v in finding.violations:
            if v in decayed or (v.kind == BUDGET and not self.report_budget):
                continue
            self._score = 1.0  # a rule of its own broken, reported before or not
            if v.rule in self._reported:
                continue
            fresh.append(v)
            self._reported.append(v.rule)
        del self._reported[:-MAX_REPORTED]
        if not fresh:
            return []
        critical = not self._unconfirmed and any(
            v.kind in (FORBIDDEN_COMMAND, FORBIDDEN_TOOL) for v in fresh
        )
        where = (
            "before any compaction"
            if self._ledger.model_session == 0
            else "after a compaction, a rule not exercised before it"
        )
        reason = "; ".join(f"broke {v.rule}: {v.detail}" for v in fresh) + f" ({where})"
        reason += self._derived_note([v.rule for v in fresh])
        return [
            make_alert(
                self.name,
                onset=step,
                raised=step,
                evidence=[step],
                score=1.0,
                severity=Severity.CRITICAL if critical else Severity.WARN,
                reason=reason,
                action=Action.KILL if critical else Action.NOTIFY,
            )
        ]
