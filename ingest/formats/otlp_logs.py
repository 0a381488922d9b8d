"""Agent runtimes' own OpenTelemetry logs (OTLP logs) → step drafts plus dead letters.

Claude Code (``OTEL_LOGS_EXPORTER=otlp``) and Codex (``[otel]`` in ``config.toml``) export
what a session does as OTLP *log records*, one event each. This module reads the wire:
``ExportLogsServiceRequest`` protobuf (a batch that does not parse whole is salvaged
level by level, as :mod:`ingest.formats.otlp_proto` salvages spans) and OTLP/JSON
(``{"resourceLogs": [...]}``, snake_case keys and the legacy ``instrumentationLibraryLogs``
/ ``instrumentationLibrary`` keys too), into :class:`ingest.formats.runtime_logs.LogRecordView`;
:mod:`ingest.formats.runtime_logs` says which events become which steps.

The OpenTelemetry JavaScript SDK's objects as ``JSON.stringify`` writes them are read
too (:func:`decode_js_sdk_records`): Gemini CLI's ``--telemetry-outfile`` (its
``FileLogExporter``, ``packages/core/src/telemetry/file-exporters.ts``) appends each
``ReadableLogRecord``, ``ReadableSpan`` and ``ResourceMetrics`` pretty-printed, back to
back. A log record is ``{"hrTime": [s, ns], "hrTimeObserved", "resource",
"instrumentationScope": {"name"}, "attributes": {...}, "_body", "_eventName", …}``
(``LogRecordImpl``'s own fields: its getters are not written, so the body is ``_body``);
spans and metrics carry no event of a runtime and are counted as skipped.

All decoders return :class:`~ingest.formats.otlp_proto.Decoded` with ``drafts``, ``rejects`` and
``skipped`` (records that are no event of a known runtime: counted, not dead), which a
receiver gives to ``Pipeline.feed_decoded``. What is not OTLP,
and a record that cannot be read, is a dead letter with the reason; the rest of the batch
is kept. Never raises. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf.message import DecodeError as ProtoDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from ingest.decoded import DEFAULT_MAX_ATTRIBUTE_BYTES, Decoded
from ingest.formats.otlp_json import MAX_DEPTH, _attributes, _dump, _get, _int, any_value
from ingest.formats.otlp_proto import (
    PROTOBUF,
    _Corrupt,
    _fields,
    key_values,
    why_undecodable,
)
from ingest.formats.otlp_proto import any_value as proto_any_value
from ingest.formats.runtime_logs import LogRecordView, dead_letter, read_records
from models.errors import DecodeError

__all__ = [
    "decode_js_sdk_records",
    "decode_otlp_logs_json",
    "decode_otlp_logs_proto",
    "js_sdk_kind",
]

JSON = "application/json"


# -- protobuf ------------------------------------------------------------------------


def decode_otlp_logs_proto(
    data: bytes,
    *,
    source: str,
    location: str = "",
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """Decode one OTLP protobuf logs batch (``ExportLogsServiceRequest`` / ``LogsData``).
    A batch that does not parse whole is salvaged record by record."""
    out = Decoded()
    records: list[LogRecordView] = []
    try:
        request = ExportLogsServiceRequest.FromString(data)
    except ProtoDecodeError:
        _salvage(memoryview(data), records, out, source, location)
    else:
        for ri, rl in enumerate(request.resource_logs):
            _proto_resource(rl, ri, records, location)
    return read_records(records, out, source=source, max_attribute_bytes=max_attribute_bytes)


def _proto_resource(rl: ResourceLogs, ri: int, records: list[LogRecordView], location: str) -> None:
    for si, sl in enumerate(rl.scope_logs):
        _proto_scope(sl, ri, si, records, location)


def _proto_scope(
    sl: ScopeLogs, ri: int, si: int, records: list[LogRecordView], location: str
) -> None:
    for li, record in enumerate(sl.log_records):
        where = f"{location} resource_logs[{ri}].scope_logs[{si}].log_records[{li}]".strip()
        records.append(_proto_record(record, sl.scope.name, where))


def _proto_record(record: LogRecord, scope: str, where: str) -> LogRecordView:
    attributes = key_values(record.attributes)
    body = proto_any_value(record.body) if record.HasField("body") else None
    return LogRecordView(
        name=record.event_name or None,
        attributes=attributes,
        body=body,
        time_ns=record.time_unix_nano,
        observed_ns=record.observed_time_unix_nano,
        scope=scope,
        location=where,
        payload=record.SerializeToString(),
        content_type=PROTOBUF,
    )


def _salvage(
    buf: memoryview, records: list[LogRecordView], out: Decoded, source: str, location: str
) -> None:
    """The parts of a batch that parse, each level on its own (as the span decoder does):
    resource logs, then their scope logs, then each record; the rest are dead letters."""

    def reject(where: str, reason: str, payload: bytes | memoryview) -> None:
        out.rejects.append(dead_letter(source, where, reason, bytes(payload), PROTOBUF))

    def parts(data: memoryview, where: str, number: int) -> Iterator[tuple[int, memoryview, bool]]:
        index = 0
        try:
            for n, _, payload, truncated in _fields(data):
                if n == number and payload is not None:
                    yield index, payload, truncated
                    index += 1
        except _Corrupt as exc:
            reject(where, f"corrupt protobuf: {exc.what}", data[exc.offset :])

    for ri, rl_bytes, _ in parts(buf, location or "logs", 1):
        where_rl = f"{location} resource_logs[{ri}]".strip()
        try:
            _proto_resource(ResourceLogs.FromString(bytes(rl_bytes)), ri, records, location)
            continue
        except ProtoDecodeError:
            pass
        for si, sl_bytes, _ in parts(rl_bytes, where_rl, 2):
            where_sl = f"{where_rl}.scope_logs[{si}]"
            try:
                _proto_scope(ScopeLogs.FromString(bytes(sl_bytes)), ri, si, records, location)
                continue
            except ProtoDecodeError:
                pass
            for li, raw, truncated in parts(sl_bytes, where_sl, 2):
                where = f"{where_sl}.log_records[{li}]"
                try:
                    record = LogRecord.FromString(bytes(raw))
                    records.append(_proto_record(record, "", where))
                except ProtoDecodeError as exc:
                    truncated_why = "the batch is truncated inside this record"
                    why = (
                        truncated_why
                        if truncated
                        else why_undecodable(exc, raw, LogRecord.DESCRIPTOR)
                    )
                    reject(where, f"undecodable log record: {why}", raw)


# -- OTLP/JSON -----------------------------------------------------------------------


def decode_otlp_logs_json(
    data: bytes | str | Mapping[str, Any],
    *,
    source: str,
    location: str = "",
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """Decode one OTLP/JSON logs batch (``{"resourceLogs": [...]}``); snake_case keys and
    the legacy ``instrumentationLibraryLogs`` are accepted. A bad record is a dead letter
    of its own; the rest of the batch is kept."""
    out = Decoded()
    doc: Any = data
    if not isinstance(data, Mapping):
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, ValueError) as exc:
            raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
            out.rejects.append(dead_letter(source, location, f"invalid JSON: {exc}", raw, JSON))
            return out
    if not isinstance(doc, Mapping) or not isinstance(_get(doc, "resourceLogs", None), list):
        reason = 'not an OTLP logs object: expected {"resourceLogs": [...]}'
        out.rejects.append(dead_letter(source, location, reason, _dump(doc), JSON))
        return out
    records: list[LogRecordView] = []
    for ri, rl in enumerate(_get(doc, "resourceLogs")):
        where_rl = f"{location} resource_logs[{ri}]".strip()
        if not isinstance(rl, Mapping):
            _reject(out, source, where_rl, "resourceLogs entry is not an object", rl)
            continue
        scopes = _get(rl, "scopeLogs", None) or _get(rl, "instrumentationLibraryLogs", None) or []
        if not isinstance(scopes, list):
            _reject(out, source, where_rl, "scopeLogs must be a list", rl)
            continue
        for si, sl in enumerate(scopes):
            where_sl = f"{where_rl}.scope_logs[{si}]"
            if not isinstance(sl, Mapping):
                _reject(out, source, where_sl, "scopeLogs entry is not an object", sl)
                continue
            logs = _get(sl, "logRecords", None)
            if not isinstance(logs, list | None):
                _reject(out, source, where_sl, "logRecords must be a list", sl)
                continue
            scope = _get(sl, "scope", None) or _get(sl, "instrumentationLibrary", None)
            name = scope.get("name") if isinstance(scope, Mapping) else None
            for li, record in enumerate(logs or []):
                where = f"{where_sl}.log_records[{li}]"
                try:
                    records.append(
                        _json_record(record, name if isinstance(name, str) else "", where)
                    )
                except DecodeError as exc:
                    _reject(out, source, where, exc.reason, record)
    return read_records(records, out, source=source, max_attribute_bytes=max_attribute_bytes)


def _json_record(record: Any, scope: str, where: str) -> LogRecordView:
    if not isinstance(record, Mapping):
        raise DecodeError("log record is not an object")
    name = _get(record, "eventName", None)
    if name is not None and not isinstance(name, str):
        raise DecodeError("eventName must be a string")
    body = _get(record, "body", None)
    return LogRecordView(
        name=name or None,
        attributes=_attributes(_get(record, "attributes", None) or []),
        body=any_value(body) if body is not None else None,
        time_ns=_int(_get(record, "timeUnixNano", 0), "timeUnixNano"),
        observed_ns=_int(_get(record, "observedTimeUnixNano", 0), "observedTimeUnixNano"),
        scope=scope,
        location=where,
        payload=_dump(record),
        content_type=JSON,
    )


def _reject(out: Decoded, source: str, where: str, reason: str, obj: Any) -> None:
    out.rejects.append(dead_letter(source, where, reason, _dump(obj), JSON))


# -- the JavaScript SDK's objects, as JSON.stringify writes them ----------------------

_JS_SPAN_CONTEXT = ("_spanContext", "spanContext")


def js_sdk_kind(obj: Any) -> str | None:
    """``log``, ``span`` or ``metrics`` when ``obj`` is one of the JavaScript SDK's
    objects as ``JSON.stringify`` writes it (a file exporter's output), else None."""
    if not isinstance(obj, Mapping):
        return None
    if isinstance(obj.get("scopeMetrics"), list) and "resource" in obj:
        return "metrics"
    if "startTime" in obj and "name" in obj and any(k in obj for k in _JS_SPAN_CONTEXT):
        return "span"
    if "hrTime" in obj and isinstance(obj.get("attributes"), Mapping):
        return "log"
    return None


def decode_js_sdk_records(
    values: list[tuple[str, Any]],
    *,
    source: str,
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """A file exporter's ``(location, object)`` values, read as one batch: each log record
    becomes drafts (:func:`ingest.formats.runtime_logs.read_records`) or a dead letter with the
    reason; spans and metrics are counted as skipped. Never raises."""
    out = Decoded()
    records: list[LogRecordView] = []
    for where, value in values:
        kind = js_sdk_kind(value)
        if kind in ("span", "metrics"):
            out.records += 1
            out.skipped += 1
            continue
        try:
            if kind is None:
                raise DecodeError("not a log record, span or metrics of the OpenTelemetry JS SDK")
            records.append(_js_record(value, where))
        except DecodeError as exc:
            out.records += 1
            _reject(out, source, where, exc.reason, value)
    return read_records(records, out, source=source, max_attribute_bytes=max_attribute_bytes)


def _js_record(record: Mapping[str, Any], where: str) -> LogRecordView:
    attributes = dict(record["attributes"])
    for key, value in attributes.items():
        _depth(value, f"attribute {key[:60]!r}")
    if "session.id" not in attributes:  # the SDK's resource says whose records these are
        session = _js_resource(record.get("resource")).get("session.id")
        if isinstance(session, str) and session:
            attributes["session.id"] = session
    name = record.get("_eventName", record.get("eventName"))
    scope = record.get("instrumentationScope")
    scope_name = scope.get("name") if isinstance(scope, Mapping) else None
    body = record.get("_body", record.get("body"))
    _depth(body, "body")
    return LogRecordView(
        name=name if isinstance(name, str) and name else None,
        attributes=attributes,
        body=body,
        time_ns=_hr_time(record.get("hrTime"), "hrTime"),
        observed_ns=_hr_time(record.get("hrTimeObserved", [0, 0]), "hrTimeObserved"),
        scope=scope_name if isinstance(scope_name, str) else "",
        location=where,
        payload=_dump(record),
        content_type=JSON,
    )


def _hr_time(value: Any, name: str) -> int:
    """An ``HrTime`` ``[seconds, nanoseconds]`` as nanoseconds."""
    if not (isinstance(value, list) and len(value) == 2):
        raise DecodeError(f"{name} must be [seconds, nanoseconds], got {repr(value)[:60]}")
    seconds = _int(value[0], f"{name}[0]", (0, 9_223_372_035))
    nanos = _int(value[1], f"{name}[1]", (0, 999_999_999))
    return seconds * 1_000_000_000 + nanos


def _js_resource(resource: Any) -> Mapping[str, Any]:
    """A serialised ``Resource``'s attributes: ``_rawAttributes`` pairs (2.x), or
    ``_attributes``/``attributes`` (1.x)."""
    if not isinstance(resource, Mapping):
        return {}
    pairs = resource.get("_rawAttributes")
    if isinstance(pairs, list):
        return {
            p[0]: p[1]
            for p in pairs
            if isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
        }
    for key in ("_attributes", "attributes"):
        if isinstance(resource.get(key), Mapping):
            return resource[key]
    return {}


def _depth(value: Any, what: str) -> None:
    """Reject a value nested deeper than any instrumentation writes (the walk is
    iterative: no recursion limit to reach)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise DecodeError(f"{what}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
