"""Sessions of one workspace as session events, through a pipeline with
``workspace_conflict`` (the store and explorer tests of issue 29)."""

from __future__ import annotations

import json
from typing import Any

from detectors.registry import DetectorSet
from detectors.workspace_conflict.detector import WorkspaceConflict
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.sinks import Sink
from models.store import Store
from trajwatch.settings import Settings

HOST, DIR, REPO = "zoe-ws5", "/home/zoe/work/app", "https://github.com/acme/app"
T0 = 1_767_225_600


def ts(seconds: float) -> float:
    return T0 + seconds


def session(
    sid: str,
    start: float,
    edits: list[tuple[float, str]],
    *,
    end: float | None = None,
    branch: str = "main",
    revision: str = "999dfcc",
) -> list[dict[str, Any]]:
    """A session's events: a start in the workspace, one Edit per (time, path), an end."""
    events: list[dict[str, Any]] = [
        {
            "type": "session_start",
            "session_id": sid,
            "ts": ts(start),
            "agent": "claude-code",
            "goal": "fix the refunds",
            "workspace": DIR,
            "repository": REPO,
            "branch": branch,
            "host": HOST,
            "commit": revision,
        }
    ]
    for i, (at, path) in enumerate(edits):
        call = f"{sid}-c{i}"
        events.append(
            {
                "type": "tool_call",
                "session_id": sid,
                "ts": ts(at),
                "tool": "Edit",
                "call_id": call,
                "arguments": {"file_path": f"{DIR}/{path}", "old_string": "a", "new_string": "b"},
            }
        )
        events.append(
            {
                "type": "tool_result",
                "session_id": sid,
                "ts": ts(at + 1),
                "call_id": call,
                "ok": True,
                "result": "ok",
            }
        )
    if end is not None:
        events.append(
            {
                "type": "session_end",
                "session_id": sid,
                "ts": ts(end),
                "status": "success",
                "claimed_done": True,
            }
        )
    return [{**event, "seq": seq} for seq, event in enumerate(events)]


def pipeline(store: Store, sinks: tuple[Sink, ...] = ()) -> Pipeline:
    return Pipeline(
        store,
        settings=Settings(lateness_ms=0),
        detectors=DetectorSet([WorkspaceConflict()]),
        sinks=sinks,
    )


def feed(p: Pipeline, events: list[dict[str, Any]], partition: str = "p") -> None:
    for i, event in enumerate(sorted(events, key=lambda e: e["ts"])):
        p.feed_event(
            json.dumps(event).encode(),
            source="test",
            location=f"{partition}{i}",
            partition=partition,
        )


def close(p: Pipeline) -> None:
    p.close()
    assert p.stats.dead_letters == 0, p.stats.first_dead_letters
