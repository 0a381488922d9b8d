"""The stage sampler of ``trajwatch bench``'s attribution: CPU is charged to the stage
on top of the stack (a stage entered from another takes the ticks while it runs),
generator functions are charged as they are iterated, a long C call's CPU still reaches
its stage, and the marks come off after the replay."""

from __future__ import annotations

import hashlib
import time

import pytest

import ingest.pipeline
from trajwatch.bench_attribution import LOOP, StageSampler, _installed, _targets


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_stage_is_charged_its_own_cpu_not_its_inner_stages() -> None:
    sampler = StageSampler()
    inner = sampler.marked("inner", lambda: _spin(0.2))

    def outer() -> None:
        _spin(0.1)
        inner()

    with sampler.sampling():
        sampler.marked("outer", outer)()
    assert sampler.seconds["inner"] == pytest.approx(0.2, abs=0.03)
    assert sampler.seconds["outer"] == pytest.approx(0.1, abs=0.03)
    assert sampler.stack == [LOOP]


def test_a_generator_function_is_charged_as_it_is_iterated() -> None:
    sampler = StageSampler()

    def items():  # type: ignore[no-untyped-def]
        for k in range(3):
            _spin(0.05)
            yield k
            _spin(0.05)  # between items: the consumer's stage

    with sampler.sampling():
        assert list(sampler.marked("gen", items)()) == [0, 1, 2]
    assert sampler.seconds["gen"] == pytest.approx(0.3, abs=0.04)


def test_a_long_c_call_reaches_its_stage() -> None:
    sampler = StageSampler()
    data = b"x" * (200 << 20)  # one hashlib call of ~0.2-0.5 s: ticks coalesce meanwhile
    with sampler.sampling():
        sampler.marked("hash", lambda: hashlib.sha256(data).digest())()
    assert sampler.seconds["hash"] > 10 * sampler.seconds.get(LOOP, 0.0)
    assert sampler.seconds["hash"] > 0.05


def test_the_marks_come_off() -> None:
    from trajwatch.config import detector_set, load_config

    detectors = detector_set(load_config(None))
    before = ingest.pipeline.redact_step, ingest.pipeline.Pipeline.__dict__["_place"]
    kinds = [type(p) for p in detectors.prototypes]
    own = [("update" in vars(k)) for k in kinds]
    with _installed(StageSampler(), _targets(detectors)):
        assert ingest.pipeline.redact_step is not before[0]
    assert (ingest.pipeline.redact_step, ingest.pipeline.Pipeline.__dict__["_place"]) == before
    assert [("update" in vars(k)) for k in kinds] == own


def test_the_command_attributes_a_replay_of_the_bench_runs() -> None:
    """``python -m trajwatch.bench_attribution --runs 2``: every stage named, and the
    stages add up to the whole (what ``trajwatch bench``'s full run reports)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "trajwatch.bench_attribution", "--runs", "2"],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = {}
    for line in done.stdout.splitlines()[1:]:
        us, name = line.split(maxsplit=1)
        rows[name] = float(us)
    total = rows.pop("all of it")
    for name in ("decode (protobuf → span records)", "store writes (steps)", LOOP):
        assert name in rows
    assert any(name.startswith("detector `runaway_loop`") for name in rows)
    assert sum(rows.values()) == pytest.approx(total, rel=0.02, abs=0.5)


def test_the_report_prints_the_attributed_table() -> None:
    from trajwatch.bench import _attributed_rows

    rows = _attributed_rows(
        {
            "stages": {"sequencing (seq, compaction, step copies)": 8.14},
            "total": 150.0,
            "unmarked_total": 148.2,
        }
    )
    assert "| sequencing (seq, compaction, step copies) | 8.1 |" in rows
    assert rows[-3:] == [
        "| **replay with the stages marked, all of it (CPU)** | 150.0 |",
        "| (the same replay unmarked, phase 1) | 148.2 |",
        "",
    ]
