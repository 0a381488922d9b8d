"""Codex CLI rollouts replay into steps and alerts: token counts are model calls placed
before their response's items (a repeated count is none), shell exit codes decide a
result, ``compacted`` is a compaction, a bad line is a dead letter.

The lines follow the ``RolloutLine`` envelope and payloads of ``codex-rs/protocol``
(``session_meta``, ``turn_context``, ``event_msg``, ``response_item``, ``compacted``);
names and contents are made up.
"""

from __future__ import annotations

import hashlib
import json
import lzma
from pathlib import Path
from typing import Any

import pytest

from ingest.formats.codex import is_codex_line, rollout_drafts
from models.store import Store
from tests.support.paths import CORPUS
from trajwatch.cli.main import main

SESSION = "0199a5b2-7c1e-7f30-9a4d-2b6f1c8e9d01"


class Rollout:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.second = 0
        self.total = 0

    def line(self, kind: str, payload: dict[str, Any]) -> None:
        self.second += 1
        ts = f"2026-03-04T10:{self.second // 60:02d}:{self.second % 60:02d}.123Z"
        self.lines.append({"timestamp": ts, "type": kind, "payload": payload})

    def tokens(self, prompt: int, out: int, *, repeat: bool = False) -> None:
        if not repeat:
            self.total += prompt + out
        last = {
            "input_tokens": prompt,
            "cached_input_tokens": prompt // 2,
            "output_tokens": out,
            "reasoning_output_tokens": 5,
            "total_tokens": prompt + out,
        }
        info = {
            "total_token_usage": {**last, "total_tokens": self.total},
            "last_token_usage": last,
            "model_context_window": 272_000,
        }
        self.line("event_msg", {"type": "token_count", "info": info, "rate_limits": None})

    def shell(self, call_id: str, script: str, output: str, exit_code: int) -> None:
        self.line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": None})
        arguments = {"command": ["bash", "-lc", script], "workdir": "/workspace/dates"}
        self.line(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps(arguments),
                "call_id": call_id,
            },
        )
        body = {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 1.2}}
        self.line(
            "response_item",
            {"type": "function_call_output", "call_id": call_id, "output": json.dumps(body)},
        )

    def write(self, folder: Path, extra: list[str] = ()) -> Path:  # type: ignore[assignment]
        path = folder / f"rollout-2026-03-04T10-00-00-{SESSION}.jsonl"
        path.write_text("\n".join([*(json.dumps(x) for x in self.lines), *extra]) + "\n")
        return path


def rollout_with_a_test_loop() -> Rollout:
    r = Rollout()
    r.line(
        "session_meta",
        {
            "id": SESSION,
            "timestamp": "2026-03-04T10:00:00.000Z",
            "cwd": "/workspace/dates",
            "originator": "codex_cli_rs",
            "cli_version": "0.46.0",
            "instructions": None,
            "git": {
                "commit_hash": "9c1e5b7d2a4f",
                "branch": "main",
                "repository_url": "https://github.com/acme/dates.git",
            },
        },
    )
    r.line(
        "turn_context",
        {
            "cwd": "/workspace/dates",
            "approval_policy": "on-request",
            "sandbox_policy": {"type": "workspace-write"},
            "model": "gpt-5-codex",
            "summary": "auto",
        },
    )
    r.line("event_msg", {"type": "user_message", "message": "Fix the DST bug in src/parse.py"})
    r.shell("call_ls", "ls src", "parse.py\n", 0)
    r.tokens(12_000, 40)
    r.tokens(12_000, 40, repeat=True)  # a rate-limit refresh: the same totals again
    r.line(
        "response_item",
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "call_id": "call_patch",
            "input": "*** Begin Patch\n*** Update File: src/parse.py\n@@\n-a\n+b\n*** End Patch",
        },
    )
    r.line(
        "response_item",
        {
            "type": "custom_tool_call_output",
            "call_id": "call_patch",
            "output": "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nSuccess. Updated: a.py",
        },
    )
    r.tokens(13_000, 60)
    for i in range(6):
        r.shell(f"call_t{i}", "pytest -q tests/test_parse.py", "1 failed: test_dst", 1)
        r.tokens(14_000 + 500 * i, 30)
    r.line("compacted", {"message": "Summary: DST fix in progress, test_dst still fails."})
    r.line("event_msg", {"type": "error", "message": "stream disconnected before completion"})
    return r


def test_rollout_lines_are_recognised_and_session_events_are_not() -> None:
    assert all(is_codex_line(x) for x in rollout_with_a_test_loop().lines)
    event = {"type": "tool_call", "session_id": "s", "ts": 1, "payload": {}, "timestamp": 1}
    assert not is_codex_line(event)


def test_token_counts_are_model_calls_before_their_items() -> None:
    r = rollout_with_a_test_loop()
    drafts, rejects = rollout_drafts([(f"f:{i}", x) for i, x in enumerate(r.lines, 1)])
    assert rejects == []
    kinds = [d.step.kind for d in drafts]
    assert kinds[:4] == ["start", "model_call", "tool_call", "tool_result"]
    assert kinds.count("model_call") == 8  # the repeated count is no call
    start = drafts[0].step
    assert start.text == "Fix the DST bug in src/parse.py"
    assert start.detail["repository"] == "https://github.com/acme/dates.git"
    assert (start.detail["workspace"], start.detail["commit"]) == (
        "/workspace/dates",
        "9c1e5b7d2a4f",
    )
    first = drafts[1].step
    # output_tokens already counts the 5 reasoning ones (total_tokens = input + output)
    assert (first.model, first.tokens_in, first.tokens_out) == ("gpt-5-codex", 12_000, 40)
    assert first.ts <= drafts[2].step.ts  # placed at its response's first item
    ls = drafts[2]
    assert ls.natural_key == "tool_call/call_ls" and ls.step.tool == "shell"
    results = {d.step.call_id: d.step for d in drafts if d.step.kind == "tool_result"}
    assert results["call_ls"].status == "ok" and results["call_ls"].result == "parse.py\n"
    assert results["call_patch"].status == "ok"
    assert results["call_t0"].status == "error" and results["call_t0"].error == "1 failed: test_dst"
    compaction = next(d.step for d in drafts if d.step.kind == "compaction")
    assert compaction.text == "Summary: DST fix in progress, test_dst still fails."
    assert kinds[-1] == "error"


def test_replay_of_a_rollout_raises_the_loop_and_dead_letters_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = rollout_with_a_test_loop()
    bad = json.dumps(
        {
            "timestamp": "2026-03-04T10:59:00Z",
            "type": "response_item",
            "payload": {"type": "function_call", "arguments": "{}", "call_id": "c"},
        }
    )
    path = r.write(tmp_path, extra=[bad])
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(path), "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sessions"] == 1 and out["dead_letters"] == 1
    loops = [a for a in out["alerts"] if a["detector"] == "runaway_loop"]
    assert any(a["severity"] == "critical" and a["action"] == "kill" for a in loops)
    assert all("pytest -q tests/test_parse.py" in a["reason"] for a in loops)
    with Store.open(db) as store:
        steps = store.steps(SESSION)
        (letter,) = store.dead_letters()
    assert [s.seq for s in steps] == list(range(len(steps)))
    assert letter.reason == "codex: function_call.name: a non-empty string is required"


def test_the_session_id_falls_back_to_the_file_name() -> None:
    r = rollout_with_a_test_loop()
    lines = [(str(i), x) for i, x in enumerate(r.lines) if x["type"] != "session_meta"]
    drafts, _ = rollout_drafts(lines, file_name=f"rollout-2026-03-04T10-00-00-{SESSION}.jsonl")
    assert {d.session_hint for d in drafts} == {SESSION}


def test_a_newer_rollout_with_ordinals_metadata_and_only_a_session_id_is_read() -> None:
    """0.14x-0.15x lines: an ``ordinal`` on each line, ``metadata`` beside a response
    item's payload, a ``session_meta`` that names the session ``session_id`` (no ``id``),
    in a file whose name holds only the id's first 8 characters."""
    r = rollout_with_a_test_loop()
    lines = []
    for ordinal, line in enumerate(r.lines):
        line = {"timestamp": line["timestamp"], "ordinal": ordinal, **line}
        if line["type"] == "session_meta":
            payload = {k: v for k, v in line["payload"].items() if k != "id"}
            line["payload"] = {"session_id": SESSION, "thread_source": "user", **payload}
        elif line["type"] == "response_item":
            line["metadata"] = {}
        lines.append(line)
    assert all(is_codex_line(line) for line in lines)
    drafts, rejects = rollout_drafts(
        located(lines), file_name="rollout-2026-08-17T16-13-30-0199a5b2.jsonl"
    )
    expected, _ = rollout_drafts(located(r.lines))
    assert rejects == [] and {d.session_hint for d in drafts} == {SESSION}
    assert [(d.step.kind, d.step.call_id) for d in drafts] == [
        (d.step.kind, d.step.call_id) for d in expected
    ]
    calls = [d for d in drafts if d.step.kind == "tool_call"]
    assert len(calls) == sum(
        1
        for x in r.lines
        if x["type"] == "response_item" and x["payload"]["type"].endswith("_call")
    )


# --- response items as the unit of a model call (real rollouts: text-only replies,
# --- rollouts without token counts, server-run tools, aborted calls)


def located(lines: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"r:{i}", line) for i, line in enumerate(lines, 1)]


def two_turns_with_a_text_only_reply() -> Rollout:
    """Turn 1 ends in a text-only reply (``reasoning`` → ``agent_message`` event →
    assistant ``message`` → ``token_count``), the shape Codex 0.125 writes for every turn
    that answers without a tool; turn 2 runs a shell command."""
    r = Rollout()
    r.line("session_meta", {"id": SESSION, "cwd": "/workspace/dates", "cli_version": "0.125.0"})
    r.line("event_msg", {"type": "task_started", "turn_id": "t1"})
    r.line("turn_context", {"cwd": "/workspace/dates", "model": "gpt-5.5"})
    r.line("event_msg", {"type": "user_message", "message": "Which tools do you have?"})
    r.line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"})
    r.line("event_msg", {"type": "agent_message", "message": "Shell and apply_patch."})
    answer = [{"type": "output_text", "text": "Shell and apply_patch."}]
    r.line("response_item", {"type": "message", "role": "assistant", "content": answer})
    r.tokens(9_000, 30)
    r.line("event_msg", {"type": "task_complete", "turn_id": "t1"})
    r.line("event_msg", {"type": "task_started", "turn_id": "t2"})
    r.line("event_msg", {"type": "user_message", "message": "Run the tests"})
    r.shell("call_1", "pytest -q", "3 passed", 0)
    r.tokens(9_500, 20)
    return r


def test_a_text_only_reply_is_a_model_call_with_its_text() -> None:
    drafts, rejects = rollout_drafts(located(two_turns_with_a_text_only_reply().lines))
    assert rejects == []
    kinds = [d.step.kind for d in drafts]
    assert kinds == ["start", "model_call", "model_call", "tool_call", "tool_result"]
    reply, second = drafts[1].step, drafts[2].step
    assert reply.text == "Shell and apply_patch."
    assert (reply.tokens_in, reply.tokens_out, reply.model) == (9_000, 30, "gpt-5.5")
    assert reply.ts < reply.end_ts  # from its reasoning to its token count
    assert second.detail["user_message"] == "Run the tests"
    assert (second.tokens_in, second.tokens_out) == (9_500, 20)


def test_without_token_counts_the_response_items_are_the_model_calls() -> None:
    """Codex Desktop writes no ``token_count``: the calls are the same, without usage."""
    r = two_turns_with_a_text_only_reply()
    counted, _ = rollout_drafts(located(r.lines))
    bare = [x for x in r.lines if x["payload"].get("type") != "token_count"]
    drafts, rejects = rollout_drafts(located(bare))
    assert rejects == []
    assert [d.step.kind for d in drafts] == [d.step.kind for d in counted]
    calls = [d.step for d in drafts if d.step.kind == "model_call"]
    assert [c.text for c in calls] == ["Shell and apply_patch.", None]
    assert all(c.tokens_in is None and c.model == "gpt-5.5" for c in calls)


def test_one_response_with_parallel_calls_is_one_model_call() -> None:
    r = Rollout()
    r.line("session_meta", {"id": SESSION})
    r.line("event_msg", {"type": "user_message", "message": "Look around"})
    for i in range(3):
        arguments = json.dumps({"cmd": f"ls dir{i}"})
        call = {"type": "function_call", "name": "exec_command", "arguments": arguments}
        r.line("response_item", {**call, "call_id": f"c{i}"})
    for i in range(3):
        r.line("response_item", {"type": "function_call_output", "call_id": f"c{i}", "output": "a"})
    r.line("response_item", {"type": "message", "role": "assistant", "content": []})
    drafts, _ = rollout_drafts(located(r.lines))
    kinds = [d.step.kind for d in drafts]
    assert kinds == ["start", "model_call", *["tool_call"] * 3, *["tool_result"] * 3, "model_call"]


def test_api_run_tools_and_tool_search_are_tool_calls() -> None:
    r = Rollout()
    r.line("session_meta", {"id": SESSION})
    r.line("event_msg", {"type": "user_message", "message": "Find the docs"})
    search = {"type": "search", "query": "opencode compaction", "queries": ["a", "b"]}
    r.line("response_item", {"type": "web_search_call", "status": "completed", "action": search})
    r.line(
        "response_item",
        {
            "type": "image_generation_call",
            "id": "ig_1",
            "status": "completed",
            "revised_prompt": "a diagram of the pipeline",
            "result": "iVBORw0KGgo...",
        },
    )
    r.line(
        "response_item",
        {
            "type": "tool_search_call",
            "call_id": "ts_1",
            "status": "completed",
            "execution": "client",
            "arguments": {"query": "calendar"},
        },
    )
    r.line(
        "response_item",
        {
            "type": "tool_search_output",
            "call_id": "ts_1",
            "status": "completed",
            "execution": "client",
            "tools": [{"type": "function", "name": "calendar_list"}, {"name": "calendar_add"}],
        },
    )
    drafts, rejects = rollout_drafts(located(r.lines))
    assert rejects == []
    calls = [d.step for d in drafts if d.step.kind == "tool_call"]
    assert [c.tool for c in calls] == ["web_search", "image_generation", "tool_search"]
    assert json.loads(calls[0].arguments or "")["query"] == "opencode compaction"
    assert "a diagram of the pipeline" in (calls[1].arguments or "")
    assert "iVBOR" not in (calls[1].arguments or "")  # the image is no argument
    assert calls[1].call_id == "ig_1" and calls[2].call_id == "ts_1"
    (found,) = [d.step for d in drafts if d.step.kind == "tool_result"]
    assert (found.call_id, found.result) == ("ts_1", "calendar_list, calendar_add")
    assert sum(1 for d in drafts if d.step.kind == "model_call") == 1


@pytest.mark.parametrize(
    ("output", "status", "said"),
    [
        ("aborted", "cancelled", "aborted"),  # a call left without output when the turn ended
        ("aborted by user after 2.5s", "cancelled", "aborted by user after 2.5s"),
        ("Wall time: 1.2 seconds\naborted by user", "cancelled", None),  # an interrupted shell
        (
            "Exit code: 1\nWall time: 0.3 seconds\nOutput:\naborted",
            "error",
            "Exit code: 1\naborted",
        ),
        (
            "Chunk ID: a1\nWall time: 0.0 seconds\nProcess exited with code 2\nOutput:\n",
            "error",
            "Process exited with code 2",
        ),
        (
            "Chunk ID: a1\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nok",
            "ok",
            "ok",
        ),
        ("aborted the rebase as asked", "ok", "aborted the rebase as asked"),
        # still running: the envelope is all there is to say
        ("Chunk ID: b2\nProcess running with session ID 7\nOutput:\n", "ok", None),
    ],
)
def test_an_aborted_call_is_cancelled_and_an_exit_code_decides_the_rest(
    output: str, status: str, said: str | None
) -> None:
    r = Rollout()
    r.line("session_meta", {"id": SESSION})
    r.shell("call_x", "sleep 90", "", 0)
    r.lines[-1]["payload"]["output"] = output
    drafts, _ = rollout_drafts(located(r.lines))
    (result,) = [d.step for d in drafts if d.step.kind == "tool_result"]
    assert result.status == status
    # a finished command's envelope (chunk id, wall time, token count, a zero exit) goes:
    # what the command said is its output, and its exit line when it failed
    said = output if said is None else said
    assert (result.result if status == "ok" else result.error) == said


def test_unknown_types_are_skipped_and_a_malformed_line_is_a_dead_letter() -> None:
    r = Rollout()
    r.line("session_meta", {"id": SESSION})
    r.line("world_state", {"full": {"cwd": "/w"}})  # a line type of a newer release
    r.line("event_msg", {"type": "exec_command_end", "call_id": "c", "exit_code": 0})
    r.line("response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}})
    r.line("response_item", {"type": "compaction", "encrypted_content": "..."})
    lines = [*r.lines, {"timestamp": "2026-03-04T10:00:09Z", "type": "event_msg", "payload": 3}]
    drafts, rejects = rollout_drafts(located(lines))
    assert drafts == []
    assert [(at, reason) for at, reason, _ in rejects] == [
        (f"r:{len(lines)}", "payload: an object is required")
    ]


CODEMIE = CORPUS / "recordings" / "codex"


def raw_lines(path: Path) -> list[dict[str, Any]]:
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.skipif(not CODEMIE.exists(), reason="needs ../shared/corpus beside the repo")
def test_the_codemie_rollout_is_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Codex TUI 0.125: text-only replies, parallel calls, ``web_search_call``,
    ``custom_tool_call``. Every call in the file is a tool-call step, every output a
    result, every distinct token count a model call; no line is a dead letter."""
    (path,) = CODEMIE.glob("*rollout-*.jsonl.xz")
    lines = raw_lines(path)
    items = [x["payload"] for x in lines if x["type"] == "response_item"]
    calls = sum(1 for p in items if p["type"].endswith("_call"))
    outputs = sum(1 for p in items if p["type"].endswith("_output"))
    totals = [
        json.dumps(p["info"]["total_token_usage"], sort_keys=True)
        for x in lines
        if (p := x["payload"]).get("type") == "token_count" and p.get("info")
    ]
    responses = sum(1 for a, b in zip(["", *totals], totals, strict=False) if a != b)
    assert (calls, outputs) == (105, 102)  # 99 function, 3 custom, 3 web search calls
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(path), "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["sessions"], out["dead_letters"]) == (1, 0)
    assert not [a for a in out["alerts"] if a["action"] == "kill"]
    with Store.open(db) as store:
        steps = store.steps(lines[0]["payload"]["id"])
    kinds = [s.kind for s in steps]
    assert kinds.count("tool_call") == calls and kinds.count("tool_result") == outputs
    assert kinds.count("model_call") == responses
    assert all(s.tokens_in for s in steps if s.kind == "model_call")
    replies = [s for s in steps if s.kind == "model_call" and s.text]
    assert len(replies) == sum(1 for p in items if p.get("role") == "assistant")
    # the same file as Codex Desktop would write it, without token counts
    bare = [x for x in lines if x["payload"].get("type") != "token_count"]
    drafts, rejects = rollout_drafts(located(bare))
    assert rejects == []
    bare_kinds = [d.step.kind for d in drafts]
    assert bare_kinds.count("model_call") == responses
    assert bare_kinds.count("tool_call") == calls


@pytest.mark.skipif(not CODEMIE.exists(), reason="needs ../shared/corpus beside the repo")
def test_the_agents_md_codex_sends_first_is_the_starts_system_instructions() -> None:
    """Both real rollouts open with the project's AGENTS.md as a user input item: it is
    where the session's rules are written (features.policy.instructions reads it)."""
    for path in sorted(CODEMIE.glob("*.jsonl.xz")):
        lines = raw_lines(path)
        drafts, rejects = rollout_drafts(located(lines))
        assert rejects == []
        (start,) = [d.step for d in drafts if d.step.kind == "start"]
        instructions = start.detail["system_instructions"]
        assert instructions.startswith("# AGENTS.md instructions for ")
        assert "<INSTRUCTIONS>" in instructions and len(instructions) <= 4096 + 40
        # the prompt stays the goal, not the AGENTS.md
        assert not start.text.startswith("# AGENTS.md")


def usage_records(r: Rollout, *, keep_counts: bool) -> list[dict[str, Any]]:
    """``r``'s lines as a newer Codex writes them: before each ``token_count``, a
    ``token_usage_record`` line of the same response (``TokenUsageRecord`` of
    ``codex-rs/protocol``: ``usage`` the response's, ``thread_token_usage`` cumulative,
    ``attribution`` its model); the counts kept or not."""
    out: list[dict[str, Any]] = []
    for n, line in enumerate(r.lines):
        info = line["payload"].get("info") if line["payload"].get("type") == "token_count" else None
        if info:
            record = {
                "thread_id": SESSION,
                "turn_id": "t",
                "session_id": SESSION,
                "root_turn_id": "t",
                "response_id": f"resp_{n}",
                "usage": {**info["last_token_usage"], "cache_write_input_tokens": 0},
                "turn_token_usage": info["last_token_usage"],
                "thread_token_usage": info["total_token_usage"],
                "attribution": {"model": "gpt-5.5-codex", "model_provider": "openai"},
                "completed_at_ms": 1_772_618_400_000 + n,
            }
            out.append(
                {"timestamp": line["timestamp"], "type": "token_usage_record", "payload": record}
            )
            if not keep_counts:
                continue
        out.append(line)
    return out


@pytest.mark.parametrize("keep_counts", [False, True])
def test_token_usage_records_give_the_calls_their_tokens(keep_counts: bool) -> None:
    """A newer rollout's ``token_usage_record`` lines are read as its ``token_count``s
    are: alone, they give each response its tokens; beside the counts, they count the same
    responses again, not new ones."""
    r = two_turns_with_a_text_only_reply()
    counted, _ = rollout_drafts(located(r.lines))
    drafts, rejects = rollout_drafts(located(usage_records(r, keep_counts=keep_counts)))
    assert rejects == []
    assert [d.step.kind for d in drafts] == [d.step.kind for d in counted]
    calls = [d.step for d in drafts if d.step.kind == "model_call"]
    assert [(c.tokens_in, c.tokens_out) for c in calls] == [(9_000, 30), (9_500, 20)]
    assert {c.model for c in calls} == {"gpt-5.5-codex"}
    assert [c.text for c in calls] == ["Shell and apply_patch.", None]
    windows = [c.detail.get("context_window") for c in calls]
    assert windows == ([272_000, 272_000] if keep_counts else [None, None])


def masked_rollout(calls: int, *, arguments_too: bool = False) -> Rollout:
    """A rollout as a publisher masked it before sharing it: each output (and with
    ``arguments_too`` each call's arguments) replaced by a placeholder of the content's
    length and digest."""
    r = rollout_with_a_test_loop()
    del r.lines[4:]  # session_meta, turn_context, the prompt, the first call
    for i in range(calls):
        command = {"cmd": f"sed -n 1,200p src/module_{i}.py", "workdir": "/workspace/dates"}
        arguments = json.dumps(command)
        if arguments_too:
            digest = hashlib.sha256(arguments.encode()).hexdigest()[:12]
            arguments = f"[REDACTED_ARGUMENTS len={len(arguments)} sha={digest}]"
        output = f"def f{i}():\n    return {i}\n" * (5 + i)
        digest = hashlib.sha256(output.encode()).hexdigest()[:12]
        r.line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": None})
        r.line(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": arguments,
                "call_id": f"call_m{i}",
            },
        )
        r.line(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": f"call_m{i}",
                "output": f"[redacted_output len={len(output)} sha={digest}]",
            },
        )
        r.tokens(14_000 + 500 * i, 30)
    return r


@pytest.mark.parametrize("arguments_too", [False, True])
def test_a_masked_rollout_is_no_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments_too: bool
) -> None:
    """Placeholders carry no information: masked outputs are not "the same answer",
    masked calls not the same call (a real masked rollout was killed as a loop)."""
    path = masked_rollout(12, arguments_too=arguments_too).write(tmp_path)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert main(["replay", "--db", db, str(path)]) == 0
    capsys.readouterr()
    with Store.open(db) as store:
        (session,) = store.sessions()
        calls = [s for s in store.steps(session.session_id) if s.kind == "tool_call"]
        assert len(calls) == 12
        assert store.alerts() == []
