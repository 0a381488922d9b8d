"""Silence as a step (issue 29): the pipeline places ``silence`` steps in a session that
stays quiet while its partition's event time moves on, at deterministic event times, once
each, and a stalled run is raised from them."""

from __future__ import annotations

import json
from typing import Any

from detectors.registry import DetectorSet
from detectors.stalled_run.detector import StalledRun
from ingest.pipeline.engine import Pipeline
from models.records import Action, StepKind
from models.store import Store
from trajwatch.settings import Settings

MIN = 60_000  # ms


def event(session: str, ms: int, kind: str, **fields: Any) -> dict[str, Any]:
    seconds, rest = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    ts = f"2026-01-01T{hours:02d}:{minutes:02d}:{seconds:02d}.{rest:03d}Z"
    return {"type": kind, "session_id": session, "ts": ts, **fields}


def fleet(*, dead_ends: bool = False) -> list[dict[str, Any]]:
    """Session ``dead`` calls a tool at 1 min and is never heard of again (or ends, with
    ``dead_ends``); session ``busy`` works every 30 s for 70 min."""
    events = [
        event("dead", 0, "session_start", goal="build it", host="h1", workspace="/w"),
        event("dead", 30_000, "model_call", model="gpt-5", finish_reason="tool_calls"),
        event("dead", MIN, "tool_call", tool="shell", call_id="c1", arguments={"command": "make"}),
    ]
    if dead_ends:
        events.append(event("dead", MIN + 1000, "session_end", status="success"))
    events.append(event("busy", 0, "session_start", goal="other work"))
    for i in range(1, 140):
        events.append(event("busy", i * 30_000, "model_call", model="gpt-5", tokens_in=10 + i))
    return numbered(sorted(events, key=lambda e: e["ts"]))


def numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with their per-session ``seq``, as a runtime's log writes them."""
    seqs: dict[str, int] = {}
    out = []
    for e in events:
        seq = seqs.get(e["session_id"], 0)
        seqs[e["session_id"]] = seq + 1
        out.append({**e, "seq": seq})
    return out


def replay(url: str, events: list[dict[str, Any]], *, commit_each: bool = False) -> Store:
    store = Store.open(url)
    pipeline = Pipeline(
        store, settings=Settings(lateness_ms=0), detectors=DetectorSet([StalledRun()])
    )
    for e in events:
        pipeline.feed_event(json.dumps(e), source="t", location="t", partition="p0")
        if commit_each:
            pipeline.commit()
    pipeline.close()
    return store


def silences(store: Store, session: str) -> list[tuple[str, int]]:
    return [(s.step_id, s.ts) for s in store.steps(session) if s.kind == StepKind.SILENCE]


def test_a_silent_session_gets_silence_steps_at_doubling_bounds(tmp_path) -> None:
    store = replay(f"sqlite:///{tmp_path / 'a.db'}", fleet())
    last = [s for s in store.steps("dead") if s.kind != StepKind.SILENCE][-1].ts
    got = silences(store, "dead")
    # 5, 10, 20, 40 min after the call; the clock ends at 69.5 min, before 80
    assert [ts - last for _, ts in got] == [m * MIN * 1_000_000 for m in (5, 10, 20, 40)]
    assert [i for i, _ in got] == [f"dead/silence/{ts}" for _, ts in got]
    assert silences(store, "busy") == []  # it never went quiet for 5 minutes


def test_the_stall_is_raised_with_the_resume_action(tmp_path) -> None:
    store = replay(f"sqlite:///{tmp_path / 'a.db'}", fleet())
    alerts = [a for a in store.alerts(["dead", "busy"]) if a.detector == "stalled_run"]
    assert [(a.session_id, a.action) for a in alerts] == [("dead", Action.RESUME)]
    call = next(s for s in store.steps("dead") if s.kind == StepKind.TOOL_CALL)
    assert alerts[0].onset_step_id == call.step_id
    assert "`shell make`" in alerts[0].reason and "h1:/w" in alerts[0].reason


def test_batching_changes_nothing_and_a_replay_stores_nothing_twice(tmp_path) -> None:
    once = replay(f"sqlite:///{tmp_path / 'a.db'}", fleet())
    each = replay(f"sqlite:///{tmp_path / 'b.db'}", fleet(), commit_each=True)
    assert silences(once, "dead") == silences(each, "dead")
    ids = [a.alert_id for a in once.alerts(["dead"])]
    assert ids == [a.alert_id for a in each.alerts(["dead"])]
    again = replay(f"sqlite:///{tmp_path / 'a.db'}", fleet())
    assert [s.step_id for s in again.steps("dead")] == [s.step_id for s in once.steps("dead")]


def test_an_ended_session_gets_no_silence(tmp_path) -> None:
    store = replay(f"sqlite:///{tmp_path / 'a.db'}", fleet(dead_ends=True))
    assert silences(store, "dead") == []
    assert store.alerts(["dead"]) == []


def test_another_partition_keeps_its_own_clock(tmp_path) -> None:
    """The dead session's recording ends; a later recording (another partition) is no
    clock for it: a replay of separate files does not age each other's sessions."""
    store = Store.open(f"sqlite:///{tmp_path / 'a.db'}")
    pipeline = Pipeline(store, settings=Settings(lateness_ms=0), detectors=DetectorSet([]))
    dead = [e for e in fleet() if e["session_id"] == "dead"]
    busy = [e for e in fleet() if e["session_id"] == "busy"]
    for partition, events in (("p0", dead), ("p1", busy)):
        for e in events:
            pipeline.feed_event(json.dumps(e), source="t", location=partition, partition=partition)
        pipeline.end_partition(partition)
        pipeline.commit()
    pipeline.close()
    assert silences(store, "dead") == []


def test_a_gap_the_session_ends_itself_gets_no_silence(tmp_path) -> None:
    """Alone in its recording, a session that waits 30 minutes and goes on: its own next
    step is no clock for its silence (nobody could have seen it)."""
    events = numbered(
        [
            event("alone", 0, "session_start", goal="build it"),
            event("alone", MIN, "tool_call", tool="shell", call_id="c1", arguments={}),
            event("alone", 31 * MIN, "tool_result", tool="shell", call_id="c1", ok=True),
            event("alone", 32 * MIN, "session_end", status="success"),
        ]
    )
    store = replay(f"sqlite:///{tmp_path / 'a.db'}", events)
    assert len(store.steps("alone")) == 4
    assert silences(store, "alone") == []


def test_a_silence_a_late_step_contradicts_is_not_kept_when_the_session_settles(
    tmp_path,
) -> None:
    """The dead session's tool call (1 min) read after the whole busy session (far beyond
    the window): the silences placed meanwhile measured from its model call (30 s), which
    in event time is not its last step before them. Its settling re-judgement drops them;
    those it keeps measure from the step before them."""
    events = fleet()
    call = next(e for e in events if e["session_id"] == "dead" and e["type"] == "tool_call")
    late = [e for e in events if e is not call] + [call]
    in_order = replay(f"sqlite:///{tmp_path / 'a.db'}", events)
    store = replay(f"sqlite:///{tmp_path / 'b.db'}", late, commit_each=True)
    steps = store.steps("dead")
    for i, step in enumerate(steps):
        if step.kind == StepKind.SILENCE:
            before = max(s.ts for s in steps[:i] if s.kind != StepKind.SILENCE)
            assert step.detail["silence_ms"] == (step.ts - before) // 1_000_000
    assert set(silences(store, "dead")) <= set(silences(in_order, "dead"))


def test_a_traced_model_call_keeps_the_tool_calls_it_asks_for() -> None:
    """A tool span is exported when it ends: a call in flight shows only as the request in
    its model call's output, which stalled_run reads (its timeout, whether a person answers)."""
    from ingest.semconv.spans import _tool_requests

    parts = [
        {"type": "text", "content": "Approval first."},
        {
            "type": "tool_call",
            "id": "c1",
            "name": "slack__request_approval",
            "arguments": {"channel": "#ops", "text": "Approve?", "timeout_s": 86400},
        },
        {
            "type": "tool_call",
            "id": "c2",
            "name": "shell",
            "arguments": {"command": ["make"], "timeout_ms": 1200000},
        },
    ]
    attrs = {"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])}
    assert _tool_requests(attrs) == [
        {"name": "slack__request_approval", "id": "c1", "timeout_s": 86400.0, "human": True},
        {"name": "shell", "id": "c2", "timeout_s": 1200.0},
    ]
