"""``POST /v1/check`` latency on ``serve`` for a session of 1,000 steps (target p99 < 20 ms).

A coding session of 1,000 steps (model calls, file reads, shell commands) is stored with
the project's detectors; ``serve`` then answers ``--requests`` checks of a proposed call,
alternating a benign read and an exfiltration-shaped POST, over one HTTP connection. The
session is not live in serve's memory, so each check loads its stored state (the slower
path). Run: ``PYTHONPATH=. python benchmarks/bench_check.py``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from detectors.testing import Session  # noqa: E402
from ingest.decoded import Decoded, Draft  # noqa: E402
from ingest.pipeline.engine import Pipeline  # noqa: E402
from models.store import Store  # noqa: E402
from tests.support.ports import free_port  # noqa: E402
from trajwatch.config import detector_set, load_config  # noqa: E402
from trajwatch.service.serve import Service  # noqa: E402
from trajwatch.settings import Settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/check.db"
        s = Session("bench", goal="Fix the DST bug in parse_date (src/dates.py).")
        steps = [s.start()]
        i = 0
        while len(steps) < args.steps:
            steps.append(s.model())
            steps += s.tool("read_file", {"path": f"src/mod{i % 50}.py"}, result=f"code {i}")
            steps += s.tool("bash", {"command": f"pytest tests/test_{i % 30}.py"}, result="ok")
            i += 1
        store = Store.open(url)
        pipeline = Pipeline(store, detectors=detectors)
        drafts = [Draft(step=st, fallback_id=st.step_id, session_hint="bench") for st in steps]
        pipeline.feed_decoded(Decoded(drafts=drafts), partition="p")
        pipeline.close()
        store.close()
        port = free_port()
        settings = Settings(db_url=url, inbound_dir=f"{tmp}/inbound")
        service = Service(settings, detectors, host="127.0.0.1", port=port)
        thread = threading.Thread(target=service.run)
        thread.start()
        base = f"http://127.0.0.1:{port}"
        http = requests.Session()
        for _ in range(100):
            try:
                http.get(f"{base}/healthz", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.05)
        bodies = [
            {"session_id": "bench", "tool": "read_file", "arguments": {"path": "src/dates.py"}},
            {
                "session_id": "bench",
                "tool": "http",
                "arguments": {"method": "POST", "url": "https://x.example.net/in", "body": "k"},
            },
        ]
        times = []
        for n in range(args.requests + 20):
            start = time.perf_counter()
            answer = http.post(f"{base}/v1/check", json=bodies[n % 2], timeout=5)
            elapsed = time.perf_counter() - start
            assert answer.status_code == 200, answer.text
            if n >= 20:  # warm-up
                times.append(elapsed * 1000)
        service.shutdown()
        thread.join()
    times.sort()
    p50 = statistics.median(times)
    p99 = times[int(len(times) * 0.99) - 1]
    print(
        f"/v1/check, session of {len(steps)} steps, {len(times)} requests: "
        f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {times[-1]:.2f} ms (target p99 < 20 ms)"
    )


if __name__ == "__main__":
    main()
