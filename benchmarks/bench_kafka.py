"""Scale-out through Kafka: ``trajwatch worker`` processes on a local Tansu broker.

The input is every recorded run's real SDK-encoded batches, split and keyed by trace id
as the Collector's Kafka exporter sends them, oldest run first. Rows printed:

- spans/s through Kafka with 1 and 2 workers (same input, same machine): from the first
  message produced to the last step stored, the workers already in their groups;
- produce-to-alert latency p50/p99 at half the 1-worker rate: from producing the message
  that holds an alert's raising span to the alert being visible in the store (the store is
  polled every 10 ms);
- consumer lag under a burst: the whole input produced at once to a running worker, the
  largest lag of the input and repartition groups sampled every 100 ms, and the time to
  drain it;
- bytes of persisted state per session (``sessions.state``: detectors, features,
  compaction, turns);
- the machine.

    .venv/bin/python benchmarks/bench_kafka.py           # ~1 minute
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from ingest.files import read_file  # noqa: E402
from ingest.kafka import KafkaOptions, ensure_topics, split_by_trace  # noqa: E402
from models.store import Store  # noqa: E402
from tests.conftest import KafkaBroker  # noqa: E402

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PARTITIONS = 4
ENV = {
    "TRAJWATCH_KAFKA_PARTITIONS": str(PARTITIONS),
    "TRAJWATCH_KAFKA_IDLE_FLUSH_MS": "500",
    "TRAJWATCH_KAFKA_SESSION_TIMEOUT_MS": "6000",
}
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
        self.db = (
            make_url(PG_URL)
            .update_query_dict({"options": f"-csearch_path={self.schema}"})
            .render_as_string(hide_password=False)
        )
        Store.open(self.db).close()  # migrated before the workers race to do it
        self.engine = create_engine(self.db)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.tmp = tmp

    def start_worker(self) -> None:
        log = open(self.tmp / f"worker-{len(self.procs)}.log", "wb")  # noqa: SIM115
        self.procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "trajwatch.cli",
                    "worker",
                    "--bootstrap-servers",
                    self.broker.bootstrap,
                    "--db",
                    self.db,
                ],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), **ENV},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )

    def scalar(self, sql: str) -> int:
        with self.engine.connect() as c:
            return int(c.execute(text(sql)).scalar_one() or 0)

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


def produce(
    options: KafkaOptions, messages: list[Message], rate: float | None = None
) -> dict[str, float]:
    """Send ``messages`` (at ``rate`` messages/s when given); returns each span's send time."""
    producer = KafkaProducer(bootstrap_servers=options.bootstrap_servers, acks="all", linger_ms=2)
    sent: dict[str, float] = {}
    start = time.monotonic()
    for i, (key, value) in enumerate(messages):
        if rate:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        now = time.time()
        for ref, _ in _spans(value):
            sent[ref] = now
        producer.send(options.spans_topic, key=key, value=value)
        if rate:
            producer.flush()
    producer.flush()
    producer.close()
    return sent


def throughput(tmp: Path, messages: list[Message], workers: int) -> tuple[float, int]:
    """Spans/s from the first produce to the last step stored, the workers already in
    their groups (a rebalance mid-run would be measured too)."""
    run = Run(tmp)
    try:
        for _ in range(workers):
            run.start_worker()
        time.sleep(12)  # every worker joined, the groups stable
        start = time.monotonic()
        produce(run.options, messages)
        last = start
        count = 0
        deadline = start + 120
        while time.monotonic() < deadline:
            now_count = run.scalar("select count(*) from steps")
            now = time.monotonic()
            if now_count != count:
                count, last = now_count, now
            elif count and now - last > 3:
                break  # stable for 3 s: done
            time.sleep(0.05)
        spans = sum(len(_spans(v)) for _, v in messages)
        assert count, "nothing stored"
        return spans / max(last - start, 1e-6), count
    finally:
        run.close()


def latency(tmp: Path, messages: list[Message], rate: float) -> list[float]:
    run = Run(tmp)
    try:
        run.start_worker()
        time.sleep(8)  # the group join
        seen: dict[str, float] = {}
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
                    seen.setdefault(alert_id, now)
                    seen.setdefault(f"ref:{alert_id}", ref)  # type: ignore[arg-type]
                time.sleep(0.01)

        watcher = threading.Thread(target=watch)
        watcher.start()
        sent = produce(run.options, messages, rate=rate)
        time.sleep(3)
        stop.set()
        watcher.join()
        out = []
        for key, when in seen.items():
            if key.startswith("ref:"):
                continue
            ref = seen[f"ref:{key}"]
            if ref in sent:
                out.append(when - sent[ref])  # type: ignore[operator]
        return out
    finally:
        run.close()


def burst(tmp: Path, messages: list[Message]) -> tuple[int, float, int]:
    run = Run(tmp)
    try:
        run.start_worker()
        time.sleep(8)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args()
    messages = [m for run in runs() for m in run]
    spans = sum(len(_spans(v)) for _, v in messages)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        one, steps = throughput(tmp, messages, 1)
        two, _ = throughput(tmp, messages, 2)
        rate = (one / 2) / (spans / len(messages))  # messages/s at half the 1-worker rate
        waits = sorted(latency(tmp, messages, rate))
        peak, drained, state = burst(tmp, messages)
    p = lambda q: waits[min(len(waits) - 1, int(q * len(waits)))] * 1000 if waits else float("nan")  # noqa: E731
    print(f"input: {len(messages)} messages, {spans} spans, {steps} steps (fixtures/recorded)")
    print(f"{'spans/s, 1 worker':<44} {one:>10.0f}")
    print(f"{'spans/s, 2 workers':<44} {two:>10.0f}   ({two / one:.2f}x)")
    print(
        f"{'produce-to-alert p50 ms (half load)':<44} {p(0.5):>10.1f}   ({len(waits)} alerts; "
        f"includes the idle flush, {ENV['TRAJWATCH_KAFKA_IDLE_FLUSH_MS']} ms)"
    )
    print(f"{'produce-to-alert p99 ms (half load)':<44} {p(0.99):>10.1f}")
    print(f"{'consumer lag, peak messages (burst)':<44} {peak:>10d}   (drained in {drained:.1f} s)")
    print(f"{'persisted state bytes per session (mean)':<44} {state:>10d}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )
    print("command: .venv/bin/python benchmarks/bench_kafka.py")


if __name__ == "__main__":
    main()
