"""The table of input formats: how a record is recognised, decoded, and when it was delivered.

Every record a source reads has a ``format`` naming one entry of :data:`FORMATS`. An
entry says

- how a JSON value is recognised as the format (``claims``; entries are tried in table
  order, and a file named ``trace.json`` or ``*.otlp.*`` is OTLP whatever it holds);
- whether a file's values of the format form one record (``whole_file``: a Claude Code
  transcript or a Codex rollout is read together, as one API response spans lines);
- and ``deliver``: decode the record (once), say at which event time the live service
  would have received it (``None``: with the record before it), and how to feed it to a
  pipeline. A record the decoder cannot read becomes a dead letter with the reason.

Delivery times: a session log appends each event at its ``ts``; an exporter sends a
span batch once its spans have ended (the root ``invoke_agent`` span, with the session's
start, comes last); a document with no delivery order (a TRAIL trace, an AgentDojo run,
a Claude Code transcript, a Codex rollout) is delivered whole and its steps put in
event-time order. Adding a format is one entry here (and, for a new container such as
CSV, one reader in :mod:`ingest.sources.files`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ingest.decoded import Decoded, Draft
from ingest.formats.agentdojo import is_agentdojo, is_header, record_drafts, session_id_for
from ingest.formats.claude_code import (
    is_claude_code_line,
    is_claude_stream_line,
    stream_drafts,
    transcript_drafts,
)
from ingest.formats.codex import document_lines, is_codex_document, is_codex_line, rollout_drafts
from ingest.formats.codex_exec import exec_drafts, is_codex_exec_line
from ingest.formats.gemini_chat import chat_drafts, is_gemini_chat_line
from ingest.formats.otlp_json import decode_otlp_json, is_otlp_json
from ingest.formats.otlp_logs import decode_js_sdk_records, decode_otlp_logs_json, js_sdk_kind
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.formats.session_events import parse_ts
from ingest.formats.step_lines import is_step_line, step_line_drafts, was_late
from ingest.formats.trail import decode_trail
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.options import PipelineOptions
from models.errors import DecodeError
from models.records import DeadLetter

SOURCE = "file"

Feed = Callable[[Pipeline], None]
"""Feeds one decoded record to a pipeline."""
Delivery = tuple[int | None, Feed]
"""When a record reached the live service (event-time ns, or None: with the one before) and
how to feed it."""


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One unit of input, before decoding: ``format`` names its entry in :data:`FORMATS`
    (``invalid`` when it could not even be parsed: ``reason`` says why). ``payload`` is
    what the format's decoder takes: bytes, a JSON value, or a transcript's
    ``(location, line)`` pairs."""

    format: str
    payload: Any
    location: str
    partition: str
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Format:
    """One input format (see the module docstring)."""

    name: str
    deliver: Callable[[RawRecord, PipelineOptions], Delivery]
    claims: Callable[[Any], bool] | None = None
    """Whether a JSON value is a record of this format; None: never read from JSON values."""
    whole_file: bool = False
    """A file's values of this format are one record: ``{"lines": [(location, value)...],
    "name": file name}``."""
    prepare: Callable[[Any, str, int], Any] | None = None
    """The record's payload made from a value, its file's name and its 0-based line."""


def _where(record: RawRecord) -> dict[str, str]:
    return {"source": SOURCE, "location": record.location}


def _dead(record: RawRecord, reason: str) -> DeadLetter:
    payload = record.payload
    if not isinstance(payload, bytes):
        payload = json.dumps(payload, default=str).encode("utf-8", "surrogatepass")
    return DeadLetter(source=SOURCE, location=record.location, reason=reason, payload=payload)


def _dead_letter(record: RawRecord, reason: str) -> Delivery:
    dead = _dead(record, reason)
    return None, lambda pipeline: pipeline.feed_decoded(
        Decoded(rejects=[dead]), partition=record.partition
    )


def _whole(pipeline: Pipeline, decoded: Decoded, partition: str) -> None:
    """Deliver a document at once and release its steps in event-time order."""
    pipeline.feed_decoded(decoded, partition=partition)
    pipeline.end_partition(partition)


def _span_batch(decode: Callable[..., Decoded]) -> Callable[[RawRecord, PipelineOptions], Delivery]:
    """A batch an exporter sent: delivered when its last span had ended."""

    def deliver(record: RawRecord, options: PipelineOptions) -> Delivery:
        decoded = decode(
            record.payload, max_attribute_bytes=options.max_attribute_bytes, **_where(record)
        )
        sent = max((span.end_ns for span in decoded.spans), default=None)
        return sent, lambda pipeline: pipeline.feed_decoded(decoded, partition=record.partition)

    return deliver


_LOGS_KEYS = ("resourceLogs", "resource_logs")
_SPANS_KEYS = ("resourceSpans", "resource_spans", "batches")
_METRICS_KEYS = ("resourceMetrics", "resource_metrics")


def _otlp_json_signals(payload: Any, **options: Any) -> Decoded:
    """An OTLP/JSON document's spans, and its log records where it has them: beside the
    spans (Google ADK writes its ``gen_ai`` events so), or alone (a Collector ``file``
    exporter's logs line). Log records no runtime decoder knows, and a metrics document
    (the same exporter's metrics line: trajwatch reads no metrics), are counted as
    skipped."""
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


def _trail(record: RawRecord, options: PipelineOptions) -> Delivery:
    decoded = decode_trail(
        record.payload, max_attribute_bytes=options.max_attribute_bytes, **_where(record)
    )
    return None, lambda pipeline: _whole(pipeline, decoded, record.partition)


def _events(record: RawRecord, events: list[Any]) -> Delivery:
    """Session events, appended to the log at the first one's ``ts``."""
    payload = record.payload
    ts = payload.get("ts") if isinstance(payload, Mapping) else None

    def feed(pipeline: Pipeline) -> None:
        for event in events:
            pipeline.feed_event(event, partition=record.partition, **_where(record))

    return _event_time(ts), feed


def _event(record: RawRecord, options: PipelineOptions) -> Delivery:
    return _events(record, [record.payload])


def _step_line(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A stored step (an explorer bundle's ``session.jsonl``), delivered at its event time."""
    try:
        decoded = Decoded(drafts=step_line_drafts(record.payload))
    except DecodeError as exc:
        return _dead_letter(record, exc.reason)
    sent = decoded.drafts[0].step.ts  # already nanoseconds, as stored
    late = was_late(record.payload)

    def feed(pipeline: Pipeline) -> None:
        if late:  # stored behind the watermark: what came before it was released already
            pipeline.end_partition(record.partition)
        pipeline.feed_decoded(decoded, partition=record.partition)

    return sent, feed


def _tool_calls_row(record: RawRecord, options: PipelineOptions) -> Delivery:
    return _events(record, tool_call_row_events(record.payload))


def _agentdojo_run(obj: Any, name: str, line: int) -> dict[str, Any]:
    # AgentDojo's own index numbers lines from 0; the session id joins on it.
    return {"record": obj, "session_id": session_id_for(name.split(".", 1)[0], line)}


def _agentdojo(record: RawRecord, options: PipelineOptions) -> Delivery:
    try:
        drafts = record_drafts(record.payload["record"], session_id=record.payload["session_id"])
    except DecodeError as exc:
        return _dead_letter(record, exc.reason)
    return None, lambda pipeline: _whole(pipeline, Decoded(drafts=drafts), record.partition)


def _transcript(
    read: Callable[[RawRecord], tuple[list[Draft], list[tuple[str, str, Any]]]], kind: str
) -> Callable[[RawRecord, PipelineOptions], Delivery]:
    """A whole runtime transcript: its unreadable lines are dead letters, the rest is kept."""

    def deliver(record: RawRecord, options: PipelineOptions) -> Delivery:
        try:
            drafts, rejects = read(record)
        except DecodeError as exc:
            return _dead_letter(record, f"{kind}: {exc.reason}")
        unread = [
            _dead(RawRecord(kind, line, at, record.partition), f"{kind}: {reason}")
            for at, reason, line in rejects
        ]

        decoded = Decoded(drafts=drafts, rejects=unread)
        return None, lambda pipeline: _whole(pipeline, decoded, record.partition)

    return deliver


def _js_sdk(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A JavaScript SDK file exporter's output (Gemini CLI's ``--telemetry-outfile``): its
    log records read as one batch, delivered whole."""
    decoded = decode_js_sdk_records(
        record.payload["lines"], source=SOURCE, max_attribute_bytes=options.max_attribute_bytes
    )
    return None, lambda pipeline: _whole(pipeline, decoded, record.partition)


def _skip(record: RawRecord, options: PipelineOptions) -> Delivery:
    return None, lambda pipeline: None


def _invalid(record: RawRecord, options: PipelineOptions) -> Delivery:
    return _dead_letter(record, record.reason or "unreadable record")


def _is_otlp_json(obj: Any) -> bool:
    return isinstance(obj, Mapping) and is_otlp_json(obj)


def _is_event(obj: Any) -> bool:
    return isinstance(obj, Mapping) and "type" in obj and "session_id" in obj


def _is_trail(obj: Any) -> bool:
    return isinstance(obj, Mapping) and isinstance(obj.get("spans"), list)


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(name="agentdojo", claims=is_agentdojo, prepare=_agentdojo_run, deliver=_agentdojo),
        Format(name="skip", claims=is_header, deliver=_skip),  # AgentDojo's metadata line
        Format(
            name="claude_code",
            claims=is_claude_code_line,
            whole_file=True,
            deliver=_transcript(lambda r: transcript_drafts(r.payload["lines"]), "claude_code"),
        ),
        Format(
            name="claude_stream",
            claims=is_claude_stream_line,
            whole_file=True,
            deliver=_transcript(lambda r: stream_drafts(r.payload["lines"]), "claude_code"),
        ),
        Format(
            name="codex",
            claims=is_codex_line,
            whole_file=True,
            deliver=_transcript(
                lambda r: rollout_drafts(r.payload["lines"], file_name=r.payload["name"]),
                "codex",
            ),
        ),
        Format(
            name="codex_document",
            claims=is_codex_document,
            deliver=_transcript(
                lambda r: rollout_drafts(
                    document_lines(r.payload, r.location),
                    file_name=r.location.rsplit("/", 1)[-1],
                ),
                "codex",
            ),
        ),
        Format(
            name="codex_exec",
            claims=is_codex_exec_line,
            whole_file=True,
            deliver=_transcript(
                lambda r: exec_drafts(r.payload["lines"], file_name=r.payload["name"]),
                "codex_exec",
            ),
        ),
        Format(
            name="gemini_chat",
            claims=is_gemini_chat_line,
            whole_file=True,
            deliver=_transcript(lambda r: chat_drafts(r.payload["lines"]), "gemini_chat"),
        ),
        Format(name="otlp_json", claims=_is_otlp_json, deliver=_span_batch(_otlp_json_signals)),
        Format(
            name="otel_js",
            claims=lambda obj: js_sdk_kind(obj) is not None,
            whole_file=True,
            deliver=_js_sdk,
        ),
        Format(name="step", claims=is_step_line, deliver=_step_line),
        Format(name="event", claims=_is_event, deliver=_event),
        Format(name="trail", claims=_is_trail, deliver=_trail),
        Format(name="otlp_proto", deliver=_span_batch(decode_otlp_proto)),
        Format(name="tool_calls_row", deliver=_tool_calls_row),
        Format(name="invalid", deliver=_invalid),
    )
}
"""Every format, in the order a JSON value is tested against them."""

FALLBACK = "event"
"""A JSON value no format claims is read as a session event: the schema says precisely
what is missing."""


def classify(obj: Any, name: str = "") -> str:
    """The format of one JSON value read from a file called ``name``."""
    if name == "trace.json" or ".otlp." in name:
        return "otlp_json"
    for fmt in FORMATS.values():
        if fmt.claims is not None and _claims(fmt.claims, obj):
            return fmt.name
    return FALLBACK


def _claims(claims: Callable[[Any], bool], obj: Any) -> bool:
    """Whether ``claims`` takes ``obj``; a claim that raises (a bug: a value of a type it
    did not expect) takes nothing, so the value falls through to a decoder that says what
    is wrong with it instead of stopping the whole file."""
    try:
        return bool(claims(obj))
    except Exception:
        return False


def delivery(record: RawRecord, options: PipelineOptions) -> Delivery:
    """When ``record`` reached the live service, and how to feed it to a pipeline: the
    one entry point from a raw record to the pipeline (replay, tests, live sources).

    A decoder's exception (a bug: decoders reject bad records themselves) costs this
    record only, as a dead letter with the reason, never the replay."""
    try:
        return FORMATS[record.format].deliver(record, options)
    except Exception as error:
        return _dead_letter(record, f"the decoder failed: {type(error).__name__}: {error}")


def feed_record(pipeline: Pipeline, record: RawRecord) -> None:
    """Feed one raw record to the pipeline, through the decoder for its format."""
    delivery(record, pipeline.settings)[1](pipeline)


def delivered(records: Iterator[RawRecord], options: PipelineOptions) -> Iterator[tuple[int, Feed]]:
    """One file's records with the event time the live service would have received each
    at, in file order; a record with no time of its own (a document, an invalid line)
    counts as delivered with the record before it."""
    at = 0
    for record in records:
        when, feed = delivery(record, options)
        at = at if when is None else when
        yield at, feed


def _event_time(ts: object) -> int | None:
    if isinstance(ts, str):
        with contextlib.suppress(ValueError):
            ts = float(ts)  # a tool_calls.csv row's Unix seconds
    try:
        return parse_ts(ts)
    except DecodeError:
        return None  # the decoder will dead-letter it, with the reason


def tool_call_row_events(row: dict[str, str]) -> list[dict[str, Any]]:
    """A ``tool_calls.csv`` row as the ``tool_call`` and ``tool_result`` events it records."""
    session, call_id = row.get("session_id", ""), row.get("call_id", "")
    try:
        seq: Any = int(row.get("seq", ""))
    except ValueError:
        seq = row.get("seq")  # left as text: the schema check names the bad field
    ts: Any = row.get("ts", "")
    with contextlib.suppress(ValueError):
        ts = float(ts)
    arguments: Any = row.get("arguments") or None
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments)
    ok = str(row.get("ok", "")).strip().lower() in ("true", "1", "yes")
    base = {"session_id": session, "seq": seq, "ts": ts, "call_id": call_id}
    result: dict[str, Any] = {
        **base,
        "type": "tool_result",
        "ok": ok,
        "tool": row.get("tool"),
        "event_id": f"{session}#csv{seq}:result",
    }
    if row.get("error"):
        result["error"] = row["error"]
    if (row.get("output_bytes") or "").isdigit():
        result["output_bytes"] = int(row["output_bytes"])
    call = {
        **base,
        "type": "tool_call",
        "tool": row.get("tool"),
        "arguments": arguments,
        "event_id": f"{session}#csv{seq}:call",
    }
    return [call, result]
