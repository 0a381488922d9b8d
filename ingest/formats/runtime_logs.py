"""Agent runtimes' own log events (OTLP log records, read by :mod:`ingest.formats.otlp_logs`) →
step drafts.

Events are named by the record's ``event_name`` field, its ``event.name`` attribute or
(Claude Code) its string body; Claude Code's ``event.name`` attribute is the short name
(``api_request``), which counts on its own in Claude Code's scope.

Claude Code (its monitoring docs; every event has ``session.id``, ``event.timestamp``,
``event.sequence``, ``prompt.id``; values mostly text):

- ``claude_code.user_prompt`` (``prompt``, with ``OTEL_LOG_USER_PROMPTS=1``) → see Prompts;
- ``claude_code.api_request`` (``model``, ``input_tokens``, ``output_tokens``,
  ``cache_read_tokens``, ``cache_creation_tokens``, ``cost_usd``, ``duration_ms``) → a
  ``model_call`` over ``[ts - duration, ts]``; input tokens are the whole prompt, as in
  :mod:`ingest.formats.claude_code` (input + cache read + cache creation);
- ``claude_code.api_error`` (``error``, ``status_code``, ``attempt``) → ``error``;
- ``claude_code.tool_result`` (``tool_name``, ``tool_use_id``, ``success``, ``duration_ms``,
  ``error``, ``decision_type``/``decision_source`` — older ``decision``/``source`` —,
  ``tool_input`` or ``tool_parameters`` as JSON text; a Bash call's ``full_command`` is its
  ``command``) → a ``tool_call`` at ``ts - duration`` and its ``tool_result`` at ``ts``;
- ``claude_code.tool_decision`` (``tool_name``, ``tool_use_id``, ``decision``
  accept/reject, ``source``) → ``approval``.

Codex (``codex-rs/otel``'s ``SessionTelemetry``; every event has ``conversation.id``,
``event.timestamp``, ``model``; values are text):

- ``codex.conversation_starts`` (``approval_policy``, ``sandbox_policy``, …) → facts of the
  session's ``start`` in the same batch;
- ``codex.user_prompt`` (``prompt``; ``[REDACTED]`` unless prompts are logged) → Prompts;
- ``codex.sse_event`` of ``event.kind`` ``response.completed`` (``input_token_count``,
  ``output_token_count``, ``reasoning_token_count``) → ``model_call`` (output tokens with the
  reasoning ones, as in :mod:`ingest.formats.codex`); any ``codex.sse_event`` or
  ``codex.api_request`` with ``error.message`` (or a non-2xx ``http.response.status_code``)
  → ``error``; other SSE events and successful HTTP attempts are skipped;
- ``codex.tool_decision`` (``tool_name``, ``call_id``, ``decision`` approved… / denied /
  abort, ``source``) → ``approval``;
- ``codex.tool_result`` (``tool_name``, ``call_id``, ``arguments``, ``output``, ``success``,
  ``duration_ms``) → ``tool_call`` + ``tool_result``.

Gemini CLI (``packages/core/src/telemetry/types.ts``; every event has ``session.id``,
``event.timestamp``, and the logger ``gemini-cli``; values are typed):

- ``gemini_cli.user_prompt`` (``prompt`` when prompts are logged, ``prompt_id``) → Prompts;
- ``gemini_cli.api_response`` (``model``, ``duration_ms``, ``input_token_count``,
  ``output_token_count``, ``thoughts_token_count``, ``tool_token_count``,
  ``cached_content_token_count``, ``finish_reasons``, ``response_text``, ``role``) → a
  ``model_call`` over ``[ts - duration, ts]``: input tokens are the prompt's (cached ones
  included) plus the tool-use prompt's, output tokens the candidates' plus the thoughts'
  (the parts of Gemini's ``totalTokenCount``); a call of another ``role`` than ``main``
  (a sub-agent's, the router's, the loop detector's, the compressor's, …) is kept in a
  context window of that role, so its small prompt is no compaction of the main one.
  ``gemini_cli.api_request`` says nothing its response or error does not, and the
  ``gen_ai.client.inference.operation.details`` copies of both are skipped;
- ``gemini_cli.api_error`` (``error``, ``status_code``) → ``error``;
- ``gemini_cli.tool_call`` (``function_name``, ``function_args`` as JSON text,
  ``duration_ms``, ``success``, ``error``, ``decision`` accept / auto_accept / modify /
  reject, ``tool_type``, ``mcp_server_name``) → a ``tool_call`` at ``ts - duration``, its
  ``tool_result`` at ``ts``, and, when a decision was taken, an ``approval`` before the
  call (Gemini CLI logs no call id: the call's is made from the record);
- ``gemini_cli.chat_compression`` (``tokens_before``, ``tokens_after``) → ``compaction``.

A record whose body is a trajwatch session event (an object with ``type`` and
``session_id``, or a JSON string of one) is decoded as that event
(:func:`ingest.formats.session_events.decode_event`, schema errors included). Any other record
(other event names, plain application logs) is skipped and counted in ``skipped``. A
recognised event that cannot be read (no session id, no tool name, a bad time or
decision) is a dead letter with the reason. Never raises.

Prompts: the decoder keeps no state between batches. The first prompt of a session in a
batch is its ``start`` (the goal; natural key ``start``, so the pipeline keeps the
session's first start and drops a later batch's restatement), and every prompt also rides
on the session's next model call of the batch (``detail.user_message``), so a later
prompt is not lost with its start. A prompt after the batch's last model call rides on
nothing.

Identity: a tool call and its result take the runtime's id (Claude Code ``tool_use_id``,
Codex ``call_id``) as call id and natural key (``tool_call/<id>``, ``tool_result/<id>``),
as the transcript and rollout decoders do, so the same call seen in a transcript and in
the logs is one step; without one, the call id is made from the record. Fallback ids are
``<session>#log:<event.sequence>`` or a digest of the record's name, time and attributes:
a re-delivered record is the same step. Model calls share no id with transcripts
(request id vs message id). All text goes through the redactor (``excerpt`` and
:func:`features.calls.actions.tool_call_fields`). Pure.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from features.calls.actions import tool_call_fields, tool_result_fields
from features.calls.canonical import canonical_json
from features.text.clip import excerpt
from ingest.decoded import Decoded, Draft, compaction_key, oversized_attribute
from ingest.formats import claude_code, codex
from ingest.formats.session_events import decode_event, parse_ts, schema
from ingest.semconv.attributes import first_int, first_str, json_value
from models.errors import DecodeError
from models.records import DeadLetter, Step, StepKind

__all__ = ["LogRecordView", "dead_letter", "read_records"]

GEMINI_AGENT = "gemini-cli"
GEMINI_SOURCE = "gemini_cli"
_INT64_MAX = (1 << 63) - 1
_MS = 1_000_000
_MAX_DURATION_MS = 86_400_000.0
_REDACTED = "[REDACTED]"  # Codex's prompt when prompts are not logged


@dataclass(frozen=True, slots=True)
class LogRecordView:
    """One log record, whatever its wire form; ``payload`` is kept for a dead letter."""

    name: str | None
    attributes: Mapping[str, Any]
    body: Any
    time_ns: int
    observed_ns: int
    scope: str
    location: str
    payload: bytes
    content_type: str


def dead_letter(
    source: str, where: str, reason: str, payload: bytes, content_type: str
) -> DeadLetter:
    """A dead letter of a log record (keywords, as :class:`DeadLetter` wants)."""
    return DeadLetter(
        source=source, location=where, reason=reason, payload=payload, content_type=content_type
    )


# -- records → drafts ----------------------------------------------------------------


@dataclass(slots=True)
class _Session:
    """What one batch learnt of a session so far: prompts ride on its next model call."""

    started: bool = False
    prompt: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Event:
    """A recognised runtime event, read: what every mapping needs."""

    record: LogRecordView
    name: str
    session: str
    ts: int
    ref: str
    common: dict[str, Any]
    context: str


_Handler = Callable[["_Batch", _Event], None]


@dataclass(slots=True)
class _Batch:
    out: Decoded
    sessions: dict[str, _Session] = field(default_factory=dict)

    def session(self, session_id: str) -> _Session:
        return self.sessions.setdefault(session_id, _Session())

    def add(self, event: _Event, step: Step, natural: str | None = None, suffix: str = "") -> None:
        self.out.drafts.append(
            Draft(
                step=step,
                fallback_id=event.ref + suffix,
                natural_key=natural,
                session_hint=event.session,
                context=event.context,
            )
        )


def read_records(
    records: Sequence[LogRecordView], out: Decoded, *, source: str, max_attribute_bytes: int
) -> Decoded:
    """Read the records of one batch into ``out``, in event-time order (a batch's prompts
    come before the model calls that answer them): each record becomes drafts, a dead
    letter (``source`` names where the batch came from), or is skipped and counted. A
    record with an attribute over ``max_attribute_bytes`` is a dead letter."""
    events: list[tuple[int, int, _Event]] = []
    out.records += len(records)
    for index, record in enumerate(records):
        try:
            reason = oversized_attribute(record.attributes, max_attribute_bytes)
            if reason is not None:
                raise DecodeError(reason)
            if _session_event(record.body, record, out, source):
                continue
            event = _event(record)
        except DecodeError as exc:
            out.rejects.append(
                dead_letter(
                    source, record.location, exc.reason, record.payload, record.content_type
                )
            )
            continue
        if event is None:
            out.skipped += 1
        else:
            events.append((event.ts, index, event))
    batch = _Batch(out)
    for _, _, event in sorted(events, key=lambda e: (e[0], e[1])):
        try:
            _HANDLERS[event.name](batch, event)
        except DecodeError as exc:
            record = event.record
            out.rejects.append(
                dead_letter(
                    source, record.location, exc.reason, record.payload, record.content_type
                )
            )
    return out


def _session_event(body: Any, record: LogRecordView, out: Decoded, source: str) -> bool:
    """Decode ``body`` as a trajwatch session event if it is one; whether it was."""
    event = json_value(body) if isinstance(body, str) else body
    if not (
        isinstance(event, Mapping)
        and "session_id" in event
        and event.get("type") in schema()["properties"]["type"]["enum"]
    ):
        return False
    drafts, dead = decode_event(event, source=source, location=record.location)
    if dead is not None:
        raise DecodeError(dead.reason)
    out.drafts.extend(drafts)
    return True


def _event_name(record: LogRecordView) -> str | None:
    """The known event a record is: its ``event_name``, ``event.name`` attribute or string
    body, whichever names one. Claude Code's ``event.name`` attribute is the short name
    (``api_request``) beside the full one in the body; on its own it counts in Claude
    Code's scope (``com.anthropic.claude_code.events``)."""
    short = record.attributes.get("event.name")
    for name in (record.name, short, record.body):
        if isinstance(name, str) and name in _HANDLERS:
            return name
    if isinstance(short, str) and "claude_code" in record.scope:
        name = f"claude_code.{short}"
        return name if name in _HANDLERS else None
    return None


def _event(record: LogRecordView) -> _Event | None:
    """The record as a runtime event, None when it is none this decoder knows."""
    name = _event_name(record)
    if name not in _HANDLERS:
        return None
    attrs = record.attributes
    keys = ("conversation.id", "session.id") if name.startswith("codex.") else ("session.id",)
    session = first_str(attrs, (*keys, "gen_ai.conversation.id"))
    if not session:
        raise DecodeError(f"{name}: {keys[0]} is required (the session the event belongs to)")
    stamp = attrs.get("event.timestamp")
    # the runtime's own clock when it states it (Claude Code, Codex), else the record's
    ts = _stamp(name, stamp) if stamp not in (None, "") else record.time_ns or record.observed_ns
    if ts <= 0 or ts > _INT64_MAX:
        raise DecodeError(f"{name}: no event time (event.timestamp or timeUnixNano)")
    sequence = first_str(attrs, ("event.sequence",))
    key = f"{name}@{sequence}" if sequence else _digest(name, ts, attrs)
    ref = f"{session}#log:{key}"
    agent, source = _RUNTIMES[name.split(".", 1)[0]]
    common = {
        "step_id": "",
        "session_id": session,
        "ts": ts,
        "agent": agent,
        "source": source,
        "source_ref": ref,
    }
    context = first_str(attrs, ("agent_id",)) or "main"
    return _Event(record, name, session, ts, ref, common, context)


def _stamp(name: str, value: Any) -> int:
    """``event.timestamp`` (RFC 3339 text, or Unix seconds) as nanoseconds."""
    if isinstance(value, float) and not math.isfinite(value):
        raise DecodeError(f"{name}: event.timestamp {value!r} is not a time")
    try:
        return parse_ts(value)
    except OverflowError as exc:
        raise DecodeError(f"{name}: event.timestamp {value!r} is out of range") from exc


def _digest(name: str, ts: int, attrs: Mapping[str, Any]) -> str:
    text = canonical_json({"name": name, "ts": ts, "attributes": dict(attrs)})
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


# -- attribute readers (runtimes send numbers and flags as text) ----------------------


def _count(attrs: Mapping[str, Any], *names: str) -> int:
    """The sum of the positive integer counts among ``names`` (text or numbers), at most
    an int64 (what the store holds)."""
    total = 0
    for name in names:
        value = first_int(attrs, (name,))
        if value is not None and value > 0:
            total += value
    return min(total, _INT64_MAX)


def _number(value: Any) -> float | None:
    """A finite, non-negative number from a number or its text; else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number < 1e15 else None


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _span(event: _Event) -> tuple[int, int]:
    """(start, end) of what an event reports when it ends: ``duration_ms`` before it. A
    duration over a day is no duration a model or tool call has: the start is then the end."""
    duration = _number(event.record.attributes.get("duration_ms"))
    if duration is None or duration > _MAX_DURATION_MS:
        return event.ts, event.ts
    return max(event.ts - int(duration * _MS), 0), event.ts


def _text(attrs: Mapping[str, Any], name: str) -> str | None:
    value = attrs.get(name)
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else canonical_json(value)


# -- the events ----------------------------------------------------------------------


def _prompt(batch: _Batch, event: _Event) -> None:
    text = _text(event.record.attributes, "prompt")
    if text is not None and text.strip() == _REDACTED:
        text = None
    session = batch.session(event.session)
    if text:
        session.prompt = text
    if session.started:
        return
    session.started = True
    detail: dict[str, Any] = {"subagent": False, **session.facts}
    step = Step(kind=StepKind.START, text=excerpt(text) or None, detail=detail, **event.common)
    batch.add(event, step, "start", ":start")


def _model_call(
    batch: _Batch, event: _Event, *, tokens_in: int, tokens_out: int, cost: float | None
) -> None:
    attrs = event.record.attributes
    start, end = _span(event)
    detail: dict[str, Any] = {}
    session = batch.session(event.session)
    if session.prompt:
        detail["user_message"] = excerpt(session.prompt, 4096)
        session.prompt = None
    model = first_str(attrs, ("model",))
    step = Step(
        kind=StepKind.MODEL_CALL,
        model=excerpt(model, 200) or None,
        tokens_in=tokens_in or None,
        tokens_out=tokens_out or None,
        cost=cost,
        status="ok",
        detail=detail,
        **{**event.common, "ts": start},
        end_ts=end,
    )
    batch.add(event, step, None, ":model")


def _claude_api_request(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    tokens_in = _count(attrs, "input_tokens", "cache_read_tokens", "cache_creation_tokens")
    cost = _number(attrs.get("cost_usd"))
    _model_call(
        batch, event, tokens_in=tokens_in, tokens_out=_count(attrs, "output_tokens"), cost=cost
    )


def _codex_sse_event(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    if attrs.get("error.message") not in (None, ""):
        _error(batch, event, "error.message")
        return
    if attrs.get("event.kind") != "response.completed":
        batch.out.skipped += 1  # stream progress, not a step
        return
    tokens_out = _count(attrs, "output_token_count", "reasoning_token_count")
    _model_call(
        batch, event, tokens_in=_count(attrs, "input_token_count"), tokens_out=tokens_out, cost=None
    )


def _codex_api_request(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    status = first_int(attrs, ("http.response.status_code",))
    if attrs.get("error.message") not in (None, "") or (
        status is not None and not 200 <= status < 300
    ):
        _error(batch, event, "error.message")
    else:
        batch.out.skipped += 1  # the HTTP attempt of a model call its sse_event reports


def _error(batch: _Batch, event: _Event, key: str) -> None:
    attrs = event.record.attributes
    status = first_str(attrs, ("status_code", "http.response.status_code"))
    text = _text(attrs, key) or f"{event.name} (status {status or 'unknown'})"
    detail = {"status_code": status, "attempt": first_int(attrs, ("attempt",))}
    step = Step(
        kind=StepKind.ERROR, status="error", error=excerpt(text), detail=detail, **event.common
    )
    batch.add(event, step, None, ":error")


def _tool_name(event: _Event, key: str = "tool_name") -> str:
    name = first_str(event.record.attributes, (key,))
    if not name:
        raise DecodeError(f"{event.name}: {key} is required")
    return name


def _call_id(event: _Event, key: str) -> str:
    """The runtime's call id, else one made of the record's own identity."""
    return first_str(event.record.attributes, (key,)) or event.ref.rpartition("#")[2]


def _claude_arguments(attrs: Mapping[str, Any]) -> Any:
    """The call's input: ``tool_input`` when logged, else ``tool_parameters``, whose Bash
    form names the command ``full_command`` (``bash_command`` is its first word)."""
    raw = attrs.get("tool_input")
    if raw in (None, ""):
        raw = attrs.get("tool_parameters")
    arguments = json_value(raw)
    if isinstance(arguments, Mapping) and "command" not in arguments:
        command = arguments.get("full_command") or arguments.get("bash_command")
        if command:
            rest = {k: v for k, v in arguments.items() if k not in ("full_command", "bash_command")}
            arguments = {"command": command, **rest}
    return arguments if arguments not in (None, "") else {}


def _tool(
    batch: _Batch,
    event: _Event,
    *,
    arguments: Any,
    id_key: str,
    output: str | None,
    detail: dict[str, Any],
    name_key: str = "tool_name",
    cancelled: bool = False,
) -> None:
    tool = _tool_name(event, name_key)
    ok = _flag(event.record.attributes.get("success"))
    call_id = _call_id(event, id_key)
    start, _ = _span(event)
    call = Step(
        kind=StepKind.TOOL_CALL,
        call_id=call_id,
        **tool_call_fields(tool, arguments),
        **{**event.common, "ts": start},
    )
    fields = tool_result_fields(output, failed=ok is False, cancelled=cancelled)
    if ok is None and not cancelled:
        fields["status"] = None  # the runtime did not say
    result = Step(
        kind=StepKind.TOOL_RESULT,
        call_id=call_id,
        tool=tool,
        detail=detail,
        **fields,
        **event.common,
    )
    batch.add(event, call, f"tool_call/{call_id}", ":call")
    batch.add(event, result, f"tool_result/{call_id}", ":result")


def _claude_tool_result(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    detail = {
        key: attrs[key]
        for key in (
            "decision_type",
            "decision_source",
            "decision",
            "source",
            "tool_result_size_bytes",
        )
        if isinstance(attrs.get(key), str | int) and not isinstance(attrs.get(key), bool)
    }
    _tool(
        batch,
        event,
        arguments=_claude_arguments(attrs),
        id_key="tool_use_id",
        output=_text(attrs, "error"),
        detail=detail,
    )


def _codex_tool_result(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    _tool(
        batch,
        event,
        arguments=json_value(attrs.get("arguments")) or {},
        id_key="call_id",
        output=_text(attrs, "output"),
        detail={},
    )


_APPROVED = frozenset({"accept", "approved", "approved_for_session"})
_DENIED = frozenset({"reject", "denied", "abort", "timed_out"})


def _decision(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    decision = (first_str(attrs, ("decision",)) or "").strip().lower()
    approved = decision in _APPROVED or decision.startswith("approved")
    if not approved and decision not in _DENIED:
        raise DecodeError(
            f"{event.name}: decision {decision[:40]!r} is neither an approval nor a denial"
        )
    call_id = first_str(attrs, ("tool_use_id", "call_id"))
    step = Step(
        kind=StepKind.APPROVAL,
        tool=_tool_name(event),
        call_id=call_id,
        status="ok" if approved else "denied",
        detail={
            "approved": approved,
            "approver": first_str(attrs, ("source",)),
            "decision": decision,
        },
        **event.common,
    )
    batch.add(event, step, None, ":approval")


def _gemini_api_response(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    role = first_str(attrs, ("role",))
    if role and role != "main":
        event.context = role  # a sub-agent's or utility call's prompt is not the main one's
    start, end = _span(event)
    model = first_str(attrs, ("model",))
    finish = json_value(attrs.get("finish_reasons"))
    if isinstance(finish, list):
        finish = next((f for f in finish if isinstance(f, str) and f), None)
    detail: dict[str, Any] = {"role": excerpt(role, 100)} if role else {}
    session = batch.session(event.session)
    if session.prompt and event.context == "main":
        detail["user_message"] = excerpt(session.prompt, 4096)
        session.prompt = None
    text = _text(attrs, "response_text")
    step = Step(
        kind=StepKind.MODEL_CALL,
        model=excerpt(model, 200) or None,
        tokens_in=_count(attrs, "input_token_count", "tool_token_count") or None,
        tokens_out=_count(attrs, "output_token_count", "thoughts_token_count") or None,
        finish_reason=excerpt(finish, 100) if isinstance(finish, str) and finish else None,
        text=excerpt(text) if text else None,
        status="ok",
        detail=detail,
        **{**event.common, "ts": start},
        end_ts=end,
    )
    batch.add(event, step, None, ":model")


_GEMINI_DECISIONS = {"accept": True, "auto_accept": True, "modify": True, "reject": False}
"""Gemini CLI's ``ToolCallDecision``: the person proceeded once, always, or after editing
the call; or cancelled it."""


def _gemini_tool_call(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    decision = (first_str(attrs, ("decision",)) or "").strip().lower()
    if decision in _GEMINI_DECISIONS:
        approved = _GEMINI_DECISIONS[decision]
        start, _ = _span(event)
        step = Step(
            kind=StepKind.APPROVAL,
            tool=_tool_name(event, "function_name"),
            call_id=_call_id(event, "call_id"),
            status="ok" if approved else "denied",
            detail={"approved": approved, "approver": "user", "decision": decision},
            **{**event.common, "ts": start},
        )
        batch.add(event, step, None, ":approval")
    detail = {
        key: attrs[key]
        for key in ("decision", "tool_type", "mcp_server_name", "content_length", "error_type")
        if isinstance(attrs.get(key), str | int) and not isinstance(attrs.get(key), bool)
    }
    _tool(
        batch,
        event,
        arguments=json_value(attrs.get("function_args")) or {},
        id_key="call_id",
        output=_text(attrs, "error") or _text(attrs, "error.message"),
        detail=detail,
        name_key="function_name",
        cancelled=decision == "reject",  # the person cancelled it: it did not run
    )


def _gemini_compression(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    before = first_int(attrs, ("tokens_before",))
    after = first_int(attrs, ("tokens_after",))
    before = before if before is not None and 0 < before <= _INT64_MAX else None
    after = after if after is not None and 0 <= after <= _INT64_MAX else None
    step = Step(
        kind=StepKind.COMPACTION,
        detail={"tokens_before": before, "tokens_after": after, "inferred": False},
        **event.common,
    )
    batch.add(event, step, compaction_key(before, after), ":compaction")


_CONVERSATION_FACTS = ("approval_policy", "sandbox_policy", "reasoning_effort", "provider_name")


def _codex_conversation_starts(batch: _Batch, event: _Event) -> None:
    attrs = event.record.attributes
    facts = batch.session(event.session).facts
    for key in _CONVERSATION_FACTS:
        value = first_str(attrs, (key,))
        if value:
            facts[key] = excerpt(value, 200)
    model = first_str(attrs, ("model",))
    if model:
        facts["model"] = excerpt(model, 200)


_HANDLERS: dict[str, _Handler] = {
    "claude_code.user_prompt": _prompt,
    "claude_code.api_request": _claude_api_request,
    "claude_code.api_error": lambda batch, event: _error(batch, event, "error"),
    "claude_code.tool_result": _claude_tool_result,
    "claude_code.tool_decision": _decision,
    "codex.conversation_starts": _codex_conversation_starts,
    "codex.user_prompt": _prompt,
    "codex.sse_event": _codex_sse_event,
    "codex.api_request": _codex_api_request,
    "codex.tool_decision": _decision,
    "codex.tool_result": _codex_tool_result,
    "gemini_cli.user_prompt": _prompt,
    "gemini_cli.api_response": _gemini_api_response,
    "gemini_cli.api_error": lambda batch, event: _error(batch, event, "error"),
    "gemini_cli.tool_call": _gemini_tool_call,
    "gemini_cli.chat_compression": _gemini_compression,
}
_RUNTIMES = {
    "claude_code": (claude_code.AGENT, claude_code.SOURCE),
    "codex": (codex.AGENT, codex.SOURCE),
    "gemini_cli": (GEMINI_AGENT, GEMINI_SOURCE),
}
"""Each runtime's agent name and step source, by its events' prefix."""
