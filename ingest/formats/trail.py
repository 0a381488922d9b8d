"""The TRAIL span-tree format (Patronus AI's export of OpenInference traces) → spans.

A TRAIL file is ``{"trace_id": ..., "spans": [span, ...]}`` where each span has
``timestamp`` (RFC 3339), ``duration`` (ISO 8601, ``PT1M48.7S``), ``span_kind``
(``Internal``, ``Client``, …), ``status_code`` (``Ok``/``Unset``/``Error``),
``span_attributes`` (flat OpenInference attributes, values as strings or lists),
``events`` and its children in ``child_spans``. The tree is flattened into
:class:`SpanRecord` objects and then goes through the same semantic mapping as
live OTLP, so real third-party traces replay like our own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ingest.decoded import (
    DEFAULT_MAX_ATTRIBUTE_BYTES,
    Decoded,
    SpanEvent,
    SpanRecord,
    oversized_attribute,
)
from models.errors import DecodeError
from models.records import DeadLetter

_KINDS = {"unspecified": 0, "internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_STATUS = {"unset": 0, "ok": 1, "error": 2}
_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


def duration_ns(text: str) -> int:
    """ISO 8601 duration → nanoseconds.

    >>> duration_ns("PT1M48.75533S")
    108755330000
    """
    match = _DURATION.match(text or "")
    if not match or text in ("P", "PT"):
        raise DecodeError(f"duration {text!r} is not an ISO 8601 duration")
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    seconds = parts.get("d", 0) * 86400 + parts.get("h", 0) * 3600 + parts.get("m", 0) * 60
    return round((seconds + parts.get("s", 0)) * 1e9)


def _time_ns(text: Any) -> int:
    if not isinstance(text, str):
        raise DecodeError(f"timestamp must be an RFC 3339 string, got {text!r}")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise DecodeError(f"timestamp {text!r} is not RFC 3339") from exc
    return int(parsed.timestamp()) * 1_000_000_000 + parsed.microsecond * 1000


def decode_trail(
    doc: Mapping[str, Any],
    *,
    source: str,
    location: str = "",
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """Flatten one TRAIL trace. A bad span is dead-lettered with its subtree's
    position; its children are still read (they carry their own ids)."""
    out = Decoded()
    stack: list[tuple[Any, str]] = [
        (span, f"{location} spans[{i}]".strip()) for i, span in enumerate(doc.get("spans", []))
    ]
    stack.reverse()
    while stack:
        span, where = stack.pop()
        if not isinstance(span, Mapping):
            out.rejects.append(_reject(source, where, "span is not an object", span))
            continue
        children = span.get("child_spans") or []
        for i in range(len(children) - 1, -1, -1):
            stack.append((children[i], f"{where}.child_spans[{i}]"))
        try:
            out.spans.append(_span(span, where, max_attribute_bytes))
        except DecodeError as exc:
            out.rejects.append(_reject(source, where, exc.reason, span))
    return out


def _reject(source: str, where: str, reason: str, span: Any) -> DeadLetter:
    body = dict(span) if isinstance(span, Mapping) else span
    if isinstance(body, dict):
        body.pop("child_spans", None)  # the children are decoded on their own
    payload = json.dumps(body, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    return DeadLetter(
        source=source,
        location=where,
        reason=reason,
        payload=payload,
        content_type="application/json",
    )


def _hex(value: Any, size: int, name: str) -> str:
    if not isinstance(value, str) or len(value) != size * 2:
        raise DecodeError(f"{name} must be {size * 2} hex characters, got {value!r}")
    try:
        int(value, 16)
    except ValueError as exc:
        raise DecodeError(f"{name} must be hex, got {value!r}") from exc
    return value.lower()


def _span(span: Mapping[str, Any], where: str, cap: int) -> SpanRecord:
    start = _time_ns(span.get("timestamp"))
    attributes = dict(span.get("span_attributes") or {})
    reason = oversized_attribute(attributes, cap)
    if reason:
        raise DecodeError(reason)
    parent = span.get("parent_span_id")
    resource = dict(span.get("resource_attributes") or {})
    if span.get("service_name") and "service.name" not in resource:
        resource["service.name"] = span["service_name"]
    events = []
    for event in span.get("events") or []:
        if isinstance(event, Mapping):
            ts = event.get("timestamp")
            events.append(
                SpanEvent(
                    str(event.get("name", "")),
                    _time_ns(ts) if ts else start,
                    dict(event.get("attributes") or {}),
                )
            )
    return SpanRecord(
        trace_id=_hex(span.get("trace_id"), 16, "trace_id"),
        span_id=_hex(span.get("span_id"), 8, "span_id"),
        parent_span_id=_hex(parent, 8, "parent_span_id") if parent else None,
        name=str(span.get("span_name", "")),
        kind=_KINDS.get(str(span.get("span_kind", "")).lower(), 0),
        start_ns=start,
        end_ns=start + duration_ns(str(span.get("duration") or "PT0S")),
        status_code=_STATUS.get(str(span.get("status_code", "")).lower(), 0),
        status_message=str(span.get("status_message") or ""),
        attributes=attributes,
        events=tuple(events),
        resource=resource,
        scope=str(span.get("scope_name") or ""),
        location=where,
    )
