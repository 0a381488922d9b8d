"""Agent frameworks' own instrumentations, replayed from ``fixtures/spans/``.

Each fixture is written from the instrumentation's source at a pinned version (its
folder's README says which); replaying it must store what the run did - every tool call,
one session a run, the goal, END last - and raise the alerts the run deserves, no others.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from detectors.intent_drift.detector import IntentDrift
from models.records import Alert, DeadLetter, SessionInfo, Step, StepKind
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

SPANS = ROOT / "fixtures" / "spans"


@dataclass
class Replayed:
    sessions: dict[str, SessionInfo]
    steps: dict[str, list[Step]]
    alerts: list[Alert]
    dead: list[DeadLetter]

    def kinds(self, session: str, kind: StepKind) -> list[Step]:
        return [s for s in self.steps[session] if s.kind == kind]

    def detectors(self, session: str) -> set[str]:
        return {a.detector for a in self.alerts if a.session_id == session}


def replayed(folder: str, tmp_path: Path) -> Replayed:
    """The fixture folder replayed with every detector, as ``trajwatch replay`` does."""
    url = f"sqlite:///{tmp_path / 'replay.db'}"
    files = sorted(p for p in (SPANS / folder).iterdir() if p.name != "README.md")
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    replay(files, settings=Settings(db_url=url), detectors=detectors)
    with Store.open(url) as store:
        sessions = {s.session_id: s for s in store.sessions()}
        return Replayed(
            sessions=sessions,
            steps={sid: store.steps(sid) for sid in sessions},
            alerts=store.alerts(),
            dead=store.dead_letters(),
        )


def test_copilot_cli_raw_file_is_spans(tmp_path: Path) -> None:
    """Copilot CLI's ``otel-raw.jsonl``: bare ``ResourceSpans`` objects, pretty-printed
    back to back, are span batches (they were session events: a dead letter each)."""
    run = replayed("copilot-cli", tmp_path)
    assert run.dead == []
    (session,) = run.sessions
    assert session == "0e5c1f0a-7d1e-4c55-9a51-3c2f7e1d9b10"
    goal = "Add input validation to parseConfig in src/config.ts and make the tests pass"
    assert run.sessions[session].goal == goal  # the first model call's user message
    calls = run.kinds(session, StepKind.TOOL_CALL)
    assert [c.tool for c in calls] == ["view", "view", "edit", "bash"]
    assert len(run.kinds(session, StepKind.TOOL_RESULT)) == 4
    assert len(run.kinds(session, StepKind.MODEL_CALL)) == 5
    assert run.steps[session][-1].kind == StepKind.END
    assert run.alerts == []


def test_openllmetry_langgraph(tmp_path: Path) -> None:
    """OpenLLMetry >= 0.50 puts LangChain's callback JSON (``inputs``, ``input_str``,
    ``kwargs.tool_call_id``, ``metadata``, a serialised ``ToolMessage``) in
    ``gen_ai.tool.call.arguments``/``result``: unwrapped, the same call is the same action
    and an edit keeps its path. The graph span (no input) and the root chain under it
    (the user's message) are one run: one start, with the goal."""
    run = replayed("openllmetry-langgraph", tmp_path)
    assert run.dead == []
    assert set(run.sessions) == {"thread-01", "thread-02"}
    loop, edit = run.sessions["thread-01"], run.sessions["thread-02"]
    assert loop.goal == "Make the failing test in tests/test_api.py pass"
    assert edit.goal == "Fix the off-by-one error in src/pager.py"
    for session in run.sessions:
        assert len(run.kinds(session, StepKind.START)) == 1
        assert run.steps[session][-1].kind == StepKind.END
    calls = run.kinds("thread-01", StepKind.TOOL_CALL)
    assert len(calls) == 15
    assert {c.action for c in calls[1:]} == {'run_tests(path="tests/test_api.py")'}
    assert all(c.call_id and c.call_id.startswith("call_") for c in calls)
    results = run.kinds("thread-01", StepKind.TOOL_RESULT)
    assert results[1].result.startswith("FAILED tests/test_api.py::test_retry")
    loops = [a for a in run.alerts if a.session_id == "thread-01"]
    assert {a.detector for a in loops} == {"runaway_loop"}
    assert "critical" in {a.severity for a in loops}
    written = run.kinds("thread-02", StepKind.TOOL_CALL)[1]
    assert written.tool == "write_file" and '"path":"src/pager.py"' in written.arguments
    assert run.detectors("thread-02") == {"premature_completion"}


def test_openinference_llama_index(tmp_path: Path) -> None:
    """Each turn of a LlamaIndex tool-calling agent has two LLM spans; the message
    assembly (``_prepare_chat_with_tools``: no tokens, no output) is no model call."""
    run = replayed("openinference-llama-index", tmp_path)
    assert run.dead == []
    (session,) = run.sessions
    models = run.kinds(session, StepKind.MODEL_CALL)
    assert len(models) == 3
    goal = "How many open issues labelled bug does the payments repo have?"
    assert run.sessions[session].goal == goal  # no start carries it: the first model call
    assert all(m.tokens_in and m.tokens_out == 30 for m in models)
    assert [c.tool for c in run.kinds(session, StepKind.TOOL_CALL)] == [
        "search_issues",
        "get_issue",
    ]
    assert run.alerts == []


def test_openinference_openai_agents(tmp_path: Path) -> None:
    """The OpenAI Agents SDK through OpenInference: the agent's name is ``agent.name`` (not
    the resource's ``service.name``), the task the model calls' first user message - also
    on a Responses model's spans, which number their input messages from 1."""
    run = replayed("openinference-openai-agents", tmp_path)
    assert run.dead == []
    by_agent = {info.agent: info for info in run.sessions.values()}
    assert set(by_agent) == {"Travel Planner", "Support Agent"}
    assert by_agent["Travel Planner"].goal == (
        "Find a hotel in Lisbon for 12-14 June under 150 EUR a night"
    )
    support = by_agent["Support Agent"]
    assert support.goal == "Why was order 8812 charged twice?"
    (first, *_) = run.kinds(support.session_id, StepKind.MODEL_CALL)
    assert first.detail["user_message"] == "Why was order 8812 charged twice?"
    assert run.alerts == []


def test_openinference_smolagents_final_answer(tmp_path: Path) -> None:
    """smolagents' ``final_answer`` tool call is the answer: a summary of a fetched page,
    made of its words, is judged as an answer, not weighed as an action the page steered
    ("possible prompt injection")."""
    run = replayed("openinference-smolagents", tmp_path)
    assert run.dead == []
    (session,) = run.sessions
    calls = run.kinds(session, StepKind.TOOL_CALL)
    assert [c.tool for c in calls] == [
        "web_search",
        "visit_webpage",
        "visit_webpage",
        "final_answer",
    ]
    assert "HBM bandwidth" in calls[-1].arguments
    drift = IntentDrift()
    scores = {}
    for step in run.steps[session]:
        assert drift.update(step) == []
        scores[step.step_id] = drift.score
    assert scores[calls[-1].step_id] == 0.0  # was 0.125: a weight of 1 "from the page"
    assert run.alerts == []


def test_adk_without_content_unknown_is_never_equal(tmp_path: Path) -> None:
    """ADK 2.x records tool names only (no content capture): every call's arguments are
    unknown, and unknown is never equal - seven reads of seven files are no loop, paying
    the return flight after the outbound one is no duplicate payment."""
    run = replayed("adk-no-content", tmp_path)
    assert run.dead == []
    reads = run.kinds("sess-files-0001", StepKind.TOOL_CALL)
    assert [c.tool for c in reads] == ["read_file"] * 7
    assert all(c.arguments is None and c.detail["arguments_unrecorded"] for c in reads)
    pays = [c for c in run.kinds("sess-trip-0002", StepKind.TOOL_CALL) if c.tool == "send_payment"]
    assert len(pays) == 2
    assert run.alerts == []
