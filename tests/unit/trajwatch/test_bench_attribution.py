"""The stage sampler of ``trajwatch bench``'s attribution: CPU is charged to the stage
on top of the stack (a stage entered from another takes the ticks while it runs),
generator functions are charged as they are iterated, a long C call's CPU still reaches
its stage, and the marks come off after the replay."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

import ingest.pipeline.engine
import ingest.pipeline.ordering
import ingest.pipeline.sequencing
from trajwatch.bench.attribution import LOOP, StageSampler, _installed, _targets


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_stage_is_charged_its_own_cpu_not_its_inner_stages() -> None:
    sampler = StageSampler()
    inner = sampler.marked("inner", lambda: _spin(0.1))

    def outer() -> None:
        _spin(0.05)
        inner()

    with sampler.sampling():
        sampler.marked("outer", outer)()
    # good to a tick or two of the kernel's (4 ms here)
    assert sampler.seconds["inner"] == pytest.approx(0.1, abs=0.02)
    assert sampler.seconds["outer"] == pytest.approx(0.05, abs=0.02)
    assert sampler.stack == [LOOP]


def test_a_generator_function_is_charged_as_it_is_iterated() -> None:
    sampler = StageSampler()

    def items():  # type: ignore[no-untyped-def]
        for k in range(3):
            _spin(0.025)
            yield k
            _spin(0.025)  # between items: the consumer's stage

    with sampler.sampling():
        assert list(sampler.marked("gen", items)()) == [0, 1, 2]
    assert sampler.seconds["gen"] == pytest.approx(0.15, abs=0.025)


def test_a_long_c_call_reaches_its_stage() -> None:
    sampler = StageSampler()
    data = b"x" * (64 << 20)  # one hashlib call of ~0.1 s: ticks coalesce meanwhile
    with sampler.sampling():
        sampler.marked("hash", lambda: hashlib.sha256(data).digest())()
    assert sampler.seconds["hash"] > 10 * sampler.seconds.get(LOOP, 0.0)
    assert sampler.seconds["hash"] > 0.03


def test_a_tick_landing_inside_a_tick_loses_no_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython may run the next SIGPROF handler inside this one (between two bytecodes):
    the sums still add up to the CPU the clock shows (the 12-07 CI lost two ticks)."""
    import trajwatch.bench.attribution as attribution

    sampler = StageSampler()

    class Sums(dict[str, float]):
        nested = False

        def get(self, key: str, default: float = 0.0) -> float:  # type: ignore[override]
            value = super().get(key, default)
            if not Sums.nested:  # the next signal arrives while this sum is read
                Sums.nested = True
                sampler._tick(0, None)
            return value

    clock = iter([1.0, 1.5, 2.0, 3.0])
    monkeypatch.setattr(attribution.time, "process_time", lambda: next(clock))
    sampler.seconds = Sums()
    sampler._tick(0, None)
    sampler.stack.append("stage")
    sampler._tick(0, None)
    # every second the clock moved since it started (at 0) is charged, once
    assert sum(sampler.seconds.values()) == pytest.approx(sampler._last)
    assert min(sampler.seconds.values()) >= 0.0


def test_the_marks_come_off() -> None:
    from trajwatch.config import detector_set, load_config

    detectors = detector_set(load_config(None))
    engine, ordering = ingest.pipeline.engine, ingest.pipeline.ordering
    sequencing = ingest.pipeline.sequencing
    before = ordering.redact_step, engine.Pipeline.__dict__["_release"], sequencing.place
    kinds = [type(p) for p in detectors.prototypes]
    own = [("update" in vars(k)) for k in kinds]
    from features.calls.step_features import StepFeatures

    terms = StepFeatures.__dict__["terms"]
    with _installed(StageSampler(), _targets(detectors)):
        assert ordering.redact_step is not before[0]
        assert sequencing.place is not before[2]
        assert StepFeatures.__dict__["terms"] is not terms  # a feature family, marked
    after = ordering.redact_step, engine.Pipeline.__dict__["_release"], sequencing.place
    assert after == before
    assert StepFeatures.__dict__["terms"] is terms
    assert [("update" in vars(k)) for k in kinds] == own


def test_the_command_attributes_a_replay_of_recordings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m trajwatch.bench.attribution --json FOLDER`` on two of the bench's runs:
    every stage named, the feature families apart, and the stages add up to the whole
    (what ``trajwatch bench``'s full run reports)."""
    from trajwatch.bench.attribution import main
    from trajwatch.bench.spans import BATCH, agent_traces, encode_batches, length_delimited

    for i, run in enumerate(agent_traces(2, prefix="bench")):
        (tmp_path / f"run-{i}.otlp.binpb").write_bytes(length_delimited(encode_batches(run, BATCH)))
    main(["--json", str(tmp_path)])
    done = json.loads(capsys.readouterr().out)
    assert done["steps"] == 268
    rows = done["us_per_step"]
    for name in ("decode", "normalise", "redaction", "sequencing", "store_steps", LOOP):
        assert name in rows
    assert {"features.terms", "features.action", "detector.runaway_loop"} <= set(rows)
    assert sum(rows.values()) == pytest.approx(done["total"], rel=0.02, abs=0.5)


def test_the_command_prints_the_stages_beside_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trajwatch.bench.attribution import main
    from trajwatch.bench.spans import BATCH, agent_traces, encode_batches, length_delimited

    for i, run in enumerate(agent_traces(1, prefix="bench")):
        (tmp_path / f"run-{i}.otlp.binpb").write_bytes(length_delimited(encode_batches(run, BATCH)))
    main([str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("134 steps;")
    decode = next(line for line in lines if "decode" in line.split()[2:4])  # OVER or not
    assert decode.split()[1] != "-"  # the committed file budgets it
    assert lines[-2].startswith("over budget: ") or lines[-1].startswith("over budget: ")


def test_the_committed_budget_names_only_stages_the_attribution_has() -> None:
    """A stage renamed in the attribution must be renamed in the budget too, or it
    would silently go unbudgeted."""
    from trajwatch.bench.attribution import DESCRIPTIONS
    from trajwatch.bench.budget import BUDGET_FILE, load_budget
    from trajwatch.config import detector_set, load_config

    budget = load_budget(BUDGET_FILE)
    assert budget is not None and budget.total is not None
    known = set(DESCRIPTIONS) | {f"detector.{n}" for n in detector_set(load_config(None)).names}
    assert set(budget.stages) <= known, set(budget.stages) - known
    assert sum(budget.stages.values()) <= budget.total


def test_a_stage_over_its_scaled_budget_is_named() -> None:
    from trajwatch.bench.budget import Budget, over_budget

    budget = Budget(stages={"decode": 10.0, "release": 5.0}, total=30.0, calibration_s=0.1)
    slow = budget.scaled(0.2)  # a machine half as fast: twice the budget
    assert slow.stages == {"decode": 20.0, "release": 10.0} and slow.total == 60.0
    figures = {"decode": 15.0, "release": 12.0, "sequencing": 99.0}  # no budget: never over
    assert over_budget(figures, budget) == ["release", "decode", "total"]  # largest excess first
    assert over_budget(figures, slow) == ["release", "total"]
    assert over_budget({"decode": 1.0}, None) == []


def test_the_report_prints_the_attributed_table() -> None:
    from trajwatch.bench.run import _attributed_rows

    rows = _attributed_rows(
        {
            "stages": {"sequencing": 8.14, "decode": 3.0},
            "total": 150.0,
            "unmarked_total": 148.2,
            "budget": {"sequencing": 6.0, "decode": 4.0},
            "budget_total": 140.0,
            "budget_scale": 1.5,
            "over_budget": ["sequencing", "total"],
        }
    )
    assert "| sequencing **over** | 8.1 | 6.0 |" in rows
    assert "| decode | 3.0 | 4.0 |" in rows
    assert "| **replay with the stages marked, all of it (CPU)** | 150.0 | 140.0 |" in rows
    assert rows[-2].endswith("scaled ×1.50 to this machine): sequencing, total")
