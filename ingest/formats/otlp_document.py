"""An OTLP/JSON document of a file → spans, and log records where it has them.

The OpenTelemetry Collector's ``file`` exporter writes one line per export: traces
(``resourceSpans``), logs (``resourceLogs``) or metrics (``resourceMetrics``); Google ADK
writes its ``gen_ai`` events as log records beside the spans of one document. Spans go
through :mod:`ingest.formats.otlp_json`, log records through :mod:`ingest.formats.otlp_logs`
(a record no runtime decoder knows is counted as skipped); a metrics document is counted as
skipped (trajwatch reads no metrics). Bytes or text are read as a trace request. Never
raises for bad input: what cannot be read is a dead letter with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.decoded import DEFAULT_MAX_ATTRIBUTE_BYTES, Decoded
from ingest.formats.otlp_json import decode_otlp_json
from ingest.formats.otlp_logs import decode_otlp_logs_json

_LOGS_KEYS = ("resourceLogs", "resource_logs")
_SPANS_KEYS = ("resourceSpans", "resource_spans", "batches")
_METRICS_KEYS = ("resourceMetrics", "resource_metrics")


def decode_otlp_document(
    payload: Any,
    *,
    source: str,
    location: str = "",
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
) -> Decoded:
    """The document's spans and log records (see the module docstring)."""
    options: dict[str, Any] = {
        "source": source,
        "location": location,
        "max_attribute_bytes": max_attribute_bytes,
    }
    if (
        isinstance(payload, Mapping)
        and any(k in payload for k in _METRICS_KEYS)
        and not any(k in payload for k in (*_LOGS_KEYS, *_SPANS_KEYS))
    ):  # a Collector file exporter's metrics line, beside its traces and logs: no step
        return Decoded(skipped=1, records=1)
    if not (isinstance(payload, Mapping) and any(k in payload for k in _LOGS_KEYS)):
        return decode_otlp_json(payload, **options)
    logs = decode_otlp_logs_json(payload, **options)
    if any(k in payload for k in _SPANS_KEYS):
        spans = {k: v for k, v in payload.items() if k not in _LOGS_KEYS}
        decoded = decode_otlp_json(spans, **options)
        decoded.extend(logs)
        return decoded
    return logs
