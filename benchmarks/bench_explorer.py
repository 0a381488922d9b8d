"""The explorer's session page for a session of 5,000 steps (target: renders in < 2 s).

A coding session of ``--steps`` steps (model calls, file reads, test runs, fetches from a
registry, a compaction every 1,000 steps, checkpoints, and a retry loop near the end that
the detectors catch) is stored through the pipeline with the project's detectors. The
session page (``dashboards/app.py?session=…``) is then rendered ``--runs`` times by
Streamlit's AppTest — the whole script run on the server: the store opened and read, the
polars tables, every chart's spec and data, and each detector's score over the steps (the
scores the pipeline stored with its checkpoints, read back). Each render starts cold
(Streamlit's caches cleared: the store is opened and read again) unless ``--warm``; the
median is what the target is about. ``--replay`` also switches on the page's config
check (the stored steps replayed through the configured detectors, their alerts compared
with the stored). The
browser's drawing is not included. The CPU time of a render is printed beside the wall
time: on a loaded machine (load above the core count) the wall time is mostly waiting.
Run: ``PYTHONPATH=. python benchmarks/bench_explorer.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from detectors.testing import Session  # noqa: E402
from ingest.decoded import Decoded, Draft  # noqa: E402
from ingest.pipeline.engine import Pipeline  # noqa: E402
from models.records import Step  # noqa: E402
from models.store import Store  # noqa: E402
from trajwatch.config import detector_set, load_config  # noqa: E402

CONFIG = ROOT / "trajwatch.toml"
TARGET_S = 2.0


def session_steps(count: int) -> list[Step]:
    s = Session("bench-5k", goal="Fix the DST bug in parse_date (src/dates.py) and add a test.")
    steps = [s.start()]
    i = 0
    while len(steps) < count - 12:
        if i and i % 250 == 0:
            steps.append(s.compaction(before=160_000, after=24_000))
        if i % 40 == 0:
            steps.append(s.checkpoint(f"ckpt-{i}", commit=f"{i:040x}"))
        steps.append(s.model(tokens_in=20_000 + 30 * (i % 250), tokens_out=400))
        steps += s.tool("read_file", {"path": f"src/mod{i % 60}.py"}, result=f"code {i}")
        call, result = s.tool(
            "bash", {"command": f"pytest -q tests/test_{i % 45}.py"}, result=f"{i % 7} passed"
        )
        steps += [call, result]
        if i % 25 == 0:
            fetch, done = s.tool(
                "bash",
                {"command": "pip download requests==2.32.3"},
                result="Saved requests-2.32.3.whl",
            )
            steps += [fetch, s.egress("https://pypi.org/simple/requests/", parent=fetch), done]
        i += 1
    while len(steps) < count - 1:  # the retry loop the on-call engineer is paged for
        steps += s.tool("bash", {"command": "npm install"}, error="npm ERR! code E401", ok=False)
    steps.append(s.end(status="failure", claimed_done=False))
    return steps[:count]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warm", action="store_true", help="keep the caches between renders")
    parser.add_argument("--replay", action="store_true", help="with the detector replay on")
    args = parser.parse_args()
    detectors = detector_set(load_config(CONFIG))
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/explorer.db"
        steps = session_steps(args.steps)
        with Store.open(url) as store:
            pipeline = Pipeline(store, detectors=detectors)
            drafts = [
                Draft(step=x, fallback_id=x.step_id, session_hint=x.session_id) for x in steps
            ]
            pipeline.feed_decoded(Decoded(drafts=drafts), partition="bench")
            pipeline.close()
            stored = store.steps("bench-5k")
            alerts = store.alerts(["bench-5k"])
        os.environ["TRAJWATCH_DB_URL"] = url
        os.environ["TRAJWATCH_CONFIG"] = str(CONFIG)
        app = str(ROOT / "dashboards" / "app.py")
        seconds: list[float] = []
        cpus: list[float] = []
        # One AppTest for every render: a new one scans the installed packages for
        # components first (~1.7 s here), which a served app does once at its start.
        at = AppTest.from_file(app, default_timeout=120)
        at.query_params["session"] = "bench-5k"
        for run in range(args.runs + 1):  # the first run imports the app's modules
            if not args.warm:
                st.cache_data.clear()
                st.cache_resource.clear()
            started, cpu = time.perf_counter(), time.process_time()
            if args.replay and run:
                at.toggle(key="d_replay").set_value(True)
            at.run()
            elapsed = time.perf_counter() - started
            cpu = time.process_time() - cpu
            if at.exception:
                raise SystemExit(f"the page failed: {at.exception[0].value}")
            if args.replay and run and not any("stored alerts" in m.value for m in at.success):
                raise SystemExit("the detector replay did not run")
            if run:
                seconds.append(elapsed)
                cpus.append(cpu)
        median = statistics.median(seconds)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(
            f"session page, {len(stored)} stored steps, {len(alerts)} alerts, "
            f"{'warm' if args.warm else 'cold'}"
            f"{', detectors replayed' if args.replay else ''}: "
            f"median {median:.2f} s over {len(seconds)} renders "
            f"(min {min(seconds):.2f}, max {max(seconds):.2f}), "
            f"CPU {statistics.median(cpus):.2f} s; "
            f"target < {TARGET_S:.0f} s: {'met' if median < TARGET_S else 'MISSED'}"
        )
        print(
            f"machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} cpus "
            f"(load {load:.1f}), Python {platform.python_version()}"
        )


if __name__ == "__main__":
    main()
