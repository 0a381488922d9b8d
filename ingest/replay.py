"""``trajwatch replay``: recorded files through the live pipeline, as live delivered them.

The same :class:`~ingest.pipeline.Pipeline` as the live service, with the same
``lateness_ms`` watermark, and each recording (a debug bundle, or the files of one run
that share a stem) as one partition. A recording's records are fed in the order the
live service would have received them: a session log appends each event at its time,
an exporter sends a span batch once its spans have ended (the root ``invoke_agent``
span, and with it the session's start, comes last). So the files of a recording are
merged by that delivery time, each file keeping its own order, and a replay raises
exactly the alerts the live service raised on the same input — including what live
cannot know yet (a goal that arrives with the root span). A document with no delivery
order (a TRAIL trace, an AgentDojo run) is delivered whole, and its steps put in
event-time order. Replaying the same files again stores nothing twice: every step,
alert and dead letter has a stable id.
"""

from __future__ import annotations

import contextlib
import heapq
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from detectors.registry import DetectorSet
from ingest.agentdojo import record_drafts
from ingest.claude_code import transcript_drafts
from ingest.codex import rollout_drafts
from ingest.draft import Draft
from ingest.errors import DecodeError
from ingest.files import RawRecord, ReadStats, read_recordings
from ingest.otlp_json import decode_otlp_json
from ingest.otlp_proto import Decoded, decode_otlp_proto
from ingest.pipeline import Pipeline
from ingest.session_events import parse_ts
from ingest.settings import Settings
from ingest.trail import decode_trail
from models.records import Alert, DeadLetter
from models.store import Store

SOURCE = "file"


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    sessions: list[str]
    steps: int
    """Steps stored for the replayed sessions: the same figure on every replay."""
    new_steps: int
    duplicates: int
    dead_letters: int
    alerts: list[Alert]
    files: int
    skipped: list[str]

    def to_json(self) -> dict[str, Any]:
        """The stable shape of ``trajwatch replay --json``."""
        return {
            "sessions": len(self.sessions),
            "steps": self.steps,
            "dead_letters": self.dead_letters,
            "alerts": [a.to_json() for a in self.alerts],
        }


_Feed = Callable[[Pipeline], None]
_SPAN_DECODERS: dict[str, Callable[..., Decoded]] = {
    "otlp_json": decode_otlp_json,
    "otlp_proto": decode_otlp_proto,
    "trail": decode_trail,
}


def feed_record(pipeline: Pipeline, record: RawRecord) -> None:
    """Feed one raw record to the pipeline, through the decoder for its format."""
    _delivery(record, pipeline.settings)[1](pipeline)


def _delivered(records: Iterator[RawRecord], settings: Settings) -> Iterator[tuple[int, _Feed]]:
    """One file's records with the event time the live service would have received
    each at, in file order; a record with no time of its own (a document, an invalid
    line) counts as delivered with the record before it."""
    at = 0
    for record in records:
        when, feed = _delivery(record, settings)
        at = at if when is None else when
        yield at, feed


def _delivery(record: RawRecord, settings: Settings) -> tuple[int | None, _Feed]:
    """When ``record`` reached the live service, and how to feed it to a pipeline.

    Span batches are decoded here, once: a batch leaves the exporter when its last span
    has ended. A session event is appended at its ``ts``. A document with no delivery
    order (a TRAIL trace, an AgentDojo run) ends its partition: its steps are released
    in event-time order."""
    kind = record.format
    where = dict(source=SOURCE, location=record.location)
    partition = record.partition
    if kind in ("otlp_json", "otlp_proto", "trail"):
        decode: Callable[..., Decoded] = _SPAN_DECODERS[kind]
        decoded = decode(record.payload, max_attribute_bytes=settings.max_attribute_bytes, **where)
        if kind == "trail":
            return None, lambda pipeline: _whole(pipeline, decoded, partition)
        sent = max((span.end_ns for span in decoded.spans), default=None)
        return sent, lambda pipeline: pipeline.feed_decoded(decoded, partition=partition)
    if kind in ("event", "tool_calls_row"):
        payload = record.payload
        events = tool_call_row_events(payload) if kind == "tool_calls_row" else [payload]
        ts = payload.get("ts") if isinstance(payload, dict) else None

        def feed_events(pipeline: Pipeline) -> None:
            for event in events:
                pipeline.feed_event(event, partition=partition, **where)

        return _event_time(ts), feed_events
    if kind == "agentdojo":
        try:
            drafts = record_drafts(
                record.payload["record"], session_id=record.payload["session_id"]
            )
        except DecodeError as exc:
            dead = _dead(record, exc.reason)
            return None, lambda pipeline: pipeline.add_dead_letters([dead])
        return None, lambda pipeline: _whole(pipeline, drafts, partition)
    if kind in ("claude_code", "codex"):
        try:
            if kind == "claude_code":
                drafts, rejects = transcript_drafts(record.payload)
            else:
                payload = record.payload
                drafts, rejects = rollout_drafts(payload["lines"], file_name=payload["name"])
        except DecodeError as exc:
            whole = _dead(record, f"{kind}: {exc.reason}")
            return None, lambda pipeline: pipeline.add_dead_letters([whole])
        unread = [
            _dead(RawRecord(kind, line, at, partition), f"{kind}: {reason}")
            for at, reason, line in rejects
        ]

        def feed_transcript(pipeline: Pipeline) -> None:
            pipeline.add_dead_letters(unread)
            _whole(pipeline, drafts, partition)

        return None, feed_transcript
    if kind == "skip":
        return None, lambda pipeline: None
    dead = _dead(record, record.reason or "unreadable record")
    return None, lambda pipeline: pipeline.add_dead_letters([dead])


def _whole(pipeline: Pipeline, content: Decoded | list[Draft], partition: str) -> None:
    """Deliver a document at once and release its steps in event-time order."""
    if isinstance(content, Decoded):
        pipeline.feed_decoded(content, partition=partition)
    else:
        pipeline.add_drafts(content, partition=partition)
    pipeline.end_partition(partition)


def _event_time(ts: object) -> int | None:
    if isinstance(ts, str):
        with contextlib.suppress(ValueError):
            ts = float(ts)  # a tool_calls.csv row's Unix seconds
    try:
        return parse_ts(ts)
    except DecodeError:
        return None  # the decoder will dead-letter it, with the reason


def _dead(record: RawRecord, reason: str) -> DeadLetter:
    payload = record.payload
    if not isinstance(payload, bytes):
        payload = json.dumps(payload, default=str).encode("utf-8", "surrogatepass")
    return DeadLetter(source=SOURCE, location=record.location, reason=reason, payload=payload)


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


def replay(
    paths: list[Path],
    *,
    settings: Settings,
    detectors: DetectorSet | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReplaySummary:
    """Replay ``paths`` into the store at ``settings.db_url``; returns what was seen."""
    store = Store.open(settings.db_url)
    try:
        pipeline = Pipeline(store, settings=settings, detectors=detectors)
        stats = ReadStats()
        since_commit = 0
        for partition, files in read_recordings(paths, stats):
            timed = [_delivered(records, pipeline.settings) for records in files]
            for _, feed in heapq.merge(*timed, key=itemgetter(0)):
                feed(pipeline)
                since_commit += 1
            pipeline.end_partition(partition)
            if progress is not None:
                progress(1)
            if since_commit >= settings.commit_every:
                pipeline.commit()
                since_commit = 0
        pipeline.close()
        sessions = sorted(pipeline.stats.sessions)
        return ReplaySummary(
            sessions=sessions,
            steps=store.step_count(sessions),
            new_steps=pipeline.stats.new_steps,
            duplicates=pipeline.stats.duplicates,
            dead_letters=pipeline.stats.dead_letters,
            alerts=store.alerts(sessions) if sessions else [],
            files=stats.files,
            skipped=stats.skipped,
        )
    finally:
        store.close()
