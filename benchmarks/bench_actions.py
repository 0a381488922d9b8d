"""Actions under faults: no lost and no doubled action, and alert-to-webhook latency.

Phase 1 (faults). ``--alerts`` synthetic alerts are committed with their outbox rows
through the actions' sink (the code the pipeline runs inside each commit), in batches,
while a ``trajwatch dispatch`` process sends them to a real receiver on loopback that
verifies signatures and dedupes by ``webhook-id`` (as a circuit breaker does). Faults at
random: receiver outages (the port closed), slow answers (longer than the dispatcher's
timeout: the receiver applied it but the answer is lost, so the id is sent again),
503s with ``Retry-After``, and SIGKILLs of the dispatcher process (restarted at once).
Then the faults stop and the outbox drains. Counted: actions lost (queued but never
applied), actions applied twice (one alert's action applied under two ids: must be 0),
ids that arrived more than once (at-least-once doing its job), dead deliveries.

Phase 2 (healthy). An in-process dispatcher woken by the sink, as ``serve`` runs it; one
alert per commit; latency from the commit to the receiver reading the request.

    .venv/bin/python benchmarks/bench_actions.py --alerts 1000
    .venv/bin/python benchmarks/bench_actions.py --alerts 10000 --db postgresql+psycopg://...
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from ingest.pipeline.sinks import Committed  # noqa: E402
from models.records import Action, Alert, SessionInfo, Severity  # noqa: E402
from models.store import SessionCursor, Store  # noqa: E402
from tests.support.webhook_receiver import SECRET, Answer, Received, Receiver  # noqa: E402
from trajwatch.actions import ActionSink, Dispatcher, signing  # noqa: E402
from trajwatch.actions.endpoints import ActionsConfig, Endpoint, RetryPolicy  # noqa: E402

T0 = 1_767_225_600_000_000_000
RETRY = RetryPolicy(
    max_attempts=10_000, backoff_s=0.05, max_backoff_s=0.5, timeout_s=1.0, lease_s=2.0
)


def alerts(start: int, n: int, sessions: int = 50) -> list[Alert]:
    actions = (Action.NOTIFY, Action.KILL, Action.ROLLBACK)
    return [
        Alert(
            alert_id=f"al_bench{i:08d}",
            session_id=f"bench-{i % sessions}",
            detector="runaway_loop",
            severity=Severity.CRITICAL,
            score=0.9,
            onset_seq=i,
            onset_step_id=f"bench-{i % sessions}#{i}",
            evidence=({"step": i},),
            reason=f"synthetic alert {i}",
            action=actions[i % 3],
            ts=T0 + i * 1_000_000,
            raised_seq=i,
        )
        for i in range(start, start + n)
    ]


def commit(store: Store, sink: ActionSink, batch: list[Alert]) -> None:
    """What the pipeline does with new alerts: store them and the sink's outbox rows in
    one transaction, then tell the sink."""
    with store.unit() as unit:
        for session_id in sorted({a.session_id for a in batch}):
            unit.upsert_session(
                SessionInfo(session_id=session_id, agent="bench-agent"),
                SessionCursor(session_id=session_id),
            )
        new = unit.add_alerts(batch)
        committed = Committed(steps=[], alerts=new, dead_letters=[])
        sink.in_transaction(unit, committed)
    sink.after_commit(committed)


def config(url: str) -> ActionsConfig:
    signer = signing.signers([SECRET], where="bench")
    return ActionsConfig(
        endpoints={"default": Endpoint("default", url, signer)}, retry=RETRY, allow_private=True
    )


def phase_faults(
    db_url: str, n: int, rng: random.Random, tmp: Path, window_s: float
) -> dict[str, object]:
    receiver = Receiver().start()
    faults = {"outages": 0, "slow": 0, "unavailable": 0, "kills": 0}

    healing = threading.Event()

    def answer(_: Received) -> Answer:
        if healing.is_set():
            return Answer(200)
        roll = rng.random()
        if roll < 0.03:
            faults["slow"] += 1
            return Answer(200, delay_s=RETRY.timeout_s * 1.5)  # applied, answer lost
        if roll < 0.06:
            faults["unavailable"] += 1
            return Answer(503, {"retry-after": "0"})
        return Answer(200)

    receiver.answer = answer
    toml = tmp / "bench.toml"
    toml.write_text(
        f"[actions.retry]\nmax_attempts = {RETRY.max_attempts}\nbackoff_s = {RETRY.backoff_s}\n"
        f"max_backoff_s = {RETRY.max_backoff_s}\ntimeout_s = {RETRY.timeout_s}\n"
        f"lease_s = {RETRY.lease_s}\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRAJWATCH_CONFIG": str(toml),
        "TRAJWATCH_WEBHOOK_URL": receiver.url,
        "TRAJWATCH_WEBHOOK_SECRET": SECRET,
        "TRAJWATCH_WEBHOOK_ALLOW_PRIVATE": "1",
    }
    command = [sys.executable, "-m", "trajwatch.cli.main", "dispatch", "--db", db_url]

    def spawn() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    store = Store.open(db_url)
    sink = ActionSink(config(receiver.url))  # no in-process dispatcher: the subprocess polls
    process = spawn()
    done = threading.Event()

    def chaos() -> None:
        nonlocal process
        while not done.wait(rng.uniform(0.8, 2.0)):
            if rng.random() < 0.5:
                process.send_signal(signal.SIGKILL)
                process.wait()
                faults["kills"] += 1
                process = spawn()
            else:
                receiver.stop()
                faults["outages"] += 1
                time.sleep(rng.uniform(0.3, 1.5))
                receiver.start()

    injector = threading.Thread(target=chaos, daemon=True)
    injector.start()
    started = time.monotonic()
    batch = 25
    pause = window_s / max(1, n // batch)  # spread the alerts over the fault window
    for start in range(0, n, batch):
        commit(store, sink, alerts(start, min(batch, n - start)))
        time.sleep(rng.uniform(0, 2 * pause))
    produced_s = time.monotonic() - started
    time.sleep(max(0.0, window_s - produced_s))
    done.set()
    injector.join()
    healing.set()
    outbox = store.outbox()
    deadline = time.monotonic() + 120
    while outbox.pending() and time.monotonic() < deadline:
        time.sleep(0.1)
    drained_s = time.monotonic() - started
    process.send_signal(signal.SIGTERM)
    process.wait(30)
    rows = outbox.list()
    queued = {d.delivery_id for d in rows}
    counts = receiver.counts()
    result = {
        "alerts": n,
        "queued": len(queued),
        "faults": faults,
        "lost": len(queued - set(receiver.applied)),
        "applied_twice": receiver.applied_twice(),
        "ids_received_more_than_once": sum(1 for c in counts.values() if c > 1),
        "requests": sum(counts.values()),
        "dead": sum(d.status == "dead" for d in rows),
        "not_delivered": sum(d.status != "delivered" for d in rows),
        "produce_s": round(produced_s, 1),
        "drain_s": round(drained_s, 1),
    }
    receiver.stop()
    store.close()
    return result


def phase_latency(db_url: str, n: int) -> dict[str, object]:
    receiver = Receiver().start()
    arrived: dict[str, float] = {}

    def answer(got: Received) -> Answer:
        arrived.setdefault(got.webhook_id, time.monotonic())
        return Answer(200)

    receiver.answer = answer
    store = Store.open(db_url)
    actions = config(receiver.url)
    dispatcher = Dispatcher(db_url, actions).start()
    sink = ActionSink(actions, dispatcher)
    committed_at: dict[str, float] = {}
    for alert in alerts(10_000_000, n):
        commit(store, sink, [alert])
        committed_at[alert.alert_id] = time.monotonic()
        time.sleep(0.005)
    dispatcher.drain(60)
    dispatcher.stop()
    ids = {d.delivery_id: d.alert_id for d in store.outbox().list()}
    store.close()
    receiver.stop()
    latencies = sorted(at - committed_at[ids[k]] for k, at in arrived.items())
    return {
        "alerts": n,
        "delivered": len(latencies),
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 1),
        "max_ms": round(1000 * latencies[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alerts", type=int, default=1000)
    parser.add_argument("--latency-alerts", type=int, default=500)
    parser.add_argument("--db", help="store URL (default: a SQLite file in a temporary folder)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fault-s", type=float, default=20.0, help="how long faults go on")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        faults = phase_faults(db, args.alerts, random.Random(args.seed), Path(tmp), args.fault_s)
        db2 = args.db or f"sqlite:///{Path(tmp) / 'latency.db'}"
        latency = phase_latency(db2, args.latency_alerts)
    result = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "store": "sqlite" if args.db is None else args.db.split(":")[0],
        "faults": faults,
        "healthy": latency,
    }
    if args.json:
        print(json.dumps(result))
        return
    f = faults
    print(f"machine: {result['machine']}; store: {result['store']}")
    print(f"faults over {f['alerts']} alerts ({f['queued']} actions queued): {f['faults']}")
    print(
        f"  lost {f['lost']}  applied twice {f['applied_twice']}  ids received more than "
        f"once {f['ids_received_more_than_once']}  dead {f['dead']}  "
        f"requests {f['requests']}  drained in {f['drain_s']} s"
    )
    h = latency
    print(
        f"healthy receiver, {h['delivered']}/{h['alerts']} alerts: alert-to-webhook "
        f"p50 {h['p50_ms']} ms  p99 {h['p99_ms']} ms  max {h['max_ms']} ms"
    )


if __name__ == "__main__":
    main()
