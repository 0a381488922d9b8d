"""The per-agent behaviour baseline: cold start, a deviating session, determinism across
arrival orders and commit boundaries, the state in the store, bounded size."""

from __future__ import annotations

import json
import pickle
import random
from typing import Any

import pytest

from detectors.agent_baseline.detector import MAX_PENDING, AgentBaseline
from detectors.agent_baseline.history import VERSION, AgentHistory, Record, fit
from detectors.registry import DetectorSet
from detectors.testing import Session
from features.session.behaviour import MAX_PLACES, MAX_TOOLS, Behaviour, BehaviourSummary
from ingest.pipeline.engine import Pipeline
from models.records import Alert, Step
from models.store import Store
from trajwatch.settings import Settings

T0 = 1_767_000_000_000_000_000
SEC = 1_000_000_000


def steps_of(sid: str, *, deviate: bool = False, calls: int = 12, jitter: int = 0) -> list[Step]:
    """A coder's session: runs the tests and reads files in its repository; a deviating
    one fails most calls and fetches from hosts the agent never used."""
    s = Session(sid, agent="coder")
    out = [s.start()]
    for i in range(calls):
        out.append(s.model(tokens_in=2_000 + 100 * ((i + jitter) % 3), tokens_out=200))
        if deviate:
            out += s.tool("curl", {"url": f"https://x{i}.evil.test/p"}, ok=False)
            out.append(s.egress(f"https://x{i}.evil.test/p"))
        elif i % 2:
            out += s.tool("bash", {"command": f"pytest /w/app/tests/t{(i + jitter) % 4}.py"})
        else:
            out += s.tool("read_file", {"path": f"/w/app/src/m{(i + jitter) % 3}.py"})
    return out


def summary_of(steps: list[Step]) -> BehaviourSummary:
    b = Behaviour()
    for step in steps:
        b.observe(step)
    return b.summary()


def history(n: int) -> list[Record]:
    return [
        Record(f"h{i}", i * 100, i * 100 + 50, summary_of(steps_of(f"h{i}", jitter=i)))
        for i in range(n)
    ]


def judge(detector: AgentBaseline, reference: Any, steps: list[Step]) -> list[Alert]:
    alerts = detector.attach(reference)
    for step in steps:
        alerts += detector.update(step)
    return alerts


def reference_of(records: list[Record], d: AgentBaseline) -> Any:
    reference = d.reference(records)
    assert reference is not None
    return reference


def test_cold_start_is_silent() -> None:
    d = AgentBaseline(min_sessions=8)
    bad = steps_of("x", deviate=True)
    # seven prior sessions: fewer than min_sessions, no reference, no judgement at all
    assert d.reference(history(7)) is None
    seven = fit(history(7), window=64, n_trees=10, height=4, seed=1, quantile=0.9)
    assert judge(d, seven, bad) == []  # a reference of too few sessions is not used
    assert judge(d.clone(), None, bad) == []
    # an unattached detector never fires either, however deviant the session
    fresh = d.clone()
    assert [a for step in bad for a in fresh.update(step)] == []


def test_a_deviating_session_is_warned_and_a_usual_one_is_not() -> None:
    d = AgentBaseline()
    reference = reference_of(history(12), d)
    assert judge(d.clone(), reference, steps_of("ok", jitter=5)) == []
    [alert] = judge(d.clone(), reference, steps_of("bad", deviate=True))
    assert (alert.detector, str(alert.severity), str(alert.action)) == (
        "agent_baseline",
        "warn",
        "notify",
    )
    assert alert.onset_seq == d.min_steps - 1  # the first scoring point
    assert "error rate 0.33" in alert.reason and "new hosts" in alert.reason
    assert "history p90" in alert.reason and "(12 sessions)" in alert.reason


def test_points_passed_before_the_reference_arrives_are_judged_when_it_does() -> None:
    d = AgentBaseline()
    reference = reference_of(history(12), d)
    bad = steps_of("bad", deviate=True)
    early = judge(d.clone(), reference, bad)
    late = d.clone()
    for step in bad:
        assert late.update(step) == []
    assert late.attach(reference) == early


def test_the_history_is_a_function_of_the_records_not_their_arrival_order() -> None:
    records = history(20)
    a, b = AgentHistory(keep=16), AgentHistory(keep=16)
    for r in records:
        a.learn(r)
    shuffled = records[:]
    random.Random(3).shuffle(shuffled)
    for r in [*shuffled, shuffled[0]]:  # one learnt twice: replaced, not doubled
        b.learn(r)
    assert a.records == b.records == records[-16:]
    assert a.dumps() == b.dumps()
    d = AgentBaseline()
    bad = steps_of("bad", deviate=True)
    one = judge(d.clone(), reference_of(a.before(10**9), d), bad)
    two = judge(d.clone(), reference_of(b.before(10**9), d), bad)
    assert one == two and len(one) == 1
    # only the sessions ended before a start count
    assert [r.session_id for r in a.before(850)] == [f"h{i}" for i in range(4, 8)]


def events(sid: str, start_s: float, *, deviate: bool = False, jitter: int = 0) -> list[str]:
    """The session-event log of :func:`steps_of`'s session, starting at ``start_s``."""
    out = []
    for seq, step in enumerate(steps_of(sid, deviate=deviate, jitter=jitter)):
        e: dict[str, Any] = {
            "session_id": sid,
            "seq": seq,
            "ts": start_s + seq,
            "agent": "coder",
        }
        if step.kind == "start":
            e.update(type="session_start", goal="keep the tests green")
        elif step.kind == "model_call":
            e.update(
                type="model_call", model="m", tokens_in=step.tokens_in, tokens_out=step.tokens_out
            )
        elif step.kind == "tool_call":
            e.update(
                type="tool_call",
                tool=step.tool,
                call_id=step.call_id,
                arguments=json.loads(step.arguments or "{}"),
            )
        elif step.kind == "tool_result":
            e.update(type="tool_result", call_id=step.call_id, ok=step.status == "ok")
        else:
            continue  # egress comes from spans; the hosts are in the arguments too
        out.append(json.dumps(e))
    last = json.loads(out[-1])
    out.append(
        json.dumps(
            {
                "type": "session_end",
                "session_id": sid,
                "seq": last["seq"] + 1,
                "ts": last["ts"] + 1,
                "status": "success",
                "agent": "coder",
            }
        )
    )
    return out


def fleet() -> list[list[str]]:
    """Ten usual sessions of one agent one after another, then a deviating one."""
    runs = [events(f"s{i:02d}", 1_767_000_000 + 200 * i, jitter=i) for i in range(10)]
    runs.append(events("s10", 1_767_000_000 + 200 * 10, deviate=True))
    return runs


def replay(store: Store, lines: list[str], *, commit_every: int | None) -> list[Alert]:
    detectors = DetectorSet.from_config({"agent_baseline": {"min_sessions": 5}})
    settings = Settings(lateness_ms=3_600_000 if commit_every is None else 2_000)
    pipeline = Pipeline(store, settings=settings, detectors=detectors)
    for i, line in enumerate(lines):
        pipeline.feed_event(line.encode(), source="t", location=f"l{i}", partition="p")
        if commit_every and i % commit_every == 0:
            pipeline.commit()
    pipeline.close()
    return [a for a in store.alerts() if a.detector == "agent_baseline"]


def baseline_row(store: Store) -> tuple[int, list[Record]]:
    """The stored history of agent ``coder``, read back (equal records pickle to bytes
    that may differ in how the pickler shared equal strings)."""
    with store.unit() as unit:
        row = unit.agent_baseline("coder")
    assert row is not None
    return row[0], AgentHistory.loads(row[1], keep=256).records


def test_replay_equals_live_whatever_the_arrival_order_and_commit_boundaries(
    tmp_path: Any,
) -> None:
    ordered = [line for run in fleet() for line in run]
    shuffled = ordered[:]
    random.Random(7).shuffle(shuffled)  # all within the lateness: the same event times
    results = []
    for n, (lines, every) in enumerate([(ordered, None), (shuffled, None), (ordered, 3)]):
        store = Store.open(f"sqlite:///{tmp_path}/r{n}.db")
        try:
            alerts = replay(store, lines, commit_every=every)
            results.append(
                ([(a.alert_id, a.session_id, a.onset_seq) for a in alerts], baseline_row(store))
            )
        finally:
            store.close()
    assert results[0] == results[1] == results[2]
    [(_, session, _)] = results[0][0]
    assert session == "s10"  # the deviating one, judged against the ten before it
    version, records = results[0][1]
    assert version == VERSION
    assert [r.session_id for r in records] == [f"s{i:02d}" for i in range(11)]
    assert records[-1].summary.errors == 12  # the whole session, not what its end saw


def test_the_history_round_trips_through_the_store(store: Store) -> None:
    h = AgentHistory(keep=8)
    for r in history(5):
        h.learn(r)
    with store.unit() as unit:
        unit.put_agent_baseline("coder", VERSION, len(h.records), h.dumps())
    with store.unit() as unit:
        version, state = unit.agent_baseline("coder") or (0, b"")
        unit.put_agent_baseline("coder", VERSION, 5, state)  # replaced, not duplicated
    assert version == VERSION
    assert AgentHistory.loads(state, keep=8).records == h.records
    with store.unit() as unit:
        assert unit.agent_baseline("nobody") is None


def test_detector_state_round_trips_with_its_reference() -> None:
    d = AgentBaseline()
    reference = reference_of(history(12), d)
    bad = steps_of("bad", deviate=True)
    whole = judge(d.clone(), reference, bad)
    first = d.clone()
    first.attach(reference)
    for step in bad[:5]:
        first.update(step)
    restored = d.clone()
    restored.load_state_dict(pickle.loads(pickle.dumps(first.state_dict())))
    assert [a for step in bad[5:] for a in restored.update(step)] == whole


def test_state_and_history_are_bounded() -> None:
    s = Session("big", agent="coder")
    d = AgentBaseline(every=1, min_steps=1)
    for i in range(3_000):  # a new tool, host and directory at every call
        call, result = s.tool(f"t{i}", {"url": f"https://h{i}.test/", "path": f"/d{i}/e/f"})
        d.update(call)
        d.update(result)
    summary = d.summary()
    assert len(summary.tools) <= MAX_TOOLS + 1 and len(summary.hosts) <= MAX_PLACES
    assert len(d.state_dict()["_pending"]) == MAX_PENDING
    small = len(pickle.dumps(d.state_dict()))
    assert small < 40_000, small
    h = AgentHistory(keep=32)
    for i in range(200):
        h.learn(Record(f"s{i}", i, i + 1, summary))
    assert len(h.records) == 32
    assert len(h.dumps()) < 20_000, len(h.dumps())
    reference = reference_of(h.records, d)
    assert len(pickle.dumps(reference)) < 60_000


@pytest.mark.parametrize(
    "bad",
    [
        {"min_sessions": 1},
        {"window": 4},
        {"keep": 10},
        {"threshold": 0.0},
        {"margin": -1.0},
        {"every": 0},
        {"height": 11},
    ],
)
def test_bad_parameters_fail_in_the_constructor(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        AgentBaseline(**bad)
