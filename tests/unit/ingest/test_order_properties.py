"""A session is what the agent did, not how the wire delivered it (issue 27, deliverable 5).

Recorded sessions' spans are re-cut into export batches of random sizes, shuffled within
the lateness window or across the whole run, split across partitions and redelivered; the
settled steps (ids, and seq order) and the standing alert ids must be those of one in-order
delivery. A step later than the window is judged where it arrives and the session judged
again in event-time order when it settles (:mod:`ingest.pipeline.rejudge`).
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.decoded import Decoded, SpanRecord
from ingest.formats.otlp_json import decode_otlp_json
from ingest.pipeline.engine import Pipeline
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.config import detector_set
from trajwatch.settings import Settings

pytestmark = pytest.mark.slow  # ~4.5 min: five pipelines per example over recorded sessions

RECORDED = sorted((ROOT / "fixtures/recorded").glob("run-00[0-4]-*.otlp.jsonl.gz"))[:2]
VARIED = [  # compactions, loops, an OpenInference research run, a prompt injection
    path
    for run in ("run-000", "run-012", "run-035", "run-045", "run-050")
    for path in sorted((ROOT / "fixtures/recorded").glob(f"{run}-*.otlp.jsonl.gz"))
]
LATENESS_MS = 10_000
T = TypeVar("T")
_SPANS: dict[Path, list[SpanRecord]] = {}


def spans_of(path: Path) -> list[SpanRecord]:
    if path not in _SPANS:
        spans: list[SpanRecord] = []
        with gzip.open(path, "rt") as lines:
            for line in lines:
                if line.strip():
                    decoded = decode_otlp_json(line, source="test", location=path.name)
                    spans.extend(decoded.spans)
        _SPANS[path] = spans
    return _SPANS[path]


def run(tmp: Path, name: str, deliveries: list[tuple[str, list[SpanRecord]]]) -> tuple:
    """Stored (session, seq, step id, kind) and alert ids after ``deliveries``
    (partition, spans) in order, a commit after each, then close."""
    return settled(tmp, name, [(p, Decoded(spans=list(spans))) for p, spans in deliveries])


def settled(tmp: Path, name: str, deliveries: list[tuple[str, Decoded]]) -> tuple:
    """Stored (session, seq, step id, kind) and standing alert ids after ``deliveries``
    (partition, decoded spans or drafts) in order, a commit after each, then close."""
    store = Store.open(f"sqlite:///{tmp / name}.db")
    try:
        pipeline = Pipeline(
            store,
            settings=Settings(lateness_ms=LATENESS_MS),
            detectors=detector_set({}),
        )
        for partition, decoded in deliveries:
            pipeline.feed_decoded(decoded, partition=partition)
            pipeline.commit()
        pipeline.close()
        steps = [
            (s.session_id, s.seq, s.step_id, str(s.kind))
            for session in store.sessions()
            for s in store.steps(session.session_id)
        ]
        alerts = sorted(a.alert_id for a in store.alerts())
    finally:
        store.close()
    return sorted(steps), alerts


def cut(items: list[T], rng: random.Random) -> list[list[T]]:
    """``items`` in order, cut into batches of 1 to 12."""
    out, i = [], 0
    while i < len(items):
        n = rng.randint(1, 12)
        out.append(items[i : i + n])
        i += n
    return out


SETTINGS = dict(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name.split(".")[0])
@settings(**SETTINGS)
@given(seed=st.integers(0, 2**32 - 1))
def test_rebatched_delivery_stores_the_same_steps_and_alerts(
    tmp_path: Path, path: Path, seed: int
) -> None:
    spans = spans_of(path)
    whole = run(tmp_path, f"whole-{seed}", [("0", spans)])
    cut_run = run(tmp_path, f"cut-{seed}", [("0", b) for b in cut(spans, random.Random(seed))])
    assert {step[::2] for step in cut_run[0]} == {step[::2] for step in whole[0]}
    assert cut_run[1] == whole[1]


@pytest.mark.parametrize("path", RECORDED[:1], ids=lambda p: p.name.split(".")[0])
def test_rebatched_delivery_stores_the_same_seq_order(tmp_path: Path, path: Path) -> None:
    spans = spans_of(path)
    whole = run(tmp_path, "whole", [("0", spans)])
    assert run(tmp_path, "cut", [("0", b) for b in cut(spans, random.Random(0))]) == whole


def _within_window(spans: list[SpanRecord], rng: random.Random) -> list[SpanRecord]:
    """``spans`` reordered as an exporter may: each span moves by less than the lateness
    (sorted by its end time plus a random delay below the window)."""
    window = LATENESS_MS * 1_000_000 // 2
    return sorted(spans, key=lambda s: s.end_ns + rng.randrange(window))


@pytest.mark.parametrize("path", RECORDED[:2], ids=lambda p: p.name.split(".")[0])
@settings(**SETTINGS)
@given(seed=st.integers(0, 2**32 - 1))
def test_shuffled_split_and_redelivered_stores_the_same_session(
    tmp_path: Path, path: Path, seed: int
) -> None:
    spans = spans_of(path)
    rng = random.Random(seed)
    ordered = sorted(spans, key=lambda s: s.end_ns)
    whole = run(tmp_path, f"whole-{seed}", [("0", ordered)])
    shuffled = _within_window(spans, rng)
    deliveries = [(str(rng.randrange(2)), b) for b in cut(shuffled, rng)]
    deliveries += [(p, b) for p, b in deliveries[: len(deliveries) // 3]]  # redelivered
    assert run(tmp_path, f"shuffled-{seed}", deliveries) == whole


@pytest.mark.parametrize("path", VARIED, ids=lambda p: p.name.split(".")[0])
@settings(**SETTINGS)
@given(seed=st.integers(0, 2**32 - 1))
def test_any_delivery_order_settles_to_the_same_session(
    tmp_path: Path, path: Path, seed: int
) -> None:
    """Spans in any order at all (far beyond the window), in random batches over three
    partitions, a third re-delivered: the settled session is the in-order one."""
    spans = spans_of(path)
    rng = random.Random(seed)
    whole = run(tmp_path, f"whole-{seed}", [("0", sorted(spans, key=lambda s: s.end_ns))])
    shuffled = rng.sample(spans, len(spans))
    deliveries = [(str(rng.randrange(3)), b) for b in cut(shuffled, rng)]
    deliveries += [(p, b) for p, b in rng.sample(deliveries, len(deliveries) // 3)]
    assert run(tmp_path, f"any-{seed}", deliveries) == whole
