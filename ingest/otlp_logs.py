"""Agent runtimes' own OpenTelemetry logs (OTLP logs) → step drafts plus dead letters.

Claude Code (``OTEL_LOGS_EXPORTER=otlp``) and Codex (``[otel]`` in ``config.toml``) export
what a session does as OTLP *log records*, one event each. This module reads the wire:
``ExportLogsServiceRequest`` protobuf (a batch that does not parse whole is salvaged
level by level, as :mod:`ingest.otlp_proto` salvages spans) and OTLP/JSON
(``{"resourceLogs": [...]}``, snake_case keys and the legacy ``instrumentationLibraryLogs``
/ ``instrumentationLibrary`` keys too), into :class:`ingest.runtime_logs.LogRecordView`;
:mod:`ingest.runtime_logs` says which events become which steps.

Both decoders return :class:`~ingest.otlp_proto.Decoded` with ``drafts``, ``rejects`` and
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

from ingest.errors import DecodeError
from ingest.otlp_json import _attributes, _dump, _get, _int, any_value
from ingest.otlp_proto import PROTOBUF, Decoded, _Corrupt, _fields, _why, key_values
from ingest.otlp_proto import any_value as proto_any_value
from ingest.runtime_logs import LogRecordView, dead_letter, read_records
from ingest.spans import DEFAULT_MAX_ATTRIBUTE_BYTES

__all__ = ["decode_otlp_logs_json", "decode_otlp_logs_proto"]

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
                    why = "the batch is truncated inside this record" if truncated else _why(exc)
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
