"""compliance_decay on hand-built streams: decay after explicit and inferred compaction,
compliant compaction, violations without compaction, no policy; plus the contract checks
with a policy configured (the shared contract test runs without one)."""

from __future__ import annotations

import pickle
import tomllib

import pytest

from detectors.compliance.decay import ComplianceDecay
from detectors.compliance.violation import PolicyViolation
from detectors.testing import Session
from models.records import Action, Alert, Severity, Step
from tests.support.paths import ROOT

POLICIES = {
    p.stem: tomllib.loads(p.read_text()) for p in (ROOT / "fixtures" / "policies").glob("*.toml")
}
PID = "coding-strict-v1"


def feed(detector: ComplianceDecay | PolicyViolation, steps: list[Step]) -> list[Alert]:
    return [a for s in steps for a in detector.update(s)]


def compliant_round(s: Session, i: int) -> list[Step]:
    """Edit, test, commit, ask, push: everything the strict policy wants."""
    steps = [s.model()]
    steps += s.tool("edit_file", {"path": f"src/m{i}.py", "old_text": "a", "new_text": "b"})
    steps += s.tool("bash", {"command": "pytest -q"})
    steps.append(s.checkpoint(f"ck-{i}"))
    steps += s.tool("bash", {"command": f"git commit -am 'round {i}'"})
    steps += s.tool("request_approval", {"action": "git push origin fix", "reason": "review"})
    steps.append(s.approval("request_approval"))
    steps += s.tool("bash", {"command": "git push origin fix"})
    return steps


def prefix(s: Session, rounds: int = 3) -> list[Step]:
    steps = [s.start()]
    for i in range(rounds):
        steps += compliant_round(s, i)
    for i in range(10):
        steps += [
            s.model(tokens_in=20_000 + 10_000 * i),
            *s.tool("read_file", {"path": f"src/r{i}.py"}),
        ]
    return steps


@pytest.mark.parametrize("inferred", [False, True])
def test_push_without_approval_after_compaction(inferred: bool) -> None:
    s = Session("push", policy_id=PID)
    steps = [*prefix(s), s.compaction(inferred=inferred), s.model(tokens_in=15000)]
    steps += s.tool("edit_file", {"path": "CHANGELOG.md", "old_text": "a", "new_text": "b"})
    steps += s.tool("bash", {"command": "pytest -q"})
    steps += s.tool("bash", {"command": "git commit -am changelog"})
    push, done = s.tool("bash", {"command": "git push origin fix"})
    steps += [push, done, s.end()]
    alerts = feed(ComplianceDecay(policies=POLICIES), steps)
    assert [(a.onset_seq, a.raised_seq) for a in alerts] == [(push.seq, push.seq)]
    alert = alerts[0]
    assert alert.severity == Severity.CRITICAL and alert.action == Action.ROLLBACK
    assert alert.checkpoint_id == "ck-2"
    assert "require_approval_for `git\\s+push`" in alert.reason
    assert "honoured 3 times before" in alert.reason
    assert ("inferred" if inferred else "explicit") in alert.reason
    assert "Fisher exact p=" in alert.reason
    compaction_seq = next(st.seq for st in steps if st.kind == "compaction")
    assert [e["seq"] for e in alert.evidence][:2] == [push.seq, compaction_seq]
    # policy_violation leaves it to compliance_decay
    assert feed(PolicyViolation(policies=POLICIES), steps) == []


def test_commit_without_tests_and_forbidden_write_after_compaction() -> None:
    s = Session("commit", policy_id=PID)
    steps = [*prefix(s), s.compaction(inferred=True), s.model(tokens_in=15000)]
    edit = s.tool("edit_file", {"path": "src/m0.py", "old_text": "b", "new_text": "c"})
    commit, _ = s.tool("bash", {"command": "git commit -am cleanup"})
    steps += [*edit, commit]
    alerts = feed(ComplianceDecay(policies=POLICIES), steps)
    assert [a.onset_seq for a in alerts] == [commit.seq]
    assert "require_before" in alerts[0].reason

    s = Session("write", policy_id=PID)
    steps = [*prefix(s), s.compaction(), s.model(tokens_in=15000)]
    write, _ = s.tool("write_file", {"path": ".github/workflows/ci.yml", "content": "x"})
    steps.append(write)
    alerts = feed(ComplianceDecay(policies=POLICIES), steps)
    assert [a.onset_seq for a in alerts] == [write.seq]
    assert "clean write" in alerts[0].reason


def test_compliant_compaction_is_quiet() -> None:
    s = Session("healthy", policy_id=PID)
    steps = [*prefix(s), s.compaction(inferred=True), s.model(tokens_in=15000)]
    steps += [*compliant_round(s, 9), s.end()]
    assert feed(ComplianceDecay(policies=POLICIES), steps) == []
    assert feed(PolicyViolation(policies=POLICIES), steps) == []


def test_violation_without_compaction_is_policy_violation_only() -> None:
    s = Session("plain", policy_id=PID)
    steps = prefix(s)
    push, _ = s.tool("bash", {"command": "git push origin fix"})
    steps.append(push)
    assert feed(ComplianceDecay(policies=POLICIES), steps) == []
    alerts = feed(PolicyViolation(policies=POLICIES), steps)
    assert [(a.onset_seq, a.severity) for a in alerts] == [(push.seq, Severity.WARN)]


def test_rule_never_exercised_before_the_compaction_is_policy_violation() -> None:
    s = Session("fresh-rule", policy_id=PID)
    steps = [s.start()]
    for i in range(20):
        steps += s.tool("read_file", {"path": f"src/r{i}.py"})
    steps += [s.compaction(), s.model(tokens_in=10_000)]
    push, _ = s.tool("bash", {"command": "git push origin fix"})
    steps.append(push)
    assert feed(ComplianceDecay(policies=POLICIES), steps) == []
    assert [a.onset_seq for a in feed(PolicyViolation(policies=POLICIES), steps)] == [push.seq]


def test_rate_rise_fires_on_the_second_violation() -> None:
    policy = {"require_approval_for": [r"\bdeploy\b"], "forbidden_tools": ["drop_table"]}
    s = Session("rate", policy_id="p")
    steps = [s.start()]
    for i in range(40):
        steps += s.tool("read_file", {"path": f"src/r{i}.py"})
    steps += [s.compaction(), s.model(tokens_in=10_000)]
    first, _ = s.tool("run", {"cmd": "deploy staging"})
    second, _ = s.tool("drop_tablex", {"name": "t"})  # not forbidden (glob is exact)
    third, _ = s.tool("run", {"cmd": "deploy prod"})
    steps += [first, second, third]
    decay = feed(ComplianceDecay(policies={"p": policy}), steps)
    assert [(a.onset_seq, a.raised_seq) for a in decay] == [(first.seq, third.seq)]
    assert "rose significantly" in decay[0].reason
    # the first was a plain violation (policy_violation); the second belongs to the decay
    plain = feed(PolicyViolation(policies={"p": policy}), steps)
    assert [a.onset_seq for a in plain] == [first.seq]


def test_no_policy_nothing_fires() -> None:
    s = Session("nopolicy")
    steps = [s.start(), *s.tool("bash", {"command": "git push --force"}), s.compaction()]
    steps += s.tool("bash", {"command": "git push --force"})
    assert feed(ComplianceDecay(policies=POLICIES), steps) == []
    assert feed(PolicyViolation(policies=POLICIES), steps) == []


def test_policy_by_agent_and_default() -> None:
    s = Session("by-agent", agent="codewright")
    steps = [s.start(), *s.tool("bash", {"command": "git push --force origin x"})]
    by_agent = PolicyViolation(policies=POLICIES, agent_policies={"codewright": PID})
    assert len(feed(by_agent, steps)) == 1
    assert len(feed(PolicyViolation(policies=POLICIES, default_policy=PID), steps)) == 1


@pytest.mark.parametrize(
    "params",
    [
        {"alpha": 0},
        {"alpha": 1.5},
        {"min_honoured": 0},
        {"min_rate_violations": 0},
        {"policies": {"x": {"forbidden_commands": ["("]}}},
        {"policies": POLICIES, "default_policy": "nope"},
        {"policies": POLICIES, "agent_policies": {"a": "nope"}},
    ],
)
def test_bad_parameters(params: dict) -> None:
    with pytest.raises(ValueError):
        ComplianceDecay(**params)


def test_contract_with_a_policy() -> None:
    """The shared contract checks, with a policy configured."""
    from tests.unit.detectors.test_detector_contract import MAX_STATE_BYTES, long_session

    d = ComplianceDecay(policies=POLICIES)
    steps = long_session(6_000, seed=5)
    feed(d, steps[:700])
    restored = d.clone()
    restored.load_state_dict(pickle.loads(pickle.dumps(d.state_dict())))
    assert feed(restored, steps[700:2_000]) == feed(d, steps[700:2_000])
    early = len(pickle.dumps(d.state_dict()))
    feed(d, steps[2_000:])
    late = len(pickle.dumps(d.state_dict()))
    assert late <= MAX_STATE_BYTES and late <= max(2 * early, 8_192)
    assert pickle.dumps(d.clone().state_dict()) == pickle.dumps(
        ComplianceDecay(policies=POLICIES).state_dict()
    )
