"""DuplicateSideEffect on hand-built streams: replayed effects fire, retries after
errors, reads and new pushes do not."""

from __future__ import annotations

import pickle

import pytest

from detectors.duplicate_side_effect import (
    PREDECESSOR_EFFECTS,
    DuplicateSideEffect,
    completed_effects,
)
from detectors.testing import Session
from models.records import Action, Alert, Severity, Step


def feed(steps: list[Step], **params: object) -> list[Alert]:
    detector = DuplicateSideEffect(**params)  # type: ignore[arg-type]
    return [alert for step in steps for alert in detector.update(step)]


def session() -> tuple[Session, list[Step]]:
    s = Session("d", goal="Pay the December bills and tell the landlord.")
    return s, [s.start(), s.model()]


def test_same_idempotency_key_executed_twice() -> None:
    s, steps = session()
    first = s.tool("create_invoice", {"customer": "c-17", "amount": 120}, idempotency_key="inv-17")
    again = s.tool(
        "create_invoice", {"customer": "c-17", "amount": 120.0}, idempotency_key="inv-17"
    )
    (alert,) = feed([*steps, *first, s.model(), *again])
    assert alert.onset_step_id == again[0].step_id
    assert [e["step_id"] for e in alert.evidence] == [again[0].step_id, first[0].step_id]
    assert "idempotency key 'inv-17'" in alert.reason and alert.action == Action.NOTIFY


def test_retry_with_the_same_key_after_an_error_is_correct_use() -> None:
    s, steps = session()
    steps += s.tool(
        "send_money",
        {"recipient": "DE89370400440532013000", "amount": 1200},
        ok=False,
        error="timeout",
        idempotency_key="rent-12",
    )
    steps += s.tool(
        "send_money",
        {"recipient": "DE89370400440532013000", "amount": 1200},
        idempotency_key="rent-12",
    )
    assert feed(steps) == []


@pytest.mark.parametrize(
    ("tool", "arguments", "severity"),
    [
        ("send_money", {"recipient": "DE89370400440532013000", "amount": 1200}, Severity.CRITICAL),
        (
            "send_email",
            {"to": ["landlord@example.com"], "subject": "Rent", "body": "Paid."},
            Severity.CRITICAL,
        ),
        ("post_message", {"channel": "#general", "text": "Deployed v2"}, Severity.CRITICAL),
        ("delete_file", {"file_id": "13"}, Severity.WARN),
        (
            "http",
            {"method": "POST", "url": "https://api.example.com/orders", "body": {"sku": 1}},
            Severity.WARN,
        ),
        ("bash", {"command": "gh pr create --title 'Fix DST' --body 'Fixes #7'"}, Severity.WARN),
    ],
)
def test_identical_side_effect_after_success(
    tool: str, arguments: dict[str, object], severity: Severity
) -> None:
    s, steps = session()
    first = s.tool(tool, arguments)
    steps += [*first, s.model(), *s.tool("get_balance", {})]
    again = s.tool(tool, arguments)
    (alert,) = feed([*steps, *again])
    assert alert.onset_seq == again[0].seq and alert.severity == severity
    assert f"as step {first[0].seq}" in alert.reason


def test_different_arguments_reads_and_failed_first_tries_are_quiet() -> None:
    s, steps = session()
    steps += s.tool("send_money", {"recipient": "DE89370400440532013000", "amount": 1200})
    steps += s.tool("send_money", {"recipient": "DE89370400440532013000", "amount": 85})
    for _ in range(3):
        steps += s.tool("get_balance", {})
        steps += s.tool(
            "http", {"method": "GET", "url": "https://api.github.com/repos/a/b/actions/runs/7"}
        )
    steps += s.tool("send_email", {"to": ["a@example.com"], "body": "x"}, ok=False, error="503")
    steps += s.tool("send_email", {"to": ["a@example.com"], "body": "x"})
    assert feed(steps) == []


def test_push_after_a_new_commit_is_new_work_but_a_replayed_push_is_not() -> None:
    s, steps = session()
    steps += s.tool("bash", {"command": "git push origin fix/dst"})
    steps += s.tool("edit_file", {"path": "src/dates.py", "old": "a", "new": "b"})
    steps += s.tool("bash", {"command": "git commit -am 'Address review'"})
    steps += s.tool("bash", {"command": "git push origin fix/dst"})
    assert feed(steps) == []
    again = s.tool("bash", {"command": "git push origin fix/dst"})
    (alert,) = feed([*steps, *again])
    assert alert.onset_seq == again[0].seq and alert.severity == Severity.WARN


def test_window_bounds_memory() -> None:
    s, steps = session()
    first = s.tool("send_money", {"recipient": "X", "amount": 1})
    steps += first
    for i in range(4):
        steps += s.tool("send_money", {"recipient": "X", "amount": i + 2})
    steps += s.tool("send_money", {"recipient": "X", "amount": 1})
    assert feed(steps, window=3) == []
    assert len(feed(steps, window=8)) == 1


def test_bad_window() -> None:
    with pytest.raises(ValueError):
        DuplicateSideEffect(window=0)


def test_a_payment_sent_again_and_again_is_one_finding() -> None:
    # AgentDojo gpt-4o repeat_user_prompt, banking user_task_3: the same payment 14 times
    s, steps = session()
    pay = {"recipient": "GB29NWBK60161331926819", "amount": 10.0, "subject": "Dinner"}
    sends = [s.tool("send_money", pay) for _ in range(14)]
    alerts = feed([*steps, *(st for call in sends for st in call)])
    (alert,) = alerts  # critical from the first replay: nothing left to escalate
    assert alert.severity == Severity.CRITICAL and alert.onset_step_id == sends[1][0].step_id
    assert [e["step_id"] for e in alert.evidence] == [sends[1][0].step_id, sends[0][0].step_id]


def test_a_warn_class_replay_escalates_once_with_the_later_replays_as_evidence() -> None:
    s, steps = session()
    calls = [s.tool("delete_file", {"file_id": "13"}) for _ in range(7)]
    for call in calls:
        steps += [*call, s.model()]
    warn, critical = feed(steps)
    assert (warn.severity, critical.severity) == (Severity.WARN, Severity.CRITICAL)
    assert warn.onset_step_id == critical.onset_step_id == calls[1][0].step_id
    assert warn.raised_seq == calls[1][0].seq and critical.raised_seq == calls[3][0].seq
    assert warn.alert_id != critical.alert_id
    assert [e["step_id"] for e in critical.evidence] == [calls[i][0].step_id for i in (1, 0, 2, 3)]
    assert "replayed 3 times since step" in critical.reason
    assert feed(steps, critical_replays=5)[1].raised_seq == calls[5][0].seq


def test_the_finding_follows_the_call_across_a_retry_after_an_error() -> None:
    s, steps = session()
    args = {"channel": "#ops", "text": "Deploy done"}
    steps += s.tool("post_message", args)
    steps += s.tool("post_message", args)  # replay: critical
    steps += s.tool("post_message", args, ok=False, error="rate limited")
    steps += s.tool("post_message", args)  # a retry after an error: fine
    steps += s.tool("post_message", args)  # the same finding again: no new alert
    assert len(feed(steps)) == 1


def test_a_push_of_new_state_is_a_new_finding() -> None:
    s, steps = session()
    for _ in range(2):
        steps += s.tool("bash", {"command": "git push origin fix/dst"})
        steps += s.tool("bash", {"command": "git push origin fix/dst"})
        steps += s.tool("bash", {"command": "git commit -am 'more'"})
    assert [a.severity for a in feed(steps)] == [Severity.WARN, Severity.WARN]


def test_a_call_cancelled_by_a_failing_sibling_had_no_effect_to_replay() -> None:
    s, steps = session()
    pay = {"recipient": "GB29NWBK60161331926819", "amount": 10.0}
    steps += s.batch([("send_money", pay), ("get_balance", {})], failed=1, error="timeout")
    steps += s.tool("send_money", pay)  # the payment's first execution
    assert feed(steps) == []
    steps += s.tool("send_money", pay)  # and this one is its replay
    assert [a.severity for a in feed(steps)] == [Severity.CRITICAL]


def test_a_cancelled_replay_leaves_the_executed_call_as_the_one_replayed() -> None:
    s, steps = session()
    first = s.tool("delete_file", {"file_id": "13"})
    cancelled = s.batch([("delete_file", {"file_id": "13"}), ("bash", {"command": "x"})], failed=1)
    later = [s.tool("delete_file", {"file_id": "13"}) for _ in range(2)]
    steps += [*first, *cancelled, *(st for call in later for st in call)]
    warn, critical = feed(steps)
    # the cancelled call was seen as a replay when issued (nothing could know yet); the
    # calls after it replay the first execution, within the same finding
    assert warn.onset_step_id == critical.onset_step_id == cancelled[0].step_id
    assert critical.raised_seq == later[1][0].seq
    assert [e["step_id"] for e in critical.evidence][:2] == [
        cancelled[0].step_id,
        first[0].step_id,
    ]


def test_bad_critical_replays() -> None:
    with pytest.raises(ValueError):
        DuplicateSideEffect(critical_replays=0)


def test_a_replay_after_the_worker_stopped_says_so() -> None:
    """Issue 29: a resumed run that re-issues a side effect the dead worker had already
    completed is a duplicate side effect with that context in its reason."""
    from detectors.duplicate_side_effect import DuplicateSideEffect
    from detectors.testing import Session

    s = Session("resumed")
    refund = {"amount": 24400, "payment_intent": "pi_1"}
    steps = [s.start(), *s.tool("stripe__create_refund", refund), s.silence(3000), s.start()]
    steps += s.tool("stripe__create_refund", refund)
    detector = DuplicateSideEffect()
    alerts = [a for step in steps for a in detector.update(step)]
    assert len(alerts) == 1
    assert "interrupted (a new start of the session, step 4)" in alerts[0].reason
    s = Session("plain")
    steps = [s.start(), *s.tool("stripe__create_refund", refund)]
    steps += s.tool("stripe__create_refund", refund)
    detector = DuplicateSideEffect()
    assert "interrupted" not in next(a for st in steps for a in detector.update(st)).reason


# -- a run resumed as a new session (the predecessor's completed effects on its start) ----


def resumed(effects: list[dict[str, object]]) -> tuple[Session, list[Step]]:
    s = Session("resumer", goal="Continue the work of session dead.")
    start = s.start()
    return s, [start.with_(detail={**start.detail, PREDECESSOR_EFFECTS: effects})]


def test_only_completed_effects_are_inherited_and_the_last_window_of_them() -> None:
    dead = Session("dead", goal="Pay the December bills.")
    steps = [dead.start()]
    for i in range(5):
        steps += dead.tool("send_money", {"recipient": f"r{i}", "amount": 10}, result=f"paid {i}")
    steps += dead.tool("send_money", {"recipient": "failed", "amount": 1}, ok=False, error="402")
    steps += dead.tool("send_money", {"recipient": "cancelled", "amount": 1}, cancelled=True)
    steps += dead.tool("get_balance", {})  # no effect
    steps.append(dead.call("send_money", {"recipient": "in-flight", "amount": 1}))
    effects = completed_effects(steps, window=3)
    assert [e["result"] for e in effects] == ["paid 2", "paid 3", "paid 4"]
    assert {e["session_id"] for e in effects} == {"dead"}


def test_an_inherited_idempotency_key_and_push_are_judged_as_in_one_session() -> None:
    dead = Session("dead", goal="Ship the fix.")
    before = [
        dead.start(),
        *dead.tool("create_invoice", {"amount": 120}, idempotency_key="inv-17", result="INV-17"),
        *dead.tool("bash", {"command": "git push origin fix/dst"}, result="pushed"),
    ]
    effects = completed_effects(before)
    s, steps = resumed(effects)
    # another amount, the same key: the key's effect happened once already
    key = [*steps, *s.tool("create_invoice", {"amount": 120.0}, idempotency_key="inv-17")]
    (alert,) = feed(key)
    assert "idempotency key 'inv-17'" in alert.reason and "session dead" in alert.reason
    assert 'result: "INV-17"' in alert.reason
    # a push after a change of the resumer's own is new work; without one, a replay
    s, steps = resumed(effects)
    steps += s.tool("edit_file", {"path": "src/dates.py", "old": "a", "new": "b"})
    assert feed([*steps, *s.tool("bash", {"command": "git push origin fix/dst"})]) == []
    s, steps = resumed(effects)
    (alert,) = feed([*steps, *s.tool("bash", {"command": "git push origin fix/dst"})])
    assert alert.severity == Severity.WARN and "session dead" in alert.reason


def test_an_inherited_ledger_survives_a_state_round_trip() -> None:
    dead = Session("dead", goal="Notify the customers.")
    mail = {"to": "customers@example.com", "template": "incident-42"}
    effects = completed_effects([dead.start(), *dead.tool("send_email", mail)])
    s, steps = resumed(effects)
    live = DuplicateSideEffect()
    for step in steps:
        live.update(step)
    restored = DuplicateSideEffect()
    restored.load_state_dict(pickle.loads(pickle.dumps(live.state_dict())))
    call, result = s.tool("send_email", mail)
    (alert,) = restored.update(call)
    assert [e.get("session_id") for e in alert.evidence] == [None, "dead"]
    assert restored.update(result) == []


def test_a_hand_off_back_and_forth_is_no_replayed_payment() -> None:
    """``transfer_to_<agent>`` is the Agents SDK's and LangGraph's hand-off tool: a
    supervisor handing the same request to a worker twice moves the conversation, not
    money (it had read as a payment by its word "transfer")."""
    s, steps = session()
    for _ in range(2):
        steps += s.tool("transfer_to_billing_agent", {"reason": "refund the duplicate"})
        steps += s.tool("transfer_to_supervisor", {})
    assert feed(steps) == []


def test_a_transfer_of_an_amount_stays_a_payment() -> None:
    s, steps = session()
    for _ in range(2):
        steps += s.tool("transfer_to_account", {"iban": "DE89370400440532013000", "amount": 900})
    (alert,) = feed(steps)
    assert "a payment" in alert.reason


def test_polling_an_a2a_task_over_post_is_no_replayed_message() -> None:
    """An A2A ``tasks/get`` (JSON-RPC over POST) asked again is a poll; the ``message/send``
    that started the task, sent twice, is a replayed effect."""
    s, steps = session()
    get = {
        "json": {"method": "tasks/get", "params": {"id": "t-1"}},
        "method": "POST",
        "url": "https://flights.example/a2a",
    }
    for _ in range(3):
        steps += s.tool("http_post", get, result='{"state": "working"}')
    assert feed(steps) == []
    send = {**get, "json": {"method": "message/send", "params": {"text": "book"}}}
    steps += s.tool("http_post", send, result='{"task": "t-2"}')
    steps += s.tool("http_post", send, result='{"task": "t-3"}')
    assert len(feed(steps)) == 1
