"""Why ``intent_drift`` does not rest on a change detector: the issue's suggested design,
measured on labelled recordings.

For every tool call with content (words, paths, hosts) the similarity to the task is
the larger cosine of its hashed term vector (``features.calls.vectors``) to the goal's
and to the centroid of the session's first ``--early`` calls (the early trajectory).
The stream is standardised with the mean and deviation of those first calls, and a
change detector from river (Page-Hinkley, downward; ADWIN) watches it. A session counts
as detected when the detector fires after the early calls. The table gives, per
setting, how many drift runs, healthy runs and runs labelled with another failure it
fires on: a usable detector fires on the first and not on the second.

Run: ``.venv/bin/python benchmarks/drift_change_detection.py build/tune7 build/tune11``
(folders made by ``fixtures/generate``; each is replayed into a temporary store).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from pathlib import Path

from river.drift import ADWIN, PageHinkley

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from features.calls.vectors import (
    CONTENT_DROP,
    SparseVector,
    add_into,
    cosine,
    goal_text,
    hash_vector,
    step_terms,
    tokenize,
)
from models.records import Step, StepKind
from models.store import Store
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

SETTINGS = [
    (
        "Page-Hinkley delta=0.005 threshold=5",
        lambda: PageHinkley(min_instances=5, delta=0.005, threshold=5.0, mode="down"),
    ),
    (
        "Page-Hinkley delta=0.005 threshold=10",
        lambda: PageHinkley(min_instances=5, delta=0.005, threshold=10.0, mode="down"),
    ),
    (
        "Page-Hinkley delta=0.05 threshold=10",
        lambda: PageHinkley(min_instances=5, delta=0.05, threshold=10.0, mode="down"),
    ),
    (
        "Page-Hinkley delta=0.1 threshold=20",
        lambda: PageHinkley(min_instances=5, delta=0.1, threshold=20.0, mode="down"),
    ),
    ("ADWIN delta=0.002", lambda: ADWIN(delta=0.002, grace_period=5)),
    ("ADWIN delta=0.0001", lambda: ADWIN(delta=0.0001, grace_period=5)),
]


def similarity_stream(steps: list[Step], early: int) -> tuple[list[float], list[float]]:
    """The early calls' similarities (for standardising) and the later ones'."""
    goal: SparseVector = {}
    centroid: SparseVector = {}
    first: list[float] = []
    later: list[float] = []
    for step in steps:
        if not goal and (text := goal_text(step)):
            goal = hash_vector(tokenize(text, drop=CONTENT_DROP))
        if step.kind != StepKind.TOOL_CALL:
            continue
        terms = step_terms(step)
        if terms.empty:
            continue
        vec = hash_vector([*terms.words, *terms.paths, *terms.hosts])
        sim = max(cosine(vec, goal), cosine(vec, centroid) if centroid else 0.0)
        if len(first) < early:
            add_into(centroid, vec)
            first.append(sim)
        else:
            later.append(sim)
    return first, later


def fires(make, first: list[float], later: list[float]) -> bool:
    if len(first) < 2:
        return False
    mean, deviation = statistics.mean(first), max(statistics.pstdev(first), 0.05)
    detector = make()
    for sim in first:
        detector.update((sim - mean) / deviation)
    for sim in later:
        detector.update((sim - mean) / deviation)
        if detector.drift_detected:
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--early", type=int, default=5)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    detectors = detector_set(load_config(root / "trajwatch.toml"))
    for folder in args.folders:
        labels = {
            r["session_id"]: r["failure"] for r in csv.DictReader((folder / "labels.csv").open())
        }
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/replay.db"
            replay([folder], settings=Settings(db_url=url), detectors=detectors)
            with Store.open(url) as store:
                streams = {
                    info.session_id: similarity_stream(store.steps(info.session_id), args.early)
                    for info in store.sessions()
                    if info.session_id in labels
                }
        groups = {
            "drift": [s for s in streams if labels[s] == "intent_drift"],
            "healthy": [s for s in streams if labels[s] == "none"],
            "other failure": [s for s in streams if labels[s] not in ("none", "intent_drift")],
        }
        print(f"{folder}: sessions fired on (drift / healthy / other failure)")
        for name, make in SETTINGS:
            counts = [
                f"{sum(fires(make, *streams[s]) for s in members)}/{len(members)}"
                for members in groups.values()
            ]
            print(f"  {name:<40} {'  '.join(counts)}")


if __name__ == "__main__":
    main()
