"""Silence through Kafka's repartition topic, without a broker (issue 29): the ordering
stage relays each input partition's clock to every lane (:mod:`ingest.sources.clock_relay`),
the sequencing stage places silence steps from it, and what it places — every step,
every alert — is what one pipeline reading the same input partitions places, however
the lanes are batched and across a sequencing stage replaced mid-stream (its watch read
back from the store)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from kafka.partitioner.default import DefaultPartitioner

from detectors.registry import DetectorSet
from detectors.stalled_run.detector import StalledRun
from ingest.pipeline.engine import Pipeline
from ingest.sources.clock_relay import ClockRelay, lane_of
from ingest.sources.kafka import options_from, repartition_records
from ingest.sources.repartition import ClockMark, RecordError, decode_record, encode_resolved
from models.records import StepKind
from models.store import Store
from tests.unit.ingest.test_silence import MIN, event, numbered
from trajwatch.settings import Settings

LANES = 3
SETTINGS = Settings(lateness_ms=0)


class _Cluster:
    """The two questions kafka-python's partitioner asks of the cluster's metadata."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes

    def topics(self) -> set[str]:
        return {"steps"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.lanes))

    available_partitions_for_topic = partitions_for_topic


def test_a_lane_is_where_kafkas_default_partitioner_puts_the_key() -> None:
    partitioner = DefaultPartitioner()
    for key in (b"dead-0", b"busy", b"", "s\u00e9ssion".encode()):
        for lanes in (1, 3, 8):
            chosen = partitioner.partition("steps", key, key, b"", b"", _Cluster(lanes))
            assert lane_of(key, lanes) == chosen
    with pytest.raises(ValueError, match="lanes must be >= 1"):
        lane_of(b"x", 0)


def test_a_lane_is_told_the_newest_time_released_elsewhere_since_its_last_record() -> None:
    relay = ClockRelay(2)
    assert relay.route("p", 100, 0) is None  # nothing released before
    assert relay.route("p", 300, 1) == 100
    assert relay.route("p", 200, 1) is None  # lane 1 saw both of these itself
    assert relay.route("q", 50, 0) is None  # another input partition: its own clock
    assert relay.route("p", 250, 0) == 300  # the newest, not the last (released 300, 200)
    relay.passed("p", 400)  # a dead letter: released, sent nowhere
    assert relay.flush() == [
        (0, ClockMark("p", 400)),
        (1, ClockMark("p", 400)),
        (1, ClockMark("q", 50)),
    ]
    assert relay.flush() == []


def test_clocks_alone_are_sent_at_most_once_per_interval() -> None:
    now = [0.0]
    relay = ClockRelay(2, every_s=5.0, clock=lambda: now[0])
    relay.route("p", 10, 0)
    assert relay.owes("p") and not relay.owes("q")
    assert relay.flush() == [(1, ClockMark("p", 10))]  # none sent before: at once
    assert not relay.owes("p")
    now[0] = 1.0
    relay.route("p", 20, 0)
    assert relay.flush() == [] and relay.owes("p")  # the last were sent 1 s ago
    now[0] = 3.0
    relay.route("q", 5, 1)
    assert relay.route("p", 30, 1) == 20  # a draft carries what its lane is owed
    assert relay.flush(force=True) == [(0, ClockMark("p", 30)), (0, ClockMark("q", 5))]
    now[0] = 7.0
    relay.route("p", 40, 0)
    assert relay.flush() == []  # forced at 3 s
    now[0] = 8.0
    assert relay.flush() == [(1, ClockMark("p", 40))]


def test_the_relay_is_on_unless_turned_off() -> None:
    assert options_from({}, {}, {}).silence
    assert not options_from({}, {"TRAJWATCH_KAFKA_SILENCE": "0"}, {}).silence
    assert not options_from({"silence": False}, {}, {}).silence


def test_a_record_carries_its_input_partition_and_clock(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'o.db'}")
    ordering = Pipeline(store, settings=SETTINGS)
    ordering.feed_event(json.dumps(fleet()[0]), source="t", location="t", partition="in/0")
    ordering.end_partition("in/0")
    (item,) = ordering.resolve()
    mark, back = decode_record(encode_resolved(item, clock=7))
    assert mark == ClockMark("in/0", 7) and back is not None
    assert back.draft.partition == "in/0" and back == item
    old = json.loads(encode_resolved(item))
    del old["partition"], old["clock"]  # a record written before the fields existed
    mark, back = decode_record(json.dumps(old).encode())
    assert mark is None and back is not None and back.draft.partition == ""
    for bad in ({"v": 1, "mark": {"partition": "p", "ts": "7"}}, {**old, "clock": True}):
        with pytest.raises(RecordError, match="malformed"):
            decode_record(json.dumps(bad).encode())


SESSIONS = {
    "in/0": ("stalled-0", "busy-0a", "busy-0b"),
    "in/1": ("dead-1", "busy-1a"),
}


def fleet() -> list[dict[str, Any]]:
    """Each input partition: a session that calls a tool and dies (at 1 and 3 min), and
    sessions that work for 70 minutes, one ending at 40."""
    events = []
    for partition, (dead, *busy) in SESSIONS.items():
        at = MIN if partition == "in/0" else 3 * MIN
        events += [
            event(dead, 0, "session_start", goal="build it", host="h1", workspace="/w"),
            event(dead, at, "tool_call", tool="shell", call_id="c1", arguments={"command": "make"}),
        ]
        for n, session in enumerate(busy):
            events.append(event(session, 0, "session_start", goal="other work"))
            last = 80 if n else 140
            for i in range(1, last):
                events.append(event(session, i * 30_000 + n, "model_call", model="m", tokens_in=i))
            if n:
                events.append(event(session, last * 30_000, "session_end", status="success"))
    return numbered(sorted(events, key=lambda e: e["ts"]))


def partition_of(e: dict[str, Any]) -> str:
    return next(p for p, sessions in SESSIONS.items() if e["session_id"] in sessions)


def one_process(url: str, events: list[dict[str, Any]]) -> Store:
    """What ``trajwatch replay`` does: one pipeline, one clock per input partition."""
    store = Store.open(url)
    pipeline = Pipeline(store, settings=SETTINGS, detectors=DetectorSet([StalledRun()]))
    for e in events:
        p = partition_of(e)
        pipeline.feed_event(json.dumps(e), source="t", location=p, partition=p)
    pipeline.close()
    return store


def ordering_stage(
    tmp_path: Path, events: list[dict[str, Any]], seed: int, every_s: float = 0.0
) -> dict[int, list[bytes]]:
    """The ordering stage's output, lane by lane: the input read in random batches, each
    batch's releases sent as repartition records (``repartition_records``), 0 to 1 s
    apart (clocks alone sent at most once per ``every_s``); after the input, the
    batch that sends what is still owed."""
    store = Store.open(f"sqlite:///{tmp_path / f'ordering-{seed}-{every_s}.db'}")
    ordering = Pipeline(store, settings=SETTINGS)
    now = [0.0]
    relay = ClockRelay(LANES, every_s=every_s, clock=lambda: now[0])
    rng = random.Random(seed)
    lanes: dict[int, list[bytes]] = defaultdict(list)

    def send() -> None:
        now[0] += rng.random()
        records, dead = repartition_records("steps", ordering.resolve(), relay)
        assert dead == []
        for record in records:
            lane = record.partition
            assert lane is not None
            if record.key:  # a clock record has none: it goes where it is sent
                assert lane == lane_of(record.key, LANES)
            lanes[lane].append(record.value)

    for e in events:
        p = partition_of(e)
        ordering.feed_event(json.dumps(e), source="t", location=p, partition=p)
        if rng.random() < 0.1:
            send()
    for p in SESSIONS:
        ordering.end_partition(p)
    send()
    now[0] += every_s
    send()
    return lanes


def sequencing_stage(
    url: str, lanes: dict[int, list[bytes]], seed: int, *, restart_at: int | None = None
) -> Store:
    """The lanes read in random batches (lane order shuffled: each lane is independent);
    with ``restart_at``, a new pipeline takes over after that many records of each lane,
    watching what the store says (as a worker does on every assignment)."""
    store = Store.open(url)
    rng = random.Random(seed)
    pipeline = Pipeline(store, settings=SETTINGS, detectors=DetectorSet([StalledRun()]))
    positions = dict.fromkeys(lanes, 0)
    restarted = restart_at is None
    while any(positions[k] < len(lanes[k]) for k in lanes):
        if not restarted and all(positions[k] >= min(restart_at, len(lanes[k])) for k in lanes):
            restarted = True
            pipeline = Pipeline(store, settings=SETTINGS, detectors=DetectorSet([StalledRun()]))
            for k in lanes:
                pipeline.watch(f"steps/{k}", store.silence_watch(f"steps/{k}"))
        k = rng.choice([k for k in lanes if positions[k] < len(lanes[k])])
        stop = len(lanes[k]) if restarted else min(restart_at or 0, len(lanes[k]))
        take = min(rng.randint(1, 40), stop - positions[k]) or 1
        for value in lanes[k][positions[k] : positions[k] + take]:
            mark, item = decode_record(value)
            if mark is not None:
                pipeline.feed_clock(f"steps/{k}", mark.partition, mark.ts)
            if item is not None:
                pipeline.feed_resolved([item], lane=f"steps/{k}")
        positions[k] += take
        pipeline.commit()
    pipeline.commit()  # a worker never closes: what is placed is committed batch by batch
    return store


def everything(store: Store) -> tuple[dict[str, list[tuple[str, int, int, str]]], list[str]]:
    sessions = [s for ss in SESSIONS.values() for s in ss]
    steps = {s: [(x.step_id, x.seq, x.ts, x.kind.value) for x in store.steps(s)] for s in sessions}
    return steps, sorted(a.alert_id for a in store.alerts(sessions))


@pytest.mark.parametrize(("seed", "every_s"), [(1, 0.0), (2, 0.0), (1, 3.0), (2, 10.0)])
def test_the_lanes_place_the_silences_one_process_places(
    tmp_path: Path, seed: int, every_s: float
) -> None:
    events = fleet()
    lanes_of = {s: lane_of(s.encode(), LANES) for ss in SESSIONS.values() for s in ss}
    # the relay is what ticks them: each dead session shares no lane with its partition's
    # long-running session, whose steps are its clock
    assert (
        lanes_of["stalled-0"] != lanes_of["busy-0a"] and lanes_of["dead-1"] != lanes_of["busy-1a"]
    )
    want = everything(one_process(f"sqlite:///{tmp_path / 'one.db'}", events))
    dead = [step for step in want[0]["stalled-0"] if step[3] == StepKind.SILENCE.value]
    assert len(dead) == 4, "5, 10, 20 and 40 minutes of silence: the comparison means something"
    assert len(want[1]) == 2  # both stalls
    lanes = ordering_stage(tmp_path, events, seed, every_s)
    got = everything(sequencing_stage(f"sqlite:///{tmp_path / 'lanes.db'}", lanes, seed))
    assert got == want


def clocks_alone(lanes: dict[int, list[bytes]]) -> int:
    return sum(decode_record(value)[1] is None for values in lanes.values() for value in values)


def test_a_quiet_lane_is_told_a_clock_alone_once_per_interval(tmp_path: Path) -> None:
    """What the interval saves: each record of a clock alone is one more record batch on
    its lane (``docs/decisions/silence-through-kafka.md``)."""
    events = fleet()
    every_batch = clocks_alone(ordering_stage(tmp_path, events, 1))
    held_back = clocks_alone(ordering_stage(tmp_path, events, 1, every_s=10.0))
    assert 0 < held_back < every_batch / 3, (held_back, every_batch)


@pytest.mark.parametrize("restart_at", [30, 120])
def test_a_stage_taking_the_lanes_over_places_the_same(tmp_path: Path, restart_at: int) -> None:
    """A new sequencing pipeline mid-stream knows none of the sessions; the watch it reads
    from the store makes it place the silences of sessions it never sees speak again."""
    events = fleet()
    want = everything(one_process(f"sqlite:///{tmp_path / 'one.db'}", events))
    lanes = ordering_stage(tmp_path, events, 3)
    store = sequencing_stage(f"sqlite:///{tmp_path / 'lanes.db'}", lanes, 3, restart_at=restart_at)
    assert everything(store) == want
    # what is still due is watched, an ended session no more
    watched = {s for k in lanes for s, _, _ in store.silence_watch(f"steps/{k}")}
    assert "stalled-0" in watched and "busy-0b" not in watched


def test_without_the_relayed_clock_the_stalls_are_missed(tmp_path: Path) -> None:
    """The control: the lanes' drafts alone (clock records dropped) place fewer silences,
    so the test above measures the relay."""
    events = fleet()
    want = everything(one_process(f"sqlite:///{tmp_path / 'one.db'}", events))
    lanes = {
        k: [v for v in values if decode_record(v)[1] is not None]
        for k, values in ordering_stage(tmp_path, events, 4).items()
    }
    stripped = {
        k: [encode_resolved(item) for v in values if (item := decode_record(v)[1]) is not None]
        for k, values in lanes.items()
    }
    got = everything(sequencing_stage(f"sqlite:///{tmp_path / 'lanes.db'}", stripped, 4))
    assert got != want
