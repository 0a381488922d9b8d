"""The stage clock of ``trajwatch bench``'s attribution: each stage is charged its own
time (a stage entered from another stops the other's clock), generator functions are
charged as they are iterated, and the wrappers come off after the replay."""

from __future__ import annotations

import time

import ingest.pipeline
from trajwatch.bench_attribution import LOOP, StageClock, _installed, _targets


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_stage_is_charged_its_own_time_not_its_inner_stages() -> None:
    clock = StageClock()
    inner = clock.timed("inner", lambda: _spin(0.05))

    def outer() -> None:
        _spin(0.02)
        inner()

    clock.timed("outer", outer)()
    clock.leave()
    assert 0.045 <= clock.seconds["inner"] < 0.08
    assert 0.015 <= clock.seconds["outer"] < 0.045
    assert clock.calls == {"outer": 1, "inner": 1}
    assert clock.entered_from == {LOOP: 1, "outer": 1}


def test_a_generator_function_is_charged_as_it_is_iterated() -> None:
    clock = StageClock()

    def items():  # type: ignore[no-untyped-def]
        for k in range(3):
            _spin(0.01)
            yield k

    assert list(clock.timed("gen", items)()) == [0, 1, 2]
    clock.leave()
    assert clock.seconds["gen"] >= 0.028
    assert clock.calls["gen"] == 4  # three items and the end


def test_the_wrappers_come_off() -> None:
    from trajwatch.config import detector_set, load_config

    detectors = detector_set(load_config(None))
    before = ingest.pipeline.redact_step, ingest.pipeline.Pipeline.__dict__["_place"]
    kinds = [type(p) for p in detectors.prototypes]
    own = [("update" in vars(k)) for k in kinds]
    with _installed(StageClock(), _targets(detectors)):
        assert ingest.pipeline.redact_step is not before[0]
    assert (ingest.pipeline.redact_step, ingest.pipeline.Pipeline.__dict__["_place"]) == before
    assert [("update" in vars(k)) for k in kinds] == own
