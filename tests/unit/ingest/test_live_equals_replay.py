"""The determinism contract: a replay raises exactly the alerts live delivery raised.

Live, a worker sees the sessions of many runs interleaved, one partition per session
key, committed every few records, ordered by the lateness watermark — and a span
exporter's root span (the session's start) arrives last. A replay reads recording after
recording and commits rarely. Both must store the same steps in the same places and the
same alerts: same ids, onsets and evidence. The recordings are the committed fixtures,
with every detector on as the repository's ``trajwatch.toml`` configures them.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from ingest.formats.table import feed_record
from ingest.pipeline.engine import Pipeline
from ingest.sources.files import read_recordings
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

RECORDED = ROOT / "fixtures" / "recorded"


def runs_with(suffix: str, count: int) -> list[Path]:
    """One file (``suffix``) of each of ``count`` runs, failing runs and healthy ones."""
    with (RECORDED / "labels.csv").open() as labels:
        rows = list(csv.DictReader(labels))
    failing = [r for r in rows if r["failure"] != "none"]
    healthy = [r for r in rows if r["failure"] == "none"]
    chosen = [*failing[: count - 2], *healthy[:2]]
    files = []
    for row in chosen:
        named = [f for f in row["files"].split(";") if suffix in f]
        if named:
            files.append(RECORDED / named[0])
    assert len(files) >= count - 2, f"too few runs recorded as {suffix}"
    return files


def stored_facts(url: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The steps (id, place, late flag) and the alerts (id, onset, evidence) stored."""
    with Store.open(url) as store:
        sessions = [s.session_id for s in store.sessions()]
        steps = sorted(
            (s.step_id, s.seq, s.model_session, bool(s.detail.get("late")))
            for session in sessions
            for s in store.steps(session)
        )
        alerts = sorted(
            (a.alert_id, a.detector, a.onset_step_id, a.raised_seq, a.severity, a.evidence)
            for a in store.alerts(sessions)
        )
        return steps, alerts


@pytest.mark.parametrize("suffix", [".events.jsonl", ".otlp.binpb"])
def test_interleaved_live_delivery_raises_the_replayed_alerts(suffix: str, tmp_path: Path) -> None:
    files = runs_with(suffix, 10)
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))

    replayed = f"sqlite:///{tmp_path / 'replayed.db'}"
    replay(files, settings=Settings(db_url=replayed), detectors=detectors)

    live = f"sqlite:///{tmp_path / 'live.db'}"
    settings = Settings(db_url=live)
    per_run = [
        [record for _, records in read_recordings([path]) for f in records for record in f]
        for path in files
    ]
    with Store.open(live) as store:
        pipeline = Pipeline(store, settings=settings, detectors=detectors)
        # Round-robin over the runs, committing every 7 records: every commit holds
        # pieces of several sessions, and no session is ever whole in one commit.
        delivered = 0
        for batch in itertools.zip_longest(*per_run):
            for record in batch:
                if record is None:
                    continue
                feed_record(pipeline, record)
                delivered += 1
                if delivered % 7 == 0:
                    pipeline.commit()
        pipeline.close()

    steps, alerts = stored_facts(replayed)
    assert len({fact[1] for fact in alerts}) >= 3, "the runs should exercise several detectors"
    assert stored_facts(live) == (steps, alerts)
