"""Spans of OpenLLMetry, LangSmith, the Vercel AI SDK, pydantic-ai and the OpenAI Agents SDK
(through Logfire) become the same steps as GenAI-convention spans.

Each run is made with the real OpenTelemetry SDK, with the attributes as each library
writes them (names from the libraries' sources, listed in ``ingest/semconv/dialects.py``), then
encoded by the OTLP exporter's encoder and decoded by ours, as the service receives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from features.calls.step_features import features_of
from ingest.decoded import STATUS_ERROR, Draft, SpanRecord
from ingest.formats.otlp_json import to_otlp_json
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.semconv.dialects import restate, to_genai
from ingest.semconv.spans import spans_to_drafts
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.cli.main import main
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

T0 = 1_767_000_000_000_000_000


class Run:
    """One traced run: nested spans on a simulated clock, 1 ms a tick."""

    def __init__(self, service: str = "agent", resource: dict[str, Any] | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(
            resource=Resource.create({"service.name": service, **(resource or {})})
        )
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("dialect-test")
        self.now = T0

    def tick(self) -> int:
        self.now += 1_000_000
        return self.now

    @contextmanager
    def span(
        self, name: str, attributes: dict[str, Any], kind: SpanKind = SpanKind.INTERNAL
    ) -> Iterator[trace.Span]:
        span = self.tracer.start_span(
            name, kind=kind, start_time=self.tick(), attributes=attributes
        )
        with trace.use_span(span, end_on_exit=False):
            yield span
        span.end(end_time=self.tick())

    def leaf(
        self, name: str, attributes: dict[str, Any], kind: SpanKind = SpanKind.INTERNAL
    ) -> None:
        with self.span(name, attributes, kind):
            pass

    def request(self) -> Any:
        return encode_spans(self.exporter.get_finished_spans())

    def drafts(self) -> list[Draft]:
        decoded = decode_otlp_proto(self.request().SerializeToString(), source="test")
        assert not decoded.rejects
        return sorted(spans_to_drafts(decoded.spans), key=lambda d: (d.step.ts, d.step.kind))


def kinds(drafts: list[Draft]) -> list[str]:
    return [d.step.kind for d in drafts]


def one(drafts: list[Draft], kind: str) -> Draft:
    found = [d for d in drafts if d.step.kind == kind]
    assert len(found) == 1, (kind, kinds(drafts))
    return found[0]


def tool_message(content: str, call_id: str, status: str = "success") -> dict[str, Any]:
    """A LangChain ToolMessage as ``dumpd`` serialises it."""
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {
            "content": content,
            "tool_call_id": call_id,
            "name": "run_tests",
            "status": status,
            "type": "tool",
        },
    }


def openllmetry_langgraph_run(run: Run, *, repeats: int = 1) -> None:
    """A LangGraph agent traced by OpenLLMetry: the workflow, a LangChain chat model over
    the OpenAI instrumentation's span of the same call, a tool node, a tool."""
    task = "Fix the flaky test in tests/test_api.py"
    with run.span(
        "LangGraph.workflow",
        {
            "traceloop.span.kind": "workflow",
            "traceloop.workflow.name": "LangGraph",
            "traceloop.entity.name": "LangGraph",
            "traceloop.entity.path": "",
            "traceloop.association.properties.session_id": "lg-session-1",
            "traceloop.entity.input": json.dumps(
                {"inputs": {"messages": [["user", task]]}, "tags": [], "metadata": {}}
            ),
        },
    ):
        for i in range(repeats):
            with run.span(
                "ChatOpenAI.chat",
                {
                    "llm.request.type": "chat",
                    "traceloop.workflow.name": "LangGraph",
                    "gen_ai.system": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.prompt.0.role": "system",
                    "gen_ai.prompt.0.content": "You are a careful engineer.",
                    "gen_ai.prompt.1.role": "user",
                    "gen_ai.prompt.1.content": task,
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.content": "I will run the tests.",
                    "gen_ai.completion.0.finish_reason": "tool_calls",
                    "gen_ai.usage.prompt_tokens": 1_000 + 10 * i,
                    "gen_ai.usage.completion_tokens": 20,
                },
                SpanKind.CLIENT,
            ):
                run.leaf(
                    "openai.chat",
                    {
                        "llm.request.type": "chat",
                        "gen_ai.system": "openai",
                        "gen_ai.request.model": "gpt-4o",
                        "gen_ai.usage.prompt_tokens": 1_000 + 10 * i,
                        "gen_ai.usage.completion_tokens": 20,
                    },
                    SpanKind.CLIENT,
                )
            with run.span(
                "tools.task",
                {"traceloop.span.kind": "task", "traceloop.entity.name": "tools"},
            ):
                arguments = {"path": "tests/test_api.py"}
                run.leaf(
                    "run_tests.tool",
                    {
                        "traceloop.span.kind": "tool",
                        "traceloop.entity.name": "run_tests",
                        "traceloop.entity.path": "tools",
                        "traceloop.entity.input": json.dumps(
                            {"input_str": str(arguments), "inputs": None, "tags": []}
                        ),
                        "traceloop.entity.output": json.dumps(
                            {"output": tool_message("1 failed: test_timeout", f"call_{i}", "error")}
                        ),
                    },
                )


def test_openllmetry_langgraph_run() -> None:
    run = Run()
    openllmetry_langgraph_run(run)
    drafts = run.drafts()
    # the task span is a chain: no step; the two spans of one model call: one step
    assert kinds(drafts) == ["start", "model_call", "tool_call", "tool_result", "end"]
    start = one(drafts, "start")
    assert start.step.text == "Fix the flaky test in tests/test_api.py"
    assert start.step.agent == "LangGraph" and start.session_hint == "lg-session-1"
    model = one(drafts, "model_call").step
    assert (model.model, model.tokens_in, model.tokens_out, model.finish_reason) == (
        "gpt-4o",
        1_000,
        20,
        "tool_calls",
    )
    assert model.text == "I will run the tests."
    assert model.detail["user_message"] == "Fix the flaky test in tests/test_api.py"
    call = one(drafts, "tool_call")
    assert call.step.tool == "run_tests" and call.step.call_id == "call_0"
    assert call.natural_key == "tool_call/call_0"
    assert json.loads(call.step.arguments or "") == {"path": "tests/test_api.py"}
    result = one(drafts, "tool_result").step
    assert (result.status, result.result) == ("error", "1 failed: test_timeout")
    assert result.error == "1 failed: test_timeout"


def test_langsmith_run() -> None:
    run = Run()
    goal = "Summarise the open issues labelled bug"
    with run.span(
        "LangGraph",
        {
            "langsmith.span.kind": "chain",
            "gen_ai.operation.name": "chain",
            "langsmith.metadata.thread_id": "thread-9",
            "gen_ai.prompt": json.dumps({"messages": [{"role": "user", "content": goal}]}),
        },
    ):
        run.leaf(
            "ChatPromptTemplate",
            {"langsmith.span.kind": "prompt", "gen_ai.operation.name": "chat"},
        )
        human = {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": goal, "type": "human"},
        }
        run.leaf(
            "ChatAnthropic",
            {
                "langsmith.span.kind": "llm",
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "anthropic",
                "gen_ai.request.model": "claude-sonnet-4",
                "gen_ai.usage.input_tokens": 640,
                "gen_ai.usage.output_tokens": 32,
                "gen_ai.prompt": json.dumps({"messages": [[human]]}),
                "gen_ai.completion": json.dumps(
                    {
                        "generations": [
                            [{"text": "Listing the bugs first.", "type": "ChatGeneration"}]
                        ]
                    }
                ),
            },
            SpanKind.CLIENT,
        )
        run.leaf(
            "list_issues",
            {
                "langsmith.span.kind": "tool",
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.prompt": json.dumps({"input": "{'state': 'open', 'label': 'bug'}"}),
                "gen_ai.completion": json.dumps({"output": "12 issues"}),
            },
        )
    drafts = run.drafts()
    assert kinds(drafts) == ["start", "model_call", "tool_call", "tool_result", "end"]
    start = one(drafts, "start")
    assert start.step.text == goal and start.session_hint == "thread-9"
    model = one(drafts, "model_call").step
    assert model.detail["user_message"] == goal and model.text == "Listing the bugs first."
    assert (model.tokens_in, model.tokens_out) == (640, 32)
    call = one(drafts, "tool_call").step
    assert call.tool == "list_issues"
    assert json.loads(call.arguments or "") == {"state": "open", "label": "bug"}
    assert one(drafts, "tool_result").step.result == "12 issues"


def test_vercel_ai_sdk_run() -> None:
    run = Run()
    goal = "Upgrade lodash to 4.17.21 and run the tests"
    with run.span(
        "ai.generateText",
        {
            "ai.operationId": "ai.generateText",
            "operation.name": "ai.generateText upgrader",
            "ai.telemetry.functionId": "upgrader",
            "ai.telemetry.metadata.sessionId": "s-42",
            "ai.model.id": "gpt-4o",
            "ai.prompt": json.dumps({"system": "You are a coding agent.", "prompt": goal}),
        },
    ):
        run.leaf(
            "ai.generateText.doGenerate",
            {
                "ai.operationId": "ai.generateText.doGenerate",
                "ai.telemetry.metadata.sessionId": "s-42",
                "ai.model.id": "gpt-4o",
                "ai.model.provider": "openai.chat",
                "ai.prompt.messages": json.dumps(
                    [
                        {"role": "system", "content": "You are a coding agent."},
                        {"role": "user", "content": [{"type": "text", "text": goal}]},
                    ]
                ),
                "ai.response.text": "Installing the new version.",
                "ai.response.finishReason": "tool-calls",
                "ai.response.id": "resp-9",
                "ai.usage.promptTokens": 900,
                "ai.usage.completionTokens": 40,
                "gen_ai.system": "openai.chat",
                "gen_ai.request.model": "gpt-4o",
            },
            SpanKind.CLIENT,
        )
        run.leaf(
            "ai.toolCall",
            {
                "ai.operationId": "ai.toolCall",
                "ai.toolCall.name": "bash",
                "ai.toolCall.id": "call_7",
                "ai.toolCall.args": json.dumps({"command": "npm install lodash@4.17.21"}),
                "ai.toolCall.result": json.dumps("added 1 package"),
            },
        )
    drafts = run.drafts()
    assert kinds(drafts) == ["start", "model_call", "tool_call", "tool_result", "end"]
    start = one(drafts, "start")
    assert start.step.text == goal and start.step.agent == "upgrader"
    assert start.session_hint == "s-42"
    assert start.step.detail["system_instructions"] == "You are a coding agent."
    model = one(drafts, "model_call")
    assert model.natural_key == "model_call/resp-9"
    assert (model.step.tokens_in, model.step.tokens_out, model.step.finish_reason) == (
        900,
        40,
        "tool-calls",
    )
    assert model.step.detail["user_message"] == goal
    assert model.step.text == "Installing the new version."
    call = one(drafts, "tool_call")
    assert (call.step.tool, call.step.call_id) == ("bash", "call_7")
    assert call.step.egress_host == "registry.npmjs.org"  # npm install reaches the registry
    assert one(drafts, "tool_result").step.result == "added 1 package"  # JSON.stringify'd


def test_vercel_ai_sdk_v5_prerelease_names() -> None:
    run = Run()
    run.leaf(
        "ai.toolCall",
        {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "search",
            "ai.toolCall.id": "c1",
            "ai.toolCall.input": json.dumps({"q": "lodash changelog"}),
            "ai.toolCall.output": json.dumps(["3 hits"]),
        },
    )
    drafts = run.drafts()
    assert json.loads(one(drafts, "tool_call").step.arguments or "") == {"q": "lodash changelog"}
    assert one(drafts, "tool_result").step.result == '["3 hits"]'


def test_pydantic_ai_early_spans_and_openai_agents_through_logfire() -> None:
    run = Run()
    goal = "Refund order 1234"
    messages = [{"role": "user", "parts": [{"type": "text", "content": goal}]}]
    with run.span(
        "agent run",
        {
            "agent_name": "support",
            "model_name": "gpt-4o",
            "pydantic_ai.all_messages": json.dumps(messages),
        },
    ):
        run.leaf(
            "running tool",
            {
                "gen_ai.tool.name": "refund",
                "gen_ai.tool.call.id": "c1",
                "tool_arguments": json.dumps({"order": 1234}),
                "tool_response": "refunded",
            },
        )
        run.leaf(
            "Function: get_order",
            {"name": "get_order", "input": json.dumps({"order": 1234}), "output": "shipped"},
        )
    drafts = run.drafts()
    assert kinds(drafts) == ["start", "tool_call", "tool_result", "tool_call", "tool_result", "end"]
    start = one(drafts, "start").step
    assert start.text == goal and start.agent == "support"
    calls = [d.step for d in drafts if d.step.kind == "tool_call"]
    assert [(c.tool, c.call_id) for c in calls] == [("refund", "c1"), ("get_order", None)]
    assert [json.loads(c.arguments or "") for c in calls] == [{"order": 1234}, {"order": 1234}]
    results = [d.step.result for d in drafts if d.step.kind == "tool_result"]
    assert results == ["refunded", "shipped"]


def test_an_embedding_call_is_not_a_model_call() -> None:
    run = Run()
    run.leaf(
        "openai.embeddings",
        {
            "llm.request.type": "embedding",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "text-embedding-3-small",
            "gen_ai.usage.prompt_tokens": 12,
        },
        SpanKind.CLIENT,
    )
    assert run.drafts() == []


def test_spans_of_no_dialect_are_passed_through_untouched() -> None:
    run = Run()
    run.leaf(
        "execute_tool bash",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash"},
    )
    spans = decode_otlp_proto(run.request().SerializeToString(), source="t").spans
    assert all(to_genai(span) is span for span in spans)


def test_a_dialect_never_overrides_what_the_span_says_in_genai_terms() -> None:
    # OpenLLMetry's newer LangChain spans carry both spellings: the GenAI ones win
    run = Run()
    run.leaf(
        "execute_tool run_tests",
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "legacy_name",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "run_tests",
            "gen_ai.tool.call.arguments": json.dumps({"path": "a.py"}),
            "traceloop.entity.input": json.dumps({"inputs": {"path": "b.py"}}),
        },
    )
    call = one(run.drafts(), "tool_call").step
    assert call.tool == "run_tests" and json.loads(call.arguments or "") == {"path": "a.py"}


def test_a_langgraph_loop_traced_by_openllmetry_trips_runaway_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The detectors see through the dialect: the same failing test run, eight times
    run = Run()
    openllmetry_langgraph_run(run, repeats=8)
    path = tmp_path / "langgraph.otlp.jsonl"
    path.write_text(json.dumps(to_otlp_json(run.request())) + "\n")
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(path), "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sessions"] == 1 and out["dead_letters"] == 0
    loops = [a for a in out["alerts"] if a["detector"] == "runaway_loop"]
    assert loops, out["alerts"]
    assert {a["session_id"] for a in loops} == {"lg-session-1"}
    critical = [a for a in loops if a["severity"] == "critical"]
    assert critical and critical[0]["action"] == "kill"
    assert "run_tests" in critical[0]["reason"]


GENERATOR = ROOT / "fixtures" / "generate"


def _spans_only_replay(base: Path, dialect: str) -> tuple[dict[str, list[tuple]], list[tuple]]:
    """Generate seed 20261201, one run a scenario, spelled in ``dialect``; replay its span
    files alone with every detector on: each session's step facts and all alerts."""
    out = base / dialect
    subprocess.run(
        [
            sys.executable,
            str(GENERATOR),
            "--seed",
            "20261201",
            "--runs-per-scenario",
            "1",
            "--out",
            str(out),
            "--policies-dir",
            str(base / "policies"),
            "--span-dialect",
            dialect,
        ],
        check=True,
        capture_output=True,
    )
    url = f"sqlite:///{base / f'{dialect}.db'}"
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    replay(sorted(out.glob("*.otlp.binpb*")), settings=Settings(db_url=url), detectors=detectors)
    with Store.open(url) as store:
        steps = {
            s.session_id: [
                (
                    x.step_id,
                    x.kind,
                    x.tool,
                    x.call_id,
                    x.status,
                    x.tokens_in,
                    x.tokens_out,
                    x.model_session,
                    x.egress_host,
                    x.parent_step_id,
                )
                for x in store.steps(s.session_id)
            ]
            for s in store.sessions()
        }
        alerts = sorted(
            (
                a.alert_id,
                a.detector,
                a.severity,
                a.onset_seq,
                a.raised_seq,
                *(e["step_id"] for e in a.evidence),
            )
            for a in store.alerts()
        )
    return steps, alerts


@pytest.mark.slow  # the generator run as a process, twice
def test_the_same_runs_spelled_by_openllmetry_or_the_ai_sdk_give_the_same_steps_and_alerts(
    tmp_path: Path,
) -> None:
    # The generator traces each run with the GenAI conventions and can respell its spans
    # as OpenLLMetry (LangGraph/LangChain) or the Vercel AI SDK would have traced it:
    # read through ingest.semconv.dialects, the steps and the alerts must not change.
    steps, alerts = _spans_only_replay(tmp_path, "genai")
    assert len(steps) == 31 and alerts  # one run a scenario; loops, drift, gaming fire
    for dialect in ("openllmetry", "vercel_ai"):
        other_steps, other_alerts = _spans_only_replay(tmp_path, dialect)
        assert other_steps == steps, dialect
        assert other_alerts == alerts, dialect


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["inputs", "input_str", "messages", "output", "kwargs", "lc", "id"])
            | st.text(max_size=6),
            children,
            max_size=3,
        )
    ),
    max_leaves=12,
)
_dialect_keys = st.sampled_from(
    [
        "traceloop.span.kind",
        "traceloop.entity.name",
        "traceloop.entity.input",
        "traceloop.entity.output",
        "llm.request.type",
        "gen_ai.prompt.0.role",
        "gen_ai.prompt.0.content",
        "gen_ai.completion.0.content",
        "gen_ai.completion.0.finish_reason",
        "langsmith.span.kind",
        "gen_ai.prompt",
        "gen_ai.completion",
        "ai.operationId",
        "ai.toolCall.args",
        "ai.toolCall.result",
        "ai.prompt",
        "ai.prompt.messages",
        "ai.usage.promptTokens",
        "tool_arguments",
        "pydantic_ai.all_messages",
        "name",
        "gcp.vertex.agent.tool_call_args",
        "gcp.vertex.agent.tool_response",
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.llm_response",
        "gen_ai.tool.name",
        "user_prompt",
        "tool_name",
        "tool_use_id",
        "tool_input",
        "full_command",
        "input_tokens",
        "cache_read_tokens",
        "success",
        "error",
    ]
)
_dialect_values = st.one_of(
    st.sampled_from(
        [
            "tool",
            "agent",
            "workflow",
            "llm",
            "chain",
            "prompt",
            "chat",
            "embedding",
            "ai.toolCall",
            "ai.generateText",
            "ai.streamText.doStream",
            "(merged tools)",
            "<not specified>",
        ]
    ),
    _json_like.map(json.dumps),
    st.booleans(),
    st.text(max_size=30),
    st.integers(),
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_dialect_keys, _dialect_values, max_size=6),
    st.sampled_from(
        [
            "x",
            "running tool",
            "agent run",
            "Function: f",
            "a.tool",
            "call_llm",
            "claude_code.interaction",
            "claude_code.llm_request",
            "claude_code.tool",
            "claude_code.tool.execution",
        ]
    ),
    st.booleans(),
)
def test_any_dialect_attributes_map_to_steps_without_raising(
    attributes: dict[str, Any], name: str, root: bool
) -> None:
    span = SpanRecord(
        trace_id="ab" * 16,
        span_id="cd" * 8,
        parent_span_id=None if root else "ef" * 8,
        name=name,
        kind=1,
        start_ns=T0,
        end_ns=T0 + 1,
        attributes=attributes,
    )
    respelled = to_genai(span)
    assert {k: respelled.attributes[k] for k in attributes} == attributes  # nothing overwritten
    for draft in spans_to_drafts([span]):
        assert draft.step.kind in ("start", "end", "model_call", "tool_call", "tool_result")


# -- shapes recorded from the running packages (fixtures/frameworks/) --------------------


def _oi(
    span_id: str,
    parent: str | None,
    kind: str,
    start: int = 0,
    scope: str = "openai_agents",
    **attrs: Any,
) -> SpanRecord:
    """An OpenInference span of ``openinference.instrumentation.<scope>``."""
    return SpanRecord(
        trace_id="t",
        span_id=span_id,
        parent_span_id=parent,
        name=span_id,
        kind=1,
        start_ns=start,
        end_ns=100 - start,
        attributes={"openinference.span.kind": kind, **attrs},
        scope=f"openinference.instrumentation.{scope}",
    )


def test_agents_sdk_root_is_named_through_chain_spans_never_through_a_tool() -> None:
    """The Agents SDK 0.20 puts a CHAIN task span between the trace's root AGENT span and
    the agent's: the root still runs the agent it names; an agent a tool delegated to,
    though it started first, does not name it."""
    spans = [
        _oi("root", None, "AGENT", 0),
        _oi("tool", "root", "TOOL", 1),
        _oi("helper", "tool", "AGENT", 2, **{"agent.name": "Helper"}),
        _oi("task", "root", "CHAIN", 3),
        _oi("agent", "task", "AGENT", 4, **{"agent.name": "Planner"}),
    ]
    by_id = {s.span_id: s for s in restate(spans)}
    assert by_id["root"].attributes["agent.name"] == "Planner"
    assert by_id["task"].attributes.get("agent.name") is None


def _langchain(span_id: str, parent: str | None, kind: str, **attrs: Any) -> SpanRecord:
    return _oi(span_id, parent, kind, scope="langchain", **attrs)


def test_langgraph_through_openinference_graph_tools_and_tool_messages() -> None:
    """openinference-instrumentation-langchain 0.1.80 on LangGraph: the root graph CHAIN is
    the run; a tool's ToolMessage output ``{"type": "tool", "data": ...}`` gives the result,
    the call id and the failure; a one-text-argument tool's arguments come from the call
    its parent ``tools`` task was sent. A root chain of plain LangChain is no run."""
    message = {"content": "boom", "tool_call_id": "call_7", "status": "error", "type": "tool"}
    call = {"name": "run_tests", "args": {"path": "t.py"}, "id": "call_7"}
    spans = [
        _langchain("graph", None, "CHAIN", metadata='{"ls_integration": "langgraph"}'),
        _langchain("tools", "graph", "CHAIN", **{"input.value": json.dumps({"tool_call": call})}),
        _langchain(
            "run_tests",
            "tools",
            "TOOL",
            **{
                "input.value": "t.py",
                "tool.name": "run_tests",
                "output.value": json.dumps({"type": "tool", "data": message}),
            },
        ),
    ]
    by_id = {s.span_id: s for s in restate(spans)}
    assert by_id["graph"].attributes["gen_ai.operation.name"] == "invoke_agent"
    assert "gen_ai.operation.name" not in by_id["tools"].attributes
    tool = by_id["run_tests"]
    assert tool.attributes["gen_ai.tool.call.arguments"] == {"path": "t.py"}
    assert tool.attributes["gen_ai.tool.call.result"] == "boom"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_7"
    assert tool.status_code == STATUS_ERROR
    plain = restate([_langchain("chain", None, "CHAIN", metadata='{"ls_run_depth": 0}')])
    assert "gen_ai.operation.name" not in plain[0].attributes


def test_llama_index_through_openinference_run_and_tool_output() -> None:
    """openinference-instrumentation-llama-index 4.6.1 (llama-index-core 0.14.25): the root
    ``<Agent>.run`` CHAIN is the run; a FunctionTool's ToolOutput gives ``raw_output``, and
    ``is_error`` fails the call."""
    output = {"blocks": [{"text": "no"}], "tool_name": "f", "raw_output": "no", "is_error": True}
    run = replace(_oi("r", None, "CHAIN", scope="llama_index"), name="FunctionAgent.run")
    tool = _oi("x", "r", "TOOL", 1, "llama_index", **{"output.value": json.dumps(output)})
    tool = replace(tool, name="FunctionTool.acall")
    by_id = {s.span_id: s for s in restate([run, tool])}
    assert by_id["r"].attributes["gen_ai.operation.name"] == "invoke_agent"
    assert by_id["x"].attributes["gen_ai.tool.call.result"] == "no"
    assert by_id["x"].status_code == STATUS_ERROR


def test_an_agents_description_is_its_brief_and_the_user_message_its_task() -> None:
    """``gen_ai.agent.description`` (the agent's role, tools and standing rules) is read
    as instructions: the task is the first user message a model call carries, so the
    tools a description lists do not make every call look asked for."""
    run = Run()
    brief = "You are the referrals agent. Tools: inbox_read, http_request. Data stays in the EHR."
    with run.span(
        "invoke_agent referrals",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.description": brief},
    ):
        run.leaf(
            "chat gemini",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [
                        {
                            "role": "user",
                            "parts": [{"type": "text", "content": "Book today's referrals."}],
                        }
                    ]
                ),
            },
        )
    steps = [d.step for d in run.drafts()]
    (start,) = [s for s in steps if s.kind == "start"]
    assert start.text is None and start.detail["system_instructions"] == brief
    assert features_of(next(s for s in steps if s.kind == "model_call")).goal == (
        "Book today's referrals."
    )
