"""Recording formats of real runtimes that trajwatch did not read, each at its root:
Strands Agents' span events (the GenAI conventions' event form), Claude Code's server-run
tools and image results, Codex rollouts from before the envelope and image outputs.

The spans are made with the real OpenTelemetry SDK, with the attributes and events as
Strands' tracer writes them (``strands/telemetry/tracer.py``); the transcripts and
rollouts are written line by line as the tools write them (field names from Claude
Code's transcripts and ``codex-rs/protocol``'s ``ResponseItem``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest.formats.claude_code import transcript_drafts
from ingest.formats.codex import is_codex_line, rollout_drafts
from models.store import Store
from tests.unit.ingest.test_dialects import Run, kinds, one
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

# -- Strands Agents: content in span events ---------------------------------------------


def strands_run(run: Run, *, latest: bool) -> None:
    """A Strands agent run: a model call asking for a tool, the tool (failing), a model
    call answering. ``latest``: ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``
    (one details event per span) instead of one event per message."""
    goal = "Count the lines of notes.txt"
    common = {"gen_ai.system": "strands-agents", "session.id": "strands-1"}
    details = "gen_ai.client.inference.operation.details"

    def user(span: Any, text: str) -> None:
        content = json.dumps([{"text": text}])
        if latest:
            messages = [{"role": "user", "parts": [{"type": "text", "content": text}]}]
            span.add_event(details, {"gen_ai.input.messages": json.dumps(messages)})
        else:
            span.add_event("gen_ai.user.message", {"content": content})

    def choice(span: Any, text: str, finish: str) -> None:
        if latest:
            out = [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": text}],
                    "finish_reason": finish,
                }
            ]
            span.add_event(details, {"gen_ai.output.messages": json.dumps(out)})
        else:
            span.add_event(
                "gen_ai.choice", {"message": json.dumps([{"text": text}]), "finish_reason": finish}
            )

    agent = {
        **common,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "counter",
        "gen_ai.agent.system_prompt": "You count lines.",
    }
    with run.span("invoke_agent counter", agent) as root:
        user(root, goal)
        chat = {
            **common,
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "claude-4",
            "gen_ai.usage.input_tokens": 300,
            "gen_ai.usage.output_tokens": 20,
        }
        with run.span("chat", chat) as span:
            user(span, goal)
            choice(span, "I will run wc.", "tool_use")
        tool = {
            **common,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "shell",
            "gen_ai.tool.call.id": "tooluse_1",
        }
        arguments = {"command": "wc -l notes.txt"}
        result = [{"text": "wc: notes.txt: No such file or directory"}]
        with run.span("execute_tool shell", tool) as span:
            if latest:
                call = [
                    {
                        "role": "tool",
                        "parts": [
                            {
                                "type": "tool_call",
                                "name": "shell",
                                "id": "tooluse_1",
                                "arguments": arguments,
                            }
                        ],
                    }
                ]
                span.add_event(details, {"gen_ai.input.messages": json.dumps(call)})
                response = [
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": "tooluse_1", "response": result}
                        ],
                    }
                ]
                span.add_event(details, {"gen_ai.output.messages": json.dumps(response)})
            else:
                span.add_event(
                    "gen_ai.tool.message",
                    {"role": "tool", "id": "tooluse_1", "content": json.dumps(arguments)},
                )
                span.add_event("gen_ai.choice", {"message": json.dumps(result), "id": "tooluse_1"})
            span.set_attribute("gen_ai.tool.status", "error")
        with run.span("chat", chat) as span:
            choice(span, "notes.txt does not exist.", "end_turn")
        choice(root, "notes.txt does not exist.", "end_turn")


@pytest.mark.parametrize("latest", [False, True], ids=["event-per-message", "details-event"])
def test_strands_span_events_give_the_goal_arguments_results_and_model_text(
    latest: bool,
) -> None:
    run = Run("strands")
    strands_run(run, latest=latest)
    drafts = run.drafts()
    assert kinds(drafts) == ["start", "model_call", "tool_call", "tool_result", "model_call", "end"]
    start = one(drafts, "start")
    assert start.step.text == "Count the lines of notes.txt"
    assert start.step.detail.get("system_instructions") == "You count lines."
    call = one(drafts, "tool_call").step
    assert (call.tool, call.call_id) == ("shell", "tooluse_1")
    assert json.loads(call.arguments or "") == {"command": "wc -l notes.txt"}
    result = one(drafts, "tool_result").step
    assert result.result == "wc: notes.txt: No such file or directory"
    assert result.status == "error"  # gen_ai.tool.status on an OK span
    models = [d.step for d in drafts if d.step.kind == "model_call"]
    assert [m.text for m in models] == ["I will run wc.", "notes.txt does not exist."]
    assert models[0].finish_reason == "tool_use"


def test_semantic_kernel_content_events_give_the_prompt_and_completion() -> None:
    """Semantic Kernel writes a chat span's messages as the 2024 conventions' span events."""
    run = Run("sk")
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 9,
    }
    prompt = [{"role": "user", "content": "Summarise the incident report"}]
    completion = [{"role": "assistant", "content": "The disk filled up at 02:10."}]
    with run.span("invoke_agent planner", agent) as root:
        root.add_event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(prompt)})
        with run.span("chat.completions gpt-4o", chat) as span:
            span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(prompt)})
            span.add_event(
                "gen_ai.content.completion", {"gen_ai.completion": json.dumps(completion)}
            )
    drafts = run.drafts()
    assert one(drafts, "start").step.text == "Summarise the incident report"
    model = one(drafts, "model_call").step
    assert model.text == "The disk filled up at 02:10."
    assert model.detail["user_message"] == "Summarise the incident report"


# -- Claude Code: server-run tools, images in results -----------------------------------

CC = {"sessionId": "cc-7", "cwd": "/w", "version": "2.0.30", "isSidechain": False}


def cc_line(kind: str, uuid: str, ts: int, message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    line = {
        **CC,
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-01-05T10:00:{ts:02d}Z",
        "message": message,
    }
    return f"t:{ts}", line


def assistant(uuid: str, ts: int, message_id: str, *blocks: dict[str, Any]) -> Any:
    message = {
        "id": message_id,
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(blocks),
        "usage": {"input_tokens": 10, "output_tokens": 4},
    }
    return cc_line("assistant", uuid, ts, message)


def results(uuid: str, ts: int, *blocks: dict[str, Any]) -> Any:
    return cc_line("user", uuid, ts, {"role": "user", "content": list(blocks)})


PNG = "iVBORw0KGgo" + "A" * 200_000


def test_claude_code_server_tools_are_calls_and_an_image_is_not_its_bytes() -> None:
    lines = [
        cc_line("user", "u1", 0, {"role": "user", "content": "What does the screenshot show?"}),
        assistant(
            "a1",
            1,
            "msg_1",
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Read",
                "input": {"file_path": "/w/shot.png"},
            },
        ),
        results(
            "u2",
            2,
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    }
                ],
            },
        ),
        assistant(
            "a2",
            3,
            "msg_2",
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "error 0x80"},
            },
        ),
        assistant(
            "a3",
            4,
            "msg_2",
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [
                    {
                        "type": "web_search_result",
                        "title": "Err 0x80",
                        "url": "https://example.org/0x80",
                        "encrypted_content": "Zm9v" * 500,
                    }
                ],
            },
        ),
        assistant(
            "a4",
            5,
            "msg_3",
            {
                "type": "server_tool_use",
                "id": "srvtoolu_2",
                "name": "web_fetch",
                "input": {"url": "https://x.invalid"},
            },
        ),
        assistant(
            "a5",
            6,
            "msg_3",
            {
                "type": "web_fetch_tool_result",
                "tool_use_id": "srvtoolu_2",
                "content": {"type": "web_fetch_tool_error", "error_code": "url_not_accessible"},
            },
        ),
    ]
    drafts, rejects = transcript_drafts(lines)
    assert rejects == []
    steps = [d.step for d in drafts]
    calls = [s for s in steps if s.kind == "tool_call"]
    assert [(c.tool, c.call_id) for c in calls] == [
        ("Read", "toolu_1"),
        ("web_search", "srvtoolu_1"),
        ("web_fetch", "srvtoolu_2"),
    ]
    assert json.loads(calls[1].arguments or "") == {"query": "error 0x80"}
    out = {s.call_id: s for s in steps if s.kind == "tool_result"}
    assert out["toolu_1"].result == "[image image/png]"
    assert out["srvtoolu_1"].result == "Err 0x80 https://example.org/0x80"
    assert out["srvtoolu_2"].status == "error" and "url_not_accessible" in (
        out["srvtoolu_2"].result or out["srvtoolu_2"].error or ""
    )
    assert len([s for s in steps if s.kind == "model_call"]) == 3  # one per message id


# -- Codex: rollouts from before the envelope; image outputs ----------------------------

LEGACY_SESSION = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"


def legacy_rollout() -> list[dict[str, Any]]:
    """A Codex CLI rollout of mid-2025: a meta line, then bare response items with no
    time of their own, and ``record_type`` markers."""
    shell = {"command": ["bash", "-lc", "pytest -q"], "workdir": "/repo"}
    return [
        {
            "id": LEGACY_SESSION,
            "timestamp": "2025-06-02T09:15:00.120Z",
            "instructions": None,
            "git": {
                "commit_hash": "9f1c2e",
                "branch": "main",
                "repository_url": "https://github.com/acme/dates",
            },
        },
        {"record_type": "state"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "<user_instructions>\nRun tests before commits.\n</user_instructions>",
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "<environment_context>\n<cwd>/repo</cwd>\n</environment_context>",
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Fix the failing date parser test"}],
        },
        {"record_type": "state"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {
            "type": "function_call",
            "id": "fc_1",
            "name": "shell",
            "call_id": "call_1",
            "arguments": json.dumps(shell),
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": json.dumps({"output": "1 failed", "metadata": {"exit_code": 1}}),
        },
        {"record_type": "state"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "The parser drops the timezone."}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Then fix it"}],
        },
        {
            "type": "local_shell_call",
            "call_id": "call_2",
            "status": "completed",
            "action": {"type": "exec", "command": ["pytest", "-q"], "working_directory": "/repo"},
        },
        {"type": "function_call_output", "call_id": "call_2", "output": "3 passed"},
    ]


def test_every_line_of_a_rollout_from_before_the_envelope_is_claimed_and_read() -> None:
    lines = legacy_rollout()
    assert all(is_codex_line(line) for line in lines)
    drafts, rejects = rollout_drafts([(f"r:{i}", x) for i, x in enumerate(lines, 1)])
    assert rejects == []
    steps = [d.step for d in drafts]
    assert {s.session_id for s in steps} == {LEGACY_SESSION}
    assert [s.kind for s in steps] == [
        "start",
        "model_call",
        "tool_call",
        "tool_result",
        "model_call",
        "model_call",
        "tool_call",
        "tool_result",
    ]
    start = steps[0]
    assert start.text == "Fix the failing date parser test"
    assert start.detail["repository"] == "https://github.com/acme/dates"
    assert "Run tests before commits." in start.detail["system_instructions"]
    assert steps[3].status == "error" and steps[7].status == "ok"
    assert steps[5].detail["user_message"] == "Then fix it"
    assert steps[4].text == "The parser drops the timezone."
    assert len({s.ts for s in steps}) == 1  # the items carry no time: the meta's, in order


def test_a_rollout_from_before_the_envelope_replays_without_dead_letters(
    tmp_path: Path,
) -> None:
    path = tmp_path / f"rollout-2025-06-02T09-15-00-{LEGACY_SESSION}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in legacy_rollout()))
    db_url = f"sqlite:///{tmp_path / 'r.db'}"
    summary = replay([path], settings=Settings.from_env(db_url=db_url))
    assert summary.dead_letters == 0
    with Store.open(db_url) as store:
        steps = store.steps(LEGACY_SESSION)
    assert [s.tool for s in steps if s.kind == "tool_call"] == ["shell", "local_shell"]


def test_a_codex_image_output_is_a_placeholder_not_a_data_url() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64," + PNG}
    lines = [
        {"timestamp": "2026-01-05T10:00:00Z", "type": "session_meta", "payload": {"id": "c-1"}},
        {
            "timestamp": "2026-01-05T10:00:01Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "view_image",
                "call_id": "call_9",
                "arguments": json.dumps({"path": "shot.png"}),
            },
        },
        {
            "timestamp": "2026-01-05T10:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "call_9",
                "output": [{"type": "input_text", "text": "shot.png"}, image],
            },
        },
    ]
    drafts, rejects = rollout_drafts([(f"r:{i}", x) for i, x in enumerate(lines, 1)])
    assert rejects == []
    (result,) = [d.step for d in drafts if d.step.kind == "tool_result"]
    assert result.result == "shot.png\n[image]"


# -- Claude Code headless: claude -p --output-format stream-json ------------------------

STREAM_SESSION = "8c1f9d2e-3b4a-4c5d-9e6f-7a8b9c0d1e2f"


def stream_capture() -> list[dict[str, Any]]:
    """A headless run as ``claude -p … --output-format stream-json --verbose`` prints it:
    init, one assistant line per content block, tool results as user lines, a sub-agent's
    messages tagged with its Task call, partial-message events, the closing result."""
    sid = {"session_id": STREAM_SESSION}

    def assistant(message_id: str, block: dict[str, Any], parent: str | None = None) -> Any:
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [block],
            "stop_reason": None,
            "usage": {"input_tokens": 12, "cache_read_input_tokens": 9000, "output_tokens": 40},
        }
        return {"type": "assistant", "message": message, "parent_tool_use_id": parent, **sid}

    def result(call_id: str, text: str, parent: str | None = None, error: bool = False) -> Any:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        if error:
            block["is_error"] = True
        message = {"role": "user", "content": [block]}
        return {"type": "user", "message": message, "parent_tool_use_id": parent, **sid}

    bash = {
        "type": "tool_use",
        "id": "toolu_01",
        "name": "Bash",
        "input": {"command": "pytest -q", "description": "Run the tests"},
    }
    task = {
        "type": "tool_use",
        "id": "toolu_02",
        "name": "Task",
        "input": {
            "description": "Find the bug",
            "prompt": "Find why test_io fails",
            "subagent_type": "general-purpose",
        },
    }
    grep = {"type": "tool_use", "id": "toolu_03", "name": "Grep", "input": {"pattern": "open("}}
    return [
        {
            "type": "system",
            "subtype": "init",
            "cwd": "/repo",
            "model": "claude-sonnet-4-5",
            "tools": ["Bash", "Task", "Grep"],
            "claude_code_version": "2.0.40",
            **sid,
        },
        {"type": "stream_event", "event": {"type": "message_start"}, **sid},
        assistant("msg_01", {"type": "text", "text": "Running the tests."}),
        assistant("msg_01", bash),
        result("toolu_01", "1 failed", error=True),
        assistant("msg_02", task),
        assistant("msg_s1", grep, parent="toolu_02"),
        result("toolu_03", "src/io.py:3: open(path)", parent="toolu_02"),
        result("toolu_02", "The file is opened in text mode."),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "compact_metadata": {"trigger": "auto", "pre_tokens": 150_000},
            **sid,
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": 41_000,
            "num_turns": 4,
            "result": "Fixed: the file is opened in binary mode now.",
            "total_cost_usd": 0.21,
            "usage": {"input_tokens": 40, "output_tokens": 900},
            **sid,
        },
    ]


def test_a_stream_json_capture_is_read_as_its_transcript(tmp_path: Path) -> None:
    lines = stream_capture()
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    summary = replay([path], settings=Settings.from_env(db_url=db_url))
    assert summary.dead_letters == 0  # no line is taken for a malformed session event
    with Store.open(db_url) as store:
        steps = store.steps(STREAM_SESSION)
    calls = [s for s in steps if s.kind == "tool_call"]
    assert [c.tool for c in calls] == ["Bash", "Task", "Grep"]
    assert json.loads(calls[0].arguments or "")["command"] == "pytest -q"
    results = {s.call_id: s for s in steps if s.kind == "tool_result"}
    assert results["toolu_01"].status == "error" and results["toolu_03"].status == "ok"
    models = [s for s in steps if s.kind == "model_call"]
    assert len(models) == 3  # one per message id, the sub-agent's included
    assert models[0].tokens_in == 9012 and models[0].text == "Running the tests."
    assert [s.kind for s in steps if s.kind in ("compaction", "end")] == ["compaction", "end"]
    end = steps[-1]
    assert end.kind == "end" and end.status == "ok"
    assert end.text == "Fixed: the file is opened in binary mode now."
    assert [s.seq for s in steps] == list(range(len(steps)))
    assert steps == sorted(steps, key=lambda s: s.ts)  # file order kept


# -- Codex headless: codex exec --json ---------------------------------------------------

EXEC_THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def exec_capture() -> list[dict[str, Any]]:
    """``codex exec --json`` output (``ThreadEvent``s of ``codex-rs/exec``): two turns, a
    failing then a passing command, a patch, an MCP call, a web search, a failed turn."""

    def item(event: str, **fields: Any) -> dict[str, Any]:
        return {"type": f"item.{event}", "item": fields}

    failing = {"id": "item_1", "type": "command_execution", "command": "bash -lc 'pytest -q'"}
    passing = {"id": "item_5", "type": "command_execution", "command": "bash -lc 'pytest -q'"}
    return [
        {"type": "thread.started", "thread_id": EXEC_THREAD},
        {"type": "turn.started"},
        item("completed", id="item_0", type="reasoning", text="**Running the tests**"),
        item("started", **failing, aggregated_output="", exit_code=None, status="in_progress"),
        item("completed", **failing, aggregated_output="1 failed", exit_code=1, status="failed"),
        item(
            "completed",
            id="item_2",
            type="file_change",
            status="completed",
            changes=[{"path": "src/dates.py", "kind": "update"}],
        ),
        item(
            "started",
            id="item_3",
            type="mcp_tool_call",
            server="github",
            tool="get_issue",
            arguments={"number": 7},
            result=None,
            error=None,
            status="in_progress",
        ),
        item(
            "completed",
            id="item_3",
            type="mcp_tool_call",
            server="github",
            tool="get_issue",
            arguments={"number": 7},
            error=None,
            status="completed",
            result={
                "content": [{"type": "text", "text": "Dates lose their timezone"}],
                "structured_content": None,
            },
        ),
        item(
            "completed",
            id="item_4",
            type="web_search",
            query="python fromisoformat Z",
            action={"type": "search", "query": "python fromisoformat Z"},
        ),
        item("started", **passing, aggregated_output="", exit_code=None, status="in_progress"),
        item("completed", **passing, aggregated_output="3 passed", exit_code=0, status="completed"),
        item("completed", id="item_6", type="agent_message", text="Fixed the parser."),
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 24_000, "cached_input_tokens": 20_000, "output_tokens": 900},
        },
        {"type": "turn.started"},
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
    ]


def test_a_codex_exec_capture_is_read(tmp_path: Path) -> None:
    path = tmp_path / "exec.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in exec_capture()))
    db_url = f"sqlite:///{tmp_path / 'e.db'}"
    summary = replay([path], settings=Settings.from_env(db_url=db_url))
    assert summary.dead_letters == 0
    with Store.open(db_url) as store:
        steps = store.steps(EXEC_THREAD)
    calls = [s for s in steps if s.kind == "tool_call"]
    assert [c.tool for c in calls] == [
        "shell",
        "apply_patch",
        "mcp__github__get_issue",
        "web_search",
        "shell",
    ]
    assert json.loads(calls[0].arguments or "") == {"command": "bash -lc 'pytest -q'"}
    assert json.loads(calls[2].arguments or "") == {"number": 7}
    results = [s for s in steps if s.kind == "tool_result"]
    assert [r.status for r in results] == ["error", "ok", "ok", "ok"]
    assert results[2].result == "Dates lose their timezone"
    (model,) = [s for s in steps if s.kind == "model_call"]
    assert (model.tokens_in, model.tokens_out) == (24_000, 900)
    assert model.text == "Fixed the parser."
    assert [s.error for s in steps if s.kind == "error"] == [
        "stream disconnected before completion"
    ]
    assert steps == sorted(steps, key=lambda s: s.ts)


def test_a_line_whose_type_is_not_a_string_costs_that_line_only(tmp_path: Path) -> None:
    """Found by the transcript property test: ``"type": [[]]`` made a format's claim raise
    while the file was classified, which stopped the whole replay."""
    lines = [json.dumps(line) for line in legacy_rollout()]
    lines.insert(3, json.dumps({"type": [[[]]], "payload": {}, "timestamp": "x"}))
    lines.insert(5, json.dumps({"type": {"a": 1}, "session_id": "s"}))
    path = tmp_path / f"rollout-2025-06-02T09-15-00-{LEGACY_SESSION}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    db_url = f"sqlite:///{tmp_path / 'r.db'}"
    summary = replay([path], settings=Settings.from_env(db_url=db_url))
    assert summary.dead_letters == 2  # the two, each with its reason; the rest is read
    with Store.open(db_url) as store:
        steps = store.steps(LEGACY_SESSION)
    assert [s.tool for s in steps if s.kind == "tool_call"] == ["shell", "local_shell"]


def test_a_typescript_cli_rollout_document_is_read(tmp_path: Path) -> None:
    """The TypeScript Codex CLI saved ``rollout-<date>-<id>.json``: one document
    ``{"session", "items"}`` of response items; a non-object item is a dead letter."""
    meta, *items = [line for line in legacy_rollout() if "record_type" not in line]
    document = {
        "session": {k: meta[k] for k in ("id", "timestamp", "instructions")},
        "items": [*items, 42],
    }
    path = tmp_path / f"rollout-2025-05-20-{LEGACY_SESSION}.json"
    path.write_text(json.dumps(document, indent=2))
    db_url = f"sqlite:///{tmp_path / 'r.db'}"
    summary = replay([path], settings=Settings.from_env(db_url=db_url))
    assert summary.dead_letters == 1
    with Store.open(db_url) as store:
        steps = store.steps(LEGACY_SESSION)
    assert steps[0].kind == "start" and steps[0].text == "Fix the failing date parser test"
    assert [s.tool for s in steps if s.kind == "tool_call"] == ["shell", "local_shell"]
