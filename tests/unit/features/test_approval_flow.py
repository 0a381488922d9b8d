"""Approvals as runtimes and people give them: a decision logged after the call it is
about (Claude Code, Codex), a question answered in the conversation, a chat tool's reply,
a person's own request naming the object of the call."""

from __future__ import annotations

import pytest

from detectors.testing import Session
from features.calls.tool_view import approval_answer
from features.policy.check import Policy, PolicyState
from models.records import Step, StepKind

POLICY = Policy.from_mapping(
    "p",
    {"require_approval_for": [r"\bgit\s+push\b"], "require_approval_answer": False},
)


def _run(steps: list[Step]) -> tuple[list[int], list[int]]:
    """(seqs of the steps that broke the rule, seqs of the steps that honoured it)."""
    state, broke, kept = PolicyState(), [], []
    for st in steps:
        v, h = POLICY.observe(st, state)
        broke += [st.seq] if v else []
        kept += [st.seq] if h else []
    return broke, kept


def _decision(s: Session, call: Step, approved: bool) -> Step:
    step = s.approval("bash", approved=approved)
    return step.with_(call_id=call.call_id)


def test_a_decision_after_the_call_approves_it_and_later_calls_wait_for_theirs() -> None:
    s = Session()
    first = s.call("bash", {"command": "git push origin a"})
    ok1 = _decision(s, first, True)
    second = s.call("bash", {"command": "git push origin b"})
    ok2 = _decision(s, second, True)
    res2 = s.result(second)
    third = s.call("bash", {"command": "git push origin c"})
    res3 = s.result(third)  # no decision between the call and its result: unapproved
    broke, kept = _run([s.start(), first, ok1, second, ok2, res2, third, res3])
    # the first call is judged before the session showed late decisions (then approved)
    assert broke == [first.seq, res3.seq]
    assert kept == [ok1.seq, ok2.seq]


def test_a_denied_late_decision_is_no_violation() -> None:
    s = Session()
    first = s.call("bash", {"command": "git push origin a"})
    steps = [s.start(), first, _decision(s, first, True)]
    second = s.call("bash", {"command": "git push origin b"})
    steps += [second, _decision(s, second, False), s.result(second, status="error")]
    assert _run(steps)[0] == [first.seq]


def _with_user(step: Step, message: str) -> Step:
    return step.with_(detail={"user_message": message})


@pytest.mark.parametrize(
    ("answer", "approved"), [("Ja, passt.", True), ("Nein, noch nicht.", False)]
)
def test_a_question_answered_in_the_conversation(answer: str, approved: bool) -> None:
    s = Session()
    steps = [
        s.start(),
        _with_user(s.model(), "Ship the fix."),
        s.model(text="Darf ich pushen?"),
        _with_user(s.model(), answer),
        *s.tool("bash", {"command": "git push origin fix"}),
    ]
    broke, kept = _run(steps)
    assert bool(kept) is approved and bool(broke) is not approved


def test_the_summary_after_a_compaction_answers_nothing() -> None:
    s = Session()
    steps = [
        s.start(),
        _with_user(s.model(), "Ship the fix."),
        s.model(text="May I push?"),
        s.compaction(),
        _with_user(s.model(), "Summary: ok so far, tests pass"),
        *s.tool("bash", {"command": "git push origin fix"}),
    ]
    assert _run(steps)[0] == [steps[-2].seq]


def test_a_question_asked_after_a_compaction_is_answered_by_the_next_message() -> None:
    """The compaction step held its summary; the agent then asks and the person's next
    message answers it: an approval, not the summary."""
    s = Session()
    steps = [
        s.start(),
        _with_user(s.model(), "Ship the fix."),
        s.compaction(),
        s.model(text="Tests pass. May I push?"),
        _with_user(s.model(), "Yes, go ahead."),
        *s.tool("bash", {"command": "git push origin fix"}),
    ]
    broke, kept = _run(steps)
    assert broke == [] and kept


def test_a_person_asking_for_the_object_of_the_call_approves_it() -> None:
    policy = Policy.from_mapping(
        "p", {"require_approval_for": [r"(?i)^\w*mail\w*\s[\s\S]{0,400}?@(?!acme\.de)\w"]}
    )
    s = Session()
    steps = [
        s.start(),
        _with_user(s.model(), "Summarise the reports."),
        _with_user(s.model(), "Also send it to m.rossi@studio-rossi.it please."),
        *s.tool("send_email", {"to": ["m.rossi@studio-rossi.it"], "body": "x"}),
        *s.tool("send_email", {"to": ["other@vendor.es"], "body": "x"}),
    ]
    state = PolicyState()
    broke = [st.seq for st in steps if policy.observe(st, state)[0]]
    assert broke == [steps[5].seq]
    assert steps[5].kind == StepKind.TOOL_CALL


@pytest.mark.parametrize(
    ("result", "answer"),
    [
        ('User has answered your questions: "Plan: 3 to add. Apply?"="ok apply".', True),
        ('User has answered your questions: "Apply?"="No, wait".', False),
        ('{"reply": "ok apply", "user": "oncall"}', True),
        ("Sí, resérvalo.", True),
        ("はい、お願いします", True),
        ("Nein, noch nicht.", False),
        ("Yesterday the plan changed", None),
    ],
)
def test_approval_answers(result: str, answer: bool | None) -> None:
    assert approval_answer(result) is answer
