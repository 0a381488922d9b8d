"""The notebooks run top to bottom on small data, are committed without outputs, and the
config the tuning notebook writes is what `trajwatch replay --config` then runs."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.notebook_run import Kernel
from tests.support.paths import ROOT
from trajwatch.analysis import tuning
from trajwatch.analysis.evaluate import detect, load_runs
from trajwatch.cli.main import main
from trajwatch.config import detector_set, load_config

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TUNING = {
    "tune_loops": ("runaway_loop", ["runaway_loop", "none"]),
    "tune_drift": ("intent_drift", ["intent_drift", "none"]),
    "tune_compliance": ("compliance_decay", ["compliance_decay", "none"]),
    "tune_egress": ("egress_gaming", ["egress_gaming", "none"]),
}
SMALL = {"PER_SCENARIO": 1, "TRAIL_TRACES": 2, "AGENTDOJO_FILES": 0}
"""One run of each scenario, and two TRAIL traces where the shared corpus is present
(an AgentDojo file holds ~200 runs: too many for a test)."""


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    with Kernel() as started:
        yield started


def test_every_family_has_a_notebook_and_the_drift_script_moved() -> None:
    assert {p.stem for p in NOTEBOOKS} == {*TUNING, "tune_runtime", "incident_analysis"}
    assert not (ROOT / "notebooks" / "drift_change_detection.py").exists()
    assert (ROOT / "benchmarks" / "drift_change_detection.py").exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert [c for c in code if c.outputs or c.execution_count is not None] == []
    assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1


RUNTIME = ("stalled_run", "early_quit")
"""The detectors ``tune_runtime`` tunes in sequence on one replay."""
RUNTIME_SCENARIOS = [
    "stall_worker_killed_mid_command",
    "stall_host_lost_in_quick_call",
    "eq_progress_file_far_from_limit",
    "eq_wrapup_final_answer",
    "neg_slow_command_returns",
    "neg_harness_mandated_progress_notes",
]
"""A few of the blind runtime families: positives of both detectors and their look-alikes."""


def _tuning_params(tmp_path: Path, slug: str) -> dict[str, Any]:
    _, failures = TUNING[slug]
    return {
        **SMALL,
        "FIXTURE_FAILURES": failures,
        "CONFIG_OUT": str(tmp_path / "tuned.toml"),
        "OUT": str(tmp_path / "figures"),
    }


@pytest.mark.slow  # runs notebooks in a kernel
@pytest.mark.parametrize("slug", sorted(set(TUNING) - {"tune_loops"}))
def test_tuning_notebook_runs_and_writes_a_config_the_service_loads(
    tmp_path: Path, slug: str, kernel: Kernel
) -> None:
    detector, _ = TUNING[slug]
    kernel.run(ROOT / "notebooks" / f"{slug}.ipynb", _tuning_params(tmp_path, slug))
    _check_written(tmp_path, slug, detector)


def _check_written(tmp_path: Path, slug: str, detector: str) -> None:
    written = tmp_path / "tuned.toml"
    tables = tomllib.loads(written.read_text())["detectors"]
    assert set(tables[detector]) >= set(_grid_of(slug))
    assert f"notebooks/{slug}.ipynb" in written.read_text()  # each tuned number cites its source
    detector_set(load_config(written))  # serve/replay load it: parameters valid
    fitted = tomllib.loads(written.read_text())["calibration"][detector]
    assert len(fitted["scores"]) == len(fitted["probabilities"]) >= 1
    for name in ("sweep.png", "pr_curve.png", "calibration.png"):
        assert (tmp_path / "figures" / name).read_bytes()[:4] == b"\x89PNG"


def _grid_of(slug: str) -> dict[str, Any]:
    """The GRID of a notebook's parameters cell."""
    notebook = nbformat.read(ROOT / "notebooks" / f"{slug}.ipynb", as_version=4)
    cell = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    names: dict[str, Any] = {}
    exec(cell.source, {}, names)
    return dict(names["GRID"])


@pytest.mark.slow  # runs a notebook in a kernel
def test_incident_notebook_writes_the_report_with_its_figures(
    tmp_path: Path, kernel: Kernel
) -> None:
    out = tmp_path / "incident"
    executed = kernel.run(
        ROOT / "notebooks" / "incident_analysis.ipynb",
        {"RECORDING": "fixtures/recorded/run-017-3642d1", "OUT": str(out)},
    )
    report = (out / "report.md").read_text()
    assert report.startswith("# Incident report: session `")
    assert "## Alerts" in report and "runaway_loop" in report  # a labelled loop run
    for figure in ("token_burn.png", "subgoal_graph.png"):
        assert f"]({figure})" in report
        assert (out / figure).read_bytes()[:4] == b"\x89PNG"
    summary = next(
        o["data"]["text/plain"]
        for c in executed.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "walk_matches_replay" in o.get("data", {}).get("text/plain", "")
    )
    assert "'walk_matches_replay': True" in summary


def _loop_alerts(
    paths: list[Path], db: str, config: Path, capsys: pytest.CaptureFixture[str]
) -> set[tuple[str, str, int, str]]:
    args = ["replay", *map(str, paths), "--db", db, "--config", str(config), "--json"]
    assert main(args) == 0
    alerts = json.loads(capsys.readouterr().out)["alerts"]
    return {
        (a["session_id"], a["severity"], a["raised_at_step"], a["action"])
        for a in alerts
        if a["detector"] == "runaway_loop"
    }


@pytest.mark.slow  # runs a notebook in a kernel
def test_the_loops_notebook_config_changes_what_replay_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kernel: Kernel
) -> None:
    """On a grid without today's values the notebook picks other parameters and writes
    them; `trajwatch replay --config` on the same runs then raises the alerts those
    parameters raise over the stored steps, not the ones the base config raises."""
    grid = {"warn_cycles": [4, 5], "critical_cycles": [6, 8]}
    params = {**_tuning_params(tmp_path, "tune_loops"), "GRID": grid}
    kernel.run(ROOT / "notebooks" / "tune_loops.ipynb", params)
    _check_written(tmp_path, "tune_loops", "runaway_loop")
    tuned = tmp_path / "tuned.toml"
    picked = tuning.read_parameters(tuned, "runaway_loop")
    assert picked["warn_cycles"] in grid["warn_cycles"]
    assert picked["critical_cycles"] in grid["critical_cycles"]

    loops = tuning.fixture_set(
        ROOT / "fixtures" / "recorded", failures={"runaway_loop"}, per_scenario=1
    )
    paths = list(loops.paths)
    base = ROOT / "trajwatch.toml"
    before = _loop_alerts(paths, f"sqlite:///{tmp_path / 'base.db'}", base, capsys)
    after = _loop_alerts(paths, f"sqlite:///{tmp_path / 'tuned.db'}", tuned, capsys)
    assert before and after and before != after

    runs = load_runs(paths, labels_file=loops.labels_file)
    expected = {
        (a.session_id, str(a.severity), a.raised_seq, str(a.action))
        for steps in runs.steps.values()
        for a in detect(steps, detector_set(load_config(tuned)))
        if a.detector == "runaway_loop"
    }
    assert after == expected


@pytest.mark.slow  # generates a blind set and runs a notebook in a kernel
def test_the_runtime_notebook_tunes_both_detectors_on_a_generated_blind_set(
    tmp_path: Path, kernel: Kernel
) -> None:
    """On a runtime set generated at a tuning seed (not the evaluation's), the notebook
    sweeps ``stalled_run`` then ``early_quit`` on one replay and writes both picks and
    calibrations into one config the service loads; every point of its default grid is
    a valid parameter set of its detector."""
    runs = tmp_path / "runtime-seed7"
    generator = ROOT / "fixtures" / "blind" / "runtime_incidents.py"
    subprocess.run(
        [sys.executable, generator, "--seed", "7", "--out", runs, "--runs-per-family", "1"],
        check=True,
        capture_output=True,
    )
    grid = {
        "stalled_run": {"floor_minutes": [15.0, 30.0], "cadence_factor": [4.0, 8.0]},
        "early_quit": {"max_used_share": [0.5, 0.3], "min_headroom_tokens": [20000]},
    }
    params = {
        "RUNS": str(runs),
        "SCENARIOS": RUNTIME_SCENARIOS,
        "GRID": grid,
        "CONFIG_OUT": str(tmp_path / "tuned.toml"),
        "OUT": str(tmp_path / "figures"),
    }
    kernel.run(ROOT / "notebooks" / "tune_runtime.ipynb", params)

    written = tmp_path / "tuned.toml"
    text = written.read_text()
    tables = tomllib.loads(text)
    assert "notebooks/tune_runtime.ipynb" in text  # each tuned number cites its source
    detector_set(load_config(written))  # serve/replay load it: parameters valid
    for detector in RUNTIME:
        picked = tables["detectors"][detector]
        for name, values in grid[detector].items():
            assert picked[name] in values
        fitted = tables["calibration"][detector]
        assert len(fitted["scores"]) == len(fitted["probabilities"]) >= 1
        for name in ("sweep.png", "pr_curve.png", "calibration.png"):
            assert (tmp_path / "figures" / detector / name).read_bytes()[:4] == b"\x89PNG"

    defaults = _grid_of("tune_runtime")
    assert set(defaults) == set(RUNTIME)
    for detector, axes in defaults.items():
        for point in tuning.grid(**axes):
            detector_set(tuning.with_parameters({}, detector, point))  # raises when invalid
