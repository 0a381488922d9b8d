"""Policy violations with no compaction in play.

Checks every step against the session's policy (:mod:`features.policy.check`) and reports a
broken rule once per model session: before any compaction, or after one for a rule the
agent never exercised before it (so there is no evidence of decay). What
``compliance_decay`` reports is left out, decided by the same
:class:`~features.policy.ledger.ComplianceLedger` with the same parameters: a
violation of a rule honoured before the latest compaction, or any violation once the
post-compaction rate is significantly higher. So a violation after a compaction is
reported here first when it is the first of its kind, and by ``compliance_decay`` when
it shows decay; never both for the same finding.

Severity: a forbidden command or tool (``git push --force``, ``rm -rf /``) is critical
with action ``kill``: the policy drew that line in advance. A session no policy names is
checked against the rules derived from its own instructions (``derived_policies``, see
:mod:`features.policy.instructions`); those only warn (``notify``), citing their sentence, until
a person confirms them by attaching them as a policy file (``trajwatch policy
--from-instructions`` prints it), unless ``derived_policies = "enforce"``. Everything else
(writes to protected paths, unapproved guarded actions, tests skipped before commit,
egress outside the allowed hosts) is a warning with ``notify``. Budget overruns are off by
default (``report_budget``): billed tokens of a long run with a large context exceed
the fixtures' budgets in healthy runs (seed 11: 3 of 36 healthy runs), and spend has
its own detectors.

The ``score`` is 1.0 on a step that breaks a rule this detector reports (reported before
in the model session or not) and 0 on others; the ``thresholds`` are 1.0 for both
severities: a broken rule is the whole evidence.

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
