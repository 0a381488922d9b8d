"""``trajwatch worker`` with timers around its stages, for ``bench_kafka.py``.

    python benchmarks/kafka_probe.py OUT.jsonl worker --bootstrap-servers ... --db ...

Runs the CLI's ``worker`` command unchanged, with wrappers (here, not in the worker: its
normal path carries no timer) that note, in wall-clock seconds (``time.time()``, the
clock the benchmark's producer stamps messages with):

- each stage poll: when it started and ended, and the stage thread's CPU seconds in it;
- each consumer poll that returned records: when, and the offset range of every
  partition in it (``read``);
- each idle flush of an input partition (``flush``);
- each wave the ordering stage sent: when it was handed over and acknowledged, and the
  partition and offset of every repartition record in it (``wave``);
- each store transaction of the sequencing stage (``store``);

and it renames the stage threads ``tw-ingest`` / ``tw-detect`` (their ``comm``), so that
the benchmark can read each stage's CPU seconds from ``/proc/<pid>/task`` at any moment.
The notes are written to OUT.jsonl when the worker exits (SIGTERM).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from kafka import KafkaConsumer, KafkaProducer  # noqa: E402

import trajwatch.service.worker as worker  # noqa: E402
from ingest.pipeline.engine import Pipeline  # noqa: E402
from ingest.sources.kafka import OrderingStage, SequencingStage  # noqa: E402

STAGE_THREADS = {"OrderingStage": "ingest", "SequencingStage": "detect"}
"""The worker's stage threads (named after their stage's class) and what we call them."""

EVENTS: list[dict[str, Any]] = []
_local = threading.local()


def _stage() -> str | None:
    return STAGE_THREADS.get(threading.current_thread().name)


def _note(kind: str, **fields: Any) -> None:
    EVENTS.append({"kind": kind, "stage": _stage(), **fields})  # list.append: thread-safe


def _wrap(owner: Any, name: str, around: Callable[..., Any]) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return around(original, *args, **kwargs)

    setattr(owner, name, wrapper)


def _run_stage(original: Callable[..., Any], part: Any, *args: Any) -> Any:
    name = "tw-" + STAGE_THREADS[type(part).__name__]
    with contextlib.suppress(OSError):  # Linux: shown by top -H, read by the benchmark
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(name)
    return original(part, *args)


def _stage_poll(original: Callable[..., Any], self: Any, timeout_ms: int) -> Any:
    start, cpu = time.time(), time.thread_time()
    _local.polled = None
    count = original(self, timeout_ms)
    _note("poll", start=start, end=time.time(), cpu=time.thread_time() - cpu, count=count)
    return count


def _consumer_poll(original: Callable[..., Any], self: Any, *args: Any, **kwargs: Any) -> Any:
    batch = original(self, *args, **kwargs)
    now = time.time()
    _local.polled = now
    if batch and _stage() is not None:
        read = [
            [tp.topic, tp.partition, messages[0].offset, messages[-1].offset]
            for tp, messages in batch.items()
        ]
        _note("read", at=now, read=read)
    return batch


def _end_partition(original: Callable[..., Any], self: Any, partition: str) -> Any:
    if _stage() == "ingest":
        _note("flush", at=time.time(), partition=partition)
    return original(self, partition)


def _send(original: Callable[..., Any], self: Any, *args: Any, **kwargs: Any) -> Any:
    future = original(self, *args, **kwargs)
    futures = getattr(_local, "futures", None)
    if futures is not None:
        futures.append(future)
    return future


def _send_wave(original: Callable[..., Any], self: Any, wave: Any) -> Any:
    _local.futures = []
    start = time.time()
    try:
        return original(self, wave)
    finally:
        end = time.time()
        records = []
        for future in _local.futures:
            with contextlib.suppress(Exception):  # a failed send: not in the log
                meta = future.get(timeout=0)
                records.append([meta.topic, meta.partition, meta.offset])
        _local.futures = None
        _note("wave", polled=getattr(_local, "polled", None), start=start, end=end, records=records)


def _commit(original: Callable[..., Any], self: Any) -> Any:
    if _stage() != "detect":
        return original(self)
    start = time.time()
    alerts = original(self)
    _note("store", polled=getattr(_local, "polled", None), start=start, end=time.time())
    return alerts


def _dump(path: str) -> None:
    with open(path, "w") as out:
        for event in list(EVENTS):
            out.write(json.dumps(event) + "\n")


def install(path: str) -> None:
    _wrap(worker, "_run_stage", _run_stage)
    _wrap(OrderingStage, "poll", _stage_poll)
    _wrap(SequencingStage, "poll", _stage_poll)
    _wrap(KafkaConsumer, "poll", _consumer_poll)
    _wrap(Pipeline, "end_partition", _end_partition)
    _wrap(KafkaProducer, "send", _send)
    _wrap(OrderingStage, "_send_wave", _send_wave)
    _wrap(Pipeline, "commit", _commit)
    atexit.register(_dump, path)


if __name__ == "__main__":
    install(sys.argv[1])
    from trajwatch.cli.main import main

    raise SystemExit(main(sys.argv[2:]))
