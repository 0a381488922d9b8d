"""``trajwatch worker``: the pipeline behind Kafka, as one member of a consumer group.

Wires :mod:`ingest.sources.kafka`'s two stages to the store, the detectors and the sinks, and
runs them in one loop until SIGTERM/SIGINT: the ordering stage (``--stage ingest``),
the sequencing stage (``--stage detect``), or both (the default). Run N of them with
the same ``--group`` and the same PostgreSQL store to spread the partitions over N
processes; Kafka's group protocol decides who owns what.

Failures are survived, not reported: a store or broker error drops what the failing
stage holds in memory and resumes it from its durable position (the store's offsets
for the sequencing stage, Kafka's for the ordering stage), after a pause that doubles
up to :data:`MAX_BACKOFF_S`.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import IO, Any

from kafka import KafkaProducer
from kafka.errors import KafkaError
from sqlalchemy.exc import SQLAlchemyError

from detectors.registry import DetectorSet
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.sinks import Sink
from ingest.sources.kafka import (
    KafkaOptions,
    OrderingStage,
    SequencingStage,
    ensure_topics,
    options_from,
    producer,
)
from models.errors import ConfigError
from models.open_errors import sqlite_file
from models.store import OffsetMovedError, Store
from trajwatch.service.gc_tuning import tune_gc
from trajwatch.settings import Settings

log = logging.getLogger("trajwatch.service.worker")

STAGES = ("all", "ingest", "detect")
MAX_BACKOFF_S = 5.0
POLL_MS = 100
SWITCH_INTERVAL_S = 0.001
"""How long a thread that has the interpreter lock keeps it while another waits
(CPython's default: 5 ms). The worker's threads — the two stages, kafka-python's
network and heartbeat threads — each wait for a round trip (a store statement, a fetch,
a producer acknowledgement) and then for the lock, which a busy stage gives up only at
this interval: at 5 ms, each of a transaction's ten statements beside a busy ingest
stage may wait up to 5 ms more for the lock (benchmarks/bench_kafka.py measures the
parts of produce-to-alert)."""


@dataclass(slots=True)
class WorkerStats:
    read: int = 0
    produced: int = 0
    sequenced: int = 0
    alerts: int = 0
    failures: int = 0
    started: float = field(default_factory=time.monotonic)


def kafka_options(
    config: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> KafkaOptions:
    """The Kafka options: defaults, the config's ``[kafka]`` table, the environment, flags."""
    table = config.get("kafka", {})
    if not isinstance(table, dict):
        raise ConfigError("config file: `kafka` must be a table; write [kafka]")
    return options_from(table, os.environ if environ is None else environ, overrides)


def _sqlite_lock(db_url: str) -> IO[str] | None:
    """For a SQLite store, an exclusive lock beside the file: a second worker on the same
    file is refused at once with the one line the CLI prints. None for PostgreSQL."""
    path = sqlite_file(db_url)
    if path is None:
        return None
    handle = open(f"{path}.worker-lock", "w")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise ConfigError(
            f"another trajwatch worker stores into {path}; more than one worker needs "
            "PostgreSQL: give every worker --db postgresql+psycopg://..."
        ) from None
    return handle


def _run_stage(
    part: OrderingStage | SequencingStage,
    stop: threading.Event,
    stats: WorkerStats,
    errors: list[BaseException],
) -> None:
    """One stage's loop, in its own thread: a consumer must keep polling (briefly) to
    finish joining its group, so the two stages' polls cannot take turns."""
    backoff = 0.0
    try:
        while not stop.is_set():
            try:
                count = part.poll(POLL_MS)
            except (SQLAlchemyError, KafkaError, OffsetMovedError, OSError) as exc:
                stats.failures += 1
                backoff = min(MAX_BACKOFF_S, max(0.1, backoff * 2))
                first = str(exc).splitlines()[0] if str(exc) else ""
                log.warning(
                    "%s: %s: %s; resuming from the durable offsets in %.1f s",
                    type(part).__name__,
                    type(exc).__name__,
                    first,
                    backoff,
                )
                stop.wait(backoff)
                part.reset()  # the next poll goes back to the durable offsets
                continue
            backoff = 0.0
            if isinstance(part, OrderingStage):
                stats.read += count
            else:
                stats.sequenced += count
    except BaseException as exc:  # a user mistake found late (SoleOwnerError), or a bug
        errors.append(exc)
        stop.set()


def run_worker(
    *,
    settings: Settings,
    options: KafkaOptions,
    detectors: DetectorSet,
    stage: str = "all",
    sinks: Sequence[Sink] = (),
    stop: threading.Event | None = None,
    install_signals: bool = True,
) -> WorkerStats:
    """Run the worker until ``stop`` is set (or SIGTERM/SIGINT); returns its counts."""
    if stage not in STAGES:
        raise ConfigError(f"--stage must be one of {', '.join(STAGES)}, got {stage!r}")
    tune_gc()
    stop = stop or threading.Event()
    if install_signals:

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    detect = stage in ("all", "detect")
    lock = _sqlite_lock(settings.db_url) if detect else None
    # no pre-ping: a round trip of every transaction; a stage whose transaction fails on
    # a dropped connection resumes from the store's offsets on a fresh one
    store = Store.open(settings.db_url, pre_ping=False)
    stats = WorkerStats()
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        ensure_topics(options)

        # silence steps, when asked for: each input partition's clock is relayed to every
        # repartition partition (ingest.sources.clock_relay; docs/operations/worker.md)
        judged = settings if options.silence else replace(settings, silence_first_ms=0)

        def new_pipeline() -> Pipeline:
            return Pipeline(store, settings=judged, detectors=detectors, sinks=sinks)

        def new_producer() -> KafkaProducer:
            return producer(options)

        ordering = (
            OrderingStage(options, new_pipeline, new_producer, store)
            if stage in ("all", "ingest")
            else None
        )
        sequencing = (
            SequencingStage(options, new_pipeline, store, sole_owner=lock is not None)
            if detect
            else None
        )
        log.info("worker up: stage %s, group %s", stage, options.group_id)
        parts: list[OrderingStage | SequencingStage] = [
            part for part in (ordering, sequencing) if part is not None
        ]
        errors: list[BaseException] = []
        threads = [
            threading.Thread(
                target=_run_stage, args=(part, stop, stats, errors), name=type(part).__name__
            )
            for part in parts
        ]
        try:
            for thread in threads:
                thread.start()
            while not stop.is_set():
                stop.wait(0.5)
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
        finally:
            stop.set()
            for thread in threads:
                if thread.is_alive():
                    thread.join()
            if ordering is not None:
                try:
                    ordering.close()
                except (KafkaError, SQLAlchemyError, OSError) as exc:
                    log.warning("ordering stage did not close cleanly: %s", exc)
                stats.produced = ordering.produced
            if sequencing is not None:
                sequencing.close()
                stats.alerts = sequencing.alerts
    finally:
        sys.setswitchinterval(switch_interval)
        store.close()
        if lock is not None:
            lock.close()
    return stats
