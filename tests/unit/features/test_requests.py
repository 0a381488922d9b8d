"""The task of a session is its first substantive request plus what later turns add:
an acknowledgement ("continue", "go on", "yes", an approval) in any language is never it."""

from __future__ import annotations

import pytest

from detectors.intent_drift.detector import IntentDrift
from detectors.testing import Session
from features.text.requests import substantive
from ingest.pipeline.session import updated_info
from models.records import SessionInfo, StepKind


@pytest.mark.parametrize(
    "text",
    [
        "",
        "continue",
        "Continue.",
        "go on",
        "keep going",
        "yes",
        "Yes please, go ahead!",
        "ok do it",
        "LGTM, approved",
        "Sounds good, thanks",
        "weiter bitte",
        "continúa",
        "oui, continue",
        "продолжай",
        "继续",
        "続けて",
        "계속",
        "👍",
        "...",
    ],
)
def test_acknowledgements_ask_for_nothing(text: str) -> None:
    assert not substantive(text)


@pytest.mark.parametrize(
    "text",
    [
        "Fix the failing test in tests/test_io.py",
        "Continue with the migration of the billing tables",
        "Book a table for two at Nopa on Friday",
        "see #5843",
        "also update https://example.com/docs",
        "Füge einen Test hinzu",
        "修复登录页面的错误",
        "yes, but rename the module first",
    ],
)
def test_requests_are_substantive(text: str) -> None:
    assert substantive(text)


def test_substantive_reads_a_bounded_head() -> None:
    assert not substantive("continue " * 100_000)


def _start(text: str, turn: int | None = None) -> object:
    s = Session("t", goal=text)
    step = s.start()
    return step.with_(detail={"turn": turn}) if turn is not None else step


def test_the_session_goal_is_its_first_substantive_request() -> None:
    info = SessionInfo(session_id="t")
    info = updated_info(info, _start("continue"))  # a resumed session's first turn
    assert info.goal is None
    info = updated_info(info, _start("Migrate the billing tables to Postgres", turn=1))
    assert info.goal == "Migrate the billing tables to Postgres"
    info = updated_info(info, _start("go on", turn=2))
    info = updated_info(info, _start("Also drop the legacy views", turn=3))
    assert info.goal == "Migrate the billing tables to Postgres"


def test_a_later_continue_turn_never_becomes_the_drift_goal() -> None:
    s = Session("d", goal="Fix the date parser in dates/parse.py")
    drift = IntentDrift()
    drift.update(s.start())
    later = s._step(StepKind.START, text="continue", detail={"turn": 1})
    drift.update(later)
    assert drift._task.goal == "Fix the date parser in dates/parse.py"
    words = set(drift._task.goal_words)
    drift.update(s._step(StepKind.START, text="also add a test for leap years", detail={"turn": 2}))
    assert drift._task.goal == "Fix the date parser in dates/parse.py"
    assert drift._task.goal_words > words  # what a later turn adds widens the task
