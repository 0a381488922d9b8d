"""Cost of the detectors: replay throughput with every detector on, per-detector update
cost, and detector state per active session.

1. ``replay``: the committed session logs (``fixtures/recorded/*.events.jsonl*``) through
   ``trajwatch replay`` into a fresh SQLite file with every registered detector on;
   steps/s = stored steps / wall time (imports and creating the new store's tables not
   included; the latter is printed), median of ``--repeat`` runs, each in a fresh
   process so no memo is warm from an earlier run (one core). Also without detectors, to
   show what the rest of the pipeline costs.
2. ``detectors only``: the stored steps of those sessions fed to fresh detectors, per
   detector and all together (no decoding, no store): steps/s and µs per update, warm
   (in this process, after the replays filled the memos of pure per-call analysis) and
   cold (all together, in a fresh process: what a replay pays).
3. ``state``: pickled ``state_dict()`` of all detectors of a session after its last
   step, over the fixture sessions and over one synthetic 20,000-step session: median
   and max bytes (the target is ≤ 64 KiB per active session).
4. ``targets``: the issue's two cost targets against these figures, with the
   no-detector replay beside the first as the ceiling any detector set can reach.

Run: ``.venv/bin/python benchmarks/bench_detectors.py [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from detectors.registry import DetectorSet  # noqa: E402
from models.store import Store  # noqa: E402
from trajwatch.config import detector_set, load_config  # noqa: E402
from trajwatch.service.replay import replay  # noqa: E402
from trajwatch.settings import Settings  # noqa: E402


def event_logs() -> list[Path]:
    return sorted((ROOT / "fixtures" / "recorded").glob("*.events.jsonl*"))


def child_replay(url: str, *, detectors_on: bool) -> None:
    """One timed replay in this (fresh) process; prints the seconds it took to create the
    store (the migrations, once per new database) and to replay into it."""
    config = load_config(ROOT / "trajwatch.toml")
    detectors = detector_set(config) if detectors_on else DetectorSet([])
    start = time.perf_counter()
    Store.open(url).close()
    opened = time.perf_counter()
    replay(event_logs(), settings=Settings(db_url=url), detectors=detectors)
    print(opened - start, time.perf_counter() - opened)


def child_detectors(url: str) -> None:
    """Every detector over the stored steps of ``url`` in this (fresh) process: prints the
    seconds the updates took (loading the steps not included)."""
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    with Store.open(url) as store:
        streams = [store.steps(s.session_id) for s in store.sessions()]
    start = time.perf_counter()
    for stream in streams:
        live = detectors.for_session()
        for step in stream:
            for detector in live:
                detector.update(step)
    print(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child-replay", metavar="DB_URL", help=argparse.SUPPRESS)
    parser.add_argument("--no-detectors", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-detectors", metavar="DB_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_replay:
        child_replay(args.child_replay, detectors_on=not args.no_detectors)
        return
    if args.child_detectors:
        child_detectors(args.child_detectors)
        return
    config = load_config(ROOT / "trajwatch.toml")
    detectors = detector_set(config)
    files = event_logs()
    print(
        f"machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}"
    )
    print(f"detectors: {', '.join(detectors.names)}")

    runs: dict[str, list[float]] = {"every detector on": [], "no detectors": []}
    creates: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for label, flag in (("every detector on", []), ("no detectors", ["--no-detectors"])):
                url = f"sqlite:///{tmp}/r{i}{len(flag)}.db"
                out = subprocess.run(
                    [sys.executable, __file__, "--child-replay", url, *flag],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                create, replayed = map(float, out.split()[-2:])
                runs[label].append(replayed)
                creates.append(create)
        with Store.open(url) as store:
            steps_stored = store.count("steps")
            sessions = [s.session_id for s in store.sessions()]
            streams = [store.steps(s) for s in sessions]
        cold = [
            float(
                subprocess.run(
                    [sys.executable, __file__, "--child-detectors", url],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.split()[-1]
            )
            for _ in range(args.repeat)
        ]
    print(
        f"creating the store (migrations on a new SQLite file, once per database): "
        f"median {statistics.median(creates) * 1000:.0f} ms, not counted below"
    )
    rate: dict[str, float] = {}
    for label, seconds_list in runs.items():
        seconds = statistics.median(seconds_list)
        rate[label] = steps_stored / seconds
        print(
            f"replay, {label}: {len(files)} session logs, {steps_stored} steps, "
            f"median {seconds:.2f} s of {args.repeat} fresh processes → "
            f"{steps_stored / seconds:,.0f} steps/s, {seconds / steps_stored * 1e6:.0f} µs/step"
        )

    total = sum(map(len, streams))
    cold_t = statistics.median(cold)
    print(
        f"detectors only, cold (fresh process, all together): {total / cold_t:,.0f} steps/s, "
        f"{cold_t / total * 1e6:.1f} µs/step, median of {args.repeat}"
    )
    print(f"detectors only, warm, {total} steps of {len(streams)} sessions:")
    for prototype in [*detectors.prototypes, None]:
        chosen = [prototype] if prototype is not None else detectors.prototypes
        timings = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            for stream in streams:
                live = [d.clone() for d in chosen]
                for step in stream:
                    for detector in live:
                        detector.update(step)
            timings.append(time.perf_counter() - start)
        t = statistics.median(timings)
        name = prototype.name if prototype is not None else "ALL TOGETHER"
        print(f"  {name:<22} {total / t:>10,.0f} steps/s   {t / total * 1e6:6.2f} µs/step")

    sizes = []
    for stream in streams:
        live = detectors.for_session()
        for step in stream:
            for detector in live:
                detector.update(step)
        sizes.append(len(pickle.dumps([d.state_dict() for d in live])))
    from test_detector_contract import long_session

    live = detectors.for_session()
    for step in long_session(20_000 // 2, seed=1):
        for detector in live:
            detector.update(step)
    long_size = len(pickle.dumps([d.state_dict() for d in live]))
    print(
        f"state per session (all detectors, pickled): median {statistics.median(sizes):,.0f} B, "
        f"max {max(sizes):,} B over {len(sizes)} fixture sessions; "
        f"{long_size:,} B after a ~20,000-step session"
    )
    on, off = rate["every detector on"], rate["no detectors"]
    print("targets (per core):")
    print(
        f"  replay with every detector on >= 20,000 steps/s: {on:,.0f} "
        f"({on / 20_000:.2f}x) {'met' if on >= 20_000 else 'NOT MET'}; "
        f"without detectors {off:,.0f} ({off / 20_000:.2f}x): no detector set can lift "
        f"replay above that"
    )
    biggest = max(*sizes, long_size)
    print(
        f"  detector state <= 64 KiB per active session: max {biggest:,} B "
        f"{'met' if biggest <= 64 * 1024 else 'NOT MET'}"
    )


if __name__ == "__main__":
    main()
