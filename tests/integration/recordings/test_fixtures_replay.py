"""The committed recordings replay into exactly the runs they record: every representation
of a run (OTLP JSON lines, OTLP protobuf, session log, debug bundle) is one set of steps."""

from __future__ import annotations

import csv
import gzip
import json
import lzma
from collections import Counter
from pathlib import Path

import pytest

from models.records import StepKind
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

RECORDED = ROOT / "fixtures" / "recorded"


def read_events(path: Path) -> list[dict[str, object]]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:6] == b"\xfd7zXZ\x00":
        data = lzma.decompress(data)
    return [json.loads(line) for line in data.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('fixtures') / 'tw.db'}"
    summary = replay([RECORDED], settings=Settings(db_url=url))
    assert summary.dead_letters == 0
    return url


def test_each_run_is_stored_once_whatever_the_representations(replayed: str) -> None:
    with (RECORDED / "labels.csv").open() as labels:
        rows = list(csv.DictReader(labels))
    with Store.open(replayed) as store:
        assert len(store.sessions()) == len(rows)
        for row in rows:
            steps = store.steps(row["session_id"])
            kinds = Counter(s.kind for s in steps)
            assert [s.seq for s in steps] == list(range(len(steps)))
            assert kinds[StepKind.START] == 1 and kinds[StepKind.END] == 1, row["run_id"]
            assert kinds[StepKind.TOOL_CALL] == kinds[StepKind.TOOL_RESULT]
            events_file = [f for f in row["files"].split(";") if ".events.jsonl" in f]
            if not events_file:
                continue
            events = Counter(str(e["type"]) for e in read_events(RECORDED / events_file[0]))
            assert kinds[StepKind.TOOL_CALL] == events["tool_call"], row["run_id"]
            # A model call that failed is a failed chat span, and an `error` in the log.
            ok_calls = sum(s.kind == StepKind.MODEL_CALL and s.status == "ok" for s in steps)
            failed_calls = kinds[StepKind.MODEL_CALL] - ok_calls
            assert ok_calls == events["model_call"], row["run_id"]
            assert failed_calls <= events["error"], row["run_id"]
            assert kinds[StepKind.CHECKPOINT] == events["checkpoint"]
            explicit = [s for s in steps if s.kind == "compaction" and not s.detail["inferred"]]
            assert len(explicit) == events["compaction"], row["run_id"]


def test_egress_spans_land_inside_their_tool_call(replayed: str) -> None:
    with Store.open(replayed) as store:
        egress = [
            (s, store_steps)
            for info in store.sessions()
            for store_steps in [store.steps(info.session_id)]
            for s in store_steps
            if s.kind == StepKind.EGRESS
        ]
    assert len(egress) > 50
    for step, steps in egress:
        by_id = {s.step_id: s for s in steps}
        parent = by_id[step.parent_step_id] if step.parent_step_id else None
        assert parent is not None and parent.kind == StepKind.TOOL_CALL
        assert parent.seq < step.seq
