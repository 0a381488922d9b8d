"""OTLP/JSON traces → :class:`SpanRecord` plus dead letters.

OTLP/JSON is not protobuf's canonical JSON: trace and span ids are hex, not
base64 (``json_format.Parse`` would misread them), keys are lowerCamelCase,
enums are integers and 64-bit integers are strings. We walk the JSON ourselves.
Receivers are lenient where the spec allows it: original snake_case keys, enum
names (``SPAN_KIND_CLIENT``) and numeric int64s are accepted too.

What is read besides the spec's ``{"resourceSpans": [...]}``, each because a real
producer writes it:

- the pre-1.0 keys ``instrumentationLibrarySpans`` / ``instrumentationLibrary``
  (older SDKs and Collectors, and Grafana Tempo's API, still write them);
- Tempo's ``/api/traces/<id>`` shape ``{"batches": [...]}``, its v2 envelope
  ``{"trace": {...}}`` and Jaeger's ``/api/v3/traces`` envelope ``{"result": {...}}``;
- a bare ``ResourceSpans`` object (``{"resource": ..., "scopeSpans": [...]}``, no
  ``resourceSpans`` list around it), as GitHub Copilot CLI's ``otel-raw.jsonl`` holds them,
  pretty-printed back to back: read as a batch of that one entry;
- ids in base64 (protobuf's JSON mapping, as Tempo writes them) as well as hex. The
  two are told apart by length alone (hex is 32/16 characters, base64 22-24/11-12),
  so the reading is deterministic.

Nothing vanishes silently: each span is validated on its own and a bad one becomes
a dead letter holding that span's JSON, the rest of the batch kept; a list under a
key this decoder does not know (where spans could hide), an entry of the wrong type,
each is a dead letter naming it. A document of another signal only (``resourceLogs``)
is a dead letter saying so; beside ``resourceSpans`` (Google ADK writes its ``gen_ai``
message events so) the other signal is not read, by design: it holds no spans.
Values that parse as JSON but would break later stages are refused per span: a
timestamp that is not an integer in ``0..2**63-1`` (``NaN``, ``1e400``, negative), an
``intValue`` outside int64, nesting deeper than :data:`MAX_DEPTH`. A lone UTF-16
surrogate (``"\\ud800"``, valid JSON that JavaScript instrumentations emit) in text
is replaced by U+FFFD: the text's meaning is clear, and it could not be stored as
UTF-8. Ids are not text: a surrogate there makes the id malformed.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from ingest.decoded import (
    DEFAULT_MAX_ATTRIBUTE_BYTES,
    MAX_LINKS,
    SPAN_KINDS,
    STATUS_CODES,
    Decoded,
    SpanEvent,
    SpanLink,
    SpanRecord,
    oversized_attribute,
)
from models.errors import DecodeError
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
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_SURROGATE = re.compile("[\ud800-\udfff]")
INT64 = (-(1 << 63), (1 << 63) - 1)
MAX_DEPTH = 64
"""AnyValue nesting (arrays in kvlists in arrays...) deeper than this is a dead letter:
no instrumentation nests that deep, and the walk stays far from Python's recursion limit."""

_BATCH_KEYS = (("resourceSpans", "resource_spans"), ("batches", "batches"))
"""Top-level lists of ResourceSpans: the spec's key, and Grafana Tempo's ``/api/traces``."""
_ENVELOPES = ("trace", "result")
"""Tempo's ``/api/v2/traces`` wraps the trace in ``trace``, Jaeger's ``/api/v3`` in ``result``."""
_OTHER_SIGNALS = ("resourceLogs", "resourceMetrics", "resourceProfiles")
_SCOPE_LISTS = (
    ("scopeSpans", "scope_spans", "scope"),
    ("instrumentationLibrarySpans", "instrumentation_library_spans", "instrumentationLibrary"),
)
"""ResourceSpans' list of ScopeSpans, with its location label and the key of its scope:
the 1.0 names and the pre-1.0 ones (InstrumentationLibrary, renamed in OTLP 0.15)."""


def _spellings(*camels: str) -> frozenset[str]:
    return frozenset(k for c in camels for k in (c, _snake(c)))


@functools.cache  # a handful of field names, looked up for every span
def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


_TOP_KEYS = _spellings("resourceSpans", "batches", *_OTHER_SIGNALS)
_RS_KEYS = _spellings("resource", "schemaUrl", *(c for c, _, _ in _SCOPE_LISTS))
_BARE_KEYS = tuple(sorted(_spellings(*(c for c, _, _ in _SCOPE_LISTS))))
"""A ``ResourceSpans`` object's list of scopes under any of its spellings: the mark of a
bare one (its ``resource`` is optional, and other objects have one too)."""
_SS_KEYS = _spellings("scope", "instrumentationLibrary", "spans", "schemaUrl")


def decode_otlp_json(
    data: bytes | str | Mapping[str, Any],
    *,
    source: str,
    location: str = "",
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """Decode one OTLP/JSON trace batch (``ExportTraceServiceRequest`` / ``TracesData``,
    or one of the foreign shapes in the module docstring).

    Never raises on bad input: unparseable JSON becomes one dead letter, a bad
    span becomes a dead letter of its own, and every span in the input ends as a
    :class:`SpanRecord` or inside a dead letter's payload.
    """
    out = Decoded()
    if isinstance(data, Mapping):
        doc: Any = data
    else:
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
            reason = f"invalid JSON: {exc}"
            if isinstance(exc, RecursionError):
                reason = "invalid JSON: nested too deeply to parse"
            out.rejects.append(
                DeadLetter(
                    source=source, location=location, reason=reason, payload=raw, content_type=JSON
                )
            )
            return out
    doc = _unwrap(doc)
    if not isinstance(doc, Mapping) or (doc and not _TOP_KEYS.intersection(doc)):
        _reject(out, source, location, _not_traces(doc), doc)
        return out
    for keys in _BATCH_KEYS:
        batches = _first(doc, keys)
        if batches is None:
            continue
        label = keys[1]
        if not isinstance(batches, list):
            _reject(out, source, location, f"{keys[0]} must be a list of ResourceSpans", batches)
            continue
        for ri, rs in enumerate(batches):
            where_rs = f"{location} {label}[{ri}]".strip()
            _resource_spans(rs, where_rs, out, source, max_attribute_bytes)
    read_traces = any(_first(doc, keys) is not None for keys in _BATCH_KEYS)
    for signal in _OTHER_SIGNALS:
        value = _first(doc, (signal, _snake(signal)))
        if value and not read_traces:
            reason = f"{signal}: OTLP {signal[8:].lower()} are not decoded (trajwatch reads traces)"
            _reject(out, source, f"{location} {_snake(signal)}".strip(), reason, value)
    _unknown_lists(out, source, location, doc, _TOP_KEYS, "the OTLP document")
    return out


def is_otlp_json(doc: Mapping[str, Any]) -> bool:
    """Whether a JSON object is for this decoder: OTLP/JSON in any shape it reads, another
    OTLP signal, or a Jaeger v1 trace (which it refuses with the way to get OTLP)."""
    return bool(_TOP_KEYS.intersection(_unwrap(doc))) or _is_jaeger_v1(doc)


def _is_jaeger_v1(doc: Mapping[str, Any]) -> bool:
    data = doc.get("data")
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], Mapping)
        and "traceID" in data[0]
        and "spans" in data[0]
    )


def _unwrap(doc: Any) -> Any:
    """The traces object inside a query API's envelope (Tempo v2, Jaeger v3), a bare
    ``ResourceSpans`` object as a batch of one, else ``doc``."""
    if isinstance(doc, Mapping) and not _TOP_KEYS.intersection(doc):
        for key in _ENVELOPES:
            inner = doc.get(key)
            if isinstance(inner, Mapping) and _TOP_KEYS.intersection(inner):
                return inner
        if isinstance(_first(doc, _BARE_KEYS), list):
            return {"resourceSpans": [doc]}
    return doc


def _not_traces(doc: Any) -> str:
    expected = 'not an OTLP traces object: expected {"resourceSpans": [...]}'
    if not isinstance(doc, Mapping):
        return f"{expected}, got a JSON {type(doc).__name__}"
    if _is_jaeger_v1(doc):
        return (
            "a Jaeger UI/API v1 trace, not OTLP: fetch it from Jaeger's /api/v3/traces "
            "(OTLP JSON) or export it as OTLP"
        )
    keys = ", ".join(repr(_text(str(k))) for k in list(doc)[:8])
    return f"{expected}, got keys {keys}"


def _resource_spans(rs: Any, where_rs: str, out: Decoded, source: str, cap: int) -> None:
    if not isinstance(rs, Mapping):
        _reject(out, source, where_rs, "resourceSpans entry is not an object", rs)
        return
    resource: dict[str, Any] = {}
    raw_resource = _get(rs, "resource")
    if raw_resource is not None:
        try:
            if not isinstance(raw_resource, Mapping):
                raise DecodeError("resource must be an object")
            resource = _attributes(_get(raw_resource, "attributes") or [])
        except DecodeError as exc:
            _reject(out, source, f"{where_rs}.resource", exc.reason, raw_resource)
    for camel, label, scope_key in _SCOPE_LISTS:
        entries = _get(rs, camel)
        if entries is None:
            continue
        if not isinstance(entries, list):
            _reject(out, source, f"{where_rs}.{label}", f"{camel} must be a list", entries)
            continue
        for si, ss in enumerate(entries):
            _scope_spans(ss, scope_key, f"{where_rs}.{label}[{si}]", resource, out, source, cap)
    _unknown_lists(out, source, where_rs, rs, _RS_KEYS, "resourceSpans entry")


def _scope_spans(
    ss: Any,
    scope_key: str,
    where_ss: str,
    resource: Mapping[str, Any],
    out: Decoded,
    source: str,
    cap: int,
) -> None:
    if not isinstance(ss, Mapping):
        _reject(out, source, where_ss, "scopeSpans entry is not an object", ss)
        return
    scope = _get(ss, scope_key)
    if scope is None:  # a Collector mid-migration may pair either list with either key
        scope = _get(ss, "instrumentationLibrary" if scope_key == "scope" else "scope")
    scope_name = ""
    if scope is not None:
        name = scope.get("name", "") if isinstance(scope, Mapping) else None
        if isinstance(name, str):
            scope_name = _text(name)
        else:  # the spans are still read, under no scope name
            reason = "scope must be an object with a string name"
            _reject(out, source, f"{where_ss}.scope", reason, scope)
    spans = _get(ss, "spans")
    if isinstance(spans, list):
        for pi, span in enumerate(spans):
            where = f"{where_ss}.spans[{pi}]"
            try:
                out.spans.append(_span(span, resource, scope_name, where, cap))
            except DecodeError as exc:
                _reject(out, source, where, exc.reason, span)
    elif spans is not None:
        _reject(out, source, f"{where_ss}.spans", "spans must be a list", spans)
    _unknown_lists(out, source, where_ss, ss, _SS_KEYS, "scopeSpans entry")


def _unknown_lists(
    out: Decoded, source: str, where: str, obj: Mapping[str, Any], known: frozenset[str], what: str
) -> None:
    """Dead-letter each non-empty list under a key not in ``known``: every repeated OTLP
    field is a list, so such a list may hold spans this decoder would otherwise skip."""
    for key, value in obj.items():
        if key not in known and isinstance(value, list) and value:
            reason = f"{what} has an unknown key {key!r} holding a list; not read as spans"
            _reject(out, source, where, reason, value)


def _first(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _get(obj: Mapping[str, Any], camel: str, default: Any = None) -> Any:
    """``obj[camel]``, else its snake_case spelling (the spec lets receivers accept both)."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel), default)


def _text(value: str) -> str:
    """``value`` with each lone UTF-16 surrogate replaced by U+FFFD (a pair is joined)."""
    if _SURROGATE.search(value) is None:
        return value
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _dump(obj: Any) -> bytes:
    try:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError):
        try:
            return repr(obj).encode("utf-8", "replace")
        except RecursionError:
            return b"<value nested too deeply to serialise>"


def _reject(out: Decoded, source: str, where: str, reason: str, obj: Any) -> None:
    out.rejects.append(
        DeadLetter(
            source=source, location=where, reason=reason, payload=_dump(obj), content_type=JSON
        )
    )


def _id(value: Any, size: int, name: str, *, optional: bool = False) -> str | None:
    """A trace/span id as lowercase hex, from hex (OTLP/JSON) or base64 (protobuf's JSON).

    The encodings cannot be confused: ``size`` bytes are ``2 * size`` hex characters,
    but at most ``4 * ceil(size / 3)`` base64 ones."""
    if value in (None, "") and optional:
        return None
    raw: bytes | None = None
    if isinstance(value, str):
        if len(value) == size * 2 and _HEX.issuperset(value):
            raw = bytes.fromhex(value)
        elif 0 < len(value) < size * 2 and value.isascii():
            raw = _base64(value)
    if raw is None or len(raw) != size:
        shown = repr(value)[:60]
        raise DecodeError(f"{name} must be {size * 2} hex characters (or base64), got {shown}")
    if not any(raw):
        if optional:
            return None
        raise DecodeError(f"{name} is all zeros (invalid)")
    return raw.hex()


def _base64(value: str) -> bytes | None:
    padded = value + "=" * (-len(value) % 4)
    alt = b"-_" if ("-" in value or "_" in value) else None
    try:
        return base64.b64decode(padded, altchars=alt, validate=True)
    except (binascii.Error, ValueError):
        return None


def _int(value: Any, name: str, bounds: tuple[int, int] = INT64) -> int:
    """An OTLP 64-bit integer: a JSON integer, a decimal string, or an integral float,
    within ``bounds``; anything else (``NaN``, ``"1_0"``, ``1e400``) is a DecodeError."""
    if isinstance(value, bool):
        raise DecodeError(f"{name} must be an integer, got a boolean")
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if not integral and not (isinstance(value, str) and _INTEGER.fullmatch(value)):
        raise DecodeError(f"{name} must be an integer (int64 as a string), got {repr(value)[:60]}")
    low, high = bounds
    # int() of a string is quadratic in its length: no int64 needs more than 20 digits
    number = int(value) if not isinstance(value, str) or len(value) <= 21 else None
    if number is None or not low <= number <= high:
        raise DecodeError(f"{name} {repr(value)[:60]} is outside {low}..{high}")
    return number


def _timestamp(value: Any, name: str) -> int:
    """Unix nanoseconds: an integer in ``0..2**63-1`` (OTLP's fixed64, as every store keeps it)."""
    return _int(value, name, (0, INT64[1]))


def _enum(value: Any, names: Mapping[str, int], valid: range, name: str) -> int:
    if isinstance(value, str) and value in names:
        return names[value]
    number = _int(value, name)
    if number not in valid:
        raise DecodeError(f"unknown {name} {number} (OTLP defines {valid.start}..{valid.stop - 1})")
    return number


def any_value(value: Any, depth: int = 0) -> Any:
    """An OTLP/JSON AnyValue object as a plain Python value."""
    if depth > MAX_DEPTH:
        raise DecodeError(f"attribute value nested deeper than {MAX_DEPTH} levels")
    if not isinstance(value, Mapping):
        raise DecodeError(f"attribute value must be an AnyValue object, got {repr(value)[:60]}")
    if not value:
        return None
    (key, inner), *rest = value.items()
    if rest:
        raise DecodeError(f"AnyValue has more than one field: {sorted(map(str, value))}")
    if key in ("stringValue", "string_value"):
        if not isinstance(inner, str):
            raise DecodeError("stringValue must be a string")
        return _text(inner)
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
        try:
            return float(inner)
        except OverflowError as exc:
            raise DecodeError("doubleValue is beyond a double's range") from exc
    if key in ("arrayValue", "array_value"):
        values = inner.get("values", []) if isinstance(inner, Mapping) else None
        if not isinstance(values, list):
            raise DecodeError('arrayValue must be {"values": [...]}')
        return [any_value(v, depth + 1) for v in values]
    if key in ("kvlistValue", "kvlist_value"):
        values = inner.get("values", []) if isinstance(inner, Mapping) else None
        if not isinstance(values, list):
            raise DecodeError('kvlistValue must be {"values": [...]}')
        return _attributes(values, depth + 1)
    if key in ("bytesValue", "bytes_value"):
        try:
            return base64.b64decode(inner, validate=True)
        except (ValueError, TypeError) as exc:
            raise DecodeError("bytesValue must be base64") from exc
    raise DecodeError(f"unknown AnyValue field {key!r}")


def _attributes(items: Any, depth: int = 0) -> dict[str, Any]:
    if not isinstance(items, list):
        raise DecodeError("attributes must be a list of {key, value}")
    out: dict[str, Any] = {}
    for kv in items:
        if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
            raise DecodeError(
                f'attribute must be {{"key": str, "value": AnyValue}}, got {repr(kv)[:60]}'
            )
        out[_text(kv["key"])] = any_value(kv.get("value", {}), depth)
    return out


def _span(span: Any, resource: Mapping[str, Any], scope: str, where: str, cap: int) -> SpanRecord:
    if not isinstance(span, Mapping):
        raise DecodeError("span is not an object")
    trace_id = _id(_get(span, "traceId"), 16, "traceId")
    span_id = _id(_get(span, "spanId"), 8, "spanId")
    parent = _id(_get(span, "parentSpanId"), 8, "parentSpanId", optional=True)
    name = _get(span, "name", "")
    if not isinstance(name, str):
        raise DecodeError("name must be a string")
    kind = _enum(_get(span, "kind", 0), _KIND_NAMES, SPAN_KINDS, "span kind")
    start = _timestamp(_get(span, "startTimeUnixNano", 0), "startTimeUnixNano")
    end = _timestamp(_get(span, "endTimeUnixNano", 0), "endTimeUnixNano")
    status = _get(span, "status", {}) or {}
    if not isinstance(status, Mapping):
        raise DecodeError("status must be an object")
    code = _enum(status.get("code", 0), _STATUS_NAMES, STATUS_CODES, "status code")
    attributes = _attributes(_get(span, "attributes", []) or [])
    reason = oversized_attribute(attributes, cap)
    if reason:
        raise DecodeError(reason)
    raw_events = _get(span, "events", []) or []
    if not isinstance(raw_events, list):
        raise DecodeError("events must be a list")
    events = []
    for event in raw_events:
        if not isinstance(event, Mapping):
            raise DecodeError("span event is not an object")
        event_name = event.get("name", "")
        events.append(
            SpanEvent(
                _text(event_name if isinstance(event_name, str) else str(event_name)),
                _timestamp(_get(event, "timeUnixNano", 0), "event timeUnixNano"),
                _attributes(event.get("attributes", []) or []),
            )
        )
    message = status.get("message", "")
    links: list[SpanLink] = []
    raw_links = _get(span, "links", []) or []
    for link in raw_links if isinstance(raw_links, list) else []:
        if len(links) == MAX_LINKS:
            break
        try:  # a link with a bad id is left out: the span itself is sound
            linked = _id(_get(link, "traceId"), 16, "link traceId")
            linked_span = _id(_get(link, "spanId"), 8, "link spanId")
            link_attributes = _attributes(_get(link, "attributes", []) or [])
        except (DecodeError, AttributeError, TypeError):
            continue
        if linked and linked_span:
            links.append(SpanLink(linked, linked_span, link_attributes))
    return SpanRecord(
        trace_id=trace_id or "",
        span_id=span_id or "",
        parent_span_id=parent,
        name=_text(name),
        kind=kind,
        start_ns=start,
        end_ns=end,
        status_code=code,
        status_message=_text(message if isinstance(message, str) else str(message)),
        attributes=attributes,
        events=tuple(events),
        resource=resource,
        scope=scope,
        location=where,
        links=tuple(links),
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
