"""OTLP traces as protobuf → :class:`SpanRecord` plus dead letters.

``ExportTraceServiceRequest`` (what OTLP/HTTP and the Collector's Kafka exporter
send) and ``TracesData`` (the file format) are the same message on the wire:
field 1, repeated ``ResourceSpans``. One decoder serves both.

Fast path: parse the whole batch with upb's ``FromString``. If that fails
(truncated bytes, invalid UTF-8 in one string, a corrupt length), the salvage
path walks the wire format by hand and parses each ``ResourceSpans``, then each
``ScopeSpans``, then each ``Span`` on its own, so one bad span costs one dead
letter and the rest of the batch is kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError as ProtoDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

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
from models.records import DeadLetter

PROTOBUF = "application/x-protobuf"


def decode_otlp_proto(
    data: bytes,
    *,
    source: str,
    location: str = "",
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """Decode one OTLP protobuf trace batch. Never raises on bad bytes."""
    out = Decoded()
    try:
        request = ExportTraceServiceRequest.FromString(data)
    except ProtoDecodeError:
        _salvage(memoryview(data), out, source, location, max_attribute_bytes)
        return out
    # Skip the size check of every span when no value can fail it: a value's size as
    # measured (spans.value_size) is at most 4 bytes for each byte it takes on the wire
    # (8 for a number or an empty value, which takes 2 in an array), and every value is
    # part of ``data``.
    cap = max_attribute_bytes if len(data) * 4 > max_attribute_bytes else None
    for ri, resource_spans in enumerate(request.resource_spans):
        _resource_spans(resource_spans, ri, out, source, location, cap)
    return out


def any_value(value: AnyValue) -> Any:
    """An OTLP AnyValue as a plain Python value (arrays → list, kvlists → dict)."""
    return _any_value(value, value.WhichOneof("value"))


def _any_value(value: AnyValue, which: str | None) -> Any:
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return key_values(value.kvlist_value.values)
    if which == "bytes_value":
        return bytes(value.bytes_value)
    return None


def key_values(items: Any) -> dict[str, Any]:
    """Repeated ``KeyValue`` → dict; a repeated key keeps its last value, as the SDKs do."""
    out: dict[str, Any] = {}
    for kv in items:
        # Most values are strings: read here, they cost no call to ``any_value`` each.
        value = kv.value
        which = value.WhichOneof("value")
        out[kv.key] = value.string_value if which == "string_value" else _any_value(value, which)
    return out


def _resource_spans(
    rs: ResourceSpans, ri: int, out: Decoded, source: str, location: str, cap: int | None
) -> None:
    resource = key_values(rs.resource.attributes)
    for si, scope_spans in enumerate(rs.scope_spans):
        _scope_spans(scope_spans, resource, ri, si, out, source, location, cap)


def _scope_spans(
    ss: ScopeSpans,
    resource: Mapping[str, Any],
    ri: int,
    si: int,
    out: Decoded,
    source: str,
    location: str,
    cap: int | None,
) -> None:
    scope = ss.scope.name
    for pi, span in enumerate(ss.spans):
        where = f"{location} resource_spans[{ri}].scope_spans[{si}].spans[{pi}]".strip()
        _span(span, resource, scope, where, out, source, cap)


def _span(
    span: Span,
    resource: Mapping[str, Any],
    scope: str,
    where: str,
    out: Decoded,
    source: str,
    cap: int | None,
) -> None:
    """Append ``span`` to ``out`` as a record, or as a dead letter; ``cap`` None: no value
    of it can be over the attribute size cap."""
    reason = _invalid(span)
    attributes: dict[str, Any] = {}
    if reason is None:
        attributes = key_values(span.attributes)
        if cap is not None:
            reason = oversized_attribute(attributes, cap)
    if reason is not None:
        out.rejects.append(
            DeadLetter(
                source=source,
                location=where,
                reason=reason,
                payload=span.SerializeToString(),
                content_type=PROTOBUF,
            )
        )
        return
    out.spans.append(
        SpanRecord(
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            parent_span_id=span.parent_span_id.hex() or None,
            name=span.name,
            kind=span.kind,
            start_ns=span.start_time_unix_nano,
            end_ns=span.end_time_unix_nano,
            status_code=span.status.code,
            status_message=span.status.message,
            attributes=attributes,
            events=tuple(
                SpanEvent(e.name, e.time_unix_nano, key_values(e.attributes)) for e in span.events
            ),
            resource=resource,
            scope=scope,
            location=where,
            links=tuple(
                SpanLink(link.trace_id.hex(), link.span_id.hex(), key_values(link.attributes))
                for link in span.links
                if len(link.trace_id) == 16 and any(link.trace_id) and len(link.span_id) == 8
            )[:MAX_LINKS],
        )
    )


def _invalid(span: Span) -> str | None:
    if len(span.trace_id) != 16 or not any(span.trace_id):
        return f"trace_id must be 16 non-zero bytes, got {len(span.trace_id)} bytes"
    if len(span.span_id) != 8 or not any(span.span_id):
        return f"span_id must be 8 non-zero bytes, got {len(span.span_id)} bytes"
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return f"parent_span_id must be empty or 8 bytes, got {len(span.parent_span_id)} bytes"
    if span.kind not in SPAN_KINDS:
        return f"unknown span kind {span.kind} (OTLP defines 0..5)"
    if span.status.code not in STATUS_CODES:
        return f"unknown status code {span.status.code} (OTLP defines 0..2)"
    return None


# -- salvage path: the protobuf wire format by hand ----------------------------

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class _Corrupt(Exception):
    def __init__(self, offset: int, what: str) -> None:
        super().__init__(what)
        self.offset = offset
        self.what = what


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise _Corrupt(pos, "varint runs past the end of the data (truncated?)")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Corrupt(pos, "varint longer than 10 bytes")


def _fields(buf: memoryview) -> Iterator[tuple[int, int, memoryview | None, bool]]:
    """Yield ``(field_number, wire_type, payload_if_LEN, truncated)``.

    A length-delimited field whose length runs past the end (a truncated batch)
    is yielded with the bytes that are there, as the last field: the caller
    salvages what is complete inside it. Any other damage raises
    :class:`_Corrupt` whose ``offset`` is the start of the bad field.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        start = pos
        try:
            tag, pos = _varint(buf, pos)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise _Corrupt(start, f"field number 0 at byte {start}")
            payload: memoryview | None = None
            if wire == _VARINT:
                _, pos = _varint(buf, pos)
            elif wire == _I64:
                pos += 8
            elif wire == _I32:
                pos += 4
            elif wire == _LEN:
                length, pos = _varint(buf, pos)
                payload = buf[pos : pos + length]
                pos += length
            else:
                raise _Corrupt(start, f"unsupported wire type {wire} at byte {start}")
            if pos > end and payload is None:
                raise _Corrupt(start, f"field at byte {start} runs past the end (truncated?)")
        except _Corrupt as exc:
            raise _Corrupt(start, exc.what) from None
        yield number, wire, payload, pos > end


def _reject(
    out: Decoded, source: str, where: str, reason: str, payload: bytes | memoryview
) -> None:
    out.rejects.append(
        DeadLetter(
            source=source,
            location=where,
            reason=reason,
            payload=bytes(payload),
            content_type=PROTOBUF,
        )
    )


def _salvage(buf: memoryview, out: Decoded, source: str, location: str, cap: int) -> None:
    ri = 0
    try:
        for number, _, payload, _truncated in _fields(buf):
            if number != 1 or payload is None:
                continue  # unknown top-level fields are ignored, as protobuf would
            try:
                rs = ResourceSpans.FromString(bytes(payload))
            except ProtoDecodeError:
                _salvage_resource_spans(payload, ri, out, source, location, cap)
            else:
                _resource_spans(rs, ri, out, source, location, cap)
            ri += 1
    except _Corrupt as exc:
        where = f"{location} resource_spans[{ri}] (byte {exc.offset})".strip()
        _reject(out, source, where, f"corrupt protobuf: {exc.what}", buf[exc.offset :])


def _salvage_resource_spans(
    buf: memoryview, ri: int, out: Decoded, source: str, location: str, cap: int
) -> None:
    resource: dict[str, Any] = {}
    scopes: list[memoryview] = []
    where = f"{location} resource_spans[{ri}]".strip()
    try:
        for number, _, payload, _truncated in _fields(buf):
            if payload is None:
                continue
            if number == 1:
                try:
                    resource = key_values(Resource.FromString(bytes(payload)).attributes)
                except ProtoDecodeError:
                    # The spans are still worth keeping without their resource.
                    _reject(out, source, f"{where}.resource", "undecodable resource", payload)
            elif number == 2:
                scopes.append(payload)
    except _Corrupt as exc:
        _reject(out, source, where, f"corrupt protobuf: {exc.what}", buf[exc.offset :])
    for si, payload in enumerate(scopes):
        try:
            ss = ScopeSpans.FromString(bytes(payload))
        except ProtoDecodeError:
            _salvage_scope_spans(payload, resource, ri, si, out, source, location, cap)
        else:
            _scope_spans(ss, resource, ri, si, out, source, location, cap)


def _salvage_scope_spans(
    buf: memoryview,
    resource: Mapping[str, Any],
    ri: int,
    si: int,
    out: Decoded,
    source: str,
    location: str,
    cap: int,
) -> None:
    where = f"{location} resource_spans[{ri}].scope_spans[{si}]".strip()
    scope = ""
    pi = 0
    try:
        for number, _, payload, truncated in _fields(buf):
            if payload is None:
                continue
            if number == 1:
                scope = _scope_name(payload)
            elif number == 2:
                span_where = f"{where}.spans[{pi}]"
                pi += 1
                try:
                    span = Span.FromString(bytes(payload))
                except ProtoDecodeError as exc:
                    truncated_why = "the batch is truncated inside this span"
                    why = (
                        truncated_why
                        if truncated
                        else why_undecodable(exc, payload, Span.DESCRIPTOR)
                    )
                    _reject(out, source, span_where, f"undecodable span: {why}", payload)
                else:
                    _span(span, resource, scope, span_where, out, source, cap)
    except _Corrupt as exc:
        _reject(
            out, source, f"{where}.spans[{pi}]", f"corrupt protobuf: {exc.what}", buf[exc.offset :]
        )


def _scope_name(buf: memoryview) -> str:
    try:
        for number, _, payload, _truncated in _fields(buf):
            if number == 1 and payload is not None:
                return bytes(payload).decode("utf-8", "replace")
    except _Corrupt:
        pass
    return ""


def why_undecodable(exc: ProtoDecodeError, payload: memoryview, descriptor: Descriptor) -> str:
    """Why a ``descriptor`` message (a span, a log record) did not parse: invalid UTF-8 in a
    string field (found by walking its bytes with its schema), else the parser's own
    reason. protobuf 7's upb says "Error parsing message with type '...': <reason>",
    protobuf 6's only the first half, so the reason a user sees must not hang on the
    runtime's wording."""
    field = _invalid_utf8(payload, descriptor)
    if field is not None:
        return f"invalid UTF-8 in string field {field}"
    text = str(exc)
    return text.rsplit(": ", 1)[-1] if ": " in text else text


def _invalid_utf8(buf: memoryview, descriptor: Descriptor, depth: int = 0) -> str | None:
    """The dotted path of the first string field of ``buf`` (a ``descriptor`` message)
    that is not valid UTF-8, or None. Linear in ``buf``: each byte is read once per
    nesting level, and nesting stops at OTLP's own depth (AnyValue kvlists) plus a bound."""
    if depth > _MAX_DIAGNOSE_DEPTH:
        return None
    try:
        for number, _, payload, _truncated in _fields(buf):
            field = descriptor.fields_by_number.get(number)
            if payload is None or field is None:
                continue
            if field.type == FieldDescriptor.TYPE_STRING:
                try:
                    str(payload, "utf-8")
                except UnicodeDecodeError:
                    return field.name
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                inner = _invalid_utf8(payload, field.message_type, depth + 1)
                if inner is not None:
                    return f"{field.name}.{inner}"
    except _Corrupt:
        return None
    return None


_MAX_DIAGNOSE_DEPTH = 32
