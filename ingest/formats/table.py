"""The table of input formats: how a record is recognised, decoded, and when it was delivered.

The one place a format is decided. Every record a source reads has a ``format`` naming one
entry of :data:`FORMATS`, and every source decodes it with the entry's decoder: the OTLP/HTTP
receiver and the Kafka worker through :func:`decode`, a file's records through
:func:`delivery`. An entry says

- how a record is recognised as the format: a JSON value read from a file by ``claims``
  (entries are tried in table order, and a file named ``trace.json`` or ``*.otlp.*`` is
  OTLP whatever it holds); an OTLP/HTTP request by its ``http`` kind (:data:`HTTP_KINDS`);
  a message on the Kafka worker's spans topic by the topic's ``kafka`` encoding
  (:data:`KAFKA_ENCODINGS`; a message on its events topic is an ``event``);
- whether a file's values of the format form one record (``whole_file``: a Claude Code
  transcript or a Codex rollout is read together, as one API response spans lines);
- ``decode``: what the record holds (:class:`~ingest.decoded.Decoded`). A record the
  decoder cannot read at all raises :class:`~models.errors.DecodeError`, and becomes one
  dead letter with the reason; a decoder rejects the bad parts of a record itself;
- and ``deliver``: at which event time the live service would have received the record
  (``None``: with the record before it), and how to feed it, decoded by ``decode``, to a
  pipeline (a session event goes to ``Pipeline.feed_event``, which runs the same decoder
  behind the pipeline's guard).

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
from dataclasses import dataclass, replace
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
from ingest.formats.otlp_document import decode_otlp_document
from ingest.formats.otlp_json import decode_otlp_json, is_otlp_json
from ingest.formats.otlp_logs import (
    decode_js_sdk_records,
    decode_otlp_logs_json,
    decode_otlp_logs_proto,
    js_sdk_kind,
)
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.formats.session_events import decode_event, parse_ts
from ingest.formats.step_lines import is_step_line, step_line_drafts, was_late
from ingest.formats.tool_calls_csv import tool_call_row_events
from ingest.formats.trail import decode_trail
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.options import PipelineOptions
from models.errors import DecodeError
from models.records import DeadLetter

SOURCE = "file"
"""The ``source`` of a record read from a file."""


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One unit of input, before decoding: ``format`` names its entry in :data:`FORMATS`
    (``invalid`` when it could not even be parsed: ``reason`` says why). ``payload`` is
    what the format's decoder takes: bytes, a JSON value, or a transcript's
    ``(location, line)`` pairs. ``source`` says where it was read (``file``,
    ``otlp_http``, ``kafka``): its dead letters carry it."""

    format: str
    payload: Any
    location: str
    partition: str
    reason: str = ""
    source: str = SOURCE


Decode = Callable[[RawRecord, int], Decoded]
"""A format's decoder: the record and the attribute cap (bytes) to what it holds."""
Feed = Callable[[Pipeline], None]
"""Feeds one decoded record to a pipeline."""
Delivery = tuple[int | None, Feed]
"""When a record reached the live service (event-time ns, or None: with the one before) and
how to feed it."""
Deliver = Callable[[RawRecord, PipelineOptions], Delivery]
"""A record's :data:`Delivery`, decoded by its format's ``decode``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Format:
    """One input format (see the module docstring)."""

    name: str
    decode: Decode
    deliver: Deliver
    claims: Callable[[Any], bool] | None = None
    """Whether a JSON value is a record of this format; None: never read from JSON values."""
    whole_file: bool = False
    """A file's values of this format are one record: ``{"lines": [(location, value)...],
    "name": file name}``."""
    prepare: Callable[[Any, str, int], Any] | None = None
    """The record's payload made from a value, its file's name and its 0-based line."""
    http: str | None = None
    """The OTLP/HTTP request that carries it: ``<signal>/<proto|json>``, its path
    (``/v1/<signal>``) and its Content-Type."""
    kafka: str | None = None
    """The Kafka worker's name for it on the spans topic: the ``encoding`` of the
    OpenTelemetry Collector's Kafka exporter."""


# -- decoders ---------------------------------------------------------------------------


def _where(record: RawRecord) -> dict[str, str]:
    return {"source": record.source, "location": record.location}


def _reader(read: Callable[..., Decoded]) -> Decode:
    """A decoder of the shape ``read(payload, *, source, location, max_attribute_bytes)``."""

    def decode(record: RawRecord, max_attribute_bytes: int) -> Decoded:
        return read(record.payload, max_attribute_bytes=max_attribute_bytes, **_where(record))

    return decode


def _span_request(read: Callable[..., Decoded]) -> Decode:
    """An OTLP trace export request; ``records`` counts the spans it carried, read or not."""
    decode_spans = _reader(read)

    def decode(record: RawRecord, max_attribute_bytes: int) -> Decoded:
        decoded = decode_spans(record, max_attribute_bytes)
        decoded.records = len(decoded.spans) + len(decoded.rejects)
        return decoded

    return decode


def _event(record: RawRecord, max_attribute_bytes: int) -> Decoded:
    drafts, dead = decode_event(record.payload, source=record.source, location=record.location)
    return Decoded(drafts=drafts, rejects=[dead] if dead is not None else [])


def _row_events(record: RawRecord, max_attribute_bytes: int) -> list[Decoded]:
    """A ``tool_calls.csv`` row's two session events, decoded one by one."""
    return [
        _event(replace(record, format="event", payload=event), max_attribute_bytes)
        for event in tool_call_row_events(record.payload)
    ]


def _tool_calls_row(record: RawRecord, max_attribute_bytes: int) -> Decoded:
    decoded = Decoded()
    for part in _row_events(record, max_attribute_bytes):
        decoded.extend(part)
    return decoded


def _step_line(record: RawRecord, max_attribute_bytes: int) -> Decoded:
    return Decoded(drafts=step_line_drafts(record.payload))


def _agentdojo_run(obj: Any, name: str, line: int) -> dict[str, Any]:
    # AgentDojo's own index numbers lines from 0; the session id joins on it.
    return {"record": obj, "session_id": session_id_for(name.split(".", 1)[0], line)}


def _agentdojo(record: RawRecord, max_attribute_bytes: int) -> Decoded:
    payload = record.payload
    return Decoded(drafts=record_drafts(payload["record"], session_id=payload["session_id"]))


def _transcript(
    read: Callable[[RawRecord], tuple[list[Draft], list[tuple[str, str, Any]]]], kind: str
) -> Decode:
    """A whole runtime transcript: its unreadable lines are dead letters, the rest is kept."""

    def decode(record: RawRecord, max_attribute_bytes: int) -> Decoded:
        try:
            drafts, rejects = read(record)
        except DecodeError as exc:
            raise DecodeError(f"{kind}: {exc.reason}") from exc
        unread = [
            _dead(
                RawRecord(kind, line, at, record.partition, source=record.source), f"{kind}: {why}"
            )
            for at, why, line in rejects
        ]
        return Decoded(drafts=drafts, rejects=unread)

    return decode


def _js_sdk(record: RawRecord, max_attribute_bytes: int) -> Decoded:
    """A JavaScript SDK file exporter's output (Gemini CLI's ``--telemetry-outfile``): its
    log records read as one batch."""
    return decode_js_sdk_records(
        record.payload["lines"], source=record.source, max_attribute_bytes=max_attribute_bytes
    )


def _nothing(record: RawRecord, max_attribute_bytes: int) -> Decoded:
    return Decoded()


def _unreadable(record: RawRecord, max_attribute_bytes: int) -> Decoded:
    raise DecodeError(record.reason or "unreadable record")


# -- deliveries -------------------------------------------------------------------------


def _decoded(record: RawRecord, options: PipelineOptions) -> Decoded:
    return FORMATS[record.format].decode(record, options.max_attribute_bytes)


def _with_previous(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A record with no time of its own: delivered with the record before it."""
    decoded = _decoded(record, options)
    return None, lambda pipeline: pipeline.feed_decoded(decoded, partition=record.partition)


def _span_batch(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A batch an exporter sent: delivered when its last span had ended."""
    decoded = _decoded(record, options)
    sent = max((span.end_ns for span in decoded.spans), default=None)
    return sent, lambda pipeline: pipeline.feed_decoded(decoded, partition=record.partition)


def _document(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A document: delivered at once, its steps released in event-time order."""
    decoded = _decoded(record, options)

    def feed(pipeline: Pipeline) -> None:
        pipeline.feed_decoded(decoded, partition=record.partition)
        pipeline.end_partition(record.partition)

    return None, feed


def _logged_at(record: RawRecord) -> int | None:
    """When a session log appended the record's events: at its ``ts``."""
    payload = record.payload
    return _event_time(payload.get("ts") if isinstance(payload, Mapping) else None)


def _logged_event(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A session event, fed through :meth:`Pipeline.feed_event`: the ``event`` decoder
    behind the pipeline's guard, which keeps a value that is no JSON object (it makes
    :func:`decode_event` raise) as a dead letter of ``application/json``."""

    def feed(pipeline: Pipeline) -> None:
        pipeline.feed_event(record.payload, partition=record.partition, **_where(record))

    return _logged_at(record), feed


def _logged_row(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A ``tool_calls.csv`` row: its two events fed one after the other, as logged."""
    parts = _row_events(record, options.max_attribute_bytes)

    def feed(pipeline: Pipeline) -> None:
        for decoded in parts:
            pipeline.feed_decoded(decoded, partition=record.partition)

    return _logged_at(record), feed


def _stored_step(record: RawRecord, options: PipelineOptions) -> Delivery:
    """A stored step (an explorer bundle's ``session.jsonl``), delivered at its event time."""
    decoded = _decoded(record, options)
    sent = decoded.drafts[0].step.ts  # already nanoseconds, as stored
    late = was_late(record.payload)

    def feed(pipeline: Pipeline) -> None:
        if late:  # stored behind the watermark: what came before it was released already
            pipeline.end_partition(record.partition)
        pipeline.feed_decoded(decoded, partition=record.partition)

    return sent, feed


def _is_otlp_json(obj: Any) -> bool:
    return isinstance(obj, Mapping) and is_otlp_json(obj)


def _is_event(obj: Any) -> bool:
    return isinstance(obj, Mapping) and "type" in obj and "session_id" in obj


def _is_trail(obj: Any) -> bool:
    return isinstance(obj, Mapping) and isinstance(obj.get("spans"), list)


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            name="agentdojo",
            claims=is_agentdojo,
            prepare=_agentdojo_run,
            decode=_agentdojo,
            deliver=_document,
        ),
        # AgentDojo's metadata line
        Format(name="skip", claims=is_header, decode=_nothing, deliver=_with_previous),
        Format(
            name="claude_code",
            claims=is_claude_code_line,
            whole_file=True,
            decode=_transcript(lambda r: transcript_drafts(r.payload["lines"]), "claude_code"),
            deliver=_document,
        ),
        Format(
            name="claude_stream",
            claims=is_claude_stream_line,
            whole_file=True,
            decode=_transcript(lambda r: stream_drafts(r.payload["lines"]), "claude_code"),
            deliver=_document,
        ),
        Format(
            name="codex",
            claims=is_codex_line,
            whole_file=True,
            decode=_transcript(
                lambda r: rollout_drafts(r.payload["lines"], file_name=r.payload["name"]),
                "codex",
            ),
            deliver=_document,
        ),
        Format(
            name="codex_document",
            claims=is_codex_document,
            decode=_transcript(
                lambda r: rollout_drafts(
                    document_lines(r.payload, r.location),
                    file_name=r.location.rsplit("/", 1)[-1],
                ),
                "codex",
            ),
            deliver=_document,
        ),
        Format(
            name="codex_exec",
            claims=is_codex_exec_line,
            whole_file=True,
            decode=_transcript(
                lambda r: exec_drafts(r.payload["lines"], file_name=r.payload["name"]),
                "codex_exec",
            ),
            deliver=_document,
        ),
        Format(
            name="gemini_chat",
            claims=is_gemini_chat_line,
            whole_file=True,
            decode=_transcript(lambda r: chat_drafts(r.payload["lines"]), "gemini_chat"),
            deliver=_document,
        ),
        Format(
            name="otlp_json",  # a document of a file: spans, logs or metrics
            claims=_is_otlp_json,
            decode=_reader(decode_otlp_document),
            deliver=_span_batch,
        ),
        Format(
            name="otel_js",
            claims=lambda obj: js_sdk_kind(obj) is not None,
            whole_file=True,
            decode=_js_sdk,
            deliver=_document,
        ),
        Format(name="step", claims=is_step_line, decode=_step_line, deliver=_stored_step),
        Format(name="event", claims=_is_event, decode=_event, deliver=_logged_event),
        Format(name="trail", claims=_is_trail, decode=_reader(decode_trail), deliver=_document),
        Format(
            name="otlp_proto",  # an ExportTraceServiceRequest
            http="traces/proto",
            kafka="otlp_proto",
            decode=_span_request(decode_otlp_proto),
            deliver=_span_batch,
        ),
        Format(
            name="otlp_traces_json",  # an ExportTraceServiceRequest in OTLP/JSON
            http="traces/json",
            kafka="otlp_json",
            decode=_span_request(decode_otlp_json),
            deliver=_span_batch,
        ),
        Format(
            name="otlp_logs_proto",  # an ExportLogsServiceRequest
            http="logs/proto",
            decode=_reader(decode_otlp_logs_proto),
            deliver=_with_previous,
        ),
        Format(
            name="otlp_logs_json",  # an ExportLogsServiceRequest in OTLP/JSON
            http="logs/json",
            decode=_reader(decode_otlp_logs_json),
            deliver=_with_previous,
        ),
        Format(name="tool_calls_row", decode=_tool_calls_row, deliver=_logged_row),
        Format(name="invalid", decode=_unreadable, deliver=_with_previous),
    )
}
"""Every format, in the order a JSON value is tested against them."""

FALLBACK = "event"
"""A JSON value no format claims is read as a session event: the schema says precisely
what is missing."""

HTTP_KINDS: dict[str, str] = {f.http: f.name for f in FORMATS.values() if f.http}
"""The format of an OTLP/HTTP request by its kind, ``<signal>/<proto|json>``."""

KAFKA_ENCODINGS: dict[str, str] = {f.kafka: f.name for f in FORMATS.values() if f.kafka}
"""The format of a message on the Kafka worker's spans topic by the topic's encoding."""


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


def decode(record: RawRecord, *, max_attribute_bytes: int) -> Decoded:
    """What ``record`` holds, read by the decoder of its format: the one decode every
    source calls (the OTLP/HTTP receiver, the Kafka worker, and through :func:`delivery`
    the files). A record that cannot be read at all is one dead letter with the reason.

    Any other exception out of a decoder (a bug: decoders reject bad records themselves)
    is raised: the caller says what it costs."""
    try:
        return FORMATS[record.format].decode(record, max_attribute_bytes)
    except DecodeError as exc:
        return Decoded(rejects=[_dead(record, exc.reason)])


def delivery(record: RawRecord, options: PipelineOptions) -> Delivery:
    """When ``record`` reached the live service, and how to feed it to a pipeline: the
    one entry point from a raw record to the pipeline (replay, tests, live sources).

    A record that cannot be read at all is a dead letter with the reason, delivered with
    the record before it. A decoder's exception (a bug: decoders reject bad records
    themselves) costs this record only, as a dead letter with the reason, never the
    replay."""
    try:
        return FORMATS[record.format].deliver(record, options)
    except DecodeError as exc:
        return _dead_letter(record, exc.reason)
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


def _dead(record: RawRecord, reason: str) -> DeadLetter:
    payload = record.payload
    if not isinstance(payload, bytes):
        payload = json.dumps(payload, default=str).encode("utf-8", "surrogatepass")
    return DeadLetter(
        source=record.source, location=record.location, reason=reason, payload=payload
    )


def _dead_letter(record: RawRecord, reason: str) -> Delivery:
    dead = _dead(record, reason)
    return None, lambda pipeline: pipeline.feed_decoded(
        Decoded(rejects=[dead]), partition=record.partition
    )


def _event_time(ts: object) -> int | None:
    if isinstance(ts, str):
        with contextlib.suppress(ValueError):
            ts = float(ts)  # a tool_calls.csv row's Unix seconds
    try:
        return parse_ts(ts)
    except DecodeError:
        return None  # the decoder will dead-letter it, with the reason
