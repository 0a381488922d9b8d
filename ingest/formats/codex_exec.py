"""``codex exec --json`` captures → step drafts.

A headless Codex run prints one ``ThreadEvent`` a line (``codex-rs/exec/src/exec_events.rs``):
``thread.started`` (``thread_id``: the session), ``turn.started``, ``item.started`` /
``item.updated`` / ``item.completed`` (an ``item`` with ``id`` and ``type``),
``turn.completed`` (``usage``: ``input_tokens``, cached ones included,
``cached_input_tokens``, ``output_tokens``), ``turn.failed`` (``error.message``) and
``error`` (``message``). Read here:

- a turn is **one** ``model_call`` (the stream does not split it into requests), at the
  turn's first item, with its ``agent_message`` texts and the ``turn.completed`` usage;
- ``command_execution`` (``command``, ``aggregated_output``, ``exit_code``, ``status``:
  ``failed`` or a non-zero exit fails it, ``declined`` cancels it), ``file_change``
  (``changes`` of ``path``/``kind``), ``mcp_tool_call`` (``server``, ``tool``,
  ``arguments``, ``result.content`` or ``error.message``) and ``collab_tool_call`` are a
  ``tool_call`` at the item's start and a ``tool_result`` at its completion;
  ``web_search`` (``query``, ``action``) is a call the API runs, with no result;
- ``turn.failed``, ``error`` and ``error`` items are ``error`` steps; reasoning, plans
  and to-do lists carry no step.

The prompt is the command line's, not in the stream: a capture has no ``start``. Its
lines carry no time either: line *i* is placed *i* ms after the Unix epoch, which keeps
their order. An item started and never completed (the run was killed) keeps its call.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from features.calls.actions import tool_call_fields, tool_result_fields
from features.calls.canonical import canonical_json
from features.text.clip import excerpt
from ingest.decoded import Draft
from ingest.semconv.attributes import positive_int
from models.errors import DecodeError
from models.records import Step, StepKind

__all__ = ["AGENT", "SOURCE", "exec_drafts", "is_codex_exec_line"]

SOURCE = "codex"
AGENT = "codex"
_EVENTS = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "item.plan.delta",
        "request_user_input",
    }
)
_TOOL_ITEMS = frozenset(
    {"command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "web_search"}
)
_SESSION_IN_NAME = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.IGNORECASE
)


def is_codex_exec_line(obj: Any) -> bool:
    """A line of ``codex exec --json`` (an ``error`` line is ``{"type", "message"}`` only,
    which no trajwatch session event is: those carry a ``session_id``)."""
    if not isinstance(obj, Mapping) or "session_id" in obj:
        return False
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "error":
        return isinstance(obj.get("message"), str) and set(obj) == {"type", "message"}
    if kind in ("item.started", "item.updated", "item.completed"):
        return isinstance(obj.get("item"), Mapping)
    return kind in _EVENTS


@dataclass(slots=True)
class _Exec:
    session: str
    drafts: list[Draft] = field(default_factory=list)
    rejects: list[tuple[str, str, Mapping[str, Any]]] = field(default_factory=list)
    turn: Draft | None = None
    texts: list[str] = field(default_factory=list)
    called: set[str] = field(default_factory=set)
    """Items whose tool call was added (at their start)."""


def exec_drafts(
    lines: Sequence[tuple[str, Mapping[str, Any]]], *, file_name: str = ""
) -> tuple[list[Draft], list[tuple[str, str, Mapping[str, Any]]]]:
    """The drafts of a capture's ``(location, line)`` pairs and the lines that could not
    be read as ``(location, reason, line)``. The session is ``thread.started``'s
    ``thread_id``, else the UUID in the file name."""
    session = _session_id(lines, file_name)
    if session is None:
        raise DecodeError("thread.started: no thread id in the capture or its file name")
    run = _Exec(session)
    for index, (location, line) in enumerate(lines):
        try:
            _read_line(run, index, location, line)
        except DecodeError as exc:
            run.rejects.append((location, exc.reason, line))
    _close_turn(run)
    return run.drafts, run.rejects


def _session_id(lines: Sequence[tuple[str, Mapping[str, Any]]], file_name: str) -> str | None:
    for _, line in lines:
        thread = line.get("thread_id")
        if line.get("type") == "thread.started" and isinstance(thread, str) and thread:
            return thread
    found = _SESSION_IN_NAME.search(file_name)
    return found.group(1).lower() if found else None


def _read_line(run: _Exec, index: int, location: str, line: Mapping[str, Any]) -> None:
    kind = line.get("type")
    common: dict[str, Any] = {
        "step_id": "",
        "session_id": run.session,
        "ts": index * 1_000_000,
        "agent": AGENT,
        "source": SOURCE,
        "source_ref": f"{run.session}@{location.rsplit(':', 1)[-1]}",
    }

    def add(step: Step, natural: str | None = None, suffix: str = "") -> Draft:
        draft = Draft(
            step=step,
            fallback_id=common["source_ref"] + suffix,
            natural_key=natural,
            session_hint=run.session,
        )
        run.drafts.append(draft)
        return draft

    if kind in ("turn.started", "turn.completed", "turn.failed"):
        if kind == "turn.completed" and run.turn is not None:
            usage = line.get("usage")
            usage = usage if isinstance(usage, Mapping) else {}
            run.turn.step = run.turn.step.with_(
                tokens_in=positive_int(usage.get("input_tokens")) or None,
                tokens_out=positive_int(usage.get("output_tokens")) or None,
                end_ts=common["ts"],
            )
        _close_turn(run)
        if kind == "turn.failed":
            error = line.get("error")
            message = error.get("message") if isinstance(error, Mapping) else error
            _error(add, common, message)
    elif kind == "error":
        _error(add, common, line.get("message"))
    elif kind in ("item.started", "item.updated", "item.completed"):
        _item(run, kind, line["item"], common, add)


def _close_turn(run: _Exec) -> None:
    if run.turn is not None and run.texts:
        run.turn.step = run.turn.step.with_(text=excerpt("\n".join(run.texts)))
    run.turn, run.texts = None, []


def _error(add: Any, common: dict[str, Any], message: Any) -> None:
    text = message if isinstance(message, str) else canonical_json(message)
    add(Step(kind=StepKind.ERROR, status="error", error=excerpt(text), **common))


def _item(
    run: _Exec, event: str, item: Mapping[str, Any], common: dict[str, Any], add: Any
) -> None:
    item_id, kind = item.get("id"), item.get("type")
    if not isinstance(item_id, str) or not item_id or not isinstance(kind, str):
        raise DecodeError("item: a string id and type are required")
    if run.turn is None and (kind in ("reasoning", "agent_message") or kind in _TOOL_ITEMS):
        # the turn's model call, at its first item
        step = Step(kind=StepKind.MODEL_CALL, status="ok", detail={}, **common)
        run.turn = add(step, None, ":model")
    if kind == "agent_message" and event == "item.completed":
        if isinstance(item.get("text"), str):
            run.texts.append(item["text"])
    elif kind == "error" and event == "item.completed":
        _error(add, common, item.get("message"))
    elif kind in _TOOL_ITEMS:
        call_id = f"{run.session}:{item_id}"
        if call_id not in run.called:
            run.called.add(call_id)
            name, arguments = _call(kind, item)
            fields = tool_call_fields(name, arguments)
            step = Step(kind=StepKind.TOOL_CALL, call_id=call_id, **fields, **common)
            add(step, f"tool_call/{call_id}", ":call")
        if event == "item.completed" and kind != "web_search":
            text, failed, cancelled = _outcome(kind, item)
            fields = tool_result_fields(text, failed=failed, cancelled=cancelled)
            step = Step(kind=StepKind.TOOL_RESULT, call_id=call_id, **fields, **common)
            add(step, f"tool_result/{call_id}", ":result")


def _call(kind: str, item: Mapping[str, Any]) -> tuple[str, Any]:
    """(tool name, arguments) of a tool item."""
    if kind == "command_execution":
        return "shell", {"command": item.get("command")}
    if kind == "file_change":
        return "apply_patch", {"changes": item.get("changes")}
    if kind == "mcp_tool_call":
        server, tool = item.get("server"), item.get("tool")
        name = f"mcp__{server}__{tool}" if server and tool else str(tool or "mcp_tool")
        return name, item.get("arguments")
    if kind == "collab_tool_call":
        return f"collab_{item.get('tool')}", {"prompt": item.get("prompt")}
    return "web_search", {"query": item.get("query"), "action": item.get("action")}


def _outcome(kind: str, item: Mapping[str, Any]) -> tuple[str | None, bool, bool]:
    """(text, failed, cancelled) of a completed tool item."""
    status = item.get("status")
    failed = status == "failed"
    if kind == "command_execution":
        output = item.get("aggregated_output")
        code = item.get("exit_code")
        failed |= isinstance(code, int) and not isinstance(code, bool) and code != 0
        return (output if isinstance(output, str) else None), failed, status == "declined"
    if kind == "mcp_tool_call":
        error = item.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"]), True, False
        result = item.get("result")
        content = result.get("content") if isinstance(result, Mapping) else None
        texts = [
            c["text"]
            for c in (content if isinstance(content, list) else [])
            if isinstance(c, Mapping) and isinstance(c.get("text"), str)
        ]
        return ("\n".join(texts) or canonical_json(result) if result else None), failed, False
    if kind == "file_change":
        changes = item.get("changes")
        paths = [
            f"{c.get('kind')} {c.get('path')}"
            for c in (changes if isinstance(changes, list) else [])
            if isinstance(c, Mapping)
        ]
        return "\n".join(paths) or None, failed, False
    states = item.get("agents_states")
    return (canonical_json(states) if states else None), failed, False
