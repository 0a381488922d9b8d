"""Soak: ``trajwatch worker`` processes through at least 100 injected faults (issue 10).

A Tansu broker whose log lives in S3 (moto's server on loopback: the broker survives
SIGKILL), PostgreSQL, and ``trajwatch worker`` processes with the webhook outbox on
(an endpoint that refuses connections: its rows stay, retried). The recorded runs'
real SDK-encoded batches are produced a chunk at a time, as the Collector's Kafka
exporter keys them, while random faults hit, one every 0.5–2.5 s:

- ``kill``: a worker SIGKILLed (no goodbye, no commit), started again at once;
- ``broker``: the broker SIGKILLed and started again on the same port (0.5–2 s down);
- ``db``: every worker connection dropped (``pg_terminate_backend``), what a database
  restart looks like to the workers;
- ``add``: a worker started (up to ``--max-workers``), or one stopped by SIGTERM when
  there are that many: a rebalance either way.

After the last fault the workers run until the store stops changing; then what they
stored is compared with one process feeding the same messages (the broker's topics as
they ended up), partition by partition, to one pipeline with the same outbox sink:
alerts lost and doubled (stored but not raised by the replay), outbox rows lost and
doubled, steps lost, doubled or different. The target (issue 10): 0 / 0 / 0.

    .venv/bin/python benchmarks/bench_kafka_faults.py               # ~8 minutes
    .venv/bin/python benchmarks/bench_kafka_faults.py --faults 20   # a quick look
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import Engine, make_url  # noqa: E402

from ingest.pipeline.engine import Pipeline  # noqa: E402
from ingest.sources.kafka import KafkaOptions  # noqa: E402
from models.store import Store  # noqa: E402
from tests.integration.kafka.test_kafka_worker import (  # noqa: E402
    CONFIG,
    Workers,
    broker_options,
    feed_topics,
    produce,
    recorded_runs,
)
from tests.support.tansu import KafkaBroker, start_s3_server  # noqa: E402
from trajwatch.actions import ActionSink  # noqa: E402
from trajwatch.config import actions_config, detector_set, load_config  # noqa: E402
from trajwatch.settings import Settings  # noqa: E402

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
WEBHOOK = {
    # nothing listens on port 9 of loopback: every delivery fails and stays in the outbox
    "TRAJWATCH_WEBHOOK_URL": "http://127.0.0.1:9/hook",
    "TRAJWATCH_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
}
KINDS = ("kill", "broker", "db", "add")


class Fleet(Workers):
    """The worker processes of the soak (the tests' :class:`Workers`, with the webhook
    outbox on), some killed or stopped on the way."""

    stop_timeout_s = 30.0

    @property
    def live(self) -> list[subprocess.Popen[bytes]]:
        """The workers neither killed nor stopped, oldest first."""
        return [proc for proc in self.procs if proc.returncode is None]

    @property
    def started(self) -> int:
        return len(self.procs)

    def kill(self, rng: random.Random) -> None:
        victim = rng.choice(self.live)
        victim.send_signal(signal.SIGKILL)
        victim.wait()

    def stop_one(self, rng: random.Random) -> None:
        leaving = rng.choice(self.live)
        leaving.send_signal(signal.SIGTERM)
        try:
            leaving.wait(timeout=self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            leaving.kill()
            leaving.wait()

    def survived(self) -> int:
        """Failures the workers logged surviving (resumed from their durable offsets)."""
        return sum(
            path.read_text(errors="replace").count("resuming from the durable offsets")
            for path in self.logs.glob("worker-*.log")
        )


def drop_connections(admin: Engine, name: str) -> int:
    with admin.connect() as connection:
        return len(
            connection.execute(
                text(
                    "select pg_terminate_backend(pid) from pg_stat_activity "
                    "where application_name = :name"
                ),
                {"name": name},
            ).all()
        )


Outcome = tuple[dict[str, object], set[str], set[str]]


def stored(store: Store) -> Outcome:
    """Steps by id, alert ids and outbox rows' delivery ids (each row once)."""
    steps: dict[str, object] = {
        step.step_id: step for info in store.sessions() for step in store.steps(info.session_id)
    }
    alerts = {alert.alert_id for alert in store.alerts()}
    rows = [row.delivery_id for row in store.outbox().list()]
    if len(rows) != len(set(rows)):  # the table's key forbids it; counted if ever not so
        raise AssertionError(f"{len(rows) - len(set(rows))} outbox rows stored twice")
    return steps, alerts, set(rows)


def replay(options: KafkaOptions, path: Path) -> Outcome:
    """The broker's input topics through one pipeline with the workers' outbox sink."""
    settings = Settings(
        db_url=f"sqlite:///{path}",
        webhook_url=WEBHOOK["TRAJWATCH_WEBHOOK_URL"],
        webhook_secret=WEBHOOK["TRAJWATCH_WEBHOOK_SECRET"],
    )
    config = load_config(CONFIG)
    with Store.open(settings.db_url) as store:
        pipeline = Pipeline(
            store,
            settings=settings,
            detectors=detector_set(config),
            sinks=[ActionSink(actions_config(config, settings))],
        )
        feed_topics(options, pipeline)
        pipeline.close()
        return stored(store)


def settle(store: Store, quiet_s: float, timeout_s: float) -> float:
    """Until the store's counts have not changed for ``quiet_s``; returns the seconds."""
    start = time.monotonic()
    last = None
    since = start
    while time.monotonic() - start < timeout_s:
        now = (store.count("steps"), store.count("alerts"), store.count("deliveries"))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
        time.sleep(0.5)
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=100)
    parser.add_argument("--runs", type=int, default=40, help="recorded runs to produce")
    parser.add_argument("--max-workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-kafka-faults-"))
    s3, s3_env = start_s3_server(str(tmp / "moto.log"))
    broker = KafkaBroker(str(tmp / "tansu.log"), storage="s3://tansu/", env=s3_env)
    broker.start()
    schema = f"soak_{uuid.uuid4().hex[:12]}"
    name = f"tw-{schema}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    db = (
        make_url(PG_URL)
        .update_query_dict({"options": f"-csearch_path={schema}", "application_name": name})
        .render_as_string(hide_password=False)
    )
    fleet = Fleet(KafkaOptions(bootstrap_servers=broker.bootstrap), db, tmp, env=WEBHOOK)
    counts: collections.Counter[str] = collections.Counter()
    try:
        options = broker_options(broker.bootstrap)
        runs = recorded_runs(args.runs)
        # oldest run first, a chunk every 4th fault: each partition's event time moves on
        size = max(1, -(-len(runs) // max(1, args.faults // 4)))
        chunks = [runs[i : i + size] for i in range(0, len(runs), size)]
        fleet.start()
        fleet.start()
        with Store.open(db.replace(name, f"{name}-bench")) as store:
            started = time.monotonic()
            for i in range(args.faults):
                if i % 4 == 0 and chunks:
                    produce(options, chunks.pop(0))
                kind = rng.choice(KINDS)
                if kind == "kill":
                    fleet.kill(rng)
                    fleet.start()
                elif kind == "broker":
                    broker.stop()
                    time.sleep(rng.uniform(0.5, 2.0))
                    broker.start()
                elif kind == "db":
                    drop_connections(admin, name)
                elif len(fleet.live) < args.max_workers:
                    fleet.start()
                else:
                    fleet.stop_one(rng)
                counts[kind] += 1
                time.sleep(rng.uniform(0.5, 2.5))
            for chunk in chunks:
                produce(options, chunk)
            soaked = time.monotonic() - started
            reference = replay(options, tmp / "reference.db")
            settled = settle(store, quiet_s=20, timeout_s=600)
            steps, alerts, rows = stored(store)
        survived = fleet.survived()
    finally:
        fleet.stop_all()
        broker.stop()
        s3.kill()
        s3.wait()
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        admin.dispose()
    want_steps, want_alerts, want_rows = reference
    differ = sum(1 for k, v in steps.items() if k in want_steps and want_steps[k] != v)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}")
    print(
        f"faults: {sum(counts.values())} ({', '.join(f'{k} {counts[k]}' for k in KINDS)}) "
        f"over {soaked:.0f} s, {args.runs} recorded runs; {fleet.started} worker starts; "
        f"{survived} failures survived in place; settled {settled:.0f} s after"
    )
    print(
        f"alerts: {len(want_alerts)} in the replay, lost {len(want_alerts - alerts)}, "
        f"doubled {len(alerts - want_alerts)}"
    )
    print(
        f"outbox rows: {len(want_rows)} in the replay, lost {len(want_rows - rows)}, "
        f"doubled {len(rows - want_rows)}"
    )
    print(
        f"steps: {len(want_steps)} in the replay, lost {len(want_steps.keys() - steps.keys())}, "
        f"doubled {len(steps.keys() - want_steps.keys())}, different {differ}"
    )
    print(f"logs: {tmp}")
    bad = (want_alerts ^ alerts) or (want_rows ^ rows) or (want_steps.keys() ^ steps.keys())
    return 1 if bad or differ else 0


if __name__ == "__main__":
    sys.exit(main())
