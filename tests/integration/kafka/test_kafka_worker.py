"""``trajwatch worker`` against real parts: a Tansu broker, PostgreSQL, worker processes.

The input is the recorded runs' real SDK-encoded batches, split and keyed by trace id as
the Collector's Kafka exporter sends them (``partition_traces_by_id``). Every test
compares what the workers stored — every step, every alert — with one process feeding
the same messages, partition by partition, to one :class:`Pipeline` (the single-process
replay of the same input); the crash tests do it across SIGKILLs, a worker joining
mid-stream and the database dropping every connection.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from ingest.pipeline.engine import Pipeline
from ingest.sources.files import read_file
from ingest.sources.kafka import KafkaOptions, decode_message, ensure_topics, split_by_trace
from models.records import Step, StepKind
from models.store import Store
from tests.support.paths import ROOT
from tests.support.tansu import KafkaBroker
from tests.support.wait import wait_until
from tests.unit.ingest.test_silence import MIN, event, numbered
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.service.worker import _sqlite_lock
from trajwatch.settings import Settings

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.slow]

CONFIG = ROOT / "trajwatch.toml"
RECORDED = sorted((ROOT / "fixtures" / "recorded").glob("*.otlp.binpb*"))
PARTITIONS = 4
WORKER_ENV = {
    "TRAJWATCH_KAFKA_PARTITIONS": str(PARTITIONS),
    "TRAJWATCH_KAFKA_IDLE_FLUSH_MS": "500",
    "TRAJWATCH_KAFKA_SESSION_TIMEOUT_MS": "6000",
}
Message = tuple[bytes, bytes]


def recorded_runs(count: int) -> list[list[Message]]:
    """The first ``count`` recorded runs as Collector messages, oldest run first (each
    partition's event time then moves forward, as a live fleet's does)."""
    runs = []
    for path in RECORDED[:count]:
        messages = [
            message
            for record in read_file(path, path.name)
            if record.format == "otlp_proto"
            for message in split_by_trace(record.payload)
        ]
        starts = [
            span.start_time_unix_nano
            for _, value in messages
            for rs in ExportTraceServiceRequest.FromString(value).resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]
        runs.append((min(starts), messages))
    return [messages for _, messages in sorted(runs)]


@pytest.fixture(params=[pytest.param("postgresql", marks=pytest.mark.postgres)])
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def worker_db(db_url: str) -> str:
    """The test schema's URL, its connections named so a test can find and kill them."""
    url = make_url(db_url)
    return url.update_query_dict(
        {"application_name": f"tw-{uuid.uuid4().hex[:12]}"}
    ).render_as_string(hide_password=False)


def broker_options(bootstrap: str) -> KafkaOptions:
    opts = KafkaOptions(
        bootstrap_servers=bootstrap,
        partitions=PARTITIONS,
        idle_flush_ms=500,
        session_timeout_ms=6000,
    )
    ensure_topics(opts)
    return opts


@pytest.fixture
def options(kafka_broker) -> KafkaOptions:  # type: ignore[no-untyped-def]
    return broker_options(kafka_broker.bootstrap)


class Workers:
    """``trajwatch worker`` subprocesses (each with its log ``worker-N.log`` in ``logs``
    and ``env`` added to the environment), stopped at the end of the test."""

    stop_timeout_s = 15.0
    """How long :meth:`stop_all` waits for a worker's SIGTERM drain before SIGKILL."""

    def __init__(
        self, options: KafkaOptions, db: str, logs: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.options = options
        self.db = db
        self.logs = logs
        self.env = dict(env or {})
        self.procs: list[subprocess.Popen[bytes]] = []
        self._files: list[IO[bytes]] = []

    def start(self, *extra: str) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"worker-{len(self.procs)}.log", "wb")  # noqa: SIM115
        self._files.append(log)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trajwatch.cli.main",
                "worker",
                "--bootstrap-servers",
                self.options.bootstrap_servers,
                "--db",
                self.db,
                "--config",
                str(CONFIG),
                *extra,
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **WORKER_ENV, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in self._files:
            log.close()

    def output(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.logs.glob("*.log")))


@pytest.fixture
def workers(options: KafkaOptions, worker_db: str, tmp_path: Path) -> Iterator[Workers]:
    running = Workers(options, worker_db, tmp_path)
    try:
        yield running
    finally:
        running.stop_all()


def produce(options: KafkaOptions, runs: list[list[Message]], topic: str | None = None) -> None:
    producer = KafkaProducer(bootstrap_servers=options.bootstrap_servers, acks="all")
    for messages in runs:
        for key, value in messages:
            producer.send(topic or options.spans_topic, key=key, value=value)
    producer.flush()
    producer.close()


def topic_messages(options: KafkaOptions, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every message of ``topic`` by partition, in offset order, as the broker holds them."""
    consumer = KafkaConsumer(bootstrap_servers=options.bootstrap_servers, enable_auto_commit=False)
    parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    ends = consumer.end_offsets(parts)
    out: dict[int, list[tuple[int, bytes]]] = {tp.partition: [] for tp in parts}
    deadline = time.monotonic() + 20
    quiet_since = None
    # until the end offsets are reached and then nothing more comes for a second: Tansu's
    # latest offset can trail the offsets it has handed out
    while time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=200)
        for tp, messages in batch.items():
            out[tp.partition] += [(m.offset, m.value) for m in messages]
        reached = all(consumer.position(tp) >= ends[tp] for tp in parts)
        if batch or not reached:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 1.0:
            break
    consumer.close()
    return out


def single_process(options: KafkaOptions, path: Path) -> tuple[dict[str, Step], set[str]]:
    """The same messages through one pipeline, each input partition one pipeline partition
    (its clock the one a worker relays: the same silence steps)."""
    settings = Settings(db_url=f"sqlite:///{path}")
    with Store.open(settings.db_url) as store:
        pipeline = Pipeline(store, settings=settings, detectors=detector_set(load_config(CONFIG)))
        feed_topics(options, pipeline)
        pipeline.close()
        return stored(store)


def feed_topics(options: KafkaOptions, pipeline: Pipeline) -> None:
    """Every message of the input topics, as the broker holds them, to ``pipeline``: each
    input partition one pipeline partition, one partition after another."""
    for topic in (options.spans_topic, options.events_topic):
        for partition, messages in topic_messages(options, topic).items():
            for offset, value in messages:
                decoded = decode_message(
                    options,
                    topic,
                    partition,
                    offset,
                    value,
                    max_attribute_bytes=pipeline.settings.max_attribute_bytes,
                )
                pipeline.feed_decoded(decoded, partition=f"{topic}/{partition}", position=offset)


def stored(store: Store) -> tuple[dict[str, Step], set[str]]:
    steps = {
        step.step_id: step for info in store.sessions() for step in store.steps(info.session_id)
    }
    return steps, {alert.alert_id for alert in store.alerts()}


def wait_for(store: Store, steps: int, alerts: int, workers: Workers, timeout: float = 45) -> None:
    """Until the store holds ``steps`` steps and ``alerts`` alerts, and stays so."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if store.count("steps") >= steps and store.count("alerts") >= alerts:
            time.sleep(1.0)  # nothing more may arrive (a double would)
            return
        time.sleep(0.2)
    pytest.fail(
        f"stored {store.count('steps')}/{steps} steps, {store.count('alerts')}/{alerts} alerts;"
        f" workers said:\n{workers.output()[-3000:]}"
    )


def assert_same(store: Store, reference: tuple[dict[str, Step], set[str]]) -> None:
    steps, alerts = stored(store)
    want_steps, want_alerts = reference
    assert alerts == want_alerts, (
        f"lost {len(want_alerts - alerts)} alerts, {len(alerts - want_alerts)} not in the replay"
    )
    assert steps.keys() == want_steps.keys()
    differ = {
        step_id: {
            name: (getattr(step, name), getattr(want_steps[step_id], name))
            for name in Step.__dataclass_fields__
            if getattr(step, name) != getattr(want_steps[step_id], name)
        }
        for step_id, step in steps.items()
        if step != want_steps[step_id]
    }
    assert not differ, f"{len(differ)} steps differ (stored, replayed): {differ}"


def test_one_worker_stores_what_one_process_stores(
    options: KafkaOptions, workers: Workers, worker_db: str, tmp_path: Path
) -> None:
    runs = recorded_runs(24)
    produce(options, runs)
    # a batch cut short: its complete spans are salvaged (duplicates of the run's first
    # batch, so keyed like it: a session's input in one partition), the rest dead-lettered
    bad = ExportTraceServiceRequest.FromString(runs[0][0][1]).SerializeToString()[:-7]
    produce(options, [[(b"", b"\x0a\xff\xff\xff\x0fnot a batch"), (runs[0][0][0], bad)]])
    event = {
        "type": "session_start",
        "session_id": "evt-1",
        "seq": 0,
        "ts": "2026-01-01T00:00:00Z",
        "goal": "fix the failing test",
    }
    produce(
        options,
        [[(b"evt-1", json.dumps(event).encode()), (b"evt-1", b"{broken")]],
        topic=options.events_topic,
    )
    reference = single_process(options, tmp_path / "reference.db")
    assert len(reference[1]) > 0, "the input raises alerts: the comparison means something"
    workers.start()
    with Store.open(worker_db) as store:
        wait_for(store, len(reference[0]), len(reference[1]), workers)
        assert_same(store, reference)
        letters = store.dead_letters()
    where = {letter.location.split(" ")[0] for letter in letters}
    assert any(w.startswith(f"kafka:{options.spans_topic}/") and "@" in w for w in where), where
    assert any(w.startswith(f"kafka:{options.events_topic}/") for w in where), where
    dead_topic = topic_messages(options, options.dead_letter_topic)
    assert sum(len(m) for m in dead_topic.values()) >= 2
    assert store_cursor_states(worker_db) > 0


def store_cursor_states(db: str) -> int:
    engine = create_engine(db)
    try:
        with engine.connect() as connection:
            return int(
                connection.execute(
                    text("select count(*) from sessions where state is not null")
                ).scalar_one()
            )
    finally:
        engine.dispose()


def test_a_worker_killed_mid_stream_and_restarted_loses_and_doubles_nothing(
    options: KafkaOptions, workers: Workers, worker_db: str, tmp_path: Path
) -> None:
    runs = recorded_runs(30)
    first, second, third = runs[:10], runs[10:20], runs[20:]
    victim = workers.start()
    workers.start()
    produce(options, first)
    with Store.open(worker_db) as store:
        wait_until(lambda: store.count("steps") > 0, 30, "a stored step")
        victim.send_signal(signal.SIGKILL)  # mid-stream: no goodbye, no commit
        victim.wait()
        produce(options, second)
        workers.start()
        produce(options, third)
        reference = single_process(options, tmp_path / "reference.db")
        wait_for(store, len(reference[0]), len(reference[1]), workers)
        assert_same(store, reference)


def test_the_broker_killed_mid_stream_and_restarted_loses_and_doubles_nothing(
    durable_kafka_broker: KafkaBroker, worker_db: str, tmp_path: Path
) -> None:
    """The broker (its log in S3) dies by SIGKILL with the workers mid-stream and comes
    back on the same port: the workers reconnect, rejoin the group, resume from the
    offsets stored beside their state, and store exactly what one process does."""
    options = broker_options(durable_kafka_broker.bootstrap)
    runs = recorded_runs(30)
    # Tansu answers an empty fetch only after its max wait and lists the partition's S3
    # prefix for every fetch; at the default 50 ms, four idle consumers send moto (a
    # single-threaded Python S3 server) ~35 LISTs a second and on a loaded CI machine the
    # stream crawls (1,594 of 3,608 steps in 150 s). Kafka's own default, 500 ms, keeps
    # the test about the restart: 84-137 LISTs a run, 44 s under three busy loops.
    running = Workers(
        options, worker_db, tmp_path, env={"TRAJWATCH_KAFKA_FETCH_MAX_WAIT_MS": "500"}
    )
    try:
        running.start()
        running.start()
        produce(options, runs[:15])
        with Store.open(worker_db) as store:
            wait_until(lambda: store.count("steps") > 0, 30, "a stored step")
            durable_kafka_broker.stop()  # SIGKILL: whatever was in flight is cut off
            time.sleep(2)
            durable_kafka_broker.start()
            produce(options, runs[15:])
            reference = single_process(options, tmp_path / "reference.db")
            wait_for(store, len(reference[0]), len(reference[1]), running, timeout=150)
            assert_same(store, reference)
    finally:
        running.stop_all()


def test_a_worker_added_mid_stream_takes_over_sessions_whole(
    options: KafkaOptions, workers: Workers, worker_db: str, tmp_path: Path
) -> None:
    runs = recorded_runs(30)
    workers.start()
    produce(options, runs[:15])
    with Store.open(worker_db) as store:
        wait_until(lambda: store.count("steps") > 0, 30, "a stored step")
        workers.start()
        produce(options, runs[15:])
        reference = single_process(options, tmp_path / "reference.db")
        wait_for(store, len(reference[0]), len(reference[1]), workers)
        assert_same(store, reference)


def test_database_connections_dropped_mid_stream_lose_and_double_nothing(
    options: KafkaOptions, workers: Workers, worker_db: str, tmp_path: Path
) -> None:
    runs = recorded_runs(30)
    name = make_url(worker_db).query["application_name"]
    workers.start()
    admin = create_engine(
        make_url(worker_db).difference_update_query(["application_name"]),
        isolation_level="AUTOCOMMIT",
    )
    killed = 0
    try:
        with Store.open(worker_db.replace(name, f"{name}-test")) as store:
            for chunk in (runs[:10], runs[10:20], runs[20:]):
                before = store.count("steps")
                produce(options, chunk)
                wait_until(lambda before=before: store.count("steps") > before, 30, "more steps")
                with admin.connect() as connection:  # what a database restart looks like
                    killed += len(
                        connection.execute(
                            text(
                                "select pg_terminate_backend(pid) from pg_stat_activity "
                                "where application_name = :name"
                            ),
                            {"name": name},
                        ).all()
                    )
            reference = single_process(options, tmp_path / "reference.db")
            wait_for(store, len(reference[0]), len(reference[1]), workers)
            assert_same(store, reference)
    finally:
        admin.dispose()
    assert killed > 0


def test_a_second_worker_on_one_sqlite_file_is_refused_in_one_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'one.db'}"
    held = _sqlite_lock(db)
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "trajwatch.cli.main",
                "worker",
                "--db",
                db,
                "--bootstrap-servers",
                "127.0.0.1:1",
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        assert held is not None
        held.close()
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "PostgreSQL" in lines[0] and "another trajwatch worker" in lines[0]


def test_the_stages_run_apart_and_one_worker_may_store_into_sqlite(
    options: KafkaOptions, tmp_path: Path
) -> None:
    """``--stage ingest`` and ``--stage detect`` as two processes, the store a SQLite
    file (one detect worker: the sole owner of every session)."""
    db = f"sqlite:///{tmp_path / 'worker.db'}"
    running = Workers(options, db, tmp_path)
    try:
        produce(options, recorded_runs(12))
        running.start("--stage", "ingest")
        running.start("--stage", "detect")
        reference = single_process(options, tmp_path / "reference.db")
        with Store.open(db) as store:
            wait_for(store, len(reference[0]), len(reference[1]), running)
            assert_same(store, reference)
    finally:
        running.stop_all()


def file_replay(paths: list[Path], path: Path) -> tuple[dict[str, Step], set[str]]:
    """``trajwatch replay`` of the recorded files themselves: other batches, one partition
    a file, nothing of Kafka."""
    settings = Settings(db_url=f"sqlite:///{path}", silence_first_ms=0)
    replay(paths, settings=settings, detectors=detector_set(load_config(CONFIG)))
    with Store.open(settings.db_url) as store:
        return stored(store)


def test_sessions_spread_over_partitions_with_a_worker_killed_settle_to_a_file_replay(
    options: KafkaOptions, workers: Workers, worker_db: str, tmp_path: Path
) -> None:
    """Issue 27: each export batch keyed at random, so a session's spans lie in every
    partition and are read at each partition's pace, one of two workers SIGKILLed
    mid-stream: once the sessions settle, the stored steps and standing alerts are those
    of a replay of the recorded files (not of the same messages)."""
    count = 12
    rng = random.Random(27)
    runs = [[(rng.randbytes(8), value) for _, value in run] for run in recorded_runs(count)]
    # no silence steps: a session spread over every partition is aged by each partition's
    # clock in turn, a file's session by its file's alone (docs/operations/worker.md)
    workers.env["TRAJWATCH_SILENCE_FIRST_MS"] = "0"
    victim = workers.start()
    workers.start()
    produce(options, runs[: count // 2])
    reference = file_replay(RECORDED[:count], tmp_path / "replay.db")
    assert len(reference[1]) > 0, "the input raises alerts: the comparison means something"
    with Store.open(worker_db) as store:
        wait_until(lambda: store.count("steps") > 0, 30, "a stored step")
        victim.send_signal(signal.SIGKILL)  # mid-stream: no goodbye, no commit
        victim.wait()
        produce(options, runs[count // 2 :])
        workers.start()
        deadline = time.monotonic() + 90
        while stored(store) != reference and time.monotonic() < deadline:
            time.sleep(0.5)
        assert_same(store, reference)


STALLED = ("stalled-0", "stalled-1", "stalled-4", "stalled-6")
"""One a repartition partition (of 4): some are handed to another worker mid-stream."""

BUSY_PARTITION, QUIET_PARTITION = 0, 2
"""The events topic's partitions the stall fleet is written to: two, so that with two
workers (the range assignor gives each two of the four) each orders one of them."""


def stall_fleet() -> dict[int, list[dict[str, Any]]]:
    """Session events by input partition (of the events topic). The busy partition: four
    sessions call a tool at 1 min and are never heard of again, ``busy-0`` works on for 45
    minutes. The quiet one: ``late-1`` stalls the same way, but its partition's only other
    session stops at 10 minutes: its clock (not the busy partition's) measures its silence."""
    by_partition: dict[int, list[dict[str, Any]]] = {}
    for partition, stalled, busy, minutes in (
        (BUSY_PARTITION, STALLED, "busy-0", 45),
        (QUIET_PARTITION, ("late-1",), "busy-1", 10),
    ):
        events = []
        for session in stalled:
            events += [
                event(session, 0, "session_start", goal="build it", host="h1", workspace="/w"),
                event(session, 30_000, "model_call", model="m", finish_reason="tool_calls"),
                event(
                    session, MIN, "tool_call", tool="shell", call_id="c1", arguments={"cmd": "make"}
                ),
            ]
        events.append(event(busy, 0, "session_start", goal="other work"))
        events += [
            event(busy, i * 30_000 + 7, "model_call", model="m", tokens_in=10 + i)
            for i in range(1, 2 * minutes + 1)
        ]
        by_partition[partition] = numbered(sorted(events, key=lambda e: e["ts"]))
    return by_partition


def stall_replay(
    fleet: dict[int, list[dict[str, Any]]], tmp_path: Path
) -> tuple[tuple[dict[str, Step], set[str]], dict[str, str]]:
    """``trajwatch replay`` of the fleet, one file per input partition: what it stores, and
    the stalled_run alert id of each session."""
    files = []
    for partition, events in fleet.items():
        path = tmp_path / f"events-{partition}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
        files.append(path)
    settings = Settings(db_url=f"sqlite:///{tmp_path / 'replay.db'}")
    replay(files, settings=settings, detectors=detector_set(load_config(CONFIG)))
    with Store.open(settings.db_url) as replayed:
        stalls = {
            a.session_id: a.alert_id for a in replayed.alerts() if a.detector == "stalled_run"
        }
        reference = stored(replayed)
    assert sorted(stalls) == sorted(STALLED), "the busy partition's clock passes the bound"
    silent = [s for s in reference[0].values() if s.kind == StepKind.SILENCE]
    assert any(s.session_id == "late-1" for s in silent)  # 5 minutes by its own partition
    return reference, stalls


def send_events(
    options: KafkaOptions,
    fleet: dict[int, list[dict[str, Any]]],
    since_ms: int = 0,
    until_ms: int | None = None,
) -> None:
    """The fleet's events with event time in ``[since_ms, until_ms)``, each to its
    partition of the events topic, keyed by session."""
    producer = KafkaProducer(bootstrap_servers=options.bootstrap_servers, acks="all")
    for partition, events in fleet.items():
        for e in events:
            ms = _ms(e["ts"])
            if ms >= since_ms and (until_ms is None or ms < until_ms):
                value = json.dumps(e).encode()
                key = e["session_id"].encode()
                producer.send(options.events_topic, key=key, value=value, partition=partition)
    producer.flush()
    producer.close()


def first_silences_stored(store: Store) -> bool:
    return all(any(s.kind == StepKind.SILENCE for s in store.steps(session)) for session in STALLED)


def stall_alerts(store: Store) -> dict[str, str]:
    return {a.session_id: a.alert_id for a in store.alerts() if a.detector == "stalled_run"}


def test_a_stalled_session_raises_stalled_run_as_a_replay_does_across_a_handover(
    options: KafkaOptions, workers: Workers, worker_db: str, tmp_path: Path
) -> None:
    """Issue 29 through Kafka: sessions stall mid-call while another of their input
    partition goes on; the lanes of some of them move to a second worker after their last
    step was stored, before their silence reaches the stall bound. The workers store
    exactly what ``trajwatch replay`` of the same events (one file per input partition)
    stores: every silence step, every alert, the stalls' ids among them."""
    fleet = stall_fleet()
    reference, stalls = stall_replay(fleet, tmp_path)
    send_events(options, fleet, until_ms=10 * MIN)  # the calls, their 5-minute silences
    first = workers.start()
    with Store.open(worker_db) as store:
        wait_until(lambda: first_silences_stored(store), 40, "the stalls' first silences")
        workers.start()  # a rebalance: two of the four lanes move
        wait_until(
            lambda: "sequencing stage: now owns 2 partitions" in workers.output(),
            40,
            "the second worker's share of the lanes",
        )
        send_events(options, fleet, since_ms=10 * MIN)
        wait_for(store, len(reference[0]), len(reference[1]), workers)
        assert_same(store, reference)
        assert stall_alerts(store) == stalls
    assert first.poll() is None


def test_a_stall_is_raised_as_a_replay_does_across_a_worker_killed_mid_stream(
    options: KafkaOptions, workers: Workers, worker_db: str, tmp_path: Path
) -> None:
    """Two workers, each ordering one of the fleet's input partitions and judging two of
    the lanes; one is SIGKILLed as the rest of the events arrive, and a third takes its
    share: its ingest stage re-reads and relays again, its detect stage reads the watch
    the dead one stored. Still exactly replay's steps and alerts."""
    fleet = stall_fleet()
    reference, stalls = stall_replay(fleet, tmp_path)
    victim = workers.start()
    workers.start()
    wait_until(
        lambda: workers.output().count("sequencing stage: now owns 2 partitions") >= 2,
        40,
        "both workers' share of the lanes",
    )
    send_events(options, fleet, until_ms=10 * MIN)
    with Store.open(worker_db) as store:
        wait_until(lambda: first_silences_stored(store), 40, "the stalls' first silences")
        send_events(options, fleet, since_ms=10 * MIN)
        victim.send_signal(signal.SIGKILL)  # mid-stream: no goodbye, no commit
        victim.wait()
        workers.start()
        wait_for(store, len(reference[0]), len(reference[1]), workers)
        assert_same(store, reference)
        assert stall_alerts(store) == stalls


def _ms(ts: str) -> int:
    """Milliseconds since midnight of an ``event`` timestamp (``2026-01-01T00:10:00.000Z``)."""
    clock = ts.split("T")[1].rstrip("Z")
    hours, minutes, seconds = clock.split(":")
    return (int(hours) * 60 + int(minutes)) * MIN + round(float(seconds) * 1000)
