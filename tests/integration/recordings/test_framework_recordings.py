"""Real agent frameworks' own instrumentations, recorded, replayed from ``fixtures/frameworks/``.

Each file there was recorded by ``fixtures/frameworks/record.py`` from the framework's real
agent loop and its real instrumentation package (versions pinned in that folder's
``requirements.txt`` and README), driven by a scripted model: ``healthy`` (the task, two
tool calls, the answer) and ``loop`` (14 identical failing ``run_tests`` calls). Replayed
with the project's own dependencies only, each run must come out as issue 25 asks: every
tool call stored with its arguments, one session, the goal, one start of the run and END
last, no dead letter, no alert on the healthy run and a ``runaway_loop`` on the loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from ingest.formats.otlp_json import decode_otlp_json
from ingest.semconv.spans import operation_of, session_hint
from models.records import Alert, DeadLetter, SessionInfo, Step, StepKind
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

FRAMEWORKS = ROOT / "fixtures" / "frameworks"
NAMES = sorted(p.name for p in FRAMEWORKS.iterdir() if (p / "healthy.otlp.jsonl").exists())

TASKS = {
    "healthy": "What is the weather in Lisbon right now, in Fahrenheit?",
    "loop": "Make the failing test in tests/test_api.py pass",
}
CALLS: dict[str, list[tuple[str, dict[str, object]]]] = {
    "healthy": [("get_weather", {"city": "Lisbon"}), ("celsius_to_fahrenheit", {"celsius": 22})],
    "loop": [("run_tests", {"path": "tests/test_api.py"})] * 14,
}
RESULTS = {"get_weather": "22 C, sunny", "celsius_to_fahrenheit": "71.6 F"}
ANSWER_TOOL = {"smolagents-openinference": "final_answer"}
"""Frameworks whose model answers by a tool call, recorded as one more call."""
WRAPPED_RESULTS = {"adk-content"}
"""Frameworks that hand the model a tool's text return value as ``{"result": <text>}``
(Google ADK's function response), and record that."""
NO_CONTENT = "adk"
"""Google ADK with its telemetry's defaults: no content recorded (tested on its own)."""
WITH_CONTENT = [name for name in NAMES if name != NO_CONTENT]
AGENTS = {
    "openai-agents-openinference": {"healthy": "Weather Assistant", "loop": "Test Fixer"},
    "pydantic-ai": {"healthy": "weather_agent", "loop": "test_fixer"},
    "strands": {"healthy": "weather_agent", "loop": "test_fixer"},
    "adk-content": {"healthy": "weather_agent", "loop": "test_fixer"},
}
"""The agent's name where the framework names agents (the others show ``service.name``)."""


@dataclass
class Run:
    """One recorded run, replayed: its only session, steps and alerts."""

    sessions: list[SessionInfo]
    steps: list[Step]
    alerts: list[Alert]
    dead: list[DeadLetter]

    def kinds(self, kind: StepKind) -> list[Step]:
        return [s for s in self.steps if s.kind == kind]


def replayed(name: str, scenario: str, tmp_path: Path) -> Run:
    """``fixtures/frameworks/<name>/<scenario>.otlp.jsonl`` replayed with every detector."""
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    replay(
        [FRAMEWORKS / name / f"{scenario}.otlp.jsonl"],
        settings=Settings(db_url=url),
        detectors=detectors,
    )
    with Store.open(url) as store:
        sessions = store.sessions()
        steps = [step for s in sessions for step in store.steps(s.session_id)]
        return Run(sessions, steps, store.alerts(), store.dead_letters())


def _expected_tools(name: str, scenario: str) -> list[str]:
    tools = [tool for tool, _ in CALLS[scenario]]
    return [*tools, ANSWER_TOOL[name]] if name in ANSWER_TOOL else tools


def _result(name: str, text: str) -> str:
    return json.dumps({"result": text}) if name in WRAPPED_RESULTS else text


def test_every_framework_recorded() -> None:
    """The recordings are all there (a framework dropped by a re-recording fails here)."""
    assert set(NAMES) >= {
        "adk",
        "adk-content",
        "langgraph-openinference",
        "langgraph-openllmetry",
        "openai-agents-openinference",
        "smolagents-openinference",
        "llama-index-openinference",
        "pydantic-ai",
        "strands",
    }


@pytest.mark.parametrize("scenario", ["healthy", "loop"])
@pytest.mark.parametrize("name", WITH_CONTENT)
def test_run_is_one_session_with_every_call(name: str, scenario: str, tmp_path: Path) -> None:
    """One session, its goal the user's task, each tool call stored with its arguments
    and its result, one start of the run, END last, no dead letter."""
    run = replayed(name, scenario, tmp_path)
    assert run.dead == []
    (session,) = run.sessions
    assert session.goal == TASKS[scenario]
    calls = run.kinds(StepKind.TOOL_CALL)
    assert [c.tool for c in calls] == _expected_tools(name, scenario)
    for call, (_, arguments) in zip(calls, CALLS[scenario], strict=False):
        assert call.arguments is not None and json.loads(call.arguments) == arguments
    results = run.kinds(StepKind.TOOL_RESULT)
    assert len(results) == len(calls)
    for call, result in zip(calls, results, strict=True):
        if call.tool in RESULTS:
            assert result.result == _result(name, RESULTS[call.tool])
        elif call.tool == "run_tests":
            text = "FAILED tests/test_api.py::test_retry - AssertionError: expected 3 retries"
            assert result.result is not None
            assert result.result.startswith(_result(name, text)[: len(text) + 12])
        assert result.call_id == call.call_id
    runs = [s for s in run.kinds(StepKind.START) if not s.detail.get("subagent")]
    assert len(runs) == 1
    assert run.steps[-1].kind == StepKind.END
    assert len(run.kinds(StepKind.MODEL_CALL)) == len(CALLS[scenario]) + 1
    if name in AGENTS:
        assert session.agent == AGENTS[name][scenario]


def test_langgraph_openinference_graph_is_the_run(tmp_path: Path) -> None:
    """LangGraph through OpenInference: the graph's root CHAIN span is the run (its start
    first, its END last); each execution of the ``agent`` node (an AGENT span under it) is
    a step of that run, never its start or end (issue 25 item 2)."""
    run = replayed("langgraph-openinference", "loop", tmp_path)
    starts = run.kinds(StepKind.START)
    assert run.steps[0] is starts[0] and not starts[0].detail.get("subagent")
    assert len(starts) == 1 + 15  # the run, and the agent node's 15 executions
    assert all(s.detail.get("subagent") for s in starts[1:])
    assert len(run.kinds(StepKind.END)) == 1 and run.steps[-1].kind == StepKind.END
    assert [c.call_id for c in run.kinds(StepKind.TOOL_CALL)] == [
        r.call_id for r in run.kinds(StepKind.TOOL_RESULT)
    ]


@pytest.mark.parametrize("scenario", ["healthy", "loop"])
def test_adk_without_content_capture(scenario: str, tmp_path: Path) -> None:
    """Google ADK 2.13 with its defaults records tool names only: every call is stored,
    its arguments unknown - and unknown is never equal, so even the 14 identical calls
    raise no loop alert (issue 25 item 6: the README tells ADK users to turn content on;
    ``adk-content`` is the same loop with it on, and it is caught)."""
    run = replayed("adk", scenario, tmp_path)
    assert run.dead == []
    (session,) = run.sessions
    assert session.agent == {"healthy": "weather_agent", "loop": "test_fixer"}[scenario]
    calls = run.kinds(StepKind.TOOL_CALL)
    assert [c.tool for c in calls] == _expected_tools("adk", scenario)
    assert all(c.arguments is None and c.detail["arguments_unrecorded"] for c in calls)
    assert run.steps[-1].kind == StepKind.END
    assert run.alerts == []


@pytest.mark.parametrize("name", NAMES)
def test_healthy_run_raises_no_alert(name: str, tmp_path: Path) -> None:
    assert replayed(name, "healthy", tmp_path).alerts == []


@pytest.mark.parametrize("name", WITH_CONTENT)
def test_looping_run_is_a_runaway_loop(name: str, tmp_path: Path) -> None:
    """14 identical failing calls: ``runaway_loop``, up to critical, and nothing else."""
    run = replayed(name, "loop", tmp_path)
    assert {a.detector for a in run.alerts} == {"runaway_loop"}
    assert "critical" in {a.severity for a in run.alerts}


def test_every_run_together_is_one_session_each(tmp_path: Path) -> None:
    """All the recordings replayed into one store (as one serve receives them): one
    session a run, none merged with another framework's, no dead letter."""
    files = sorted(FRAMEWORKS.glob("*/*.otlp.jsonl"))
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    replay(
        files,
        settings=Settings(db_url=url),
        detectors=detector_set(load_config(ROOT / "trajwatch.toml")),
    )
    with Store.open(url) as store:
        sessions = store.sessions()
        assert store.dead_letters() == []
        ends = [store.steps(s.session_id)[-1].kind for s in sessions]
    assert len(sessions) == len(files) == 2 * len(NAMES)
    assert ends == [StepKind.END] * len(files)


@pytest.mark.parametrize("name", ["langgraph-openinference", "langgraph-openllmetry"])
def test_langgraph_spans_each_name_their_thread(name: str) -> None:
    """Spans arrive children first, the root (which OpenLLMetry alone marks with
    ``gen_ai.conversation.id``) last: live, a step whose span does not name its thread is
    released under its trace id (the live suite split OpenLLMetry's loop so, and missed its
    critical kill). Every step's span names the thread itself: OpenInference as
    ``session.id``, OpenLLMetry as ``traceloop.association.properties.thread_id``."""
    for scenario in ("healthy", "loop"):
        text = (FRAMEWORKS / name / f"{scenario}.otlp.jsonl").read_text()
        spans = decode_otlp_json(text, source="test").spans
        steps = [s for s in spans if operation_of(s) in {"model", "tool"}]
        assert len(steps) == 2 * len(CALLS[scenario]) + 1
        thread = name.removeprefix("langgraph-") + "-" + scenario
        assert {session_hint(s, None) for s in steps} == {thread}
