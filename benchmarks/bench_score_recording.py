"""What recording the detectors' scores costs the pipeline's hot path.

The pipeline feeds every step to every detector; since the explorer reads the scores the
pipeline stored (``detectors/score_series.py``), it feeds them through
:meth:`detectors.score_series.ScoreRecorder.judge`, which also reads each score after its
detector's update. This feeds bench_explorer's session (``--steps``, 5,000) through fresh
clones of the configured detectors ``--runs`` times each way, alternating: the plain loop
(the pipeline's before) and ``judge`` (with a chunk taken every 256 steps, the default
checkpoint), and prints the minimum and median CPU of each and the difference per step.
Run: ``PYTHONPATH=. python benchmarks/bench_score_recording.py``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_explorer import CONFIG, session_steps  # noqa: E402
from detectors.base import Detector  # noqa: E402
from detectors.score_series import ScoreRecorder  # noqa: E402
from features.calls.step_features import analysed_view  # noqa: E402
from models.records import Alert  # noqa: E402
from trajwatch.config import detector_set, load_config  # noqa: E402


def _failed(detector: Detector, error: Exception) -> None:
    """A detector's error: the pipeline dead-letters it; nothing here."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--checkpoint-steps", type=int, default=256)
    args = parser.parse_args()
    detectors = detector_set(load_config(CONFIG))
    views = [analysed_view(step) for step in session_steps(args.steps)]
    cpu: dict[str, list[float]] = {"plain": [], "judge": []}
    for _ in range(args.runs):
        session, alerts = detectors.for_session(), list[Alert]()
        started = time.process_time()
        for view in views:
            for detector in session:
                try:
                    alerts.extend(detector.update(view))
                except Exception as error:
                    _failed(detector, error)
        cpu["plain"].append(time.process_time() - started)
        session, alerts = detectors.for_session(), []
        recorder = ScoreRecorder(session, start=0)
        started = time.process_time()
        for seq, view in enumerate(views, start=1):
            recorder.judge(view, alerts, _failed)
            if seq % args.checkpoint_steps == 0:
                recorder.take(upto=seq)
        cpu["judge"].append(time.process_time() - started)
    for way, values in cpu.items():
        print(
            f"{way}: min {min(values) * 1000:.1f} ms, median "
            f"{statistics.median(values) * 1000:.1f} ms for {len(views)} steps, "
            f"{len(session)} detectors"
        )
    extra_min = (min(cpu["judge"]) - min(cpu["plain"])) / len(views) * 1e6
    extra_median = (statistics.median(cpu["judge"]) - statistics.median(cpu["plain"])) / len(views)
    print(f"recording: {extra_min:+.2f} µs a step (min), {extra_median * 1e6:+.2f} µs (median)")


if __name__ == "__main__":
    main()
