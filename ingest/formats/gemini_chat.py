"""Gemini CLI's own session recordings → step drafts.

Gemini CLI records each session under ``~/.gemini/tmp/<project hash>/chats/``
(``packages/core/src/services/chatRecordingService.ts`` and ``chatRecordingTypes.ts``
of google-gemini/gemini-cli). Two forms, one record shape:

- ``session-<time>-<id8>.json`` (before JSON lines): one ``ConversationRecord``
  ``{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}``;
- ``session-<time>-<id8>.jsonl``: the metadata ``{"sessionId", "projectHash",
  "startTime", "lastUpdated", "kind"}`` first, then records appended as the session goes:
  a ``MessageRecord`` each time a message is written *or updated* (the same ``id`` again:
  the last one holds its tool calls' results and its tokens), ``{"$set": {...}}``
  metadata updates (``messages`` among them when the history is rewritten) and
  ``{"$rewindTo": id}``.

A ``MessageRecord`` is ``{"id", "timestamp", "type", "content"}`` (``content`` a
``PartListUnion``: a string, a part or a list of parts with ``text``), and for ``type``
``gemini`` also ``toolCalls`` (``ToolCallRecord``: ``id``, ``name``, ``args``,
``result``, ``status``, ``timestamp``), ``tokens`` (``input`` = prompt tokens, cached
included; ``output``; ``cached``; ``thoughts``; ``tool``; ``total``) and ``model``.
Read here:

- the first ``user`` message with typed text is the session's ``start`` (its goal), later
  ones ride on the next model call (``detail.user_message``); a ``user`` message that
  only carries function responses is no prompt;
- a ``gemini`` message is one ``model_call`` (input tokens ``input`` + ``tool``, output
  ``output`` + ``thoughts``, the parts of Gemini's ``totalTokenCount``; its text parts
  the output), each of its tool calls a ``tool_call`` at the call's time and, once it
  ended (``success``, ``error``, ``cancelled``), a ``tool_result`` whose text is the
  function response's ``output`` or ``error`` (else ``resultDisplay``);
- an ``error`` message is an ``error`` step; ``info`` and ``warning`` carry none.

A rewind removes messages from what the model sees next, not from what happened: the
steps of rewound messages are kept. The recording has no delivery order a replay could
follow: it is delivered whole, in event-time order. A record that cannot be read is a
dead letter with the reason; the rest of the file is kept. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from features.calls.actions import tool_call_fields, tool_result_fields
from features.calls.canonical import canonical_json
from features.text.clip import excerpt
from ingest.decoded import Draft
from ingest.formats.session_events import parse_ts
from ingest.semconv.attributes import positive_int
from models.errors import DecodeError
from models.records import Step, StepKind

__all__ = ["AGENT", "SOURCE", "chat_drafts", "is_gemini_chat_line"]

SOURCE = "gemini_cli"
AGENT = "gemini-cli"
_MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_ENDED = {"success": "ok", "error": "error", "cancelled": "cancelled"}
"""A tool call's final ``status`` (the scheduler's ``Status``) and its result's."""

_Reject = tuple[str, str, Any]


def is_gemini_chat_line(obj: Any) -> bool:
    """A record of a Gemini CLI session recording, or the whole legacy recording."""
    if not isinstance(obj, Mapping):
        return False
    if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
        return True  # the metadata line, or the legacy document (with its messages)
    if len(obj) == 1 and ("$set" in obj or "$rewindTo" in obj):
        return True
    return (
        isinstance(obj.get("id"), str)
        and "timestamp" in obj
        and "content" in obj
        and obj.get("type") in _MESSAGE_TYPES
        and "sessionId" not in obj
        and "session_id" not in obj
    )


def chat_drafts(lines: Sequence[tuple[str, Any]]) -> tuple[list[Draft], list[_Reject]]:
    """The drafts of a recording's ``(location, record)`` pairs, and the records that could
    not be read as ``(location, reason, record)``."""
    rejects: list[_Reject] = []
    session: str | None = None
    facts: dict[str, Any] = {}
    messages: dict[str, tuple[str, Mapping[str, Any]]] = {}  # by id, first seen first

    def message(at: str, record: Any) -> None:
        if not isinstance(record, Mapping) or not isinstance(record.get("id"), str):
            rejects.append((at, "a message needs a string id", record))
        else:  # a message written again is the same message, updated
            messages[record["id"]] = (messages.get(record["id"], (at, record))[0], record)

    for at, record in lines:
        if not isinstance(record, Mapping):
            rejects.append((at, "a recording record must be a JSON object", record))
            continue
        if isinstance(record.get("sessionId"), str) and "projectHash" in record:
            session = session or record["sessionId"]
            for key, name in (("kind", "kind"), ("directories", "directories")):
                if record.get(key):
                    facts[name] = record[key]
            listed = record.get("messages")
            for i, item in enumerate(listed if isinstance(listed, list) else []):
                message(f"{at}:messages[{i}]", item)
        elif "$set" in record:
            update = record["$set"]
            listed = update.get("messages") if isinstance(update, Mapping) else None
            for i, item in enumerate(listed if isinstance(listed, list) else []):
                message(f"{at}:messages[{i}]", item)
        elif "$rewindTo" in record:
            continue  # what was rewound happened all the same
        else:
            message(at, record)
    if session is None:
        if messages:
            raise DecodeError("sessionId: the recording has no metadata record")
        return [], rejects
    reader = _Reader(session, facts)
    for at, record in messages.values():
        try:
            reader.read(at, record)
        except DecodeError as exc:
            rejects.append((at, exc.reason, record))
    return reader.drafts, rejects


class _Reader:
    def __init__(self, session: str, facts: Mapping[str, Any]) -> None:
        self.session = session
        self.facts = facts
        self.drafts: list[Draft] = []
        self.started = False
        self.prompt: str | None = None

    def add(self, step: Step, fallback: str, natural: str | None = None) -> None:
        self.drafts.append(
            Draft(
                step=step,
                fallback_id=fallback,
                natural_key=natural,
                session_hint=self.session,
                context="main",
            )
        )

    def common(self, ts: int, ref: str) -> dict[str, Any]:
        return {
            "step_id": "",
            "session_id": self.session,
            "ts": ts,
            "agent": AGENT,
            "source": SOURCE,
            "source_ref": ref,
        }

    def read(self, at: str, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        if kind not in _MESSAGE_TYPES:
            raise DecodeError(f"type: one of {sorted(_MESSAGE_TYPES)} is required")
        ts = parse_ts(record.get("timestamp"))
        ref = f"{self.session}@{record['id']}"
        content = record.get("content")
        if kind == "user":
            self.user(ts, ref, content)
        elif kind == "gemini":
            self.gemini(ts, ref, record)
        elif kind == "error":
            text = "\n".join(_texts(content)) or "error"
            common = self.common(ts, ref)
            error = Step(kind=StepKind.ERROR, status="error", error=excerpt(text), **common)
            self.add(error, f"{ref}:error")

    def user(self, ts: int, ref: str, content: Any) -> None:
        text = "\n".join(_texts(content)).strip()
        if not text:
            return  # function responses (the tool calls' results are read with the calls)
        if self.started:
            self.prompt = text
            return
        self.started = True
        detail: dict[str, Any] = {"subagent": self.facts.get("kind") == "subagent"}
        directories = self.facts.get("directories")
        if isinstance(directories, list) and directories and isinstance(directories[0], str):
            detail["workspace"] = directories[0]
        step = Step(kind=StepKind.START, text=excerpt(text), detail=detail, **self.common(ts, ref))
        self.add(step, f"{ref}:start", "start")

    def gemini(self, ts: int, ref: str, record: Mapping[str, Any]) -> None:
        tokens = record.get("tokens")
        tokens = tokens if isinstance(tokens, Mapping) else {}
        texts = _texts(record.get("content"))
        detail: dict[str, Any] = {}
        if self.prompt:
            detail["user_message"] = excerpt(self.prompt, 4096)
            self.prompt = None
        model = record.get("model")
        tokens_in = positive_int(tokens.get("input")) + positive_int(tokens.get("tool"))
        tokens_out = positive_int(tokens.get("output")) + positive_int(tokens.get("thoughts"))
        step = Step(
            kind=StepKind.MODEL_CALL,
            model=excerpt(model, 200) if isinstance(model, str) and model else None,
            tokens_in=tokens_in or None,
            tokens_out=tokens_out or None,
            text=excerpt("\n".join(texts)) if texts else None,
            status="ok",
            detail=detail,
            **self.common(ts, ref),
        )
        message_id = record["id"]
        self.add(step, f"{ref}:model", f"model_call/{message_id}")
        calls = record.get("toolCalls")
        for index, call in enumerate(calls if isinstance(calls, list) else []):
            self.tool_call(ts, f"{ref}:{index}", call)

    def tool_call(self, message_ts: int, ref: str, call: Any) -> None:
        if not isinstance(call, Mapping):
            raise DecodeError("toolCalls: each call must be an object")
        call_id, name = call.get("id"), call.get("name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            raise DecodeError("toolCalls: a call needs a string id and name")
        stamp = call.get("timestamp")
        ts = parse_ts(stamp) if stamp not in (None, "") else message_ts
        fields = tool_call_fields(name, call.get("args"))
        step = Step(kind=StepKind.TOOL_CALL, call_id=call_id, **fields, **self.common(ts, ref))
        self.add(step, f"{ref}:call", f"tool_call/{call_id}")
        status = _ENDED.get(str(call.get("status")))
        if status is None:
            return  # never ended (the session stopped while it was pending or running)
        text = _result_text(call.get("result")) or _display(call.get("resultDisplay"))
        result = tool_result_fields(text, failed=status != "ok", cancelled=status == "cancelled")
        step = Step(
            kind=StepKind.TOOL_RESULT, call_id=call_id, tool=name, **result, **self.common(ts, ref)
        )
        self.add(step, f"{ref}:result", f"tool_result/{call_id}")


def _parts(content: Any) -> list[Any]:
    """A ``PartListUnion`` as a list of parts (a string is one text part)."""
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, Mapping):
        return [content]
    return content if isinstance(content, list) else []


def _texts(content: Any) -> list[str]:
    """The text parts of a ``PartListUnion`` (not thoughts)."""
    out = []
    for part in _parts(content):
        if isinstance(part, str):
            out.append(part)
        elif (
            isinstance(part, Mapping)
            and isinstance(part.get("text"), str)
            and not part.get("thought")
        ):
            out.append(part["text"])
    return [t for t in out if t]


def _result_text(result: Any) -> str | None:
    """A tool call's result: its function response's ``output`` or ``error`` (else the
    whole response), and any text parts beside it."""
    out = []
    for part in _parts(result):
        response = part.get("functionResponse") if isinstance(part, Mapping) else None
        if isinstance(response, Mapping):
            body = response.get("response")
            if isinstance(body, Mapping):
                value = body.get("output", body.get("error", body))
                out.append(value if isinstance(value, str) else canonical_json(value))
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out) or None


def _display(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    return canonical_json(value) if isinstance(value, Mapping) else None
