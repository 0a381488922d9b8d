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
