"""Gemini CLI's session recordings (``~/.gemini/tmp/<hash>/chats/session-*.json[l]``).

Written as ``ChatRecordingService`` writes them (google-gemini/gemini-cli,
``packages/core/src/services/chatRecordingService.ts``, ``chatRecordingTypes.ts``): the
metadata first, then each message appended whenever it is written or updated (a
``gemini`` message again once its tokens arrive, again with its tool calls scheduled,
again with their results), ``$set`` updates and a ``$rewindTo``; the legacy form is the
final ``ConversationRecord`` in one document. The conversation is made up.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.formats.gemini_chat import chat_drafts
from ingest.formats.table import classify
from models.errors import DecodeError
from models.store import Store
from tests.unit.ingest.test_bad_input import json_values
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

SESSION = "3b9d7c1e-2f4a-4b6c-8d0e-1f2a3b4c5d6e"


def at(second: int) -> str:
    return f"2026-07-11T09:{second // 60:02d}:{second % 60:02d}.000Z"


def call(call_id: str, name: str, args: dict[str, Any], second: int) -> dict[str, Any]:
    return {
        "id": call_id,
        "name": name,
        "args": args,
        "status": "scheduled",
        "timestamp": at(second),
        "displayName": name,
        "description": "",
        "renderOutputAsMarkdown": False,
    }


def ended(record: dict[str, Any], status: str, key: str, value: str) -> dict[str, Any]:
    response = {"id": record["id"], "name": record["name"], "response": {key: value}}
    return {**record, "status": status, "result": [{"functionResponse": response}]}


def recording() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The JSON lines of one session, and the final ``ConversationRecord``."""
    meta = {
        "sessionId": SESSION,
        "projectHash": "9f" * 32,
        "startTime": at(0),
        "lastUpdated": at(0),
        "kind": "main",
    }
    lines: list[dict[str, Any]] = [meta]
    final: dict[str, dict[str, Any]] = {}

    def write(message: dict[str, Any]) -> None:
        final[message["id"]] = copy.deepcopy(message)
        lines.append(copy.deepcopy(message))
        lines.append({"$set": {"lastUpdated": message["timestamp"]}})

    prompt = {"id": "u1", "timestamp": at(1), "type": "user", "content": [{"text": "Fix tests"}]}
    write(prompt)
    reply: dict[str, Any] = {
        "id": "g1",
        "timestamp": at(3),
        "type": "gemini",
        "content": "I'll look at the tests.",
        "thoughts": [{"subject": "Plan", "description": "read", "timestamp": at(2)}],
        "tokens": None,
        "model": "gemini-2.5-pro",
    }
    write(reply)
    reply["tokens"] = {
        "input": 9000,
        "output": 60,
        "cached": 4000,
        "thoughts": 30,
        "tool": 0,
        "total": 9090,
    }
    write(reply)
    read = call("read_file-1752224403000-a1", "read_file", {"absolute_path": "/w/t.py"}, 4)
    shell = call(
        "run_shell_command-1752224403001-b2", "run_shell_command", {"command": "pytest"}, 4
    )
    reply["toolCalls"] = [read, shell]
    write(reply)
    reply["toolCalls"] = [
        ended(read, "success", "output", "def test_x(): ..."),
        ended(shell, "error", "error", "exit code 1: 1 failed"),
    ]
    write(reply)
    second = {
        "id": "g2",
        "timestamp": at(8),
        "type": "gemini",
        "content": "",
        "tokens": {"input": 11000, "output": 40, "cached": 9000, "total": 11040},
        "model": "gemini-2.5-pro",
        "toolCalls": [
            ended(
                call("replace-1752224409000-c3", "replace", {"file_path": "/w/x.py"}, 9),
                "cancelled",
                "error",
                "[Operation Cancelled] Reason: User cancelled the operation.",
            ),
            call("write_file-1752224409001-d4", "write_file", {"file_path": "/w/y.py"}, 9),
        ],
    }
    write(second)  # the write_file call never ended: the session stopped there
    write({"id": "i1", "timestamp": at(10), "type": "info", "content": "Request cancelled."})
    write({"id": "e1", "timestamp": at(11), "type": "error", "content": "[API Error: quota]"})
    lines.append({"$rewindTo": "g2"})
    write({"id": "u2", "timestamp": at(12), "type": "user", "content": "try again"})
    write(
        {
            "id": "g3",
            "timestamp": at(13),
            "type": "gemini",
            "content": [{"text": "Done.", "thought": False}],
            "model": "gemini-2.5-pro",
        }
    )
    document = {**meta, "lastUpdated": at(13), "messages": list(final.values())}
    return lines, document


def tool_call_ids(messages: list[dict[str, Any]]) -> set[str]:
    return {
        c["id"] for m in messages if m.get("type") == "gemini" for c in m.get("toolCalls") or []
    }


def test_a_recording_and_its_legacy_document_give_the_same_steps() -> None:
    lines, document = recording()
    assert all(classify(line) == "gemini_chat" for line in lines)
    assert classify(document) == "gemini_chat"
    drafts, rejects = chat_drafts([(f"r:{i}", line) for i, line in enumerate(lines)])
    assert rejects == []
    steps = [d.step for d in drafts]
    calls = [s for s in steps if s.kind == "tool_call"]
    assert {c.call_id for c in calls} == tool_call_ids(document["messages"]) and len(calls) == 4
    results = {s.call_id: s for s in steps if s.kind == "tool_result"}
    assert [results[c.call_id].status for c in calls[:3]] == ["ok", "error", "cancelled"]
    assert calls[3].call_id not in results  # never ended
    assert results[calls[0].call_id].result == "def test_x(): ..."
    assert results[calls[1].call_id].error == "exit code 1: 1 failed"
    (start,) = [s for s in steps if s.kind == "start"]
    assert start.text == "Fix tests" and start.agent == "gemini-cli"
    models = [d for d in drafts if d.step.kind == "model_call"]
    assert [d.natural_key for d in models] == ["model_call/g1", "model_call/g2", "model_call/g3"]
    assert (models[0].step.tokens_in, models[0].step.tokens_out) == (9000, 90)
    assert models[0].step.text == "I'll look at the tests."
    assert models[2].step.detail["user_message"] == "try again"
    assert [s.error for s in steps if s.kind == "error"] == ["[API Error: quota]"]
    legacy, legacy_rejects = chat_drafts([("doc", document)])
    assert legacy_rejects == []
    key = [(d.natural_key or d.fallback_id, d.step.kind, d.step.status) for d in drafts]
    assert sorted(key) == sorted(
        (d.natural_key or d.fallback_id, d.step.kind, d.step.status) for d in legacy
    )


def test_replay_stores_every_call_once_and_a_bad_record_costs_itself(tmp_path: Path) -> None:
    lines, document = recording()
    bad = {"id": "g9", "timestamp": "yesterday", "type": "gemini", "content": "x"}
    chats = tmp_path / "chats"
    chats.mkdir()
    path = chats / "session-2026-07-11T09-00-3b9d7c1e.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [*lines[:5], bad, *lines[5:]]) + "\n")
    (chats / "session-2026-07-10T09-00-3b9d7c1e.json").write_text(json.dumps(document, indent=2))
    db = f"sqlite:///{tmp_path / 'c.db'}"
    summary = replay([chats], settings=Settings.from_env(db_url=db))
    assert summary.sessions == [SESSION] and summary.dead_letters == 1
    assert not [a for a in summary.alerts if a.action in ("kill", "rollback")]
    with Store.open(db) as store:
        steps = store.steps(SESSION)
        (letter,) = store.dead_letters()
    stored = [s.call_id for s in steps if s.kind == "tool_call"]
    assert sorted(stored) == sorted(tool_call_ids(document["messages"]))  # once, from both
    assert letter.reason.startswith("gemini_chat: ") and "g9" in letter.payload.decode()


_record = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["g1", "u1", ""]) | json_values,
        "timestamp": st.sampled_from([at(1), "x", None, 3]),
        "type": st.sampled_from(["user", "gemini", "error", "info", "other"]),
        "content": json_values,
        "toolCalls": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "id": st.sampled_from(["c1", "c2"]) | json_values,
                    "name": st.sampled_from(["read_file"]) | json_values,
                    "args": json_values,
                    "status": st.sampled_from(["success", "error", "cancelled", "executing"]),
                    "result": json_values,
                    "timestamp": st.sampled_from([at(2), "x"]),
                },
            )
        )
        | json_values,
        "tokens": st.dictionaries(
            st.sampled_from(["input", "output", "thoughts", "tool"]), json_values
        )
        | json_values,
        "$set": json_values,
        "$rewindTo": json_values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record | json_values, max_size=6), st.booleans())
def test_the_recording_reader_never_raises(records: list[Any], with_meta: bool) -> None:
    meta = [{"sessionId": SESSION, "projectHash": "h"}] if with_meta else []
    located = [(f"r:{i}", r) for i, r in enumerate([*meta, *records])]
    try:
        drafts, rejects = chat_drafts(located)
    except DecodeError as exc:
        assert not with_meta and "sessionId" in exc.reason
        return
    assert all(reason for _, reason, _ in rejects)
    for draft in drafts:
        assert draft.session_hint == SESSION and 0 <= draft.step.ts < 2**63
