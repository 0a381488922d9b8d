"""Where ``serve``'s CPU goes beside ``replay``'s, phase by phase, on trajwatch bench's spans.

Phases 1 and 2 of ``trajwatch bench`` (:mod:`trajwatch.bench.run`: the same 200 runs, the
replay in this process, ``serve`` in a child fed by four keep-alive exporters), with each
phase's CPU (``time.thread_time``) added up around the methods both paths share
(``Pipeline.commit``, ``Pipeline.feed_decoded``, the store unit's writes) and those only
``serve`` has (the log's write, decoding, answering), and the event-loop thread's CPU
beside the pipeline thread's. ``--trees`` runs the ``serve`` child from each source tree
in turn, in the same pass as one replay (so a before/after pair shares the machine's
load), and ``--cpu`` with each placement of its threads (``TRAJWATCH_CPU``: ``all,auto``
compares the OS's placement with one CPU); medians of ``--repeat`` passes. The wrappers
cost both paths alike (~1 µs a call).
Run: ``PYTHONPATH=. python benchmarks/bench_serve_phases.py --trees /work/main,.``
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CPU: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def _wrap(owner: Any, name: str, label: str) -> None:
    f = getattr(owner, name)

    @functools.wraps(f)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.thread_time()
        try:
            return f(*args, **kwargs)
        finally:
            CPU[label] += time.thread_time() - t
            CALLS[label] += 1

    setattr(owner, name, timed)


def _instrument_shared() -> None:
    from ingest.pipeline.engine import Pipeline
    from ingest.pipeline.session import LiveSession
    from models.store import StoreUnit

    for name in ("commit", "_release", "feed_decoded"):
        _wrap(Pipeline, name, f"Pipeline.{name}")
    _wrap(LiveSession, "cursor", "LiveSession.cursor")
    for name in ("add_storable_steps", "upsert_session", "existing_step_ids"):
        _wrap(StoreUnit, name, f"StoreUnit.{name}")


def _report() -> dict[str, list[float]]:
    return {k: [round(v, 3), CALLS[k]] for k, v in sorted(CPU.items(), key=lambda kv: -kv[1])}


def child(spec: dict[str, Any]) -> None:
    """``serve`` as the bench runs it, instrumented; prints its phases when stopped."""
    _instrument_shared()
    from trajwatch.bench.run import IDLE_FLUSH_MS
    from trajwatch.config import detector_set, load_config
    from trajwatch.service import serve
    from trajwatch.service.cpu_placement import place
    from trajwatch.settings import Settings

    for name in ("_accept", "_decode", "_feed", "_commit"):
        _wrap(serve.LiveIngest, name, f"LiveIngest.{name}")
    from ingest.sources.inbound_log import InboundLog

    _wrap(InboundLog, "write", "InboundLog.write")
    _wrap(serve, "answer_all", "answer_all")
    result: dict[str, Any] = {}
    run = serve.LiveIngest._run

    def pipeline_thread(self: Any) -> None:
        try:
            run(self)
        finally:
            result["pipeline_cpu"] = round(time.thread_time(), 3)

    serve.LiveIngest._run = pipeline_thread  # type: ignore[method-assign]
    settings = Settings(
        db_url=spec["db_url"],
        inbound_dir=spec["inbound_dir"],
        idle_flush_ms=IDLE_FLUSH_MS,
        cpu=spec["cpu"],
    )
    place(settings.cpu, single=True)  # as trajwatch serve does
    service = serve.Service(
        settings, detector_set(load_config(None)), host="127.0.0.1", port=spec["port"]
    )
    CPU.clear()
    CALLS.clear()
    start = time.thread_time()
    service.run()
    result["loop_cpu"] = round(time.thread_time() - start, 3)
    result["phases"] = _report()
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trees", default=str(ROOT), help="comma-separated source trees")
    parser.add_argument(
        "--cpu", default="auto", help="comma-separated TRAJWATCH_CPU values, each tree with each"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    _instrument_shared()
    from models.store import Store
    from trajwatch.bench import run as bench
    from trajwatch.bench.spans import agent_traces, encode_batches
    from trajwatch.config import detector_set, load_config
    from trajwatch.service.spawned import free_port, wait_healthy

    runs = [
        (str(Path(t).resolve()), cpu) for t in args.trees.split(",") for cpu in args.cpu.split(",")
    ]
    detectors = detector_set(load_config(None))
    traces = [encode_batches(t, bench.BATCH) for t in agent_traces(args.traces, prefix="bench")]
    spans = args.traces * len(bench._spans_of(traces[0]))
    ratios: dict[tuple[str, str], list[tuple[float, float]]] = {run: [] for run in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            sub = Path(tmp) / f"pass{k}"
            sub.mkdir()
            print(f"pass {k}: load {os.getloadavg()[0]:.2f}", flush=True)
            CPU.clear()
            CALLS.clear()
            replayed = bench._replay(traces, sub, detectors)
            print(
                f"  replay: {spans / replayed['seconds']:.0f} spans/s, "
                f"{replayed['cpu_s']:.2f} s CPU {_report()}",
                flush=True,
            )
            for n, (tree, cpu) in enumerate(runs):
                port = free_port()
                url = f"sqlite:///{sub}/serve{n}.db"
                spec = {"db_url": url, "inbound_dir": f"{sub}/inbound{n}", "port": port, "cpu": cpu}
                proc = subprocess.Popen(
                    [sys.executable, __file__, "--child", json.dumps(spec)],
                    stdout=subprocess.PIPE,
                    env={**os.environ, "PYTHONPATH": tree},
                )
                wait_healthy(f"http://127.0.0.1:{port}", proc)
                cpu0, wall0 = bench._cpu_seconds(proc.pid), time.monotonic()
                bench._send_all(port, traces)
                bench._settle(port)
                cpu1, wall = bench._cpu_seconds(proc.pid), time.monotonic() - wall0
                if cpu0 is None or cpu1 is None:
                    raise SystemExit("needs /proc/<pid>/stat (Linux) for the child's CPU")
                seconds = cpu1 - cpu0
                proc.send_signal(signal.SIGTERM)
                out = json.loads(proc.communicate()[0])
                with Store.open(url) as store:
                    ids = sorted(a.alert_id for a in store.alerts(replayed["sessions"]))
                ratios[tree, cpu].append((replayed["seconds"] / wall, replayed["cpu_s"] / seconds))
                print(
                    f"  serve ({tree}, cpu {cpu}): {spans / wall:.0f} spans/s, {seconds:.2f} s CPU "
                    f"(pipeline thread {out['pipeline_cpu']}, event loop {out['loop_cpu']}); "
                    f"÷ replay {ratios[tree, cpu][-1][0]:.3f} wall, "
                    f"{ratios[tree, cpu][-1][1]:.3f} CPU; "
                    f"alert ids equal: {ids == replayed['alert_ids']}\n    {out['phases']}",
                    flush=True,
                )
    for (tree, cpu), pairs in ratios.items():
        print(
            f"{tree}, cpu {cpu}: serve ÷ replay, medians: "
            f"{statistics.median(w for w, _ in pairs):.3f} "
            f"wall, {statistics.median(c for _, c in pairs):.3f} CPU; "
            f"load now {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]))
    else:
        main()
