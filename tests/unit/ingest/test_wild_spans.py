"""Instrumentations in the wild that trajwatch did not read, and conversations whose later
turns were lost: Claude Code's own spans, Google ADK's, and one trace per turn.

The spans are made with the real OpenTelemetry SDK (the attribute names as Claude Code and
ADK write them, see ``ingest/semconv/dialects.py``), encoded by the OTLP exporter's encoder and
fed to the pipeline on a real store; the ADK recording is a real export.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, Status, StatusCode

from ingest.formats.otlp_json import decode_otlp_json
from ingest.pipeline.engine import Pipeline
from ingest.semconv.spans import spans_to_drafts
from models.records import Step
from models.store import Store
from tests.support.paths import CORPUS
from tests.unit.ingest.test_dialects import Run, kinds, one
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

RECORDINGS = CORPUS / "recordings" / "otlp"
ADK_RECORDING = RECORDINGS / "agentevals-dev__agentevals__adk_py_v1_default_S2.json.xz"
KAGENT_EXPORT = RECORDINGS / "agentevals-dev__agentevals__tempo_export_with_batches.json.xz"


def feed(store: Store, *runs: Run, pipeline: Pipeline | None = None) -> Pipeline:
    """Each run's spans as one OTLP request (one export batch), in order, then close."""
    pipeline = pipeline or Pipeline(store, settings=Settings(lateness_ms=1_000_000))
    for i, run in enumerate(runs):
        data = run.request().SerializeToString()
        pipeline.feed_otlp_proto(data, source="test", location=f"r@{i}", partition="0")
    pipeline.close()
    return pipeline


def of_kind(steps: list[Step], kind: str) -> list[Step]:
    return [s for s in steps if s.kind == kind]


# -- Claude Code -------------------------------------------------------------------------

CLAUDE_SESSION = "5f2c7a1e-0d4b-4c1e-9a57-2b8f0e6d1c3a"


def claude_code_turn(
    run: Run, prompt: str, tools: list[tuple[str, dict[str, Any], str, str | None]]
) -> None:
    """One Claude Code interaction: a model request before each tool and one after.
    ``tools``: (tool name, parameter attributes, output, execution error or None)."""
    session = {"session.id": CLAUDE_SESSION}

    def llm_request(stop: str, cached: int) -> None:
        run.leaf(
            "claude_code.llm_request",
            {
                **session,
                "span.type": "llm_request",
                "model": "claude-sonnet-4-5",
                "input_tokens": 3,
                "cache_read_tokens": cached,
                "cache_creation_tokens": 400,
                "output_tokens": 120,
                "stop_reason": stop,
                "success": True,
            },
        )

    with run.span("claude_code.interaction", {**session, "user_prompt": prompt}):
        for i, (name, params, output, error) in enumerate(tools):
            llm_request("tool_use", 20_000 + 1_000 * i)
            use_id = f"toolu_{len(prompt):03d}{i:02d}"
            attributes = {**session, "tool_name": name, "tool_use_id": use_id, **params}
            with run.span("claude_code.tool", attributes) as tool:
                with run.span("claude_code.tool.blocked_on_user", {"decision": "accept"}):
                    pass
                execution = {"success": error is None, **({"error": error} if error else {})}
                with run.span("claude_code.tool.execution", execution) as span:
                    if error:
                        span.set_status(Status(StatusCode.ERROR, error))
                tool.add_event("tool.output", {"output": output}, timestamp=run.tick())
        llm_request("end_turn", 30_000)


def test_claude_code_spans_are_one_session_of_model_and_tool_calls(store: Store) -> None:
    first, second = Run("claude-code"), Run("claude-code")
    claude_code_turn(
        first,
        "Make the failing test in tests/test_io.py pass",
        [
            ("Bash", {"full_command": "pytest -q tests/test_io.py"}, "1 failed", "Exit code 1"),
            ("Edit", {"file_path": "src/io.py"}, "", None),
            ("Bash", {"full_command": "pytest -q tests/test_io.py"}, "3 passed", None),
        ],
    )
    second.now = first.now
    claude_code_turn(
        second, "Now run the linter", [("Bash", {"full_command": "ruff check ."}, "ok", None)]
    )
    feed(store, first, second)

    (info,) = store.sessions()
    assert info.session_id == CLAUDE_SESSION  # every step in the one session
    steps = store.steps(CLAUDE_SESSION)
    assert not of_kind(steps, "error")  # the failed execution is the tool's result
    models = of_kind(steps, "model_call")
    assert len(models) == 6
    assert models[0].tokens_in == 3 + 20_000 + 400 and models[0].tokens_out == 120
    assert models[0].model == "claude-sonnet-4-5" and models[0].finish_reason == "tool_use"
    calls, results = of_kind(steps, "tool_call"), of_kind(steps, "tool_result")
    assert [c.tool for c in calls] == ["Bash", "Edit", "Bash", "Bash"]  # one per tool span
    assert json.loads(calls[0].arguments or "") == {"command": "pytest -q tests/test_io.py"}
    assert json.loads(calls[1].arguments or "") == {"file_path": "src/io.py"}
    assert all(c.call_id and c.call_id.startswith("toolu_") for c in calls)
    failed = results[0]
    assert (failed.call_id, failed.status) == (calls[0].call_id, "error")
    assert failed.error == "Exit code 1" and failed.result == "1 failed"
    assert [r.status for r in results[1:]] == ["ok", "ok", "ok"]
    assert info.goal == "Make the failing test in tests/test_io.py pass"
    starts, ends = of_kind(steps, "start"), of_kind(steps, "end")
    assert [s.text for s in starts] == [info.goal, "Now run the linter"]
    assert info.ended_ts == ends[-1].ts  # the session ends with its last turn


# -- Google ADK --------------------------------------------------------------------------


def adk_workflow(run: Run, *, call_ids: tuple[str, str]) -> None:
    """ADK 2.x: ``invoke_workflow`` around the root agent, a model call asking for two
    tools run in parallel, their ``execute_tool (merged)`` summary, and the answer."""
    conversation = {"gen_ai.conversation.id": "adk-sess-1"}
    request = {
        "model": "gemini-2.5-flash",
        "config": {"system_instruction": "Answer weather questions using tools."},
        "contents": [{"role": "user", "parts": [{"text": "Weather and time in Paris?"}]}],
    }
    with run.span("invoke_workflow", {"gen_ai.operation.name": "invoke_workflow", **conversation}):
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"}
        with run.span("invoke_agent weather_agent", {**agent, **conversation}):
            run.leaf(
                "call_llm",
                {
                    "gen_ai.system": "gcp.vertex.agent",
                    "gen_ai.request.model": "gemini-2.5-flash",
                    "gcp.vertex.agent.session_id": "adk-sess-1",
                    "gcp.vertex.agent.llm_request": json_text(request),
                    "gcp.vertex.agent.llm_response": json_text(
                        {
                            "content": {"parts": [{"text": "Let me look that up."}]},
                            "finish_reason": "STOP",
                        }
                    ),
                },
            )
            with run.span(
                "execute_tool (merged)",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "(merged tools)",
                    "gen_ai.tool.call.id": "merged-event-1",
                    "gcp.vertex.agent.tool_call_args": "N/A",
                    "gcp.vertex.agent.tool_response": json_text({"id": "merged-event-1"}),
                },
            ):
                for name, call_id, response in (
                    ("get_weather", call_ids[0], {"forecast": "sunny"}),
                    ("get_time", call_ids[1], "14:05"),
                ):
                    run.leaf(
                        f"execute_tool {name}",
                        {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": name,
                            "gen_ai.tool.call.id": call_id,
                            "gcp.vertex.agent.llm_request": "{}",
                            "gcp.vertex.agent.tool_call_args": json_text({"city": "Paris"}),
                            "gcp.vertex.agent.tool_response": json_text(
                                response if isinstance(response, dict) else {"result": response}
                            ),
                        },
                    )


def json_text(value: Any) -> str:
    return json.dumps(value)


def test_adk_tool_arguments_results_and_model_text_are_read() -> None:
    run = Run("adk")
    adk_workflow(run, call_ids=("adk-1", "adk-2"))
    drafts = run.drafts()
    assert kinds(drafts).count("tool_call") == 2  # the merged summary is no call
    weather, time = (d.step for d in drafts if d.step.kind == "tool_call")
    assert json.loads(weather.arguments or "") == {"city": "Paris"} and time.tool == "get_time"
    results = {d.step.tool: d.step.result for d in drafts if d.step.kind == "tool_result"}
    assert results == {"get_weather": '{"forecast":"sunny"}', "get_time": "14:05"}
    model = one(drafts, "model_call").step
    assert model.text == "Let me look that up." and model.finish_reason == "stop"
    assert model.detail["user_message"] == "Weather and time in Paris?"


def test_adk_placeholder_call_ids_are_no_ids_and_the_workflow_is_one_start(
    store: Store,
) -> None:
    run = Run("adk")
    adk_workflow(run, call_ids=("<not specified>", "None"))
    drafts = run.drafts()
    calls = [d for d in drafts if d.step.kind == "tool_call"]
    assert [d.step.call_id for d in calls] == [None, None]
    feed(store, run)
    steps = store.steps("adk-sess-1")
    assert [s.tool for s in of_kind(steps, "tool_call")] == ["get_weather", "get_time"]
    assert len(of_kind(steps, "tool_result")) == 2  # not merged into one
    (start,) = of_kind(steps, "start")  # the wrapper and its agent are one run
    assert not start.detail["subagent"] and len(of_kind(steps, "end")) == 1
    assert one(drafts, "model_call").context == "main"  # the main agent's context window


@pytest.mark.skipif(not ADK_RECORDING.exists(), reason="needs ../shared/corpus")
def test_the_adk_recording_stores_its_tool_arguments_and_results(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'adk.db'}"
    replay([ADK_RECORDING], settings=Settings(db_url=url))
    store = Store.open(url)
    try:
        (info,) = store.sessions()
        steps = store.steps(info.session_id)
    finally:
        store.close()
    calls, results = of_kind(steps, "tool_call"), of_kind(steps, "tool_result")
    assert [c.tool for c in calls] == ["get_weather", "get_time"]
    assert all(json.loads(c.arguments or "") == {"city": "Paris"} for c in calls)
    assert all(r.result and "Paris" in r.result for r in results)
    assert len(of_kind(steps, "start")) == 1
    texts = [m.text for m in of_kind(steps, "model_call")]
    assert texts[-1] == "It is sunny and 21C in Paris; local time is 14:05."


@pytest.mark.skipif(not KAGENT_EXPORT.exists(), reason="needs ../shared/corpus")
def test_a_kagent_export_of_adk_and_openllmetry_spans_gives_one_call_per_call() -> None:
    # Tempo's legacy layout (batches, instrumentationLibrarySpans) renamed here only to
    # reach the spans; reading that layout is the OTLP/JSON decoder's business
    with lzma.open(KAGENT_EXPORT) as raw:
        doc = json.loads(raw.read())
    resource_spans = [
        {
            "resource": batch.get("resource", {}),
            "scopeSpans": [
                {"scope": scoped.get("instrumentationLibrary", {}), "spans": scoped["spans"]}
                for scoped in batch["instrumentationLibrarySpans"]
            ],
        }
        for batch in doc["batches"]
    ]
    decoded = decode_otlp_json({"resourceSpans": resource_spans}, source="tempo")
    assert not decoded.rejects
    drafts = spans_to_drafts(decoded.spans)
    # ADK's call_llm over its generate_content over OpenLLMetry's openai.chat: one call each
    models = [d.step for d in drafts if d.step.kind == "model_call"]
    assert len(models) == 2
    assert (models[1].text or "").startswith("There are two Helm releases")
    (call,) = (d.step for d in drafts if d.step.kind == "tool_call")
    (result,) = (d.step for d in drafts if d.step.kind == "tool_result")
    assert call.tool == "helm_list_releases" and call.call_id == result.call_id
    assert result.result and "NAMESPACE" in result.result


# -- conversations of several turns ------------------------------------------------------


def genai_turn(run: Run, text: str, *, conversation: str = "conv-42") -> None:
    """One turn of a conversation: its own trace, the conversation id on its agent span."""
    messages = json_text([{"role": "user", "parts": [{"type": "text", "content": text}]}])
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "helper",
        "gen_ai.conversation.id": conversation,
        "gen_ai.input.messages": messages,
    }
    with run.span("invoke_agent helper", attributes):
        run.leaf(
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.conversation.id": conversation,
                "gen_ai.usage.input_tokens": 100,
                "gen_ai.input.messages": messages,
            },
        )


TURNS = ("Summarise the incident report", "Shorter, please", "Now in French")


def turn_runs(texts: tuple[str, ...]) -> list[Run]:
    runs: list[Run] = []
    for text in texts:
        run = Run("helper")
        run.now = runs[-1].now + 1_000_000_000 if runs else run.now
        genai_turn(run, text)
        runs.append(run)
    return runs


def test_every_turn_of_a_conversation_keeps_its_start_and_end(store: Store) -> None:
    feed(store, *turn_runs(TURNS))
    steps = store.steps("conv-42")
    starts, ends = of_kind(steps, "start"), of_kind(steps, "end")
    assert [s.text for s in starts] == list(TURNS)
    assert [s.detail.get("turn") for s in starts] == [None, 1, 2]
    assert [e.detail.get("turn_end") for e in ends] == [None, True, True]
    assert len({s.step_id for s in starts + ends}) == 6
    assert steps[-1].kind == "end"  # the session runs to the end of its last turn
    (info,) = store.sessions()
    assert info.goal == TURNS[0] and info.ended_ts == ends[-1].ts


def test_turns_redelivered_after_a_restart_keep_their_ids(store: Store) -> None:
    first, second, third = turn_runs(TURNS)
    feed(store, first, second)
    stored = store.count("steps")
    # a new process: the first two turns again (a re-delivery), then the third
    pipeline = feed(store, first, second, third, pipeline=Pipeline(store))
    steps = store.steps("conv-42")
    assert store.count("steps") == stored + 3  # only the third turn's steps are new
    assert pipeline.stats.duplicates == stored
    assert [s.text for s in of_kind(steps, "start")] == list(TURNS)


def test_openinference_finish_reason_is_read() -> None:
    run = Run()
    run.leaf(
        "llm",
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "m",
            "llm.finish_reason": "length",
        },
    )
    assert one(run.drafts(), "model_call").step.finish_reason == "length"


def test_the_first_turn_owns_the_start_whatever_the_order_of_partitions(store: Store) -> None:
    first, second = turn_runs(TURNS[:2])
    pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000))
    for partition, run in (("b", second), ("a", first)):  # the later turn is read first
        data = run.request().SerializeToString()
        pipeline.feed_otlp_proto(data, source="test", location=partition, partition=partition)
    pipeline.close()
    # (each partition's steps are sequenced as it is released: order them by time)
    starts = sorted(of_kind(store.steps("conv-42"), "start"), key=lambda s: s.ts)
    assert [(s.text, s.detail.get("turn")) for s in starts] == [(TURNS[0], None), (TURNS[1], 1)]


def test_a_session_start_event_and_the_first_turn_are_one_start(store: Store) -> None:
    first, second = turn_runs(TURNS[:2])
    pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000))
    event = {
        "type": "session_start",
        "session_id": "conv-42",
        "seq": 0,
        "ts": (first.exporter.get_finished_spans()[-1].start_time or 0) / 1e9,
        "goal": TURNS[0],
        "policy_id": "support-v1",
    }
    pipeline.feed_event(event, source="events", location="e@0", partition="0")
    feed(store, first, second, pipeline=pipeline)
    starts = of_kind(store.steps("conv-42"), "start")
    assert len(starts) == 2 and starts[0].detail["policy_id"] == "support-v1"
    assert starts[1].detail["turn"] == 1 and "policy_id" not in starts[1].detail


def test_a_workflow_of_several_agents_keeps_them_sub_agents() -> None:
    run = Run("adk")
    workflow = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.conversation.id": "wf-1"}
    with run.span("invoke_workflow", workflow):
        for name in ("researcher", "writer"):
            agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
            with run.span(f"invoke_agent {name}", agent):
                # the context of a call is the agent its span names (ingest.semconv.spans:
                # read from the span alone, so that batching cannot change it)
                run.leaf("chat m", {"gen_ai.operation.name": "chat", "gen_ai.agent.name": name})
            run.leaf("chat unnamed", {"gen_ai.operation.name": "chat"})
    drafts = run.drafts()
    starts = [d for d in drafts if d.step.kind == "start"]
    assert [(d.natural_key, d.step.detail["subagent"]) for d in starts] == [
        ("start", False),
        (None, True),
        (None, True),
    ]
    contexts = [d.context for d in drafts if d.step.kind == "model_call"]
    assert contexts == ["agent:researcher", "main", "agent:writer", "main"]


# -- a session named only by the resource ------------------------------------------------

GEMINI_SESSION = "3c1f9a2e-7b44-4d0e-a1c5-9e8f2b6d4a10"
GEMINI_RESOURCE = {"service.version": "v20.19.0", "session.id": GEMINI_SESSION}
"""Gemini CLI's resource (``packages/core/src/telemetry/sdk.ts``: service name, the Node
version, ``session.id``); its spans come from ``HttpInstrumentation`` and name no session."""


def gemini_request(run: Run, path: str = "/v1internal:streamGenerateContent?alt=sse") -> None:
    """One API request as the HTTP instrumentation traces it: a root CLIENT span."""
    host = "cloudcode-pa.googleapis.com"
    attributes = {
        "http.url": f"https://{host}{path}",
        "http.method": "POST",
        "http.target": path,
        "http.host": f"{host}:443",
        "net.peer.name": host,
        "net.peer.port": 443,
        "http.flavor": "1.1",
        "http.status_code": 200,
    }
    run.leaf("POST", attributes, SpanKind.CLIENT)


def test_requests_named_only_by_their_resource_are_one_session(store: Store) -> None:
    """Each request is a trace of its own: before the resource was read, each was a
    one-step session keyed by its trace id."""
    runs = []
    for _ in range(3):
        run = Run("gemini-cli", GEMINI_RESOURCE)
        gemini_request(run)
        runs.append(run)
    feed(store, *runs)
    steps = store.steps(GEMINI_SESSION)
    assert [s.kind for s in steps] == ["egress"] * 3
    assert {s.egress_host for s in steps} == {"cloudcode-pa.googleapis.com"}
    assert store.count("steps") == 3  # no other session


def test_a_span_naming_a_session_outranks_the_resource(store: Store) -> None:
    """A resource is the whole process: a span of the trace that names a session of its
    own decides for every span of the trace, its children and later batches included."""
    run = Run("gemini-cli", GEMINI_RESOURCE)
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-7"}
    with run.span("invoke_agent", agent):
        run.leaf("chat m", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
        gemini_request(run)
    feed(store, run)
    assert store.count("steps") == len(store.steps("conv-7")) >= 4
    assert store.steps(GEMINI_SESSION) == []
