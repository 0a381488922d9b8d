"""Codex CLI rollouts replay into steps and alerts: token counts are model calls placed
before their response's items (a repeated count is none), shell exit codes decide a
result, ``compacted`` is a compaction, a bad line is a dead letter.

The lines follow the ``RolloutLine`` envelope and payloads of ``codex-rs/protocol``
(``session_meta``, ``turn_context``, ``event_msg``, ``response_item``, ``compacted``);
names and contents are made up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest.codex import is_codex_line, rollout_drafts
from models.store import Store
from trajwatch.cli import main

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
    assert (first.model, first.tokens_in, first.tokens_out) == ("gpt-5-codex", 12_000, 45)
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
