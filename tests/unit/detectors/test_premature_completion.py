"""premature_completion: success claimed over a failed check or an unverified edit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from detectors.premature_completion import PrematureCompletion
from detectors.testing import Session
from models.records import Alert, Severity, Step


def feed(steps: list[Step]) -> list[Alert]:
    d = PrematureCompletion()
    return [a for s in steps for a in d.update(s)]


def edit(s: Session, path: str = "src/app.py") -> tuple[Step, Step]:
    return s.tool("edit_file", {"path": path, "old_text": "a", "new_text": "b"})


def test_last_check_failed() -> None:
    s = Session()
    steps = [
        s.start(),
        *edit(s),
        *s.tool("bash", {"command": "go test ./..."}, ok=False, error="exit status 1"),
    ]
    end = s.end()
    alerts = feed([*steps, end])
    assert [(a.onset_seq, a.severity) for a in alerts] == [(end.seq, Severity.WARN)]
    assert "failed: exit status 1" in alerts[0].reason


def test_failure_reported_in_output_only() -> None:
    s = Session()
    steps = [
        s.start(),
        *s.tool("run_command", {"cmd": "npm run test:unit"}, result="Tests: 2 failed, 40 passed"),
    ]
    assert len(feed([*steps, s.end()])) == 1


def test_edit_after_the_last_check() -> None:
    s = Session()
    steps = [s.start(), *edit(s), *s.tool("bash", {"command": "pytest -q"}), *edit(s, "src/b.py")]
    alerts = feed([*steps, s.end()])
    assert len(alerts) == 1 and "nothing verified the last edit (src/b.py" in alerts[0].reason


def test_no_check_ever() -> None:
    s = Session()
    alerts = feed([s.start(), *edit(s), s.end()])
    assert len(alerts) == 1 and "no test, lint or build ever ran" in alerts[0].reason


@pytest.mark.parametrize(
    "tail",
    [
        # verified: edit then passing tests
        lambda s: [*edit(s), *s.tool("bash", {"command": "cd web && npx vitest run"})],
        # a failing run, fixed, passing run
        lambda s: [
            *edit(s),
            *s.tool("bash", {"command": "pytest"}, ok=False),
            *edit(s),
            *s.tool("bash", {"command": "pytest"}),
        ],
        # docs and notes after the tests need no check
        lambda s: [
            *edit(s),
            *s.tool("bash", {"command": "cargo test"}),
            *edit(s, "CHANGELOG.md"),
            *s.tool("write_file", {"path": "notes/answer.md", "content": "42"}),
        ],
        # research: no code edits at all
        lambda s: [
            *s.tool("web_search", {"query": "x"}),
            *s.tool("python_interpreter", {"code": "open('notes/a.md','w').write('1')"}),
        ],
    ],
)
def test_quiet_when_backed(tail: Callable[[Session], list[Step]]) -> None:
    s = Session()
    assert feed([s.start(), *tail(s), s.end()]) == []


def test_no_claim_no_alert() -> None:
    s = Session()
    steps = [s.start(), *edit(s), s.end(status="failure", claimed_done=False)]
    assert feed(steps) == []


def test_a_check_cancelled_by_a_failing_sibling_verified_nothing() -> None:
    s = Session()
    steps = [s.start(), *s.tool("bash", {"command": "pytest -q"}), *edit(s)]
    # the tests run beside a read that fails: Claude Code cancels the test run
    steps += s.batch(
        [("bash", {"command": "pytest -q"}), ("bash", {"command": "cat notes.txt"})],
        failed=1,
        error="cat: notes.txt: No such file or directory",
    )
    steps.append(s.end())
    (alert,) = feed(steps)
    assert "nothing verified the last edit" in alert.reason
    assert "(src/app.py, step 3)" in alert.reason


def test_a_cancelled_check_leaves_the_failed_one_before_it_the_last() -> None:
    s = Session()
    steps = [s.start(), *edit(s)]
    steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="2 failed")
    steps += s.batch(
        [("bash", {"command": "pytest -q"}), ("bash", {"command": "cat notes.txt"})], failed=1
    )
    steps.append(s.end())
    (alert,) = feed(steps)
    assert alert.reason.endswith("failed: 2 failed")


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        PrematureCompletion(min_edits=0)


# -- turns are not sessions, and OK is not "done" ---------------------------------------


def span_end(s: Session, turn: int | None = None) -> Step:
    """An END as an agent span gives it: status OK, nothing claimed; a later turn's
    carries ``turn`` and ``turn_end`` (the pipeline's marks)."""
    detail: dict[str, object] = {"end_status": "success"}
    if turn:
        detail |= {"turn": turn, "turn_end": True}
    return s.end(claimed_done=None).with_(detail=detail)


def turn_start(s: Session, turn: int, text: str) -> Step:
    return s.start().with_(text=text, detail={"turn": turn})


def test_an_ok_span_end_over_a_failed_test_claims_nothing() -> None:
    s = Session()
    steps = [s.start(), *edit(s), *s.tool("bash", {"command": "pytest -q"}, ok=False)]
    assert feed([*steps, span_end(s)]) == []


def test_early_turns_that_report_a_failure_then_a_fixed_last_turn_stay_quiet() -> None:
    """A conversation of three turns: the first two end on a failing test and a
    question (no claim), the last fixes it and says so with the tests passing."""
    s = Session()
    steps = [s.start(), *edit(s)]
    steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
    steps += [s.model(text="test_parse still fails on leap years. Should I change the API?")]
    steps.append(span_end(s))  # turn 0's end: unmarked, released before turn 1 was known
    steps += [turn_start(s, 1, "yes, change it"), *edit(s, "src/api.py")]
    steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="2 failed")
    steps += [s.model(text="Two tests fail now; the fixture needs a date. Want me to add one?")]
    steps.append(span_end(s, turn=1))
    steps += [turn_start(s, 2, "go on"), *edit(s, "tests/conftest.py")]
    steps += s.tool("bash", {"command": "pytest -q"}, result="41 passed")
    steps += [s.model(text="All tests pass now; the bug is fixed.")]
    steps.append(span_end(s, turn=2))
    assert feed(steps) == []


@pytest.mark.parametrize(
    ("claim", "said"),
    [
        (lambda s: [*s.tool("final_answer", {"answer": "done"})], "called `final_answer`"),
        (lambda s: [s.model(text="The bug is fixed and all tests pass.")], "in its last message"),
    ],
)
def test_a_claim_by_final_answer_tool_or_last_message_is_judged_at_a_span_end(
    claim: Callable[[Session], list[Step]], said: str
) -> None:
    s = Session()
    steps = [s.start(), *edit(s)]
    steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
    steps += [*claim(s), span_end(s)]
    (alert,) = feed(steps)
    assert said in alert.reason and alert.reason.endswith("failed: 1 failed")


def test_a_message_followed_by_more_work_is_not_the_last_word() -> None:
    s = Session()
    steps = [s.start(), *edit(s), s.model(text="Fixed. All tests pass.")]
    steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
    assert feed([*steps, span_end(s)]) == []


def test_a_recorded_not_done_wins_over_the_last_message() -> None:
    s = Session()
    steps = [s.start(), *edit(s), s.model(text="The fix is complete.")]
    assert feed([*steps, s.end(status="failure", claimed_done=False)]) == []


def test_a_later_turn_claiming_again_over_the_same_failure_is_not_reported_twice() -> None:
    s = Session()
    steps = [s.start(), *edit(s)]
    steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
    steps += [s.model(text="All tests pass."), span_end(s)]
    steps += [turn_start(s, 1, "are you sure?"), s.model(text="Yes, the fix is complete.")]
    steps.append(span_end(s, turn=1))
    steps += [turn_start(s, 2, "add a feature"), *edit(s, "src/new.py")]
    steps += [s.model(text="The feature is implemented."), span_end(s, turn=2)]
    alerts = feed(steps)
    assert len(alerts) == 2  # the failed check once, then the new unverified edit
    assert "failed: 1 failed" in alerts[0].reason and "src/new.py" in alerts[1].reason


@pytest.mark.parametrize("path", ["hawaii-packing-list.docx", "grocery list", "q3/report.xlsx"])
def test_documents_an_office_agent_edits_need_no_check(path: str) -> None:
    s = Session()
    steps = [s.start(), *edit(s, path), s.model(text="I have updated the file; the task is done.")]
    assert feed([*steps, span_end(s)]) == []
