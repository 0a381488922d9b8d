"""The session's stored goal: the outermost start's text, else the first model call's
user message (issue 25, item 7)."""

from __future__ import annotations

from ingest.pipeline.session import updated_info
from models.records import SessionInfo, Step, StepKind


def _step(kind: StepKind, ts: int, *, text: str | None = None, **detail: object) -> Step:
    return Step(step_id=f"s/{ts}", session_id="s", kind=kind, ts=ts, text=text, detail=detail)


def _goal(*steps: Step) -> str | None:
    info = SessionInfo(session_id="s")
    for step in steps:
        info = updated_info(info, step)
    return info.goal


def test_start_goal_wins_over_model_calls() -> None:
    start = _step(StepKind.START, 1, text="Fix the build")
    model = _step(StepKind.MODEL_CALL, 2, user_message="something else")
    assert _goal(start, model) == "Fix the build"


def test_goal_falls_back_to_first_model_call_with_a_user_message() -> None:
    steps = (
        _step(StepKind.START, 1),  # the root span carries no input
        _step(StepKind.MODEL_CALL, 2),  # no user message recorded
        _step(StepKind.MODEL_CALL, 3, user_message="Book a table for two"),
        _step(StepKind.MODEL_CALL, 4, user_message="a sub-agent's task"),
    )
    assert _goal(*steps) == "Book a table for two"
    assert _goal(*steps[1:]) == "Book a table for two"  # no start at all


def test_blank_user_message_is_no_goal() -> None:
    assert _goal(_step(StepKind.MODEL_CALL, 1, user_message="  ")) is None
