"""A session checked against the rules of its own instructions when no policy is
attached (warnings until confirmed), and approvals as telemetry shows them: a human-approval
tool's answer, a runtime's tool_decision about one call, a denial followed by the action."""

from __future__ import annotations

from typing import Any

import pytest

from detectors.compliance.decay import ComplianceDecay
from detectors.compliance.violation import PolicyViolation
from detectors.registry import DetectorSet
from detectors.testing import Session
from ingest.formats.otlp_logs import decode_otlp_logs_proto
from ingest.pipeline.engine import Pipeline
from models.records import Action, Severity, Step, StepKind
from models.store import Store
from tests.unit.ingest.test_otlp_logs import CLAUDE_SCOPE, claude, sdk_batch
from trajwatch.settings import Settings

RULES = (
    "You are a careful coding agent. Ask for approval before any git push. "
    "Never run rm -rf. tests/ contains the tests."
)
PUSH = {"command": "git push origin fix-1"}


def _start(s: Session, instructions: str | None = RULES) -> Step:
    start = s.start()
    if instructions is None:
        return start
    return start.with_(detail={**start.detail, "system_instructions": instructions})


def _alerts(detector: Any, steps: list[Step]) -> list:
    return [a for st in steps for a in detector.update(st)]


def test_push_after_an_approved_request_is_compliant() -> None:
    s = Session("ok")
    steps = [_start(s), s.model()]
    steps += s.tool(
        "request_approval",
        {"action": "git push origin fix-1", "reason": "review"},
        result="Approved by alice",
    )
    steps += s.tool("bash", PUSH)
    assert _alerts(PolicyViolation(), steps) == []


def test_push_without_approval_warns_citing_the_sentence() -> None:
    s = Session("bad")
    steps = [_start(s), s.model(), *s.tool("bash", PUSH)]
    (alert,) = _alerts(PolicyViolation(), steps)
    assert alert.severity == Severity.WARN and alert.action == Action.NOTIFY
    assert alert.onset_seq == 2
    assert "without an approval" in alert.reason
    assert '"Ask for approval before any git push."' in alert.reason
    assert "unconfirmed" in alert.reason


def test_a_derived_forbidden_command_warns_until_enforced() -> None:
    def run(**params: Any) -> list:
        s = Session("rm")
        return _alerts(
            PolicyViolation(**params), [_start(s), *s.tool("bash", {"command": "rm -rf build"})]
        )

    (warned,) = run()
    assert (warned.severity, warned.action) == (Severity.WARN, Action.NOTIFY)
    (enforced,) = run(derived_policies="enforce")
    assert (enforced.severity, enforced.action) == (Severity.CRITICAL, Action.KILL)
    assert "enforced by config" in enforced.reason
    assert run(derived_policies="off") == []


def test_an_attached_policy_wins_over_the_instructions() -> None:
    s = Session("attached", policy_id="p")
    steps = [_start(s), *s.tool("bash", {"command": "rm -rf build"}), *s.tool("bash", PUSH)]
    # the policy file says nothing about rm or pushing: no derived rule applies
    assert _alerts(PolicyViolation(policies={"p": {"forbidden_tools": ["nuke"]}}), steps) == []


def test_instructions_that_state_no_rule_check_nothing() -> None:
    s = Session("none")
    steps = [_start(s, "You are a helpful assistant."), *s.tool("bash", {"command": "rm -rf x"})]
    assert _alerts(PolicyViolation(), steps) == []
    s = Session("missing")
    assert (
        _alerts(PolicyViolation(), [_start(s, None), *s.tool("bash", {"command": "rm -rf x"})])
        == []
    )


def test_instructions_on_a_model_call_count_when_the_start_has_none() -> None:
    s = Session("model")
    model = s.model()
    model = model.with_(detail={"system_instructions": RULES})
    steps = [_start(s, None), model, *s.tool("bash", PUSH)]
    assert len(_alerts(PolicyViolation(), steps)) == 1


def test_a_denied_approval_then_the_push_is_a_violation() -> None:
    s = Session("denied")
    steps = [_start(s)]
    steps += s.tool("ask_human", {"question": "May I run `git push origin fix-1`?"}, result="No.")
    steps += s.tool("bash", PUSH)
    (alert,) = _alerts(PolicyViolation(), steps)
    assert "after its approval was denied" in alert.reason


def test_an_approval_tool_is_known_by_what_it_does_not_by_its_name() -> None:
    # "human" matches no approval-tool name: its arguments ask, its result answers
    s = Session("func")
    asked = s.tool(
        "human",
        {"question": "Can I push the branch? (git push origin fix-1)"},
        result="yes, go ahead",
    )
    steps = [_start(s), *asked, *s.tool("bash", PUSH)]
    assert _alerts(PolicyViolation(), steps) == []
    s = Session("func-no")
    asked = s.tool(
        "human", {"question": "Can I push the branch? (git push origin fix-1)"}, result="Denied"
    )
    assert len(_alerts(PolicyViolation(), [_start(s), *asked, *s.tool("bash", PUSH)])) == 1


def _waiting(s: Session, action: str = "git push origin fix-1") -> list[Step]:
    return list(
        s.tool(
            "request_approval",
            {"action": action},
            result="Approval requested; waiting for a human.",
        )
    )


def test_a_request_whose_answer_is_not_seen_is_asking_which_the_sentence_asks_for() -> None:
    # "Ask for approval before any git push": approved out of band (Slack, a UI), the
    # answer is not in the telemetry; the agent asked, and nothing says no
    s = Session("wait")
    assert _alerts(PolicyViolation(), [_start(s), *_waiting(s), *s.tool("bash", PUSH)]) == []
    # asking about something else is not asking about the push
    s = Session("other")
    steps = [_start(s), *_waiting(s, "rm build/"), *s.tool("bash", PUSH)]
    assert len(_alerts(PolicyViolation(), steps)) == 1
    # and a denial seen after the request closes it
    s = Session("no")
    steps = [_start(s), *_waiting(s)]
    steps += [s.approval("request_approval", approved=False).with_(call_id=steps[1].call_id)]
    assert len(_alerts(PolicyViolation(), [*steps, *s.tool("bash", PUSH)])) == 1


def test_a_policy_file_needs_the_answer_unless_it_says_otherwise() -> None:
    strict = {"p": {"require_approval_for": [r"git\s+push"]}}
    s = Session("file", policy_id="p")
    (alert,) = _alerts(
        PolicyViolation(policies=strict), [s.start(), *_waiting(s), *s.tool("bash", PUSH)]
    )
    assert "after a request whose answer was not seen" in alert.reason
    lenient = {"p": {"require_approval_for": [r"git\s+push"], "require_approval_answer": False}}
    s = Session("file2", policy_id="p")
    steps = [s.start(), *_waiting(s), *s.tool("bash", PUSH)]
    assert _alerts(PolicyViolation(policies=lenient), steps) == []
    # the runtime's approval event for the request answers it
    s = Session("file3", policy_id="p")
    call, result = _waiting(s)
    event = s.approval("request_approval").with_(call_id=call.call_id)
    steps = [s.start(), call, result, event, *s.tool("bash", PUSH)]
    assert _alerts(PolicyViolation(policies=strict), steps) == []


def test_an_approval_naming_no_action_lasts_one_turn() -> None:
    s = Session("turn")
    steps = [_start(s), *s.tool("request_approval", {"reason": "ready to ship"}, result="approved")]
    late = _start(s)
    late = late.with_(detail={**late.detail, "late": True})
    assert _alerts(PolicyViolation(), [*steps, late, *s.tool("bash", PUSH)]) == []
    s = Session("turn")
    steps = [_start(s), *s.tool("request_approval", {"reason": "ready to ship"}, result="approved")]
    turn = _start(s)
    steps += [turn.with_(detail={**turn.detail, "turn": 1})]  # the next turn
    steps += s.tool("bash", PUSH)
    assert len(_alerts(PolicyViolation(), steps)) == 1


def test_instructions_that_arrive_late_still_see_the_request_before_them() -> None:
    # a plain-OTLP run: the root agent span (the only one with the instructions) is sent
    # when the run ends, so its start lands between the approval request and the push
    s = Session("late")
    start = _start(s)
    request = s.tool("request_approval", {"action": "git push origin fix-1"}, result="approved")
    steps = [*request, start.with_(detail={**start.detail, "late": True}), *s.tool("bash", PUSH)]
    assert _alerts(PolicyViolation(), steps) == []
    s = Session("late-none")
    start = _start(s)
    steps = [*s.tool("bash", {"command": "ls"}), start, *s.tool("bash", PUSH)]
    assert len(_alerts(PolicyViolation(), steps)) == 1


def test_a_runtime_decision_approves_the_call_it_names() -> None:
    s = Session("decision")
    call, result = s.tool("Bash", PUSH)
    decision = s.approval("Bash").with_(call_id=call.call_id, seq=1, ts=call.ts - 1)
    other_call, other_result = s.tool("Bash", {"command": "git push origin other"})
    steps = [_start(s), decision, call, result, other_call, other_result]
    (alert,) = _alerts(PolicyViolation(), steps)  # only the push no decision named
    assert alert.onset_seq == other_call.seq
    denied = s.approval("Bash", approved=False).with_(call_id="c-x")
    refused = s.call("Bash", PUSH).with_(call_id="c-x")
    assert _alerts(PolicyViolation(), [_start(Session("d")), denied, refused]) == []


def test_unconfirmed_decay_only_warns() -> None:
    s = Session("decay")
    steps = [_start(s)]
    for _ in range(2):
        steps += s.tool("request_approval", {"action": "git push"}, result="approved")
        steps += s.tool("bash", PUSH)
    steps += [s.checkpoint("ck"), s.compaction(inferred=True), s.model(tokens_in=9_000)]
    steps += s.tool("bash", PUSH)
    (alert,) = _alerts(ComplianceDecay(), steps)
    assert (alert.severity, alert.action, alert.checkpoint_id) == (
        Severity.WARN,
        Action.NOTIFY,
        None,
    )
    (enforced,) = _alerts(ComplianceDecay(derived_policies="enforce"), steps)
    assert (enforced.action, enforced.checkpoint_id) == (Action.ROLLBACK, "ck")


def test_a_bad_mode_fails_in_the_constructor() -> None:
    with pytest.raises(ValueError, match="derived_policies must be one of off, warn, enforce"):
        PolicyViolation(derived_policies="yes")


def test_claude_code_tool_decision_logs_approve_the_push(store: Store) -> None:
    """The OTLP logs of Claude Code: a user's accept of the Bash call, then its result."""

    def run(decision: str | None) -> list:
        sid = {"session.id": f"cc-{decision}"}
        records = [
            claude("user_prompt", 1, 1, prompt="Publish the fix branch", **sid),
            claude(
                "api_request",
                2,
                3,
                model="claude-sonnet-4-5",
                input_tokens="900",
                output_tokens="40",
                duration_ms="800",
                **sid,
            ),
        ]
        if decision:
            records.append(
                claude(
                    "tool_decision",
                    3,
                    4,
                    tool_name="Bash",
                    tool_use_id="toolu_p",
                    decision=decision,
                    source="user_temporary",
                    **sid,
                )
            )
        records.append(
            claude(
                "tool_result",
                4,
                9,
                tool_name="Bash",
                tool_use_id="toolu_p",
                success="true",
                duration_ms="3000",
                tool_parameters='{"full_command": "git push origin fix-1"}',
                **sid,
            )
        )
        detectors = DetectorSet.from_config(
            {
                "policy_violation": {
                    "policies": {"p": {"require_approval_for": [r"git\s+push"]}},
                    "default_policy": "p",
                }
            }
        )
        pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000), detectors=detectors)
        pipeline.feed_decoded(
            decode_otlp_logs_proto(
                sdk_batch(records, scope=CLAUDE_SCOPE, service="claude-code"), source="t"
            ),
            partition="0",
        )
        pipeline.close()
        kinds = [st.kind for st in store.steps(sid["session.id"])]
        assert kinds.count(StepKind.TOOL_CALL) == 1
        assert kinds.count(StepKind.APPROVAL) == (1 if decision else 0)
        return [a for a in store.alerts([sid["session.id"]]) if a.detector == "policy_violation"]

    assert run("accept") == []
    assert len(run(None)) == 1
    assert run("reject") == []  # refused: the call did not run
