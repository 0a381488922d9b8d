"""Every real runtime recording in ``../shared/corpus/recordings`` is read whole.

These files were written by the real tools (Claude Code, Codex, Google ADK, a Grafana
Tempo export) on other people's machines. For each file the test counts, from the raw
file and independently of the decoders, the tool calls it records, and checks that
replaying it stores that many tool-call steps, that no valid line became a dead letter,
and that an ordinary session raises no kill.
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.store import Store
from tests.support.paths import ROOT
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

RECORDINGS = ROOT.parent / "shared" / "corpus" / "recordings"
FILES = sorted(RECORDINGS.glob("*/*.xz")) if RECORDINGS.exists() else []

# Response items that are calls of a tool, as the Codex protocol names them.
CODEX_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
# Content blocks that call a tool: Claude Code's own, the API's server tools, MCP connectors.
CLAUDE_CALLS = {"tool_use", "server_tool_use", "mcp_tool_use"}
# ADK wraps parallel calls in a span that is no call of its own.
MERGED_TOOLS = "(merged tools)"


def _lines(path: Path) -> Iterator[Any]:
    with lzma.open(path, "rt", encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                yield json.loads(line)


def _claude_code_calls(path: Path) -> int:
    ids = set()
    for line in _lines(path):
        if line.get("type") == "progress":  # 2.1: a sub-agent's line, reported in the main file
            data = line.get("data")
            line = data.get("message") if isinstance(data, dict) else None
            if not isinstance(line, dict):
                continue
        message = line.get("message") if line.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in CLAUDE_CALLS:
                ids.add(block["id"])
    return len(ids)


def _codex_calls(path: Path) -> int:
    # a rollout from before the envelope has bare items, one a line
    items = (
        line["payload"] if line.get("type") == "response_item" else line
        for line in _lines(path)
        if line.get("type") == "response_item" or "payload" not in line
    )
    return sum(1 for item in items if item.get("type") in CODEX_CALLS)


def _attribute(span: dict[str, Any], key: str) -> Any:
    for attribute in span.get("attributes", []):
        if attribute["key"] == key:
            return next(iter(attribute["value"].values()), None)
    return None


def _otlp_calls(path: Path) -> int:
    with lzma.open(path, "rt", encoding="utf-8") as stream:
        document = json.load(stream)
    count = 0
    for resource in document.get("resourceSpans", document.get("batches", [])):
        for scope in resource.get("scopeSpans", resource.get("instrumentationLibrarySpans", [])):
            for span in scope["spans"]:
                if _attribute(span, "gen_ai.operation.name") == "execute_tool" and (
                    _attribute(span, "gen_ai.tool.name") != MERGED_TOOLS
                ):
                    count += 1
    return count


COUNTERS = {"claude_code": _claude_code_calls, "codex": _codex_calls, "otlp": _otlp_calls}


@pytest.mark.skipif(not FILES, reason="needs ../shared/corpus beside the repo")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:60])
def test_a_real_recording_is_stored_whole(path: Path, tmp_path: Path) -> None:
    expected_calls = COUNTERS[path.parent.name](path)
    db_url = f"sqlite:///{tmp_path / 'r.db'}"
    summary = replay([path], settings=Settings.from_env(db_url=db_url))

    store = Store.open(db_url)
    try:
        steps = [step for session in summary.sessions for step in store.steps(session)]
    finally:
        store.close()
    tool_calls = [step for step in steps if step.kind == "tool_call"]

    assert summary.dead_letters == 0
    assert len(tool_calls) == expected_calls
    assert all(step.tool for step in tool_calls)
    assert not [alert for alert in summary.alerts if alert.action in ("kill", "rollback")]
