"""Claude Code transcripts replay into steps and alerts: split API responses are one model
call, tool_use/tool_result blocks pair by id, compact boundaries are compactions, a bad
line is a dead letter and the rest of the file is kept.

The lines follow the shape of real Claude Code 2.1 transcripts (envelope fields, one
content block per assistant line with the usage repeated, ``toolUseResult``,
``compact_boundary`` + ``isCompactSummary``); the names and contents are made up.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import pytest

from ingest.formats.claude_code import is_claude_code_line, transcript_drafts
from models.store import Store
from tests.support.paths import CORPUS
from trajwatch.cli.main import main

SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
CWD = "/home/dev/projects/dates"


class Transcript:
    """Builds transcript lines with a running clock and uuid chain."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.second = 0
        self.n = 0
        self.parent: str | None = None

    def _line(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.n += 1
        self.second += 2
        uuid = f"00000000-0000-4000-8000-{self.n:012d}"
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": SESSION,
            "version": "2.1.39",
            "gitBranch": "fix/dst",
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2026-02-12T16:{self.second // 60:02d}:{self.second % 60:02d}.284Z",
            **fields,
        }
        self.parent = uuid
        self.lines.append(line)
        return line

    def prompt(self, text: str, **fields: Any) -> None:
        self._line("user", message={"role": "user", "content": text}, **fields)

    def response(self, message_id: str, blocks: list[dict[str, Any]], prompt: int) -> None:
        """One API response, one line a content block, usage repeated as it grows."""
        for i, block in enumerate(blocks):
            self._line(
                "assistant",
                requestId=f"req_{message_id}",
                message={
                    "model": "claude-opus-4-6",
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": "tool_use" if i == len(blocks) - 1 else None,
                    "usage": {
                        "input_tokens": 3,
                        "cache_creation_input_tokens": 1_000,
                        "cache_read_input_tokens": prompt,
                        "output_tokens": 10 * (i + 1),
                        "service_tier": "standard",
                    },
                },
            )

    def result(self, tool_use_id: str, content: str, *, error: bool = False) -> None:
        self._line(
            "user",
            message={
                "role": "user",
                "content": [
                    {
                        "tool_use_id": tool_use_id,
                        "type": "tool_result",
                        "content": content,
                        "is_error": error,
                    }
                ],
            },
            toolUseResult={"stdout": content, "stderr": "", "interrupted": False},
        )

    def compact(self, pre: int, summary: str) -> None:
        self._line(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            level="info",
            compactMetadata={"trigger": "auto", "preTokens": pre},
        )
        self._line(
            "user",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
            message={"role": "user", "content": [{"type": "text", "text": summary}]},
        )

    def write(self, path: Path, extra: list[str] = ()) -> Path:  # type: ignore[assignment]
        head = [json.dumps({"type": "summary", "summary": "DST fix", "leafUuid": "x"})]
        body = [json.dumps(line) for line in self.lines]
        path.write_text("\n".join([*head, *body, *extra]) + "\n")
        return path


def bash(call_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def session_with_a_test_loop() -> Transcript:
    t = Transcript()
    t.prompt("Fix the DST bug in src/parse.ts and make the tests pass")
    t.prompt("<command-name>init</command-name> caveat", isMeta=True)  # injected, skipped
    t.response(
        "msg_01",
        [
            {"type": "thinking", "thinking": "Look at the parser.", "signature": "sig"},
            {"type": "text", "text": "I'll read the parser first."},
            {
                "type": "tool_use",
                "id": "toolu_read",
                "name": "Read",
                "input": {"file_path": f"{CWD}/src/parse.ts"},
            },
        ],
        prompt=20_000,
    )
    t.result("toolu_read", "export function parse(s: string) { ... }")
    t.response(
        "msg_02",
        [
            {
                "type": "tool_use",
                "id": "toolu_edit",
                "name": "Edit",
                "input": {"file_path": f"{CWD}/src/parse.ts", "old_string": "a", "new_string": "b"},
            }
        ],
        prompt=24_000,
    )
    t.result("toolu_edit", "The file has been updated.")
    for i in range(6):  # the same failing test run, again and again
        t.response(f"msg_1{i}", [bash(f"toolu_t{i}", "npm test")], prompt=30_000 + 1_000 * i)
        t.result(f"toolu_t{i}", "FAIL src/parse.test.ts: expected 2 got 3", error=True)
    t.compact(155_000, "Summary: fixing DST in src/parse.ts; tests still fail.")
    t.response("msg_30", [bash("toolu_after", "git diff")], prompt=12_000)
    t.result("toolu_after", "diff --git a/src/parse.ts b/src/parse.ts")
    return t


def test_transcript_lines_are_recognised_and_session_events_are_not() -> None:
    t = session_with_a_test_loop()
    assert all(is_claude_code_line(line) for line in t.lines)
    assert is_claude_code_line({"type": "summary", "summary": "x", "leafUuid": "u"})
    event = {"type": "tool_call", "session_id": "s", "seq": 1, "ts": 1, "sessionId": "s"}
    assert not is_claude_code_line(event)


def test_one_api_response_is_one_model_call_and_blocks_pair_by_id() -> None:
    t = session_with_a_test_loop()
    drafts, rejects = transcript_drafts([(f"t:{i}", line) for i, line in enumerate(t.lines)])
    assert rejects == []
    kinds = [d.step.kind for d in drafts]
    assert kinds[:6] == [
        "start",
        "model_call",
        "tool_call",
        "tool_result",
        "model_call",
        "tool_call",
    ]
    start = drafts[0]
    assert start.natural_key == "start" and start.session_hint == SESSION
    assert start.step.text == "Fix the DST bug in src/parse.ts and make the tests pass"
    assert start.step.detail["workspace"] == CWD
    first = drafts[1]
    assert first.natural_key == "model_call/msg_01"
    # the three lines of msg_01: usage counted once (the largest snapshot), the whole prompt
    assert (first.step.tokens_in, first.step.tokens_out) == (3 + 1_000 + 20_000, 30)
    assert (
        first.step.text == "I'll read the parser first." and first.step.finish_reason == "tool_use"
    )
    assert first.step.model == "claude-opus-4-6"
    read = drafts[2]
    assert (read.step.tool, read.step.call_id, read.natural_key) == (
        "Read",
        "toolu_read",
        "tool_call/toolu_read",
    )
    assert sum(1 for k in kinds if k == "model_call") == 9
    failed = [d.step for d in drafts if d.step.kind == "tool_result" and d.step.status == "error"]
    assert len(failed) == 6 and failed[0].error == "FAIL src/parse.test.ts: expected 2 got 3"
    compaction = next(d for d in drafts if d.step.kind == "compaction")
    assert compaction.step.detail["tokens_before"] == 155_000
    assert compaction.step.text == "Summary: fixing DST in src/parse.ts; tests still fail."


def test_replay_of_a_transcript_stores_steps_raises_the_loop_and_dead_letters_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = session_with_a_test_loop()
    bad = json.dumps(
        {
            "type": "assistant",
            "sessionId": SESSION,
            "uuid": "u-bad",
            "timestamp": "2026-02-12T16:59:00Z",
        }
    )  # no message
    path = t.write(tmp_path / f"{SESSION}.jsonl", extra=[bad, "{not json"])
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(path), "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sessions"] == 1 and out["dead_letters"] == 2
    loops = [a for a in out["alerts"] if a["detector"] == "runaway_loop"]
    assert loops and any(a["severity"] == "critical" and a["action"] == "kill" for a in loops)
    assert all("npm test" in a["reason"] for a in loops)
    with Store.open(db) as store:
        steps = store.steps(SESSION)
        letters = store.dead_letters()
    assert [s.seq for s in steps] == list(range(len(steps)))
    assert sum(1 for s in steps if s.kind == "compaction") == 1
    assert all(s.source == "claude_code" for s in steps)
    reasons = sorted(letter.reason for letter in letters)
    assert reasons[0] == "claude_code: message: an object is required on an assistant line"
    assert reasons[1].startswith("invalid JSON")
    # replaying the same file again stores nothing twice
    assert main(["replay", str(path), "--db", db, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["steps"] == out["steps"] and len(again["alerts"]) == len(out["alerts"])


def test_a_sub_agent_has_its_own_start_and_context_window() -> None:
    t = Transcript()
    t.prompt("Explore the repository and report")
    sub = Transcript()
    sub.n = 100
    sub.prompt("Very thorough exploration of src/", isSidechain=True, agentId="a2898e3")
    sub.response("msg_s1", [bash("toolu_s1", "ls src")], prompt=8_000)
    for line in sub.lines[1:]:
        line.update(isSidechain=True, agentId="a2898e3")
    drafts, _ = transcript_drafts([(str(i), x) for i, x in enumerate([*t.lines, *sub.lines])])
    starts = [d for d in drafts if d.step.kind == "start"]
    assert [d.natural_key for d in starts] == ["start", None]
    assert starts[1].step.detail == {"subagent": True, "agent_id": "a2898e3"}
    model = next(d for d in drafts if d.step.kind == "model_call")
    assert model.context == "a2898e3"  # compaction inference compares within it only


# --- Claude Code 1.0 inline sub-agents, slash-command goals, cancelled parallel calls


def task(call_id: str, description: str, prompt: str) -> dict[str, Any]:
    arguments = {"description": description, "prompt": prompt, "subagent_type": "general-purpose"}
    return {"type": "tool_use", "id": call_id, "name": "Task", "input": arguments}


def test_inline_sub_agents_are_grouped_by_their_parent_chain() -> None:
    """Claude Code 1.0 writes sub-agents into the main file (``isSidechain``, no
    ``agentId``): two ``Task`` calls of one response, their lines interleaved in the file.
    Each sub-agent is the chain under its root prompt: its own start, goal and context."""
    t = Transcript()
    t.prompt(
        "<command-message>review is running…</command-message>\n"
        "<command-name>/review</command-name>\n<command-args>src/app.py</command-args>"
    )
    t.prompt("Review the file below with care ...", isMeta=True)  # the command's body
    t.response(
        "msg_main",
        [
            task("toolu_a", "Check types", "Type-check src/app.py"),
            task("toolu_b", "Check tests", "Run the tests of src/app.py"),
        ],
        prompt=5_000,
    )
    main_lines = list(t.lines)
    a, b = Transcript(), Transcript()
    a.n, b.n = 100, 200
    a.prompt("Type-check src/app.py", isSidechain=True)
    b.prompt("Run the tests of src/app.py", isSidechain=True)
    a.response("msg_a1", [bash("toolu_a1", "mypy src/app.py")], prompt=3_000)
    b.response("msg_b1", [bash("toolu_b1", "pytest tests/test_app.py")], prompt=3_000)
    a.result("toolu_a1", "Success: no issues found")
    b.result("toolu_b1", "2 passed")
    a.prompt("and the stubs too", isSidechain=True)  # a later prompt of sub-agent a
    a.response("msg_a2", [{"type": "text", "text": "Types are fine."}], prompt=3_500)
    for line in [*a.lines, *b.lines]:
        line["isSidechain"] = True
    interleaved = [x for pair in zip(a.lines, b.lines, strict=False) for x in pair]
    interleaved += a.lines[len(b.lines) :]
    drafts, rejects = transcript_drafts(
        [(str(i), x) for i, x in enumerate([*main_lines, *interleaved])]
    )
    assert rejects == []
    starts = {d.step.text: d for d in drafts if d.step.kind == "start"}
    assert list(starts) == [
        "/review src/app.py",
        "Type-check src/app.py",
        "Run the tests of src/app.py",
    ]
    goal = starts["/review src/app.py"]
    assert goal.natural_key == "start" and goal.context == "main"
    sub_a, sub_b = starts["Type-check src/app.py"], starts["Run the tests of src/app.py"]
    assert sub_a.context == a.lines[0]["uuid"] and sub_b.context == b.lines[0]["uuid"]
    assert sub_a.step.detail == {
        "subagent": True,
        "agent_id": a.lines[0]["uuid"],
        "task_call_id": "toolu_a",
        "description": "Check types",
        "subagent_type": "general-purpose",
    }
    assert sub_b.step.detail["task_call_id"] == "toolu_b"
    contexts = {
        d.natural_key: d.context for d in drafts if d.step.kind in ("model_call", "tool_call")
    }
    assert contexts["model_call/msg_main"] == "main"
    assert contexts["model_call/msg_a1"] == contexts["model_call/msg_a2"] == sub_a.context
    assert contexts["model_call/msg_b1"] == contexts["tool_call/toolu_b1"] == sub_b.context
    later = next(d.step for d in drafts if d.natural_key == "model_call/msg_a2")
    assert later.detail == {"user_message": "and the stubs too"}
    # no sub-agent's prompt rides on another context's model call
    carried = [d.step.detail.get("user_message") for d in drafts if d.step.kind == "model_call"]
    assert [m for m in carried if m] == ["and the stubs too"]


def test_a_slash_command_without_arguments_and_a_plain_prompt_are_kept_as_typed() -> None:
    t = Transcript()
    t.prompt("<command-name>init</command-name>\n<command-message>init</command-message>")
    t.prompt("<command-name>/compact</command-name>\n<command-args></command-args>")
    t.response("msg_1", [{"type": "text", "text": "ok"}], prompt=100)
    drafts, _ = transcript_drafts([(str(i), x) for i, x in enumerate(t.lines)])
    assert drafts[0].step.text == "/init"
    assert drafts[1].step.detail["user_message"] == "/compact"


def test_calls_cancelled_by_a_failing_sibling_are_cancelled_not_failed() -> None:
    """One response, four parallel Bash calls: one fails, Claude Code cancels the rest
    (1.0-2.1.14x and 2.1.15x wordings, and a result dropped by a streaming fallback)."""
    t = Transcript()
    t.prompt("Check the build")
    commands = ["false", "make", "ls", "pwd"]
    t.response("msg_1", [bash(f"toolu_{c}", c) for c in commands], prompt=1_000)
    t.result("toolu_false", "Exit code 1", error=True)
    t.result("toolu_make", "<tool_use_error>Sibling tool call errored</tool_use_error>", error=True)
    t.result(
        "toolu_ls",
        "<tool_use_error>Cancelled: parallel tool call Bash(false) errored</tool_use_error>",
        error=True,
    )
    dropped = "<tool_use_error>Streaming fallback - tool execution discarded</tool_use_error>"
    t.result("toolu_pwd", dropped, error=True)
    t.result("toolu_late", "Sibling tool call errored")  # not an error: the output of a call
    drafts, _ = transcript_drafts([(str(i), x) for i, x in enumerate(t.lines)])
    results = {d.step.call_id: d.step for d in drafts if d.step.kind == "tool_result"}
    assert results["toolu_false"].status == "error"
    for call in ("toolu_make", "toolu_ls", "toolu_pwd"):
        assert results[call].status == "cancelled"
    assert results["toolu_make"].error == (
        "<tool_use_error>Sibling tool call errored</tool_use_error>"
    )
    assert results["toolu_late"].status == "ok"


RECORDINGS = CORPUS / "recordings"


def raw(path: Path) -> list[dict[str, Any]]:
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def tool_uses(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        block
        for line in lines
        if line.get("type") == "assistant"
        and isinstance(content := line["message"].get("content"), list)
        for block in content
        if block.get("type") == "tool_use"
    ]


@pytest.mark.skipif(not RECORDINGS.exists(), reason="needs ../shared/corpus beside the repo")
@pytest.mark.parametrize(
    "name", ["d-kimuson__*fe5e1c67-*", "d-kimuson__*5c0375b4-*", "codemie-ai__*4c2ddfdc-*"]
)
def test_real_transcripts_are_read_whole(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code 1.0.98 and 1.0.108 (sub-agents inline) and 2.0.64: every tool_use block
    is a tool-call step, no line is a dead letter, each inline sub-agent (a sidechain root)
    has its own start linked to the Task call that started it, no kill."""
    (path,) = (RECORDINGS / "claude_code").glob(f"{name}.jsonl.xz")
    lines = raw(path)
    session = lines[-1]["sessionId"]
    roots = [x for x in lines if x.get("isSidechain") and x.get("parentUuid") is None]
    tasks = {
        b["id"]
        for x in lines
        if not x.get("isSidechain") and x.get("type") == "assistant"
        for b in x["message"]["content"]
        if b.get("type") == "tool_use" and b["name"] == "Task" and "prompt" in b["input"]
    }
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(path), "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["sessions"], out["dead_letters"]) == (1, 0)
    assert not [a for a in out["alerts"] if a["action"] == "kill"]
    with Store.open(db) as store:
        steps = store.steps(session)
        (info,) = store.sessions([session])
    assert sum(1 for s in steps if s.kind == "tool_call") == len(tool_uses(lines))
    starts = [s for s in steps if s.kind == "start"]
    assert len(starts) == 1 + len(roots)
    assert {s.detail.get("task_call_id") for s in starts[1:]} == tasks
    assert {s.text for s in starts[1:]} == {r["message"]["content"] for r in roots}
    if roots:  # both 1.0 files start with the /orchestrator command
        assert starts[0].text is not None and starts[0].text.startswith("/orchestrator ")
        assert info.goal == starts[0].text


# --- Claude Code 2.1: a sub-agent's messages as ``progress`` lines in the main file


AGENT_ID = "a4c1f07"


def sub_agent_run() -> tuple[Transcript, Transcript]:
    """The main transcript of a 2.1 session that ran one ``Task`` sub-agent, and that
    sub-agent's own file (``<session>/subagents/agent-<id>.jsonl``). The main file
    reports each of the sub-agent's lines, as it is written, in a ``progress`` line:
    ``data.message`` is the sub-agent file's line (same uuid), the shape of 2.1.42."""
    prompt = "Find where dates are parsed in src/ and report the functions"
    main_t = Transcript()
    main_t.prompt("Fix the DST bug; explore first")
    main_t.response("msg_m1", [task("toolu_task", "Explore parsing", prompt)], prompt=9_000)
    sub = Transcript()
    sub.n = 500
    sub.prompt(prompt)
    sub.lines[-1]["message"]["content"] = [{"type": "text", "text": prompt}]
    sub.response(
        "msg_s1",
        [
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "toolu_s_grep", "name": "Grep", "input": {"pattern": "x"}},
            bash("toolu_s_ls", "ls src"),
        ],
        prompt=4_000,
    )
    sub.result("toolu_s_grep", "src/parse.ts")
    sub.result("toolu_s_ls", "parse.ts util.ts")
    sub.response("msg_s2", [bash("toolu_s_cat", "cat src/parse.ts")], prompt=5_000)
    sub.result("toolu_s_cat", "export function parse() {}")
    sub.response("msg_s3", [{"type": "text", "text": "parse() in src/parse.ts"}], prompt=6_000)
    for line in sub.lines:
        line.update(isSidechain=True, agentId=AGENT_ID)
        nested = {k: line[k] for k in ("type", "message", "uuid", "timestamp") if k in line}
        if "requestId" in line:
            nested["requestId"] = line["requestId"]
        main_t._line(
            "progress",
            slug="linear-puzzling-dragon",
            data={
                "message": nested,
                "normalizedMessages": [],
                "type": "agent_progress",
                "prompt": prompt,
                "agentId": AGENT_ID,
            },
            toolUseID=f"agent_msg_{line['uuid'][-4:]}",
            parentToolUseID="toolu_task",
        )
    main_t._line(  # a shell's progress: no step
        "progress", data={"type": "bash_progress", "output": "…", "elapsedTimeSeconds": 3}
    )
    main_t.result("toolu_task", "parse() in src/parse.ts")
    return main_t, sub


def calls_in(lines: list[dict[str, Any]]) -> set[str]:
    """Tool-use ids in assistant lines, and in the assistant messages of progress lines."""
    found = set()
    for line in lines:
        data = line.get("data") if line.get("type") == "progress" else None
        message = data.get("message") if isinstance(data, dict) else line
        if isinstance(message, dict) and message.get("type") == "assistant":
            for block in message["message"]["content"]:
                if block.get("type") == "tool_use":
                    found.add(block["id"])
    return found


def test_progress_lines_give_the_sub_agent_its_steps_when_its_file_is_missing() -> None:
    main_t, sub = sub_agent_run()
    located = [(f"t:{i}", line) for i, line in enumerate(main_t.lines)]
    drafts, rejects = transcript_drafts(located)
    assert rejects == []
    calls = [d for d in drafts if d.step.kind == "tool_call"]
    assert {d.step.call_id for d in calls} == calls_in(main_t.lines)
    assert len(calls) == 4  # the Task call and the sub-agent's three
    starts = [d for d in drafts if d.step.kind == "start"]
    assert [d.context for d in starts] == ["main", AGENT_ID]
    assert starts[1].step.detail == {"subagent": True, "agent_id": AGENT_ID}
    assert starts[1].step.text == sub.lines[0]["message"]["content"][0]["text"]
    sub_models = [d for d in drafts if d.step.kind == "model_call" and d.context == AGENT_ID]
    assert [d.natural_key for d in sub_models] == [
        "model_call/msg_s1",
        "model_call/msg_s2",
        "model_call/msg_s3",
    ]
    # a capture whose first report is the sub-agent's first response: data.prompt starts it
    without_prompt = [x for x in located if x[1].get("uuid") != main_t.lines[2]["uuid"]]
    assert without_prompt != located
    drafts_np, rejects_np = transcript_drafts(without_prompt)
    starts_np = [d for d in drafts_np if d.step.kind == "start"]
    assert rejects_np == [] and [d.context for d in starts_np] == ["main", AGENT_ID]
    assert starts_np[1].step.text == starts[1].step.text
    assert len([d for d in drafts_np if d.step.kind == "tool_call"]) == 4
    # the same ids as the sub-agent's own file gives
    file_drafts, _ = transcript_drafts([(f"s:{i}", line) for i, line in enumerate(sub.lines)])
    from_progress = {d.fallback_id.split("@", 1)[1] for d in drafts if d.context == AGENT_ID}
    assert from_progress == {d.fallback_id.split("@", 1)[1] for d in file_drafts}


def test_progress_lines_and_the_sub_agent_file_store_each_step_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main_t, sub = sub_agent_run()
    bad = dict(main_t.lines[5])  # a progress line whose assistant message lost its body
    bad["uuid"] = "bad-progress"
    bad["data"] = {**bad["data"], "message": {"type": "assistant", "uuid": "x"}}
    main_path = main_t.write(tmp_path / f"{SESSION}.jsonl", extra=[json.dumps(bad)])
    alone = f"sqlite:///{tmp_path / 'alone.db'}"
    assert main(["replay", str(main_path), "--db", alone, "--json"]) == 0
    out_alone = json.loads(capsys.readouterr().out)
    assert out_alone["dead_letters"] == 1  # the broken line only; the rest is kept
    agents = tmp_path / SESSION / "subagents"
    agents.mkdir(parents=True)
    (agents / f"agent-{AGENT_ID}.jsonl").write_text(
        "\n".join(json.dumps(line) for line in sub.lines) + "\n"
    )
    both = f"sqlite:///{tmp_path / 'both.db'}"
    assert main(["replay", str(tmp_path), "--db", both, "--json"]) == 0
    out_both = json.loads(capsys.readouterr().out)
    assert not [a for a in out_both["alerts"] if a["action"] == "kill"]
    with Store.open(alone) as store:
        steps_alone = store.steps(SESSION)
        (letter,) = store.dead_letters()
    with Store.open(both) as store:
        steps_both = store.steps(SESSION)
    assert "message: an object is required" in letter.reason
    for steps in (steps_alone, steps_both):
        calls = [s.call_id for s in steps if s.kind == "tool_call"]
        assert sorted(calls) == sorted(calls_in(main_t.lines))  # each once
    assert sorted(s.step_id for s in steps_both) == sorted(s.step_id for s in steps_alone)


def test_bookkeeping_records_of_newer_releases_are_claimed_and_carry_no_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2.1's bookkeeping records (kebab-case types, some without a uuid or the session's
    id) belong to the transcript: no step, and no dead letter."""
    t = session_with_a_test_loop()
    records = [
        {"type": "mode", "mode": "normal", "sessionId": SESSION},
        {
            "type": "worktree-state",
            "worktreeSession": {"worktreePath": "/w/wt"},
            "sessionId": SESSION,
        },
        {"type": "relocated", "sessionId": SESSION, "relocatedCwd": "/w/wt"},
        {"type": "content-replacement", "sessionId": SESSION, "replacements": []},
        {"type": "speculation-accept", "timestamp": "2026-02-12T16:59:00Z", "timeSavedMs": 100.0},
        {"type": "agent-setting", "key": "x"},
        {"type": "last-prompt", "lastPrompt": "Fix the DST bug", "sessionId": SESSION},
    ]
    assert all(is_claude_code_line(r) for r in records)
    path = t.write(tmp_path / f"{SESSION}.jsonl", extra=[json.dumps(r) for r in records])
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(path), "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["sessions"], out["dead_letters"]) == (1, 0)
    drafts, _ = transcript_drafts([(str(i), x) for i, x in enumerate(t.lines)])
    assert out["steps"] == len({d.natural_key or d.fallback_id for d in drafts})


def test_kebab_case_records_of_another_tool_are_dead_letters_not_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kebab-case claim is for a transcript's bookkeeping: a file where no line names
    a Claude Code session (here the Vercel AI SDK's stream parts) is not read as one, and
    each of its records is a dead letter with the reason, not silently nothing."""
    parts = [
        {"type": "start-step", "request": {}},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "bash", "input": {"command": "ls"}},
        {"type": "tool-result", "toolCallId": "c1", "output": "a b"},
        {"type": "finish-step", "finishReason": "stop"},
    ]
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in parts))
    assert main(["replay", str(path), "--db", f"sqlite:///{tmp_path / 'tw.db'}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["steps"], out["dead_letters"]) == (0, len(parts))
    assert all("no Claude Code sessionId" in r["reason"] for r in out["dead_letter_reasons"])
    # a transcript's own summary line is still no dead letter, even alone
    summary = {"type": "summary", "summary": "Fixing the DST bug", "leafUuid": "u-1"}
    assert transcript_drafts([("1", summary)]) == ([], [])
