"""Session events (the runtime's append-only session log) → step drafts.

The format is published as a JSON Schema, ``ingest/schemas/session_event.schema.json``
(also ``trajwatch schema`` on the command line). Every event is validated
against it; an invalid event becomes a dead letter whose reason names the
failing field (``tool_call.call_id: 'call_id' is a required property``).

Identity: an event is ``(session_id, seq)``; tool calls and results are also
keyed by their call id and model calls by their response id, so the same call
reported by a session log and an OTLP span is stored once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from features.calls.actions import tool_call_fields
from features.calls.canonical import canonical_json
from features.session.lineage import PREDECESSOR
from features.text.clip import excerpt
from ingest.decoded import Draft, compaction_key
from ingest.semconv.attributes import json_value
from models.errors import DecodeError
from models.records import DeadLetter, Step, StepKind

SCHEMA_FILE = "session_event.schema.json"


@cache
def schema() -> dict[str, Any]:
    """The published JSON Schema of a session event."""
    text = resources.files("ingest").joinpath("schemas", SCHEMA_FILE).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(schema(), format_checker=Draft202012Validator.FORMAT_CHECKER)


def parse_ts(value: Any) -> int:
    """An event time (RFC 3339 string or Unix seconds) as Unix nanoseconds.

    >>> parse_ts("2026-01-02T03:04:05.5Z")
    1767323045500000000
    >>> parse_ts(1.5)
    1500000000
    >>> parse_ts(float("nan"))
    Traceback (most recent call last):
        ...
    models.errors.DecodeError: ts: nan is not a finite number of seconds

    A time beyond the store's range (int64 nanoseconds, years 1677-2262) is returned as
    it is: the store's check (:mod:`models.storable`) dead-letters the step with the reason.
    """
    if isinstance(value, bool):
        raise DecodeError("ts must be an RFC 3339 string or Unix seconds, got a boolean")
    if isinstance(value, float) and not math.isfinite(value):
        raise DecodeError(f"ts: {value} is not a finite number of seconds")
    if isinstance(value, int):
        return value * 1_000_000_000
    if isinstance(value, float):
        nanoseconds = value * 1_000_000_000
        if not math.isfinite(nanoseconds):
            raise DecodeError(f"ts: {value} seconds is beyond any representable time")
        return round(nanoseconds)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError as exc:
            raise DecodeError(f"ts: {value!r} is not an RFC 3339 time") from exc
        if parsed.tzinfo is None:
            raise DecodeError(f"ts: {value!r} has no time zone (add Z or an offset)")
        try:
            seconds = int(parsed.timestamp())
        except (OverflowError, ValueError) as exc:  # year 1 with a positive offset
            raise DecodeError(f"ts: {value!r} is outside the representable times") from exc
        return seconds * 1_000_000_000 + parsed.microsecond * 1000
    raise DecodeError(f"ts must be an RFC 3339 string or Unix seconds, got {value!r}")


def _compile(draft7: dict[str, Any]) -> Callable[[Any], Any]:
    compiled: Callable[[Any], Any] = fastjsonschema.compile(
        draft7, formats={"date-time": lambda _: True}
    )
    return compiled


@cache
def _fast_validator() -> Callable[[Any], Any]:
    # fastjsonschema compiles the same schema to Python (~20 µs an event against
    # ~500 µs for jsonschema's interpreter); the schema only uses draft-07 keywords.
    # ``ts`` formats are checked by parse_ts, which must read them anyway.
    return _compile({**schema(), "$schema": "http://json-schema.org/draft-07/schema#"})


@cache
def _fast_validators_by_type() -> dict[str, Callable[[Any], Any]]:
    """Per event type, a validator that accepts exactly what the whole schema accepts for
    an event of that type, built to run without raising on valid events.

    - Every ``allOf`` entry is ``if type == T then …``; for an event of type T the other
      entries' ``if`` fails, so they cannot reject it, and its own ``if`` holds: the
      schema with only T's ``then`` accepts exactly what the whole one does. (The
      compiled code evaluates each failing ``if`` by raising and catching an exception.)
    - A ``oneOf`` whose branches each require one distinct JSON type (``ts``: a string
      or a number) matches one branch at most: it is an ``anyOf``, which stops at the
      first branch that matches instead of also trying (raising in) the others.
    - Titles and descriptions are dropped: they only make the generated code, compiled
      once per process, larger.

    Only the decision is taken from these; :func:`validation_error` words a rejection
    with jsonschema, or else with the compiled published schema (:func:`_fast_reason`)."""
    draft7 = _decision_schema({**schema(), "$schema": "http://json-schema.org/draft-07/schema#"})
    by_type = {}
    for branch in draft7["allOf"]:
        kind = branch["if"]["properties"]["type"]["const"]
        assert branch["if"] == {"properties": {"type": {"const": kind}}}, branch["if"]
        by_type[kind] = _compile({**draft7, "allOf": [branch["then"]]})
    return by_type


@cache
def _published_validators_by_type() -> dict[str, Callable[[Any], Any]]:
    """Per event type, the published schema with only that type's ``allOf`` branch (see
    :func:`_fast_validators_by_type`): its messages word the rare rejection that
    jsonschema does not explain."""
    draft7 = {**schema(), "$schema": "http://json-schema.org/draft-07/schema#"}
    return {
        branch["if"]["properties"]["type"]["const"]: _compile({**draft7, "allOf": [branch]})
        for branch in draft7["allOf"]
    }


_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples"})
_JSON_TYPES = frozenset({"object", "array", "string", "number", "boolean", "null"})


def _decision_schema(node: Any, *, in_properties: bool = False) -> Any:
    """``node`` without annotations and with type-exclusive ``oneOf`` made ``anyOf``."""
    if isinstance(node, list):
        return [_decision_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    if in_properties:  # keys are property names here, not keywords
        return {key: _decision_schema(value) for key, value in node.items()}
    out = {
        key: _decision_schema(value, in_properties=key == "properties")
        for key, value in node.items()
        if key not in _ANNOTATIONS
    }
    branches = out.get("oneOf")
    if "anyOf" not in out and isinstance(branches, list) and _exclusive_by_type(branches):
        out["anyOf"] = out.pop("oneOf")
    return out


def _exclusive_by_type(branches: list[Any]) -> bool:
    """Whether no value can match two of ``branches``: each requires one JSON type, all
    different (``integer`` is not among them: every integer is also a ``number``)."""
    types = [b.get("type") if isinstance(b, dict) else None for b in branches]
    return all(t in _JSON_TYPES for t in types) and len(set(types)) == len(types)


def _fast_reason(event: Any, kind: Any) -> str:
    """The compiled published schema's message for a rejected ``event``."""
    validate = _published_validators_by_type().get(kind) if isinstance(kind, str) else None
    try:
        (validate or _fast_validator())(event)
    except fastjsonschema.JsonSchemaException as exc:
        return str(exc)
    return "rejected by the compiled schema"  # pragma: no cover - same decision


def validation_error(event: Any) -> str | None:
    """Why ``event`` is not a valid session event, naming the field; None when valid.

    The compiled validator decides; jsonschema, slower, explains a rejection
    (``best_match`` names the most relevant failing field)."""
    kind = event.get("type") if isinstance(event, dict) else None
    validate = _fast_validators_by_type().get(kind) if isinstance(kind, str) else None
    try:
        (validate or _fast_validator())(event)
    except fastjsonschema.JsonSchemaException:
        pass
    else:
        return None
    error = best_match(_validator().iter_errors(event))
    if error is None:
        return _fast_reason(event, kind)
    kind = event.get("type") if isinstance(event, Mapping) else None
    path = ".".join(str(p) for p in error.absolute_path)
    where = f"{kind}.{path}" if kind and path else (path or str(kind or "event"))
    return f"{where}: {error.message}"


def decode_event(
    data: bytes | str | Mapping[str, Any], *, source: str, location: str, arrival: int = 0
) -> tuple[list[Draft], DeadLetter | None]:
    """Decode one session event. Returns its drafts, or a dead letter with the reason.

    Never raises for any input: JSON that Python cannot read (invalid, nested too deep
    for its parser) and an exception out of the mapping below are dead letters too."""
    raw = data if isinstance(data, bytes) else None
    try:
        event = data if isinstance(data, Mapping) else json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        payload = raw if raw is not None else str(data).encode("utf-8", "surrogatepass")
        return [], DeadLetter(
            source=source,
            location=location,
            reason=f"invalid JSON: {exc}",
            payload=payload,
            content_type="application/json",
        )
    drafts: list[Draft] = []
    try:
        reason = validation_error(event)
        if reason is None:
            drafts = event_drafts(event, arrival=arrival)
    except DecodeError as exc:
        reason = exc.reason
    except (
        ArithmeticError,
        AttributeError,
        KeyError,
        RecursionError,
        TypeError,
        ValueError,
    ) as exc:
        # A bug of ours for a value the schema let through: the event is kept whole.
        reason = f"could not read the event: {type(exc).__name__}: {exc}"
    if reason is not None:
        if raw is None:
            try:
                text = json.dumps(event, ensure_ascii=False, default=str)
            except (RecursionError, ValueError):
                text = repr(event)
            raw = text.encode("utf-8", "surrogatepass")
        return [], DeadLetter(
            source=source,
            location=location,
            reason=reason,
            payload=raw,
            content_type="application/json",
        )
    return drafts, None


def event_drafts(event: Mapping[str, Any], *, arrival: int = 0) -> list[Draft]:
    """Drafts of one *valid* event (see :func:`validation_error`)."""
    kind = event["type"]
    session = event["session_id"]
    seq = event["seq"]
    ts = parse_ts(event["ts"])
    ref = f"{session}#{seq}"
    common: dict[str, Any] = {
        "step_id": "",
        "session_id": session,
        "ts": ts,
        "agent": event.get("agent"),
        "source": "event",
        "source_ref": ref,
    }
    fallback = event.get("event_id") or ref
    natural: str | None = None
    if kind == "session_start":
        step = Step(
            kind=StepKind.START,
            text=excerpt(event["goal"]),
            detail=_start_detail(event),
            **common,
        )
        natural = "start"
    elif kind == "model_call":
        output = event.get("output_text")
        step = Step(
            kind=StepKind.MODEL_CALL,
            model=event.get("model"),
            tokens_in=event.get("tokens_in"),
            tokens_out=event.get("tokens_out"),
            cost=event.get("cost_usd"),
            finish_reason=event.get("finish_reason"),
            text=excerpt(output) if output else None,
            status="ok",
            detail=_turn_detail(event.get("messages")),
            **common,
        )
        if event.get("response_id"):
            natural = f"model_call/{event['response_id']}"
    elif kind == "tool_call":
        step = _tool_call(event, common)
        natural = f"tool_call/{event['call_id']}"
    elif kind == "tool_result":
        output = event.get("output")
        text = output if isinstance(output, str) or output is None else canonical_json(output)
        detail = {"output_bytes": event["output_bytes"]} if "output_bytes" in event else {}
        step = Step(
            kind=StepKind.TOOL_RESULT,
            tool=event.get("tool"),
            call_id=event["call_id"],
            status="ok" if event["ok"] else "error",
            error=excerpt(event["error"]) if event.get("error") else None,
            result=excerpt(text) if text else None,
            detail=detail,
            **common,
        )
        natural = f"tool_result/{event['call_id']}"
    elif kind == "approval":
        step = Step(
            kind=StepKind.APPROVAL,
            tool=event.get("tool"),
            call_id=event.get("call_id"),
            status="ok" if event["approved"] else "denied",
            text=excerpt(event["reason"]) if event.get("reason") else None,
            detail={"approved": event["approved"], "approver": event.get("approver")},
            **common,
        )
    elif kind == "checkpoint":
        step = Step(
            kind=StepKind.CHECKPOINT,
            detail={"checkpoint_id": event["checkpoint_id"], "commit": event.get("commit")},
            **common,
        )
    elif kind == "compaction":
        natural = compaction_key(event.get("tokens_before"), event.get("tokens_after"))
        step = Step(
            kind=StepKind.COMPACTION,
            text=excerpt(event["summary"]) if event.get("summary") else None,
            detail={
                "tokens_before": event.get("tokens_before"),
                "tokens_after": event.get("tokens_after"),
                "inferred": False,
            },
            **common,
        )
    elif kind == "error":
        step = Step(
            kind=StepKind.ERROR,
            status="error",
            error=excerpt(event["message"]),
            call_id=event.get("call_id"),
            detail={"code": event.get("code")},
            **common,
        )
    elif kind == "session_end":
        status = event["status"]
        step = Step(
            kind=StepKind.END,
            status="ok" if status == "success" else "error",
            text=excerpt(event["summary"]) if event.get("summary") else None,
            detail={"end_status": status, "claimed_done": event.get("claimed_done")},
            **common,
        )
        natural = "end"
    else:  # pragma: no cover - the schema's enum makes this unreachable
        raise DecodeError(f"type: unknown event type {kind!r}")
    return [
        Draft(
            step=step,
            fallback_id=fallback,
            natural_key=natural,
            session_hint=session,
            trace_id=event.get("trace_id"),
            span_id=event.get("span_id"),
            arrival=arrival,
        )
    ]


def _turn_detail(messages: Any) -> dict[str, Any]:
    """``{"user_message": ...}`` of a model call's input ``messages`` (chat-completion
    shape: ``role``, ``content`` as text or as parts with ``text``): the last user
    turn, where a later request rides (the task is the first substantive request plus
    what later turns add); ``{}`` when no user turn is there.

    >>> _turn_detail([{"role": "user", "content": "Fix #4"}, {"role": "assistant", "content": "ok"},
    ...               {"role": "user", "content": [{"type": "text", "text": "Also add docs"}]}])
    {'user_message': 'Also add docs'}
    >>> _turn_detail(None)
    {}
    """
    if not isinstance(messages, list):
        return {}
    for message in reversed(messages[-64:]):
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(
                str(part.get("text"))
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            )
        if isinstance(content, str) and content.strip():
            return {"user_message": excerpt(content, 4096)}
        return {}
    return {}


def _start_detail(event: Mapping[str, Any]) -> dict[str, Any]:
    detail: dict[str, Any] = {}
    for key in ("workspace", "repository", "commit", "branch", "host", "policy_id", "model"):
        if event.get(key) is not None:
            detail[key] = event[key]
    # the branch under the names runtimes log it by (Claude Code's gitBranch), when the
    # schema's own is absent: the workspace key needs it (features.session.workspace)
    for alias in ("git_branch", "gitBranch"):
        if "branch" not in detail and isinstance(event.get(alias), str):
            detail["branch"] = event[alias]
    if event.get("budget"):
        detail["budget"] = dict(event["budget"])
    # the run this session continues (features.session.lineage)
    if isinstance(event.get("predecessor_session_id"), str):
        detail[PREDECESSOR] = event["predecessor_session_id"]
    if event.get("system_instructions"):
        detail["system_instructions"] = excerpt(event["system_instructions"], 4096)
    return detail


def _tool_call(event: Mapping[str, Any], common: dict[str, Any]) -> Step:
    fields = tool_call_fields(event["tool"], json_value(event.get("arguments")))
    if "side_effect" in event:
        fields["detail"]["side_effect"] = event["side_effect"]
    return Step(
        kind=StepKind.TOOL_CALL,
        call_id=event["call_id"],
        idempotency_key=event.get("idempotency_key"),
        **fields,
        **common,
    )
