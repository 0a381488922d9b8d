"""OpenAI Codex CLI session rollouts → step drafts.

Codex keeps each session as JSON lines in
``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl``, one
``{"timestamp", "type", "payload"}`` object a line (the envelope of the Rust
``RolloutLine``; field names from ``codex-rs/protocol``). Read here:

- ``session_meta``: the session ``id``, ``cwd`` (the workspace) and ``git``
  (``repository_url``, ``commit_hash``: the task's repository and base commit);
- ``turn_context``: the ``model`` of the calls that follow, ``approval_policy`` and
  ``sandbox_policy``;
- ``event_msg`` ``user_message``: the first is the session's ``start`` and goal, later ones
  ride on the next model call (``detail.user_message``); ``token_count``: one model call
  (``last_token_usage``: input tokens, cached ones included, and output tokens with the
  reasoning ones), placed before the items of its response; a ``token_count`` whose
  ``total_token_usage`` did not change is a repeat Codex writes (rate-limit refreshes),
  not a call; ``error``: an ``error`` step;
- ``response_item``: ``function_call`` (``arguments`` a JSON string), ``custom_tool_call``
  (``apply_patch``'s patch as ``input``), ``local_shell_call`` (an argv and its working
  directory) and ``web_search_call`` are ``tool_call`` steps; ``function_call_output`` /
  ``custom_tool_call_output`` their ``tool_result`` (a shell's exit code, from the JSON
  ``metadata.exit_code`` or the ``Exit code: N`` header, fails the call when non-zero);
  assistant ``message`` text is the model call's output;
- ``compacted``: an explicit ``compaction`` with its summary.

Older rollouts without the envelope (bare items) carry no usage and no user events and
are not read. A rollout is delivered whole and put in event-time order, like a Claude
Code transcript; a line that cannot be read is a dead letter, the rest is kept. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from features.actions import tool_call_fields, tool_result_fields
from features.canonical import canonical_json
from features.text import excerpt
from ingest.attributes import json_value, positive_int
from ingest.draft import Draft
from ingest.errors import DecodeError
from ingest.session_events import parse_ts
from models.records import Step, StepKind

__all__ = ["AGENT", "SOURCE", "is_codex_line", "rollout_drafts"]

SOURCE = "codex"
AGENT = "codex"
_EXIT_RE = re.compile(r"^Exit code: (-?\d+)", re.MULTILINE)
_SESSION_IN_NAME = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", re.IGNORECASE
)


def is_codex_line(obj: Any) -> bool:
    """A line of a Codex rollout: the ``{"timestamp", "type", "payload"}`` envelope, of any
    line type (newer releases add some; those not read here carry no step)."""
    return (
        isinstance(obj, Mapping)
        and isinstance(obj.get("type"), str)
        and isinstance(obj.get("payload"), Mapping)
        and "timestamp" in obj
        and "session_id" not in obj
    )


@dataclass(slots=True)
class _Rollout:
    session: str
    drafts: list[Draft] = field(default_factory=list)
    rejects: list[tuple[str, str, Mapping[str, Any]]] = field(default_factory=list)
    model: str | None = None
    workspace: dict[str, Any] = field(default_factory=dict)
    started: bool = False
    prompt: str | None = None
    response_at: int | None = None
    """Where the current response's first item sits in ``drafts``: its model call goes there."""
    texts: list[str] = field(default_factory=list)
    total: Any = None
    calls: int = 0


def rollout_drafts(
    lines: Sequence[tuple[str, Mapping[str, Any]]], *, file_name: str = ""
) -> tuple[list[Draft], list[tuple[str, str, Mapping[str, Any]]]]:
    """The drafts of a rollout's ``(location, line)`` pairs and the lines that could not be
    read as ``(location, reason, line)``. The session id is ``session_meta``'s, else the
    UUID in the file name."""
    session = _session_id(lines, file_name)
    rollout = _Rollout(session)
    for location, line in lines:
        try:
            _read_line(rollout, location, line)
        except DecodeError as exc:
            rollout.rejects.append((location, exc.reason, line))
    if session is None and rollout.drafts:
        raise DecodeError("session_meta.id: no session id in the rollout or its file name")
    return rollout.drafts, rollout.rejects


def _session_id(lines: Sequence[tuple[str, Mapping[str, Any]]], file_name: str) -> Any:
    for _, line in lines:
        payload = line.get("payload")
        if line.get("type") == "session_meta" and isinstance(payload, Mapping):
            value = payload.get("id")
            if isinstance(value, str) and value:
                return value
    found = _SESSION_IN_NAME.search(file_name)
    return found.group(1).lower() if found else None


def _read_line(rollout: _Rollout, location: str, line: Mapping[str, Any]) -> None:
    kind = line.get("type")
    payload = line.get("payload")
    if not isinstance(payload, Mapping):
        raise DecodeError("payload: an object is required")
    ts = parse_ts(line.get("timestamp"))
    ref = f"{rollout.session}@{location.rsplit(':', 1)[-1]}"
    common: dict[str, Any] = {
        "step_id": "",
        "session_id": rollout.session,
        "ts": ts,
        "agent": AGENT,
        "source": SOURCE,
        "source_ref": ref,
    }

    def add(step: Step, natural: str | None = None, at: int | None = None) -> None:
        draft = Draft(step=step, fallback_id=ref, natural_key=natural, session_hint=rollout.session)
        if at is None:
            rollout.drafts.append(draft)
        else:
            rollout.drafts.insert(at, draft)

    if kind == "session_meta":
        git = payload.get("git")
        git = git if isinstance(git, Mapping) else {}
        for key, value in (
            ("workspace", payload.get("cwd")),
            ("repository", git.get("repository_url")),
            ("commit", git.get("commit_hash")),
            ("branch", git.get("branch")),
            ("version", payload.get("cli_version")),
        ):
            if isinstance(value, str) and value:
                rollout.workspace[key] = value
    elif kind == "turn_context":
        if isinstance(payload.get("model"), str):
            rollout.model = payload["model"]
    elif kind == "event_msg":
        _event(rollout, payload, common, add)
    elif kind == "response_item":
        _item(rollout, payload, common, add)
    elif kind == "compacted":
        summary = payload.get("message")
        step = Step(
            kind=StepKind.COMPACTION,
            text=excerpt(summary) if isinstance(summary, str) and summary else None,
            detail={"tokens_before": None, "tokens_after": None, "inferred": False},
            **common,
        )
        add(step)


def _event(rollout: _Rollout, payload: Mapping[str, Any], common: dict[str, Any], add: Any) -> None:
    kind = payload.get("type")
    if kind == "user_message":
        text = payload.get("message")
        if not isinstance(text, str) or not text.strip():
            return
        if rollout.started:
            rollout.prompt = text
            return
        rollout.started = True
        facts = {"subagent": False, **rollout.workspace}
        add(Step(kind=StepKind.START, text=excerpt(text), detail=facts, **common), "start")
    elif kind == "token_count":
        info = payload.get("info")
        if not isinstance(info, Mapping):
            return
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        if total == rollout.total or not isinstance(last, Mapping):
            return  # the same count written again: no new call
        rollout.total = total
        rollout.calls += 1
        detail: dict[str, Any] = {}
        if rollout.prompt:
            detail["user_message"] = excerpt(rollout.prompt, 4096)
            rollout.prompt = None
        window = info.get("model_context_window")
        if isinstance(window, int):
            detail["context_window"] = window
        step = Step(
            kind=StepKind.MODEL_CALL,
            model=rollout.model,
            tokens_in=positive_int(last.get("input_tokens")) or None,
            tokens_out=(
                positive_int(last.get("output_tokens"))
                + positive_int(last.get("reasoning_output_tokens"))
            )
            or None,
            text=excerpt("\n".join(rollout.texts)) if rollout.texts else None,
            status="ok",
            detail=detail,
            **common,
        )
        at = rollout.response_at
        if at is not None:  # before the items of its response, at the first one's time
            step = step.with_(ts=rollout.drafts[at].step.ts, end_ts=common["ts"])
        add(step, None, at)
        rollout.response_at, rollout.texts = None, []
    elif kind == "error":
        message = payload.get("message")
        text = message if isinstance(message, str) else canonical_json(message)
        add(Step(kind=StepKind.ERROR, status="error", error=excerpt(text), **common))


def _item(rollout: _Rollout, payload: Mapping[str, Any], common: dict[str, Any], add: Any) -> None:
    kind = payload.get("type")
    if kind == "message":
        if payload.get("role") == "assistant":
            _respond(rollout)
            rollout.texts.extend(_texts(payload.get("content")))
        return
    if kind == "reasoning":
        _respond(rollout)
        return
    call_id = payload.get("call_id")
    if kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        _respond(rollout)
        arguments: Any
        if kind == "local_shell_call":
            action = payload.get("action")
            action = action if isinstance(action, Mapping) else {}
            name = "local_shell"
            arguments = {
                "command": action.get("command"),
                "workdir": action.get("working_directory"),
            }
        elif kind == "web_search_call":
            name, arguments = "web_search", payload.get("action")
        else:
            named = payload.get("name")
            if not isinstance(named, str) or not named:
                raise DecodeError(f"{kind}.name: a non-empty string is required")
            name = named
            raw = payload.get("arguments" if kind == "function_call" else "input")
            arguments = json_value(raw) if kind == "function_call" else {"input": raw}
        has_id = isinstance(call_id, str) and bool(call_id)
        step = Step(
            kind=StepKind.TOOL_CALL,
            call_id=call_id if has_id else None,
            **tool_call_fields(name, arguments),
            **common,
        )
        add(step, f"tool_call/{call_id}" if has_id else None)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        if not isinstance(call_id, str) or not call_id:
            raise DecodeError(f"{kind}.call_id: a non-empty string is required")
        text, failed = _output(payload.get("output"))
        fields = tool_result_fields(text, failed=failed)
        step = Step(kind=StepKind.TOOL_RESULT, call_id=call_id, **fields, **common)
        add(step, f"tool_result/{call_id}")


def _respond(rollout: _Rollout) -> None:
    """Note where the current model response's items begin."""
    if rollout.response_at is None:
        rollout.response_at = len(rollout.drafts)


def _output(value: Any) -> tuple[str | None, bool]:
    """(text, failed) of a tool's output: a shell's JSON ``{"output", "metadata":
    {"exit_code"}}`` or freeform text with an ``Exit code: N`` header, or plain text."""
    if isinstance(value, Mapping):  # {content, success}
        content = value.get("content")
        text = content if isinstance(content, str) else canonical_json(content)
        return text, value.get("success") is False
    if isinstance(value, list):
        return "\n".join(_texts(value)) or canonical_json(value), False
    if not isinstance(value, str):
        return None, False
    parsed = json_value(value)
    if isinstance(parsed, Mapping) and isinstance(parsed.get("metadata"), Mapping):
        code = parsed["metadata"].get("exit_code")
        output = parsed.get("output")
        text = output if isinstance(output, str) else value
        return text, isinstance(code, int) and code != 0
    found = _EXIT_RE.search(value[:200])
    return value, bool(found and int(found.group(1)) != 0)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [c["text"] for c in content if isinstance(c, Mapping) and isinstance(c.get("text"), str)]
