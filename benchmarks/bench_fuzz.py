"""Mutation fuzzer: mutated real recordings through decode → steps → detectors → store.

Seeds are the records of the committed recordings (``fixtures/recorded`` and
``../shared/corpus/recordings``): OTLP protobuf batches, OTLP/JSON documents and session
events, as bytes, and the lines of the files read whole (Claude Code transcripts, Codex
rollouts, headless captures). Each input is a short run of consecutive records of one
file (up to 60 lines of a transcript, read back as a file of that name), one or two
of them mutated — byte mutations (flip, insert, delete, truncate, splice with another seed)
or, for JSON, a value anywhere in the document replaced by a hostile one (a lone surrogate,
NaN, Infinity, -0.0, 2**63, -(2**64), NUL, a huge string, a nested list, a wrong type).
Every input goes through a fresh :class:`~ingest.pipeline.engine.Pipeline` on one SQLite store
and is committed. Any exception out of ``feed_*``/``close`` is a crash: its type is
counted and the input saved to ``--crashes`` as JSON (records base64-encoded), with the
traceback beside it; replay one with ``--reproduce FILE``.

    .venv/bin/python benchmarks/bench_fuzz.py --seconds 60
    .venv/bin/python benchmarks/bench_fuzz.py --seconds 3600 --seed 7   # the long run
    .venv/bin/python benchmarks/bench_fuzz.py --recordings DIR ...   # seeds from other folders

Targets: 0 crashes, and no input slower than 2 s. On a machine whose CPUs are busy with
other work an input can wait longer for a CPU than it runs: one over 2 s is timed again on
a store of its own, and counts as slow only when it is slow again (the others are reported
as the machine's). The five costliest inputs by CPU time are saved and printed.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import platform
import random
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout

from sqlalchemy import text  # noqa: E402

from ingest.pipeline.engine import Pipeline  # noqa: E402
from models.store import Store  # noqa: E402
from tests.support.fuzz import (  # noqa: E402
    FILE,
    RECORDINGS,
    Seed,
    load_seeds,
    mutate_bytes,
    mutate_json,
    run_input,
)
from trajwatch.config import detector_set  # noqa: E402

SLOW_S = 2.0
WATCH_S = 0.5
"""Inputs slower than this are counted and the five slowest saved: the classes to analyse
before they grow into :data:`SLOW_S` ones."""
STUCK_S = 30.0
"""An input still running after this long is stopped (SIGALRM) and saved as a crash of
type ``InputTimeout``: one pathological input must not eat a whole fuzzing run."""
WINDOW = 60
"""Most lines of a transcript in one input."""
WHOLE_SHARE = 0.25
"""Share of the inputs taken from the files read whole."""

# -- inputs ------------------------------------------------------------------------------


def make_input(rng: random.Random, seeds: list[Seed]) -> tuple[str, list[bytes]]:
    """A short run of consecutive records of one seed, one or two of them mutated."""
    whole = [s for s in seeds if s.kind.startswith(FILE)]
    # a quarter of the inputs are transcripts: few files, but every line a record
    seed = rng.choice(whole if whole and rng.random() < WHOLE_SHARE else seeds)
    start = rng.randrange(len(seed.records))
    length = rng.randint(1, WINDOW) if seed.kind.startswith(FILE) else rng.randint(1, 6)
    records = list(seed.records[start : start + length])
    for _ in range(rng.randint(1, 2)):
        index = rng.randrange(len(records))
        if seed.kind != "otlp_proto" and rng.random() < 0.6:
            records[index] = mutate_json(rng, records[index])
        else:
            partner = rng.choice(rng.choice(seeds).records)
            records[index] = mutate_bytes(rng, records[index], partner)
    return seed.kind, records


# -- running -----------------------------------------------------------------------------


class InputTimeout(Exception):
    """An input ran longer than :data:`STUCK_S`."""


def _stuck(signum: int, frame: Any) -> None:
    raise InputTimeout(f"input still running after {STUCK_S:.0f} s")


class SlowInput(Exception):
    """Not raised: names the reproducer of an input slower than :data:`SLOW_S`."""


class AccountingError(AssertionError):
    """An input whose drafts do not all end as steps, duplicates or dead letters."""


def check_accounts(pipeline: Pipeline) -> None:
    stats = pipeline.stats
    ended = stats.drafts_stepped + stats.drafts_duplicate + stats.drafts_unstorable
    ended += stats.drafts_nested  # taken back before release
    if stats.drafts != ended:
        raise AccountingError(f"{stats.drafts} drafts, {ended} accounted for")
    if stats.store_rejected:
        raise AccountingError(f"the store refused {stats.store_rejected} checked steps")


def check_store(store: Store) -> list[str]:
    """What is inconsistent in ``store`` (empty: nothing)."""
    problems = []
    with store.engine.connect() as connection:
        gaps = connection.execute(
            text(
                "SELECT count(*) FROM (SELECT session_id FROM steps GROUP BY session_id "
                "HAVING min(seq) != 0 OR max(seq) != count(*) - 1) AS g"
            )
        ).scalar_one()
        dangling = connection.execute(
            text(
                "SELECT count(*) FROM steps s WHERE s.kind IN ('tool_result', 'egress') "
                "AND s.parent_step_id IS NOT NULL AND NOT EXISTS "
                "(SELECT 1 FROM steps p WHERE p.step_id = s.parent_step_id)"
            )
        ).scalar_one()
    if gaps:
        problems.append(f"{gaps} sessions whose seqs are not 0..n-1")
    if dangling:
        problems.append(f"{dangling} tool results or egresses with a missing parent")
    return problems


def save_crash(folder: Path, kind: str, records: list[bytes], error: BaseException) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{type(error).__name__}-{int(time.time() * 1000)}-{os.getpid()}"
    path = folder / f"{name}.json"
    encoded = [base64.b64encode(r).decode() for r in records]
    path.write_text(json.dumps({"kind": kind, "records": encoded}))
    path.with_suffix(".txt").write_text(
        "".join(traceback.format_exception(type(error), error, error.__traceback__))
    )
    return path


def save_slowest(folder: Path, rank: int, kind: str, records: list[bytes], took: float) -> Path:
    """The ``rank``-th slowest input of this run as ``slowest-<rank>.json`` (overwritten by
    the next run), in the crash files' shape, so ``--reproduce`` replays it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"slowest-{rank + 1}-{os.getpid()}.json"
    encoded = [base64.b64encode(r).decode() for r in records]
    path.write_text(json.dumps({"kind": kind, "records": encoded, "seconds": round(took, 3)}))
    return path


def describe(records: list[bytes]) -> str:
    """How big an input is, for a person deciding which class it is."""
    total = sum(len(r) for r in records)
    longest = max((len(r) for r in records), default=0)
    return f"{total:,} bytes, largest record {longest:,}"


def retime(kind: str, records: list[bytes], detectors: Any) -> float:
    """Wall time of ``records`` run again on a fresh store of their own."""
    with tempfile.TemporaryDirectory() as tmp, Store.open(f"sqlite:///{tmp}/again.db") as store:
        started = time.perf_counter()
        with contextlib.suppress(Exception):  # a crash was counted on the first run
            run_input(store, kind, records, detectors)
        return time.perf_counter() - started


def reproduce(path: Path, db_url: str) -> None:
    saved = json.loads(path.read_text())
    records = [base64.b64decode(r) for r in saved["records"]]
    with Store.open(db_url) as store:
        started = time.perf_counter()
        check_accounts(run_input(store, saved["kind"], records, detector_set({})))
        took = time.perf_counter() - started
    print(f"no exception ({took:.3f} s)")


def machine() -> str:
    return (
        f"machine: {platform.platform()} | {platform.processor() or platform.machine()} | "
        f"{os.cpu_count()} CPUs | Python {platform.python_version()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz")
    parser.add_argument("--seed", type=int, default=0, help="random seed (runs are repeatable)")
    parser.add_argument(
        "--crashes", type=Path, default=Path(tempfile.gettempdir()) / "trajwatch-fuzz-crashes"
    )
    parser.add_argument("--db", help="SQLAlchemy URL (default: a temporary SQLite file)")
    parser.add_argument("--reproduce", type=Path, help="replay one saved crash and exit")
    parser.add_argument(
        "--recordings",
        type=Path,
        action="append",
        help="a folder of seed recordings (repeatable; default: fixtures/recorded and "
        "../shared/corpus/recordings beside the checkout)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db_url = args.db or f"sqlite:///{Path(tmp) / 'fuzz.db'}"
        if args.reproduce:
            reproduce(args.reproduce, db_url)
            return 0
        seeds = load_seeds(tuple(args.recordings) if args.recordings else RECORDINGS)
        rng = random.Random(args.seed)
        detectors = detector_set({})
        crashes: Counter[str] = Counter()
        examples: dict[str, Path] = {}
        inputs = slow = stalled = watched = 0
        cpu_total = 0.0
        # the five costliest inputs by CPU time, costliest first: (cpu s, wall s, kind, records)
        slowest: list[tuple[float, float, str, list[bytes]]] = []
        print(machine())
        print(f"seeds: {len(seeds)} files, {sum(len(s.records) for s in seeds)} records")
        if hasattr(signal, "setitimer"):
            signal.signal(signal.SIGALRM, _stuck)
        with Store.open(db_url) as store:
            deadline = time.perf_counter() + args.seconds
            while time.perf_counter() < deadline:
                kind, records = make_input(rng, seeds)
                started, cpu_started = time.perf_counter(), time.process_time()
                try:
                    if hasattr(signal, "setitimer"):
                        signal.setitimer(signal.ITIMER_REAL, STUCK_S)
                    check_accounts(run_input(store, kind, records, detectors))
                except Exception as error:  # a crash is what we are looking for
                    key = f"{type(error).__module__}.{type(error).__name__}"
                    if crashes[key] < 5:
                        examples.setdefault(key, save_crash(args.crashes, kind, records, error))
                    crashes[key] += 1
                finally:
                    if hasattr(signal, "setitimer"):
                        signal.setitimer(signal.ITIMER_REAL, 0)
                took = time.perf_counter() - started
                cpu = time.process_time() - cpu_started
                inputs += 1
                cpu_total += cpu
                if took > SLOW_S:
                    # the input itself, or a machine whose CPUs were busy elsewhere? Timed
                    # again on a store of its own: slow twice is the input's
                    again = retime(kind, records, detectors)
                    if again > SLOW_S:
                        slow += 1
                        if slow <= 5:
                            note = SlowInput(f"{took:.3f} s, again {again:.3f} s")
                            save_crash(args.crashes, kind, records, note)
                    else:
                        stalled += 1
                if took > WATCH_S:
                    watched += 1
                if len(slowest) < 5 or cpu > slowest[-1][0]:
                    entry = (cpu, took, kind, records)
                    slowest = sorted([*slowest, entry], key=lambda t: -t[0])[:5]
            elapsed = args.seconds + (time.perf_counter() - deadline)
            steps, dead = store.count("steps"), store.count("dead_letters")
            problems = check_store(store)
    print(f"inputs: {inputs} in {elapsed:.1f} s = {inputs / elapsed:.1f} inputs/s")
    # on a shared machine the wall rate follows the other jobs; this one does not
    rate = inputs / max(cpu_total, 1e-9)
    print(f"CPU in the inputs: {cpu_total:.1f} s = {rate:.1f} inputs per CPU second")
    print(f"store afterwards: {steps} steps, {dead} dead letters")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(
        f"over {WATCH_S} s wall: {watched}; over {SLOW_S:.0f} s wall: {slow + stalled}, of "
        f"which {slow} again when re-timed alone ({stalled} were the machine, not the input)"
    )
    for rank, (cpu, took, kind, records) in enumerate(slowest):
        saved = save_slowest(args.crashes, rank, kind, records, cpu)
        label = "costliest input" if rank == 0 else f"  #{rank + 1}"
        size = f"{len(records)} records, {describe(records)}"
        print(f"{label}: {cpu:.3f} s CPU, {took:.3f} s wall ({kind[:60]}, {size})")
        print(f"    saved as {saved} (replay: --reproduce {saved})")
    print(f"crashes: {sum(crashes.values())} ({len(crashes)} distinct types)")
    for key, count in crashes.most_common():
        print(f"  {count:6d}  {key}  e.g. {examples.get(key)}")
    print(f"store consistency: {'; '.join(problems) or 'ok'}")
    return 1 if crashes or slow or problems else 0


if __name__ == "__main__":
    sys.exit(main())
