"""How long a record waits for a consumer's fetch on Tansu, by ``fetch_max_wait_ms``.

    .venv/bin/python benchmarks/bench_kafka_fetch.py            # ~1 minute
    .venv/bin/python benchmarks/bench_kafka_fetch.py 500 50

For each wait: one producer sends 40 records ~27 ms apart (acks=all, each flushed), one
consumer in its own group polls them; printed are produce → consumed p50 / p90 / max, and
the CPU an idle consumer of an empty 8-partition topic takes in 10 s of polling, with the
broker's. Tansu answers a fetch that finds nothing at its deadline, not when a record
arrives: the wait is paid by every record, at each stage of ``trajwatch worker``
(``KafkaOptions.fetch_max_wait_ms``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from tests.support.tansu import KafkaBroker  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def latency(bootstrap: str, wait_ms: int) -> list[float]:
    topic = f"latency-{wait_ms}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    producer.send(topic, b"0").get(10)  # the topic exists before the consumer joins
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=topic,
        auto_offset_reset="latest",
        fetch_max_wait_ms=wait_ms,
    )
    while not consumer.assignment():
        consumer.poll(100)
    time.sleep(1)
    consumer.poll(100)
    waits: list[float] = []
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            for records in consumer.poll(100).values():
                now = time.time()
                waits.extend(now - float(r.value) for r in records)

    thread = threading.Thread(target=consume)
    thread.start()
    for _ in range(40):
        producer.send(topic, str(time.time()).encode())
        producer.flush()
        time.sleep(0.027)
    time.sleep(1)
    stop.set()
    thread.join()
    consumer.close()
    producer.close()
    return sorted(waits)


def idle_cpu(broker: KafkaBroker, wait_ms: int, seconds: float = 10.0) -> tuple[float, float]:
    """(consumer, broker) CPU share while a consumer polls an empty topic."""
    assert broker._process is not None
    consumer = KafkaConsumer(
        "idle",
        bootstrap_servers=broker.bootstrap,
        group_id=f"idle-{wait_ms}",
        fetch_max_wait_ms=wait_ms,
    )
    while not consumer.assignment():
        consumer.poll(100)
    mine, theirs, start = time.process_time(), _cpu(broker._process.pid), time.monotonic()
    while time.monotonic() - start < seconds:
        consumer.poll(100)
    out = (
        (time.process_time() - mine) / seconds,
        (_cpu(broker._process.pid) - theirs) / seconds,
    )
    consumer.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("waits", nargs="*", type=int, default=[500, 100, 50, 20])
    args = parser.parse_args()
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as folder:
        broker = KafkaBroker(str(Path(folder) / "tansu.log"))
        broker.start()
        try:
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
            admin.create_topics([NewTopic("idle", 8, 1)])
            admin.close()
            for wait in args.waits:
                waits = latency(broker.bootstrap, wait)
                consumer, broker_cpu = idle_cpu(broker, wait)
                print(
                    f"fetch_max_wait_ms {wait:>4}: produce -> consumed p50 "
                    f"{waits[len(waits) // 2] * 1000:6.1f} / p90 "
                    f"{waits[int(len(waits) * 0.9)] * 1000:6.1f} / max {waits[-1] * 1000:6.1f} ms;"
                    f" idle: consumer {consumer:.1%} of a CPU, broker {broker_cpu:.1%}"
                )
        finally:
            broker.stop()
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
