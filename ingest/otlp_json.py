"""OTLP/JSON traces → :class:`SpanRecord` plus dead letters.

OTLP/JSON is not protobuf's canonical JSON: trace and span ids are hex, not
base64 (``json_format.Parse`` would misread them), keys are lowerCamelCase,
enums are integers and 64-bit integers are strings. We walk the JSON ourselves.
Receivers are lenient where the spec allows it: original snake_case keys, enum
names (``SPAN_KIND_CLIENT``) and numeric int64s are accepted too.

Each span is validated on its own; a bad one becomes a dead letter holding that
span's JSON, and the rest of the batch is kept.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from ingest.errors import DecodeError
from ingest.otlp_proto import Decoded
from ingest.spans import (
    DEFAULT_MAX_ATTRIBUTE_BYTES,
    SPAN_KINDS,
    STATUS_CODES,
    SpanEvent,
    SpanRecord,
    oversized_attribute,
)
from models.records import DeadLetter

JSON = "application/json"

_KIND_NAMES = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_HEX = frozenset("0123456789abcdefABCDEF")


def decode_otlp_json(
    data: bytes | str | Mapping[str, Any],
    *,
    source: str,
    location: str = "",
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """Decode one OTLP/JSON trace batch (``ExportTraceServiceRequest`` / ``TracesData``).

    Never raises on bad input: unparseable JSON becomes one dead letter, a bad
    span becomes a dead letter of its own.
    """
    out = Decoded()
    if isinstance(data, Mapping):
        doc: Any = data
    else:
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
            out.rejects.append(
                DeadLetter(
                    source=source,
                    location=location,
                    reason=f"invalid JSON: {exc}",
                    payload=raw,
                    content_type=JSON,
                )
            )
            return out
    if not isinstance(doc, Mapping) or not isinstance(_get(doc, "resourceSpans", []), list):
        out.rejects.append(
            DeadLetter(
                source=source,
                location=location,
                reason='not an OTLP traces object: expected {"resourceSpans": [...]}',
                payload=_dump(doc),
                content_type=JSON,
            )
        )
        return out
    for ri, rs in enumerate(_get(doc, "resourceSpans", [])):
        where_rs = f"{location} resource_spans[{ri}]".strip()
        if not isinstance(rs, Mapping):
            _reject(out, source, where_rs, "resourceSpans entry is not an object", rs)
            continue
        try:
            resource = _attributes(_get(_get(rs, "resource", {}) or {}, "attributes", []))
        except DecodeError as exc:
            _reject(out, source, f"{where_rs}.resource", exc.reason, _get(rs, "resource", {}))
            resource = {}
        for si, ss in enumerate(_get(rs, "scopeSpans", []) or []):
            where_ss = f"{where_rs}.scope_spans[{si}]"
            if not isinstance(ss, Mapping):
                _reject(out, source, where_ss, "scopeSpans entry is not an object", ss)
                continue
            scope = _get(ss, "scope", {}) or {}
            scope_name = scope.get("name", "") if isinstance(scope, Mapping) else ""
            for pi, span in enumerate(_get(ss, "spans", []) or []):
                where = f"{where_ss}.spans[{pi}]"
                try:
                    out.spans.append(
                        _span(span, resource, str(scope_name), where, max_attribute_bytes)
                    )
                except DecodeError as exc:
                    _reject(out, source, where, exc.reason, span)
    return out


def _get(obj: Mapping[str, Any], camel: str, default: Any = None) -> Any:
    """``obj[camel]``, else its snake_case spelling (the spec lets receivers accept both)."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake, default)


def _dump(obj: Any) -> bytes:
    try:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return repr(obj).encode("utf-8", "replace")


def _reject(out: Decoded, source: str, where: str, reason: str, obj: Any) -> None:
    out.rejects.append(
        DeadLetter(
            source=source, location=where, reason=reason, payload=_dump(obj), content_type=JSON
        )
    )


def _hex_id(value: Any, size: int, name: str, *, optional: bool = False) -> str | None:
    if value in (None, "") and optional:
        return None
    if not isinstance(value, str) or len(value) != size * 2 or not _HEX.issuperset(value):
        shown = repr(value)[:60]
        raise DecodeError(f"{name} must be {size * 2} hex characters, got {shown}")
    value = value.lower()
    if value.strip("0") == "":
        if optional:
            return None
        raise DecodeError(f"{name} is all zeros (invalid)")
    return value


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise DecodeError(f"{name} must be an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise DecodeError(f"{name} must be an integer (int64 as a string), got {repr(value)[:60]}")


def _enum(value: Any, names: Mapping[str, int], valid: range, name: str) -> int:
    if isinstance(value, str) and value in names:
        return names[value]
    number = _int(value, name)
    if number not in valid:
        raise DecodeError(f"unknown {name} {number} (OTLP defines {valid.start}..{valid.stop - 1})")
    return number


def any_value(value: Any) -> Any:
    """An OTLP/JSON AnyValue object as a plain Python value."""
    if not isinstance(value, Mapping):
        raise DecodeError(f"attribute value must be an AnyValue object, got {repr(value)[:60]}")
    if not value:
        return None
    (key, inner), *rest = value.items()
    if rest:
        raise DecodeError(f"AnyValue has more than one field: {sorted(value)}")
    if key in ("stringValue", "string_value"):
        if not isinstance(inner, str):
            raise DecodeError("stringValue must be a string")
        return inner
    if key in ("intValue", "int_value"):
        return _int(inner, "intValue")
    if key in ("boolValue", "bool_value"):
        if not isinstance(inner, bool):
            raise DecodeError("boolValue must be true or false")
        return inner
    if key in ("doubleValue", "double_value"):
        if isinstance(inner, str) and inner in ("NaN", "Infinity", "-Infinity"):
            return float(inner.replace("Infinity", "inf"))
        if isinstance(inner, bool) or not isinstance(inner, int | float):
            raise DecodeError("doubleValue must be a number")
        return float(inner)
    if key in ("arrayValue", "array_value"):
        values = inner.get("values", []) if isinstance(inner, Mapping) else None
        if not isinstance(values, list):
            raise DecodeError('arrayValue must be {"values": [...]}')
        return [any_value(v) for v in values]
    if key in ("kvlistValue", "kvlist_value"):
        values = inner.get("values", []) if isinstance(inner, Mapping) else None
        if not isinstance(values, list):
            raise DecodeError('kvlistValue must be {"values": [...]}')
        return _attributes(values)
    if key in ("bytesValue", "bytes_value"):
        try:
            return base64.b64decode(inner, validate=True)
        except (ValueError, TypeError) as exc:
            raise DecodeError("bytesValue must be base64") from exc
    raise DecodeError(f"unknown AnyValue field {key!r}")


def _attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise DecodeError("attributes must be a list of {key, value}")
    out: dict[str, Any] = {}
    for kv in items:
        if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
            raise DecodeError(
                f'attribute must be {{"key": str, "value": AnyValue}}, got {repr(kv)[:60]}'
            )
        out[kv["key"]] = any_value(kv.get("value", {}))
    return out


def _span(span: Any, resource: Mapping[str, Any], scope: str, where: str, cap: int) -> SpanRecord:
    if not isinstance(span, Mapping):
        raise DecodeError("span is not an object")
    trace_id = _hex_id(_get(span, "traceId"), 16, "traceId")
    span_id = _hex_id(_get(span, "spanId"), 8, "spanId")
    parent = _hex_id(_get(span, "parentSpanId"), 8, "parentSpanId", optional=True)
    name = _get(span, "name", "")
    if not isinstance(name, str):
        raise DecodeError("name must be a string")
    kind = _enum(_get(span, "kind", 0), _KIND_NAMES, SPAN_KINDS, "span kind")
    start = _int(_get(span, "startTimeUnixNano", 0), "startTimeUnixNano")
    end = _int(_get(span, "endTimeUnixNano", 0), "endTimeUnixNano")
    status = _get(span, "status", {}) or {}
    if not isinstance(status, Mapping):
        raise DecodeError("status must be an object")
    code = _enum(status.get("code", 0), _STATUS_NAMES, STATUS_CODES, "status code")
    attributes = _attributes(_get(span, "attributes", []) or [])
    reason = oversized_attribute(attributes, cap)
    if reason:
        raise DecodeError(reason)
    events = []
    for event in _get(span, "events", []) or []:
        if not isinstance(event, Mapping):
            raise DecodeError("span event is not an object")
        events.append(
            SpanEvent(
                str(event.get("name", "")),
                _int(_get(event, "timeUnixNano", 0), "event timeUnixNano"),
                _attributes(event.get("attributes", []) or []),
            )
        )
    message = status.get("message", "")
    return SpanRecord(
        trace_id=trace_id or "",
        span_id=span_id or "",
        parent_span_id=parent,
        name=name,
        kind=kind,
        start_ns=start,
        end_ns=end,
        status_code=code,
        status_message=message if isinstance(message, str) else str(message),
        attributes=attributes,
        events=tuple(events),
        resource=resource,
        scope=scope,
        location=where,
    )


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def to_otlp_json(message: Any) -> dict[str, Any]:
    """A protobuf ``ExportTraceServiceRequest``/``TracesData`` as OTLP/JSON.

    ``MessageToDict`` gives lowerCamelCase keys, integer enums and int64 strings
    as OTLP/JSON wants, but base64 ids; this rewrites the ids as lowercase hex.
    """
    from google.protobuf.json_format import MessageToDict

    doc: dict[str, Any] = MessageToDict(message, use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return doc


def _hex_ids(obj: dict[str, Any]) -> None:
    for key in _ID_KEYS:
        if key in obj:
            obj[key] = base64.b64decode(obj[key]).hex()
