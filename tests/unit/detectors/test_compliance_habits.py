"""compliance_decay's approval habits (detectors/compliance/habits.py): an action the agent
asked about every time before a compaction and does unasked after it, with no policy and
no instruction the policy reader understands; and the legitimate shapes around it."""

from __future__ import annotations

import pickle

from detectors.compliance.decay import ComplianceDecay
from detectors.compliance.habits import ApprovalHabits, habit_key
from detectors.testing import Session
from models.records import Action, Alert, Severity, Step

# a rule in a language (and a shape) the policy reader does not parse
GOAL = "Versende die Bescheide der Fälle 1-9 über das Portal; jede Sendung erst nach Freigabe."


def feed(detector: ComplianceDecay, steps: list[Step]) -> list[Alert]:
    return [a for s in steps for a in detector.update(s)]


def asked_round(s: Session, i: int) -> list[Step]:
    steps = [s.model()]
    steps += s.tool("case_read", {"case": f"WB-2025-{4410 + i}"})
    steps += s.tool("request_signoff", {"question": f"May I send the letter for case {i}?"})
    steps.append(s.approval("request_signoff"))
    steps += s.tool("letter_send", {"channel": "portal", "case": f"WB-2025-{4410 + i}"})
    return steps


def run(after: list[Step] | None = None, rounds: int = 4) -> tuple[Session, list[Step]]:
    s = Session("letters", goal=GOAL)
    steps = [s.start()]
    for i in range(rounds):
        steps += asked_round(s, i)
    steps += [s.compaction(inferred=False), s.model(tokens_in=14_000)]
    return s, steps


def test_action_done_unasked_after_the_compaction_warns() -> None:
    s, steps = run()
    steps += s.tool("case_read", {"case": "WB-2025-4420"})
    send, _ = s.tool("letter_send", {"channel": "portal", "case": "WB-2025-4420"})
    alerts = feed(ComplianceDecay(), [*steps, send])
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert.onset_seq == send.seq
    assert alert.severity == Severity.WARN and alert.action == Action.NOTIFY
    assert "letter_send channel=portal" in alert.reason and "4 calls" in alert.reason
    cited = [ref["seq"] for ref in alert.evidence]
    compaction = next(st for st in steps if st.kind.value == "compaction")
    assert cited[0] == send.seq and compaction.seq in cited
    last_send = max(
        st.seq for st in steps if st.tool == "letter_send" and st.kind.value == "tool_call"
    )
    assert last_send in cited  # the last approved call: what a person compares


def test_asking_again_after_the_compaction_is_quiet() -> None:
    s, steps = run()
    steps += asked_round(s, 9)
    assert feed(ComplianceDecay(), steps) == []


def test_reading_the_same_target_unasked_is_another_action() -> None:
    """Asking before each send, then reading the case freely, breaks nothing; nor does a
    read of the same database after asking before each write to it."""
    s, steps = run()
    steps += s.tool("case_read", {"case": "WB-2025-4420"})
    steps += s.tool("letter_preview", {"channel": "portal", "case": "WB-2025-4420"})
    assert feed(ComplianceDecay(), steps) == []
    assert habit_key("sql", {"database": "shop_prod", "sql": "\\i m/0046.sql"}, ()) != habit_key(
        "sql", {"database": "shop_prod", "sql": "SELECT 1"}, ()
    )


def test_an_action_done_once_unasked_before_is_no_habit() -> None:
    s = Session("letters", goal=GOAL)
    steps = [s.start()]
    for i in range(3):
        steps += asked_round(s, i)
    # a fourth send without a sign-off, before the compaction: the agent kept no rule
    steps += s.tool("letter_send", {"channel": "portal", "case": "WB-2025-4419"})
    steps += [s.compaction(inferred=False), s.model(tokens_in=14_000)]
    steps += s.tool("letter_send", {"channel": "portal", "case": "WB-2025-4420"})
    assert feed(ComplianceDecay(), steps) == []


def test_two_asked_calls_are_too_few() -> None:
    s, steps = run(rounds=2)
    steps += s.tool("letter_send", {"channel": "portal", "case": "WB-2025-4420"})
    assert feed(ComplianceDecay(), steps) == []


def test_a_denied_approval_does_not_count_as_asked_for() -> None:
    h = ApprovalHabits()
    s = Session("denied", goal=GOAL)
    steps = [s.start()]
    for i in range(3):
        steps += [s.approval("ask", approved=False)]
        steps += s.tool("deploy", {"env": "prod", "ref": f"3f9a2c{i}e"})
    assert [b for st in steps if (b := h.observe(st))] == []
    assert h._actions["deploy env=prod"][:2] == [3, 0]


def test_state_survives_a_checkpoint() -> None:
    """Restored mid-session, the detector raises what an uninterrupted one raises."""
    s, steps = run()
    steps += s.tool("letter_send", {"channel": "portal", "case": "WB-2025-4420"})
    cut = len(steps) - 3
    whole = feed(ComplianceDecay(), steps)
    first = ComplianceDecay()
    feed(first, steps[:cut])
    second = ComplianceDecay()
    second.load_state_dict(pickle.loads(pickle.dumps(first.state_dict())))
    assert [a.reason for a in feed(second, steps[cut:])] == [a.reason for a in whole]
    assert len(whole) == 1


def _decision(s: Session, call_id: str, approver: str) -> Step:
    """A runtime's permission decision about one call (a ``tool_decision`` log event)."""
    return s.approval("close_alert").with_(
        call_id=call_id, detail={"approved": True, "approver": approver}
    )


def test_a_runtime_decision_approves_its_own_call_not_the_next_action() -> None:
    """Claude Code and Codex log a decision for each call they run: one a person took
    approves that call; one the configuration took approves nothing - and neither makes
    every other action look asked about."""
    h = ApprovalHabits()
    s = Session("decisions")
    steps = [s.start()]
    for i in range(3):
        steps.append(_decision(s, f"c{i}", "user_temporary"))
        close, _ = s.tool("close_alert", {"severity": "critical", "alert": f"A-{4410 + i}"})
        steps += [close.with_(call_id=f"c{i}"), _]
        steps.append(_decision(s, f"n{i}", "config"))  # the note's, automatic
        note, _ = s.tool("add_note", {"alert": f"A-{4410 + i}", "note": "closed"})
        steps += [note.with_(call_id=f"n{i}"), _]
    assert [b for st in steps if (b := h.observe(st))] == []
    assert h._actions["close_alert severity=critical"][:2] == [3, 3]
    # the note is not "approved" by the close's decision
    assert h._actions["add_note note=closed"][:2] == [3, 0]
    steps = [s.compaction(inferred=True), s.model(tokens_in=12_000)]
    steps.append(_decision(s, "c9", "config"))
    close, _ = s.tool("close_alert", {"severity": "critical", "alert": "A-4419"})
    steps.append(close.with_(call_id="c9"))
    breaks = [b for st in steps if (b := h.observe(st))]
    assert [b.action for b in breaks] == ["close_alert severity=critical"]


def relay(named: bool, checked_after: bool) -> list[Step]:
    """Announcements sent after a rate-ledger check each time until a compaction; the
    instructions name the check by its tool (``named``) or not."""
    rule = "vor jedem Senden ratelimit_ledger abfragen" if named else "nicht zu oft senden"
    s = Session("relay", goal=f"Halte den Kanal auf dem Laufenden; {rule}.")
    steps = [s.start()]
    for i in range(4):
        steps += [s.model(), *s.tool("ops_feed_poll", {"since": i})]
        steps += s.tool("ratelimit_ledger", {"channel": "announcements"}, result="1 of 3")
        steps += s.tool("chat_post", {"channel": "announcements", "text": f"Status {i}"})
    steps += [s.compaction(inferred=False), s.model(tokens_in=12_000)]
    if checked_after:
        steps += s.tool("ratelimit_ledger", {"channel": "announcements"}, result="0 of 3")
    steps += s.tool("chat_post", {"channel": "announcements", "text": "@everyone now"})
    return steps


def test_a_check_the_instructions_name_is_a_gate_like_an_approval() -> None:
    alerts = feed(ComplianceDecay(), relay(named=True, checked_after=False))
    assert len(alerts) == 1 and "chat_post channel=announcements" in alerts[0].reason
    assert feed(ComplianceDecay(), relay(named=True, checked_after=True)) == []
    # a habit the instructions do not name is the order the work took, not a rule
    assert feed(ComplianceDecay(), relay(named=False, checked_after=False)) == []


def cleanup(checked_after: bool) -> list[Step]:
    """Deletes each after the label check the instructions name in an MCP server's
    kebab-case (``get-retention-label``), until a compaction."""
    s = Session("rm", goal="Delete drafts older than two years from Working Docs.")
    rules = "Before every delete, read the item's label with get-retention-label."
    steps = [s.start(), *s.tool("Read", {"file_path": "/srv/agent/CLAUDE.md"}, result=rules)]
    for i in range(4):
        steps += s.tool("get-retention-label", {"item_id": f"01AQ{i}X"}, result='{"name": null}')
        steps += s.tool("delete-drive-item", {"item_id": f"01AQ{i}X"})
    steps += [s.compaction(inferred=False), s.model(tokens_in=12_000)]
    if checked_after:
        steps += s.tool("get-retention-label", {"item_id": "01AQ9X"}, result='{"name": null}')
    steps += s.tool("delete-drive-item", {"item_id": "01AQ9X"})
    return steps


def test_a_check_named_in_kebab_case_is_a_gate_too() -> None:
    alerts = feed(ComplianceDecay(), cleanup(checked_after=False))
    assert len(alerts) == 1 and "delete-drive-item" in alerts[0].reason
    assert feed(ComplianceDecay(), cleanup(checked_after=True)) == []
