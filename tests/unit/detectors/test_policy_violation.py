"""policy_violation: one alert per rule per model session, critical for forbidden
commands, quiet without a policy, and the split with compliance_decay."""

from __future__ import annotations

import pytest

from detectors.compliance.violation import PolicyViolation
from detectors.testing import Session
from models.records import Action, Alert, Severity, Step

POLICY = {
    "forbidden_commands": [r"git\s+push\s+(-f|--force)", r"rm\s+-rf\s+/(\s|$)"],
    "forbidden_write_paths": [".github/workflows/**"],
    "allowed_egress_hosts": ["pypi.org"],
    "require_approval_for": [r"git\s+push"],
    "budget": {"tool_calls": 3},
}


def feed(d: PolicyViolation, steps: list[Step]) -> list[Alert]:
    return [a for s in steps for a in d.update(s)]


def test_forbidden_command_is_critical_kill() -> None:
    s = Session(policy_id="p")
    rm, _ = s.tool("bash", {"command": "rm -rf / --no-preserve-root"})
    alerts = feed(PolicyViolation(policies={"p": POLICY}), [s.start(), rm])
    assert [(a.onset_seq, a.severity, a.action) for a in alerts] == [
        (rm.seq, Severity.CRITICAL, Action.KILL)
    ]
    assert "forbidden_commands" in alerts[0].reason


def test_one_alert_per_rule_per_model_session() -> None:
    s = Session(policy_id="p")
    steps = [s.start()]
    w1, _ = s.tool("write_file", {"path": ".github/workflows/a.yml", "content": ""})
    w2, _ = s.tool("write_file", {"path": ".github/workflows/b.yml", "content": ""})
    e1 = s.egress("https://evil.org/")
    steps += [w1, w2, e1, s.compaction()]
    w3, _ = s.tool("write_file", {"path": ".github/workflows/c.yml", "content": ""})
    steps.append(w3)
    alerts = feed(PolicyViolation(policies={"p": POLICY}), steps)
    # w3 is compliance_decay's? No: writes before were never clean, so still plain here.
    assert [(a.onset_seq, a.severity) for a in alerts] == [
        (w1.seq, Severity.WARN),
        (e1.seq, Severity.WARN),
        (w3.seq, Severity.WARN),
    ]


def test_two_rules_on_one_step_make_one_alert() -> None:
    s = Session(policy_id="p")
    push, _ = s.tool("bash", {"command": "git push --force origin main"})
    alerts = feed(PolicyViolation(policies={"p": POLICY}), [s.start(), push])
    assert len(alerts) == 1
    assert "forbidden_commands" in alerts[0].reason and "require_approval_for" in alerts[0].reason


def test_budget_only_when_asked() -> None:
    s = Session(policy_id="p")
    steps = [s.start()]
    for _ in range(5):
        steps += s.tool("bash", {"command": "ls"})
    assert feed(PolicyViolation(policies={"p": POLICY}), steps) == []
    alerts = feed(PolicyViolation(policies={"p": POLICY}, report_budget=True), steps)
    assert [a.reason.split(":")[0] for a in alerts] == ["broke budget.tool_calls"]


def test_quiet_without_policy_and_on_compliant_runs() -> None:
    s = Session()
    steps = [s.start(), *s.tool("bash", {"command": "git push --force"})]
    assert feed(PolicyViolation(policies={"p": POLICY}), steps) == []
    s = Session(policy_id="p")
    steps = [s.start(), *s.tool("bash", {"command": "pip install requests"})]
    steps.append(s.egress("https://pypi.org/simple/requests/"))
    assert feed(PolicyViolation(policies={"p": POLICY}), steps) == []


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        PolicyViolation(alpha=-1)
    with pytest.raises(ValueError, match="require_before"):
        PolicyViolation(policies={"p": {"require_before": "tests"}})
