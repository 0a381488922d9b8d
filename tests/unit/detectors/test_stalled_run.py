"""stalled_run (issue 29): a session silent mid-call past its cadence and its call's
timeout is raised once, with the resume action; a slow call that returns, a person's wait,
a turn that ended and a session that ended stay quiet."""

from __future__ import annotations

from detectors.stalled_run.detector import StalledRun
from detectors.testing import Session
from models.records import Action, Alert, Step, StepKind


def feed(steps: list[Step], detector: StalledRun | None = None) -> list[Alert]:
    detector = detector or StalledRun()
    return [a for step in steps for a in detector.update(step)]


def working(s: Session) -> list[Step]:
    steps = [s.start(), s.model(finish_reason="tool_use")]
    for i in range(5):
        steps += s.tool("bash", {"command": f"pytest -q tests/t{i}.py"}, seconds=30)
        steps.append(s.model(finish_reason="tool_use"))
    return steps


def quiet(s: Session, minutes: tuple[int, ...] = (5, 10, 20, 40, 80)) -> list[Step]:
    return [s.silence(m * 60) for m in minutes]


def test_a_call_without_result_silent_past_the_floor_is_raised_once() -> None:
    s = Session("dead")
    steps = [*working(s), s.checkpoint("ckpt-7", "3a2180b6803b")]
    call = s.call("bash", {"command": "npm ci && npm run build"})
    alerts = feed([*steps, call, *quiet(s)])
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert.action == Action.RESUME and alert.onset_step_id == call.step_id
    assert alert.raised_seq == call.seq + 3  # the 20-minute silence: past the 15-minute floor
    assert alert.checkpoint_id == "ckpt-7"
    assert "checkpoint ckpt-7" in alert.reason and "3a2180b6803b" in alert.reason
    assert "`bash npm ci && npm run build`" in alert.reason


def test_a_declared_timeout_moves_the_bound() -> None:
    s = Session("slow")
    call = s.call("shell", {"command": ["bash", "-lc", "make release"], "timeout_ms": 2_400_000})
    steps = [*working(s), call, *quiet(s, (5, 10, 20, 40))]
    detector = StalledRun()
    assert feed(steps, detector) == []  # 40 min < 1.25 x 40 min
    assert 0 < detector.score < 1
    assert len(feed([s.silence(80 * 60)], detector)) == 1


def test_a_slow_call_that_returns_is_quiet() -> None:
    s = Session("slow")
    call = s.call("bash", {"command": "make release"})
    steps = [*working(s), call, *quiet(s, (5, 10))]
    steps += [s.result(call, seconds=1), s.model(finish_reason="tool_use")]
    detector = StalledRun()
    assert feed(steps, detector) == [] and detector.score == 0.0


def test_waiting_for_a_person_is_quiet() -> None:
    for tool, args in (
        ("AskUserQuestion", {"questions": [{"question": "Run the migration now?"}]}),
        ("shell", {"command": ["git", "push"], "with_escalated_permissions": True}),
    ):
        s = Session("human")
        assert feed([*working(s), s.call(tool, args), *quiet(s, (5, 10, 20, 40, 80, 160))]) == []


def test_a_traced_request_for_a_person_is_quiet_and_a_traced_call_is_not() -> None:
    for name, human, fires in (("slack__request_approval", True, False), ("shell", False, True)):
        s = Session("traced")
        model = s.model(finish_reason="tool_calls")
        request = {"name": name, "id": "call_1"}
        if human:
            request["human"] = True
        model = model.with_(detail={"tool_requests": [request]})
        alerts = feed([*working(s), model, *quiet(s)])
        assert bool(alerts) is fires, name


def test_a_model_that_never_answers_a_result_is_raised() -> None:
    s = Session("model")
    steps = working(s)[:-1]  # the last result, and no model call after it
    alerts = feed([*steps, *quiet(s)])
    assert len(alerts) == 1 and "a model answer" in alerts[0].reason


def test_an_ended_turn_or_session_is_quiet() -> None:
    s = Session("over")
    assert feed([*working(s), s.model(text="Done.", finish_reason="end_turn"), *quiet(s)]) == []
    s = Session("ended")
    assert feed([*working(s), s.end(), *quiet(s)]) == []


def test_the_cadence_raises_the_bound() -> None:
    """A session whose steps come 10 minutes apart is not stalled after 20 minutes."""
    s = Session("sparse")
    steps = [s.start()]
    for i in range(4):
        call = s.call("bash", {"command": f"make step{i}"})
        steps += [call, s.result(call, seconds=600), s.model(finish_reason="tool_use")]
    steps.append(s.call("bash", {"command": "make last"}))
    detector = StalledRun()
    assert feed([*steps, *quiet(s, (5, 10, 20))], detector) == []
    assert len(feed([s.silence(80 * 60)], detector)) == 1


def test_silence_steps_are_what_the_detector_reads_of_time() -> None:
    s = Session("kinds")
    assert s.silence(60).kind == StepKind.SILENCE
