"""The detectors' per-step scores the pipeline stores with its checkpoints
(detectors/score_series.py, the ``score_chunks`` table) are exactly what a full replay of
the stored steps gives — on the fixture incidents, through commits, checkpoints, a crash
and a reopen — and the explorer reads them instead of replaying, falling back to a replay
for a store without them."""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path

import polars as pl
import pytest
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from dashboards.session_view import (
    replay_detectors,
    score_lines,
    stored_series,
    threshold_lines,
)
from detectors.base import Detector
from detectors.registry import DetectorSet
from detectors.score_series import ScoreRecorder, decode_chunk, encode_chunk
from detectors.testing import Session
from ingest.decoded import Decoded, Draft
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.options import PipelineOptions
from models.records import Alert, Step
from models.store import Store
from tests.support.explorer_seed import CONFIG, Seeded, copy, detectors
from tests.support.paths import ROOT

APP = str(ROOT / "dashboards" / "app.py")
SESSION = "scores-1"


def incident(count: int) -> list[Step]:
    """A coding session that compacts, checkpoints, fetches and ends in a retry loop (the
    runaway-loop and budget detectors' scores move; bench_explorer's shape, smaller)."""
    s = Session(
        SESSION, goal="Fix the DST bug in parse_date (src/dates.py).", budget={"tool_calls": 900}
    )
    steps = [s.start()]
    i = 0
    while len(steps) < count - 40:
        if i and i % 60 == 0:
            steps.append(s.compaction(before=160_000, after=24_000))
        if i % 25 == 0:
            steps.append(s.checkpoint(f"ckpt-{i}", commit=f"{i:040x}"))
        steps.append(s.model(tokens_in=20_000 + 30 * (i % 60), tokens_out=400))
        steps += s.tool("read_file", {"path": f"src/mod{i % 20}.py"}, result=f"code {i}")
        steps += s.tool("bash", {"command": f"pytest -q tests/test_{i % 9}.py"}, result="1 passed")
        i += 1
    while len(steps) < count - 1:
        steps += s.tool("bash", {"command": "npm install"}, error="npm ERR! code E401", ok=False)
    steps.append(s.end(status="failure", claimed_done=False))
    return steps[:count]


def drafts(steps: list[Step]) -> list[Draft]:
    return [Draft(step=x, fallback_id=x.step_id, session_hint=x.session_id) for x in steps]


def same_as_replay(store: Store, session: str, detector_set: DetectorSet) -> int:
    """Assert the stored scores (rolled forward past the last chunk) draw exactly the rows
    a full replay draws; return how many steps were rolled forward."""
    steps = store.steps(session)
    cursor = store.session_cursor(session)
    assert cursor is not None
    chunks = [data for _, _, data in store.score_chunks(session)]
    series = stored_series(chunks, steps, detector_set, cursor.state)
    assert series is not None, session
    replayed = replay_detectors(steps, detector_set)
    assert score_lines(series).equals(score_lines(replayed)), session
    assert threshold_lines(series).equals(threshold_lines(replayed)), session
    return series.rolled


def chunk_ranges(store: Store, session: str) -> list[tuple[int, int]]:
    return [(start, end) for start, end, _ in store.score_chunks(session)]


def test_the_fixture_incidents_stored_scores_are_a_full_replays(explorer_store: Seeded) -> None:
    detector_set = detectors()
    with Store.open(explorer_store.url, migrate=False) as store:
        for name, session in explorer_store.sessions.items():
            assert same_as_replay(store, session, detector_set) == 0, name
            ranges = chunk_ranges(store, session)
            assert ranges[0][0] == 0 and ranges[-1][1] == len(store.steps(session)), name


def test_scores_stored_through_checkpoints_a_crash_and_a_reopen(tmp_path: Path) -> None:
    detector_set = detectors()
    steps = incident(900)
    url = f"sqlite:///{tmp_path / 'scores.db'}"
    options = PipelineOptions(checkpoint_steps=64, lateness_ms=0)
    with Store.open(url) as store:
        first = Pipeline(store, detectors=detector_set, settings=options)
        # checkpoints at 45 (the commit that hands agent_baseline its reference), 135,
        # 225 and 315: the commit at 360 leaves 45 steps past the last one
        for start in range(0, 360, 45):
            first.feed_decoded(Decoded(drafts=drafts(steps[start : start + 45])), partition="p")
            first.commit()
        # a chunk per checkpoint, back to back from the first step
        ranges = chunk_ranges(store, SESSION)
        assert len(ranges) > 3 and ranges[0][0] == 0
        assert all(a[1] == b[0] for a, b in pairwise(ranges))
        stored = len(store.steps(SESSION))
        assert ranges[-1][1] < stored  # live: steps past the last checkpoint
        assert same_as_replay(store, SESSION, detector_set) == stored - ranges[-1][1]
        # a batch fed but never committed: the process dies
        first.feed_decoded(Decoded(drafts=drafts(steps[360:405])), partition="p")
        del first
        assert len(store.steps(SESSION)) == stored
        # another process reopens the session from its checkpoint, rolls forward the steps
        # stored past it, and continues (the lost batch delivered again)
        second = Pipeline(store, detectors=detector_set, settings=options)
        for start in range(360, 900, 70):
            second.feed_decoded(Decoded(drafts=drafts(steps[start : start + 70])), partition="p")
            second.commit()
        assert same_as_replay(store, SESSION, detector_set) >= 0
        second.close()
        ranges = chunk_ranges(store, SESSION)
        assert all(a[1] == b[0] for a, b in pairwise(ranges))
        assert ranges[-1][1] == len(store.steps(SESSION)) == 900
        assert same_as_replay(store, SESSION, detector_set) == 0
        # the runaway loop at the end is in the stored scores, not only zeros
        series = stored_series(
            [d for _, _, d in store.score_chunks(SESSION)],
            store.steps(SESSION),
            detector_set,
            None,
        )
        assert series is not None
        loop = series.scores.filter(pl.col("detector") == "runaway_loop")["score"]
        assert loop.max() is not None and float(loop.max()) > 0.5  # type: ignore[arg-type]


def test_a_session_without_stored_scores_or_with_a_hole_is_replayed(tmp_path: Path) -> None:
    detector_set = detectors()
    steps = incident(300)
    url = f"sqlite:///{tmp_path / 'scores.db'}"
    with Store.open(url) as store:
        pipeline = Pipeline(
            store, detectors=detector_set, settings=PipelineOptions(checkpoint_steps=64)
        )
        for start in range(0, 300, 100):
            pipeline.feed_decoded(Decoded(drafts=drafts(steps[start : start + 100])), partition="p")
            pipeline.commit()
        pipeline.close()
        stored, cursor = store.steps(SESSION), store.session_cursor(SESSION)
        assert cursor is not None
        chunks = [d for _, _, d in store.score_chunks(SESSION)]
        assert len(chunks) >= 2
        assert stored_series(chunks, stored, detector_set, cursor.state) is not None
        assert stored_series([], stored, detector_set, cursor.state) is None  # older store
        assert stored_series(chunks[1:], stored, detector_set, cursor.state) is None  # a hole
        other = DetectorSet([d for d in detector_set.prototypes if d.name != "runaway_loop"])
        assert stored_series(chunks, stored, other, cursor.state) is None  # another config
        # past the stored chunks without a checkpoint where they end: no roll-forward
        assert stored_series(chunks[:1], stored, detector_set, cursor.state) is None


def test_a_chunk_round_trips_and_marks_a_failing_detector() -> None:
    from detectors.budget_overrun import BudgetOverrun
    from detectors.intent_drift.detector import IntentDrift

    class Broken(BudgetOverrun):
        """Reports a score that raises: a failure, as an update that raises."""

        name = "broken"

        @property
        def score(self) -> float:
            raise RuntimeError("a bug")

    class Flaky(IntentDrift):
        """Raises on every tool result."""

        def update(self, step: Step) -> list[Alert]:
            if step.kind == "tool_result":
                raise RuntimeError("a bug")
            return super().update(step)

    s = Session("c", goal="Fix the DST bug in parse_date")
    budget, drift, broken = BudgetOverrun(), Flaky(), Broken()
    recorder = ScoreRecorder([budget, drift, broken], start=10)
    failures: list[tuple[str, str]] = []

    def failed(detector: Detector, error: Exception) -> None:
        failures.append((detector.name, str(error)))

    steps = [s.start(), *s.tool("ls", {}), *s.tool("ls", {"path": "src"})]
    for step in steps[:3]:
        recorder.judge(step, [], failed)
    assert failures == [("intent_drift", "a bug")]  # update raised; a score that raises is not
    assert recorder.take(upto=12) is None  # three steps recorded, not two: a hole
    assert recorder.start == 12 and recorder.count == 0
    for step in steps[3:]:
        recorder.judge(step, [], failed)
    chunk = recorder.take(upto=14)
    assert chunk is not None
    back = decode_chunk(encode_chunk(chunk))
    assert back is not None and (back.start, back.end) == (12, 14)
    assert list(back.scores["budget_overrun"]) == [budget.score, budget.score]
    assert not math.isnan(back.scores["intent_drift"][0])
    assert math.isnan(back.scores["intent_drift"][1])  # its update raised on the result
    assert all(math.isnan(v) for v in back.scores["broken"]) and back.lines["broken"] == []
    # fixed lines read once a chunk; intent_drift's (they vary) at every step that differs
    assert back.lines["budget_overrun"] == [(12, {"warn": 0.8, "critical": 1.0})]
    assert back.lines["intent_drift"] == [(12, dict(drift.thresholds))]


def test_the_session_page_draws_the_stored_scores_and_replays_without_them(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded, tmp_path: Path
) -> None:
    session = explorer_store.sessions["loop"]

    def page(url: str) -> AppTest:
        monkeypatch.setenv("TRAJWATCH_DB_URL", url)
        monkeypatch.setenv("TRAJWATCH_CONFIG", str(CONFIG))
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["session"] = session
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    def drawn(at: AppTest) -> set[tuple[str, int, float]]:
        from tests.integration.explorer.test_explorer import element_rows

        chart = next(
            c
            for c in at.get("vega_lite_chart")
            if json.loads(c.proto.spec).get("title") == "Detector scores over the steps"
        )
        return {
            (r["detector"], r["seq"], r["score"])
            for r in element_rows(chart)
            if r["series"] == "score"
        }

    with Store.open(explorer_store.url, migrate=False) as store:
        replayed = set(score_lines(replay_detectors(store.steps(session), detectors())).iter_rows())
    at = page(explorer_store.url)
    assert any("as the pipeline computed it when it judged the step" in c.value for c in at.caption)
    assert drawn(at) == replayed
    # a store written before the scores were kept (then migrated): the page replays
    url = copy(explorer_store, tmp_path)
    with Store.open(url, migrate=False) as store, store.engine.begin() as connection:
        connection.execute(text("DELETE FROM score_chunks"))
    at = page(url)
    assert any("replayed now through the configured detectors" in c.value for c in at.caption)
    assert drawn(at) == replayed
