"""Scale-out through Kafka: ``trajwatch worker`` processes on a local Tansu broker.

The input is every recorded run's real SDK-encoded batches, split and keyed by trace id
as the Collector's Kafka exporter sends them, oldest run first. The workers run under
:mod:`benchmarks.kafka_probe` (the worker command unchanged, with timers around its
stages). Rows printed:

- spans/s through Kafka with 1 and 2 workers (same input, same machine): from the first
  message produced to the last step stored, the workers already in their groups;
- where the CPU went in those two runs, per 1,000 spans: each worker's ingest and detect
  stage threads and the rest of the process (the client's network threads), the Tansu
  broker, the workers' PostgreSQL backends (found by ``application_name``) and this
  process (the producer and the store polling), all read from ``/proc``; and from them
  the most two workers can gain on this machine's CPUs when nothing else runs:
  ``2w / (w + b)`` — one worker is one process (one interpreter lock) and can use one
  CPU at most, two can use every CPU, which they share with the broker and the database
  (``w``: the workers' CPU seconds a span, ``b``: the broker's and the database's);
- produce-to-alert latency p50/p99 at half the 1-worker rate: from producing the message
  that holds an alert's raising span to the alert being visible in the store (the store
  is polled every 10 ms), and its parts, per alert and over every step: the ingest
  poll, the hold for ordering (the ``lateness_ms`` watermark, or ``idle_flush_ms`` of
  silence — configured waits), the ingest stage's work on that poll and the wave's
  acknowledgement, the sequencing stage's poll, its store transaction, the polling here;
- consumer lag under a burst: the whole input produced at once to a running worker, the
  largest lag of the input and repartition groups sampled every 100 ms, and the time to
  drain it;
- bytes of persisted state per session (``sessions.state``: detectors, features,
  compaction, turns);
- the machine and its load average.

    .venv/bin/python benchmarks/bench_kafka.py           # ~4 minutes
    .venv/bin/python benchmarks/bench_kafka.py --only latency --spans-per-s 250
    .venv/bin/python benchmarks/bench_kafka.py --only latency --spans-per-s 250 --idle-flush-ms 100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from ingest.sources.files import read_file  # noqa: E402
from ingest.sources.kafka import KafkaOptions, ensure_topics, split_by_trace  # noqa: E402
from models.store import Store  # noqa: E402
from tests.support.tansu import KafkaBroker  # noqa: E402

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PARTITIONS = 8
"""The worker's default. With 4, this input's 62 sessions put 4,658 of its 7,666 steps
on one worker's two partitions (the range assignor gives one worker partitions 0-1,
the other 2-3): two workers could not pass 1.65x however many CPUs they had."""
ENV = {
    "TRAJWATCH_KAFKA_PARTITIONS": str(PARTITIONS),
    "TRAJWATCH_KAFKA_IDLE_FLUSH_MS": "500",
    "TRAJWATCH_KAFKA_SESSION_TIMEOUT_MS": "6000",
}
APP = "twbench"
"""The PostgreSQL ``application_name`` prefix of this benchmark's connections."""
PROBE = ROOT / "benchmarks" / "kafka_probe.py"
TICK = os.sysconf("SC_CLK_TCK")
Message = tuple[bytes, bytes]


def runs() -> list[list[Message]]:
    out = []
    for path in sorted((ROOT / "fixtures" / "recorded").glob("*.otlp.binpb*")):
        messages = [
            m
            for r in read_file(path, path.name)
            if r.format == "otlp_proto"
            for m in split_by_trace(r.payload)
        ]
        start = min(_spans(v)[0][1] for _, v in messages)
        out.append((start, messages))
    return [m for _, m in sorted(out)]


def _spans(value: bytes) -> list[tuple[str, int]]:
    """(``trace:span`` as steps' source_ref spells it, start time) of a message's spans."""
    request = ExportTraceServiceRequest.FromString(value)
    return [
        (f"{s.trace_id.hex()}:{s.span_id.hex()}", s.start_time_unix_nano)
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    ]


# -- CPU seconds from /proc ----------------------------------------------------------


def _cpu_of(stat_path: str) -> float | None:
    """utime + stime of a process or thread, in seconds; None when it is gone."""
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def _threads(pid: int) -> dict[str, float]:
    """CPU seconds of a process's threads by ``comm`` (summed over equal names)."""
    out: dict[str, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        cpu = _cpu_of(f"/proc/{pid}/task/{tid}/stat")
        if cpu is not None:
            out[name] = out.get(name, 0.0) + cpu
    return out


@dataclass
class Cpu:
    """CPU seconds by part at one moment (a counter: subtract two)."""

    parts: dict[str, float] = field(default_factory=dict)
    backends: dict[int, float] = field(default_factory=dict)

    def __sub__(self, other: Cpu) -> dict[str, float]:
        out = {k: v - other.parts.get(k, 0.0) for k, v in self.parts.items()}
        # a backend not seen at the start was opened inside the window: from 0
        out["postgres"] = sum(v - other.backends.get(pid, 0.0) for pid, v in self.backends.items())
        return out


# -- a run ------------------------------------------------------------------------------


class Run:
    """A fresh broker, a fresh PostgreSQL schema, and workers on them."""

    def __init__(self, tmp: Path) -> None:
        self.broker = KafkaBroker(str(tmp / f"tansu-{uuid.uuid4().hex[:6]}.log"))
        self.broker.start()
        self.options = KafkaOptions(
            bootstrap_servers=self.broker.bootstrap, partitions=PARTITIONS, session_timeout_ms=6000
        )
        ensure_topics(self.options)
        self.schema = f"bench_{uuid.uuid4().hex[:12]}"
        self.admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        with self.admin.connect() as c:
            c.execute(text(f"CREATE SCHEMA {self.schema}"))
        Store.open(self._db("migrate")).close()  # migrated before the workers race to do it
        self.engine = create_engine(self._db("bench"))
        self.procs: list[subprocess.Popen[bytes]] = []
        self.probes: list[Path] = []
        self.tmp = tmp
        self._backends: list[Any] = []
        self._looked_up = 0.0

    def _db(self, name: str) -> str:
        query = {"options": f"-csearch_path={self.schema}", "application_name": f"{APP}-{name}"}
        return make_url(PG_URL).update_query_dict(query).render_as_string(hide_password=False)

    def start_worker(self) -> None:
        n = len(self.procs)
        log = open(self.tmp / f"{self.schema}-worker-{n}.log", "wb")  # noqa: SIM115
        probe = self.tmp / f"{self.schema}-worker-{n}.jsonl"
        self.probes.append(probe)
        self.procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(PROBE),
                    str(probe),
                    "worker",
                    "--bootstrap-servers",
                    self.broker.bootstrap,
                    "--db",
                    self._db(f"worker{n}"),
                ],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), **ENV},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )

    def wait_assigned(self, timeout_s: float = 90.0) -> None:
        """Until every worker owns a share of both stages' partitions (each stage logs
        what it owns after every rebalance), then 2 s more."""
        want = {"ordering": 2 * PARTITIONS, "sequencing": PARTITIONS}  # spans + events
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            owned: dict[str, list[int]] = {stage: [] for stage in want}
            for n in range(len(self.procs)):
                text_ = (self.tmp / f"{self.schema}-worker-{n}.log").read_text(errors="replace")
                for stage in want:
                    found = re.findall(rf"{stage} stage: now owns (\d+)", text_)
                    owned[stage].append(int(found[-1]) if found else 0)
            if all(sum(v) == want[k] and min(v) > 0 for k, v in owned.items()):
                time.sleep(2)
                return
            time.sleep(0.5)
        raise RuntimeError(f"the workers did not share the partitions in {timeout_s:.0f} s")

    def scalar(self, sql: str) -> int:
        with self.engine.connect() as c:
            return int(c.execute(text(sql)).scalar_one() or 0)

    def cpu(self) -> Cpu:
        """Every part's CPU seconds now: each worker's stage threads and the rest of it
        (``w0 ingest``, ``w0 detect``, ``w0 other``, ...), the broker, the workers'
        database backends, and this process (the producer and the polling, with its
        own backend). The backends are looked up at most once a second."""
        parts: dict[str, float] = {}
        for n, proc in enumerate(self.procs):
            threads = _threads(proc.pid)
            parts[f"w{n} ingest"] = threads.pop("tw-ingest", 0.0)
            parts[f"w{n} detect"] = threads.pop("tw-detect", 0.0)
            parts[f"w{n} other"] = sum(threads.values())
        assert self.broker._process is not None
        parts["broker"] = _cpu_of(f"/proc/{self.broker._process.pid}/stat") or 0.0
        if time.monotonic() - self._looked_up > 1:
            with self.admin.connect() as c:
                self._backends = list(
                    c.execute(
                        text(
                            "select pid, application_name from pg_stat_activity "
                            "where application_name like :a"
                        ),
                        {"a": f"{APP}-%"},
                    ).all()
                )
            self._looked_up = time.monotonic()
        backends: dict[int, float] = {}
        parts["bench"] = time.process_time()
        for pid, name in self._backends:
            cpu = _cpu_of(f"/proc/{pid}/stat")
            if cpu is None:
                continue
            if name.startswith(f"{APP}-worker"):
                backends[pid] = cpu
            elif name == f"{APP}-bench":
                parts["bench"] += cpu
        return Cpu(parts, backends)

    def close(self) -> None:
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        self.engine.dispose()
        with self.admin.connect() as c:
            c.execute(text(f"DROP SCHEMA {self.schema} CASCADE"))
        self.admin.dispose()
        self.broker.stop()

    def events(self) -> list[dict[str, Any]]:
        """The probes' notes (after :meth:`close`: each worker writes them as it exits)."""
        out = []
        for path in self.probes:
            if path.exists():
                out += [json.loads(line) for line in path.read_text().splitlines()]
        return out


@dataclass(frozen=True)
class Sent:
    at: float
    partition: int
    offset: int


def produce(
    options: KafkaOptions, messages: list[Message], rate: float | None = None
) -> dict[str, Sent]:
    """Send ``messages`` (at ``rate`` messages/s when given); returns, for each span, when
    the message holding it was sent and where it was written."""
    producer = KafkaProducer(bootstrap_servers=options.bootstrap_servers, acks="all", linger_ms=2)
    pending = []
    start = time.monotonic()
    for i, (key, value) in enumerate(messages):
        if rate:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        now = time.time()
        future = producer.send(options.spans_topic, key=key, value=value)
        pending.append((now, value, future))
        if rate:
            producer.flush()
    producer.flush()
    sent = {}
    for now, value, future in pending:
        meta = future.get(timeout=10)
        for ref, _ in _spans(value):
            sent[ref] = Sent(now, meta.partition, meta.offset)
    producer.close()
    return sent


@dataclass
class Throughput:
    workers: int
    spans_per_s: float
    steps: int
    spans: int
    wall_s: float
    cpu: dict[str, float]


def throughput(tmp: Path, messages: list[Message], workers: int) -> Throughput:
    """Spans/s from the first produce to the last step stored, the workers already in
    their groups (a rebalance mid-run would be measured too), and each part's CPU
    seconds over the same window."""
    run = Run(tmp)
    try:
        for _ in range(workers):
            run.start_worker()
        run.wait_assigned()
        before = run.cpu()
        start = time.monotonic()
        produce(run.options, messages)
        last, after = start, before
        count = 0
        deadline = start + 180
        while time.monotonic() < deadline:
            now_count = run.scalar("select count(*) from steps")
            now = time.monotonic()
            if now_count != count:
                count, last, after = now_count, now, run.cpu()
            elif count and now - last > 10:
                break  # stable for 10 s: done (a loaded machine can stall a stage for seconds)
            time.sleep(0.05)
        spans = sum(len(_spans(v)) for _, v in messages)
        assert count, "nothing stored"
        wall = max(last - start, 1e-6)
        return Throughput(workers, spans / wall, count, spans, wall, after - before)
    finally:
        run.close()


# -- latency and its parts -------------------------------------------------------------


@dataclass
class Timeline:
    """One step's way from its message's produce to its transaction (seconds)."""

    sent: float
    read: float  # the ingest stage's consumer poll returned its message
    released: float  # the ingest poll that released it returned (== read: not held)
    flushed: bool  # released by the idle flush, not by the watermark
    handed: float  # its wave handed to the producer
    acked: float  # its wave acknowledged
    detect_read: float  # the sequencing stage's consumer poll returned it
    store_start: float
    stored: float  # its store transaction committed

    def parts(self) -> dict[str, float]:
        return {
            "ingest poll": self.read - self.sent,
            "held for ordering": self.released - self.read,
            "ingest work": self.handed - self.released,
            "wave ack": self.acked - self.handed,
            "detect poll": self.detect_read - self.acked,
            "detect decode": self.store_start - self.detect_read,
            "store transaction": self.stored - self.store_start,
        }


def _containing(
    reads: list[dict[str, Any]], topic: str, partition: int, offset: int
) -> dict[str, Any] | None:
    for event in reads:
        for t, p, first, last in event["read"]:
            if t == topic and p == partition and first <= offset <= last:
                return event
    return None


def timelines(
    events: list[dict[str, Any]],
    steps: dict[str, tuple[int, int]],
    sent: dict[str, Sent],
    options: KafkaOptions,
) -> dict[str, Timeline]:
    """Each step's :class:`Timeline` by ``source_ref``, from the probes' notes, where its
    repartition record is (``steps``) and where its message was written (``sent``)."""
    events = sorted(events, key=lambda e: e.get("at", e.get("start", 0.0)))
    ingest_reads = [e for e in events if e["kind"] == "read" and e["stage"] == "ingest"]
    detect_reads = [e for e in events if e["kind"] == "read" and e["stage"] == "detect"]
    flushes = [e for e in events if e["kind"] == "flush"]
    waves: dict[tuple[int, int], dict[str, Any]] = {}
    for event in events:
        if event["kind"] == "wave":
            for topic, partition, offset in event["records"]:
                if topic == options.steps_topic:
                    waves.setdefault((partition, offset), event)
    stores = {e["polled"]: e for e in events if e["kind"] == "store" and e["polled"]}
    out = {}
    for ref, (partition, offset) in steps.items():
        message = sent.get(ref)
        wave = waves.get((partition, offset))
        if message is None or wave is None or wave["polled"] is None:
            continue
        read = _containing(ingest_reads, options.spans_topic, message.partition, message.offset)
        detect = _containing(detect_reads, options.steps_topic, partition, offset)
        store = stores.get(detect["at"]) if detect else None
        if read is None or detect is None or store is None:
            continue
        name = f"{options.spans_topic}/{message.partition}"
        flushed = any(
            f["partition"] == name and wave["polled"] <= f["at"] <= wave["start"] for f in flushes
        )
        out[ref] = Timeline(
            sent=message.at,
            read=read["at"],
            released=max(read["at"], wave["polled"]),
            flushed=flushed,
            handed=wave["start"],
            acked=wave["end"],
            detect_read=detect["at"],
            store_start=store["start"],
            stored=store["end"],
        )
    return out


def read_steps(options: KafkaOptions) -> dict[str, tuple[int, int]]:
    """Where each step's repartition record is, by ``source_ref`` (its first copy)."""
    probe = KafkaConsumer(bootstrap_servers=options.bootstrap_servers, enable_auto_commit=False)
    tps = [TopicPartition(options.steps_topic, p) for p in range(PARTITIONS)]
    probe.assign(tps)
    probe.seek_to_beginning(*tps)
    ends = probe.end_offsets(tps)
    out: dict[str, tuple[int, int]] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(probe.position(tp) < ends[tp] for tp in tps):
        for tp, records in probe.poll(timeout_ms=500).items():
            for record in records:
                ref = json.loads(record.value)["step"]["source_ref"]
                out.setdefault(ref, (tp.partition, record.offset))
    probe.close()
    return out


@dataclass
class Latency:
    rate: float
    alerts: list[float]  # produce -> seen in the store
    alert_parts: list[dict[str, float]]  # the parts of each alert's, "observe" included
    step_parts: list[dict[str, float]]
    flushed: int  # alerts whose raising step the idle flush released
    after_store: list[float]  # each detect poll's time from its transaction to its end
    busy: dict[str, float]  # per stage: CPU seconds over wall seconds of its non-empty polls


def latency(tmp: Path, messages: list[Message], rate: float) -> Latency:
    run = Run(tmp)
    try:
        run.start_worker()
        run.wait_assigned()
        seen: dict[str, tuple[float, str]] = {}
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                with run.engine.connect() as c:
                    rows = c.execute(
                        text(
                            "select a.alert_id, s.source_ref from alerts a join steps s "
                            "on s.session_id = a.session_id and s.seq = a.raised_seq"
                        )
                    ).all()
                now = time.time()
                for alert_id, ref in rows:
                    seen.setdefault(alert_id, (now, ref))
                time.sleep(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        sent = produce(run.options, messages, rate=rate)
        time.sleep(3)
        stop.set()
        watcher.join()
        steps = read_steps(run.options)
    finally:
        run.close()
    events = run.events()
    lines = timelines(events, steps, sent, run.options)
    polls = [e for e in events if e["kind"] == "poll" and e["stage"] == "detect"]
    after_store = [
        poll["end"] - store["end"]
        for store in events
        if store["kind"] == "store"
        for poll in polls
        if poll["start"] <= store["start"] <= poll["end"]
    ]
    alerts, parts = [], []
    flushed = 0
    for when, ref in seen.values():
        if ref not in sent:
            continue
        alerts.append(when - sent[ref].at)
        line = lines.get(ref)
        if line is not None:
            parts.append({**line.parts(), "observe": when - line.stored})
            flushed += line.flushed
    steps_parts = [t.parts() for t in lines.values()]
    busy = {}
    for stage in ("ingest", "detect"):
        worked = [e for e in events if e["kind"] == "poll" and e["stage"] == stage and e["count"]]
        wall = sum(e["end"] - e["start"] for e in worked)
        busy[stage] = sum(e["cpu"] for e in worked) / wall if wall else float("nan")
    return Latency(rate, alerts, parts, steps_parts, flushed, after_store, busy)


def burst(tmp: Path, messages: list[Message]) -> tuple[int, float, int]:
    run = Run(tmp)
    try:
        run.start_worker()
        run.wait_assigned()
        admin = KafkaAdminClient(bootstrap_servers=run.options.bootstrap_servers)
        probe = KafkaConsumer(bootstrap_servers=run.options.bootstrap_servers)
        parts = {
            group: [TopicPartition(topic, p) for p in range(PARTITIONS)]
            for group, topic in (
                (run.options.group_id, run.options.spans_topic),
                (f"{run.options.group_id}.sessions", run.options.steps_topic),
            )
        }
        start = time.monotonic()
        produce(run.options, messages)
        peak = 0
        drained = None
        while time.monotonic() - start < 60:
            lag = 0
            for group, tps in parts.items():
                ends = probe.end_offsets(tps)
                committed = admin.list_group_offsets({group: tps}).get(group, {})
                # clamped: Tansu's latest offset can trail the offsets it hands out
                lag += sum(
                    max(0, ends[tp] - max(0, committed[tp].offset if tp in committed else 0))
                    for tp in tps
                )
            peak = max(peak, lag)
            if lag == 0 and time.monotonic() - start > 1:
                drained = time.monotonic() - start
                break
            time.sleep(0.1)
        probe.close()
        admin.close()
        state = run.scalar(
            "select coalesce(avg(length(state)), 0) from sessions where state is not null"
        )
        return peak, drained or float("nan"), state
    finally:
        run.close()


# -- the report ------------------------------------------------------------------------


def _q(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


STAGES = ("ingest", "detect", "other")


def _worker_cpu(t: Throughput, n: int) -> float:
    return sum(t.cpu.get(f"w{n} {stage}", 0.0) for stage in STAGES)


def cpu_rows(runs: list[Throughput]) -> list[str]:
    """CPU seconds per 1,000 spans of each part in each run, and what they allow."""
    per = lambda t, v: v * 1000 / t.spans  # noqa: E731
    out = [
        f"  {'CPU s per 1,000 spans':<30}"
        + "".join(f"{f'{n + 1} worker(s)':>14}" for n in range(len(runs)))
    ]
    for stage in STAGES:
        cells = [
            per(t, sum(t.cpu.get(f"w{n} {stage}", 0.0) for n in range(t.workers))) for t in runs
        ]
        out.append(f"  {'workers, ' + stage:<30}" + "".join(f"{c:>14.3f}" for c in cells))
    for name in ("broker", "postgres", "bench"):
        label = {
            "broker": "Tansu broker",
            "postgres": "PostgreSQL backends",
            "bench": "bench (producer, polling)",
        }[name]
        out.append(
            f"  {label:<30}" + "".join(f"{per(t, t.cpu.get(name, 0.0)):>14.3f}" for t in runs)
        )
    for t in runs:
        w = sum(_worker_cpu(t, n) for n in range(t.workers)) / t.spans
        b = (t.cpu.get("broker", 0.0) + t.cpu.get("postgres", 0.0)) / t.spans
        p = t.cpu.get("bench", 0.0) / t.spans
        each = ", ".join(f"{_worker_cpu(t, n) / t.wall_s:.2f}" for n in range(t.workers))
        out.append(
            f"  {t.workers} worker(s): w {w * 1000:.3f}, b {b * 1000:.3f} CPU s/1,000 spans -> "
            f"2 workers on 2 CPUs reach at most 2w/(w+b) = {2 * w / (w + b):.2f}x "
            f"({2 * w / (w + b + p):.2f}x sharing them with this process too); "
            f"CPUs busy: worker(s) {each}, all parts {sum(t.cpu.values()) / t.wall_s:.2f}"
        )
        if t.workers > 1 and runs[0].workers == 1:
            one = runs[0]
            w1 = sum(_worker_cpu(one, n) for n in range(one.workers)) / one.spans
            out.append(
                f"  across the runs: one worker at most 1/w1 spans/s (one CPU), two at most "
                f"2/(w2+b2) -> 2w1/(w2+b2) = {2 * w1 / (w + b):.2f}x "
                f"({2 * w1 / (w + b + p):.2f}x with this process)"
            )
        if t.workers > 1:
            shares = [_worker_cpu(t, n) for n in range(t.workers)]
            out.append(
                f"  {t.workers} workers' partitions: the busiest did "
                f"{max(shares) / sum(shares):.0%} of the workers' CPU -> at most "
                f"{sum(shares) / max(shares):.2f}x on any number of CPUs"
            )
    return out


def latency_rows(lat: Latency) -> list[str]:
    held = [p["held for ordering"] for p in lat.alert_parts]
    released = [sum(v for k, v in p.items() if k != "held for ordering") for p in lat.alert_parts]
    out = [
        f"{'produce-to-alert p50 / p99 ms (half load)':<44} {_q(lat.alerts, 0.5):>8.1f} / "
        f"{_q(lat.alerts, 0.99):.1f}   ({len(lat.alerts)} alerts at {lat.rate:.1f} messages/s)",
        f"{'  held for ordering, p50 / p99 ms':<44} {_q(held, 0.5):>8.1f} / {_q(held, 0.99):.1f}"
        f"   (configured: the lateness_ms watermark, 10,000 ms of event time, or "
        f"idle_flush_ms {ENV['TRAJWATCH_KAFKA_IDLE_FLUSH_MS']} of silence; "
        f"{lat.flushed} of {len(lat.alert_parts)} by the idle flush)",
        f"{'  from release to alert, p50 / p99 ms':<44} {_q(released, 0.5):>8.1f} / "
        f"{_q(released, 0.99):.1f}   (what serve's span-to-alert counts)",
        f"  {'part (ms)':<24}{'alerts p50':>11}{'p99':>9}{'steps p50':>11}{'p99':>9}",
    ]
    tail = (
        f"  (after each store transaction the sequencing stage spent p50 "
        f"{_q(lat.after_store, 0.5):.1f} / p90 {_q(lat.after_store, 0.9):.1f} ms before "
        "polling again: its Kafka commit)\n"
        f"  (while working, the stage threads ran on {lat.busy['ingest']:.2f} (ingest) and "
        f"{lat.busy['detect']:.2f} (detect) of a CPU: their polls' CPU seconds over wall "
        "seconds; the rest of a part's time is waiting for a CPU, the GIL or a round trip)"
    )
    for name in [*lat.step_parts[0], "observe"] if lat.step_parts else []:
        a = [p[name] for p in lat.alert_parts if name in p]
        s = [p[name] for p in lat.step_parts if name in p]
        out.append(
            f"  {name:<24}{_q(a, 0.5):>11.1f}{_q(a, 0.99):>9.1f}"
            f"{_q(s, 0.5):>11.1f}{_q(s, 0.99):>9.1f}"
        )
    return [*out, tail]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", choices=("throughput", "latency", "burst"), help="one phase of the three"
    )
    parser.add_argument(
        "--idle-flush-ms",
        type=int,
        default=int(ENV["TRAJWATCH_KAFKA_IDLE_FLUSH_MS"]),
        help="the workers' idle_flush_ms: how long an input partition is silent before "
        "what it holds for ordering is released (a configured wait; default %(default)s)",
    )
    parser.add_argument(
        "--spans-per-s",
        type=float,
        help="the latency phase's load (default: half the 1-worker rate)",
    )
    args = parser.parse_args()
    ENV["TRAJWATCH_KAFKA_IDLE_FLUSH_MS"] = str(args.idle_flush_ms)
    # The store watcher and the producer share this process's interpreter lock: with
    # CPython's 5 ms switch interval, a watcher back from its query waited up to 5 ms
    # more for the lock, counted as the alert's latency (the worker sets the same).
    sys.setswitchinterval(0.001)
    messages = [m for run in runs() for m in run]
    spans = sum(len(_spans(v)) for _, v in messages)
    print(f"input: {len(messages)} messages, {spans} spans (fixtures/recorded)")
    print(f"load average at the start: {_load()}")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        one = None
        if args.only in (None, "throughput"):
            one = throughput(tmp, messages, 1)
            print(
                f"{'spans/s, 1 worker':<44} {one.spans_per_s:>10.0f}   ({one.steps:,} steps "
                f"stored; load {_load()})"
            )
            two = throughput(tmp, messages, 2)
            print(
                f"{'spans/s, 2 workers':<44} {two.spans_per_s:>10.0f}   "
                f"({two.spans_per_s / one.spans_per_s:.2f}x; {two.steps:,} steps stored; "
                f"load {_load()})"
            )
            print("\n".join(cpu_rows([one, two])))
        if args.only in (None, "latency"):
            load = args.spans_per_s or (one.spans_per_s / 2 if one else None)
            if load is None:
                parser.error("--only latency needs --spans-per-s")
            lat = latency(tmp, messages, load / (spans / len(messages)))
            print("\n".join(latency_rows(lat)))
            print(f"  ({load:.0f} spans/s; load {_load()})")
        if args.only in (None, "burst"):
            peak, drained, state = burst(tmp, messages)
            print(
                f"{'consumer lag, peak messages (burst)':<44} {peak:>10d}   "
                f"(drained in {drained:.1f} s)"
            )
            print(f"{'persisted state bytes per session (mean)':<44} {state:>10d}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}; "
        f"load average at the end: {_load()}"
    )
    print("command: .venv/bin/python benchmarks/bench_kafka.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
