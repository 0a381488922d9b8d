"""Does the broker keep what it acknowledged? A producer against a Tansu broker whose log
lives in S3 (moto's server on loopback), the broker SIGKILLed and restarted under it.

One thread produces numbered records to a two-partition topic, 20 at a time, flushing
each 20, and notes every record whose send was acknowledged; the broker is killed and
started again ``--kills`` times, 0.5–2 s apart. Then the whole topic is read back (to the
end offsets the broker reports, and on until nothing more comes: Tansu's reported end
offset can trail what it has handed out) and compared with what was acknowledged:

- acknowledged but missing from the log (what the broker lost after saying it had it);
- duplicates in the log (a retry of a request whose answer the kill cut off);
- holes (offsets handed out and never written: a kill between the two).

Run once with the producer idempotent (kafka-python's default) and once not, which is
why ``trajwatch worker``'s producer is not idempotent (``ingest/sources/kafka.py``, ``producer``).

    .venv/bin/python benchmarks/bench_kafka_acks.py            # ~3 minutes
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import os
import platform
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.errors import KafkaError  # noqa: E402

from tests.support.tansu import KafkaBroker, start_s3_server  # noqa: E402

TOPIC = "acks"


def produce(bootstrap: str, idempotent: bool, stop: threading.Event, acked: set[bytes]) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=idempotent,
        max_in_flight_requests_per_connection=1,
        linger_ms=0,
        request_timeout_ms=5_000,
        delivery_timeout_ms=60_000,
    )
    number = 0
    while not stop.is_set():
        for _ in range(20):
            value = f"r{number}".encode()
            future = producer.send(TOPIC, partition=number % 2, value=value)
            future.add_callback(lambda _, value=value: acked.add(value))
            number += 1
        with contextlib.suppress(KafkaError):  # the records' futures say what became of them
            producer.flush(timeout=70)
    producer.close()


def read_back(bootstrap: str) -> tuple[list[bytes], int]:
    """Every record's value and the number of holes in the offsets."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    parts = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    ends = consumer.end_offsets(parts)
    values: list[bytes] = []
    offsets: dict[int, list[int]] = {0: [], 1: []}
    deadline = time.monotonic() + 300
    quiet_since = None
    while time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=300)
        for tp, messages in batch.items():
            values += [m.value for m in messages]
            offsets[tp.partition] += [m.offset for m in messages]
        behind = any(consumer.position(tp) < ends[tp] for tp in parts)
        if batch or behind:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 3:
            break
    consumer.close()
    holes = sum(1 for o in offsets.values() for a, b in itertools.pairwise(o) if b != a + 1)
    return values, holes


def trial(idempotent: bool, kills: int, rng: random.Random, tmp: Path) -> str:
    s3, env = start_s3_server(str(tmp / "moto.log"))
    name = "idempotent" if idempotent else "plain"
    broker = KafkaBroker(str(tmp / f"tansu-{name}.log"), storage="s3://tansu/", env=env)
    broker.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
        admin.close()
        acked: set[bytes] = set()
        stop = threading.Event()
        thread = threading.Thread(target=produce, args=(broker.bootstrap, idempotent, stop, acked))
        thread.start()
        for _ in range(kills):
            time.sleep(rng.uniform(0.5, 2.0))
            broker.stop()
            time.sleep(rng.uniform(0.2, 1.0))
            broker.start()
        time.sleep(5)
        stop.set()
        thread.join()
        values, holes = read_back(broker.bootstrap)
    finally:
        broker.stop()
        s3.kill()
        s3.wait()
    missing = len(acked - set(values))
    doubled = len(values) - len(set(values))
    return f"| {name} | {kills} | {len(acked):,} | **{missing:,}** | {doubled:,} | {holes} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # the clients' reconnect chatter
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-kafka-acks-"))
    rows = [trial(idempotent, args.kills, rng, tmp) for idempotent in (True, False)]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}")
    print(
        "| producer | broker kills | records acknowledged | acknowledged, not in the log "
        "| duplicates in the log | holes in the offsets |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(f"logs: {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
