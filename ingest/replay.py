"""``trajwatch replay``: recorded files through the live pipeline.

The same :class:`~ingest.pipeline.Pipeline` as the live service, with each
recording (a debug bundle, or the files of one run that share a stem) as one
partition, put wholly in event-time order when it ends. The live service orders
within ``lateness_ms`` of event time instead; the two agree whenever live input
arrived within that lateness, which is the contract "replay raises the alerts the
live service raised" rests on. Replaying the
same files again stores nothing twice: every step, alert and dead letter has a
stable id.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from detectors.registry import DetectorSet
from ingest.agentdojo import record_drafts
from ingest.errors import DecodeError
from ingest.files import RawRecord, ReadStats, read_records
from ingest.pipeline import Pipeline
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


def feed_record(pipeline: Pipeline, record: RawRecord) -> None:
    """Route one raw record to the pipeline's decoder for its format."""
    kind = record.format
    where = dict(source=SOURCE, location=record.location, partition=record.partition)
    if kind == "otlp_json":
        pipeline.feed_otlp_json(record.payload, **where)
    elif kind == "otlp_proto":
        pipeline.feed_otlp_proto(record.payload, **where)
    elif kind == "event":
        pipeline.feed_event(record.payload, **where)
    elif kind == "trail":
        decoded = decode_trail(
            record.payload,
            source=SOURCE,
            location=record.location,
            max_attribute_bytes=pipeline.settings.max_attribute_bytes,
        )
        pipeline.feed_decoded(decoded, partition=record.partition)
    elif kind == "agentdojo":
        try:
            drafts = record_drafts(
                record.payload["record"], session_id=record.payload["session_id"]
            )
        except DecodeError as exc:
            pipeline.add_dead_letters([_dead(record, exc.reason)])
        else:
            pipeline.add_drafts(drafts, partition=record.partition)
    elif kind == "skip":
        pass
    elif kind == "tool_calls_row":
        for event in tool_call_row_events(record.payload):
            pipeline.feed_event(event, **where)
    elif kind == "end_of_recording":
        pipeline.end_partition(record.partition)
    else:
        pipeline.add_dead_letters([_dead(record, record.reason or "unreadable record")])


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
        with contextlib.suppress(ValueError):
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
        pipeline = Pipeline(store, settings=settings, detectors=detectors, hold_partitions=True)
        stats = ReadStats()
        since_commit = 0
        for record in read_records(paths, stats):
            feed_record(pipeline, record)
            since_commit += 1
            if record.format == "end_of_recording":
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
