"""``fixtures/fleet.py`` (``make run``) is new work on every invocation (issue 25, item 13):
fresh session, trace and span ids from a per-invocation nonce, current times, the same runs
otherwise; a second ``make run`` raises its alerts again and ``alerts --since 1h`` shows
them."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT

FIXTURES = ROOT / "fixtures"
SEED = 20261201
SCENARIOS = ("loop_retry_after_npm_install_failure", "healthy_plain_coding")
HOUR_NS = 3600 * 10**9


def _fleet() -> Any:
    if str(FIXTURES) not in sys.path:
        sys.path.insert(0, str(FIXTURES))
    return importlib.import_module("fleet")


def _ids(runs: list[Any]) -> tuple[set[str], set[int], set[int]]:
    spans = [s for run in runs for batch in run.processor.batches for s in batch]
    return (
        {run.session_id for run in runs},
        {s.context.trace_id for s in spans},
        {s.context.span_id for s in spans},
    )


def _shape(run: Any) -> list[tuple[Any, ...]]:
    """What the run does, without its ids and times."""
    return [(e["type"], e.get("tool"), str(e.get("arguments"))) for e in run.events]


def test_each_invocation_has_fresh_ids_and_current_times_and_the_same_runs() -> None:
    fleet = _fleet()
    now = time.time_ns()
    first = fleet.fleet(SEED, SCENARIOS, 1, nonce="aaaa", end_ns=now)
    second = fleet.fleet(SEED, SCENARIOS, 1, nonce="bbbb", end_ns=now)
    recorded = fleet.fleet(SEED, SCENARIOS, 1)
    for one, other in zip(_ids(first), _ids(second), strict=True):
        assert not one & other  # session, trace and span ids all new
    assert (
        [_shape(r) for r in first] == [_shape(r) for r in second] == [_shape(r) for r in recorded]
    )
    for run in first:
        start, end = fleet._extent(run)
        assert now - HOUR_NS < start < end <= now  # the last hour, none in the future
    ends = sorted(fleet._extent(r)[1] for r in first)
    assert ends[-1] == now
    # the same nonce is the same fleet (a pinned --nonce reproduces it)
    again = fleet.fleet(SEED, SCENARIOS, 1, nonce="aaaa", end_ns=now)
    assert _ids(again) == _ids(first)


ALERT = re.compile(r"^\s*(\d{4}-\d\d-\d\dT\S+Z)  \[(?:warn|critical)\] ", re.M)
"""An alert line (``serve`` prints it bare, ``trajwatch alerts`` indented); its time."""


@pytest.mark.slow  # two fleets, each starting and stopping `trajwatch serve`
def test_a_second_make_run_raises_its_alerts_again(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'trajwatch.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    fleet = [sys.executable, str(FIXTURES / "fleet.py"), "--serve", "--db", db, "--seconds", "2"]
    fleet += [arg for name in SCENARIOS for arg in ("--scenario", name)]
    printed = []
    for _ in range(2):
        done = subprocess.run(
            fleet, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        printed.append(ALERT.findall(done.stdout))
    assert printed[0] and len(printed[1]) == len(printed[0])  # it was 0 the second time
    listed = subprocess.run(
        [sys.executable, "-m", "trajwatch.cli.main", "alerts", "--since", "1h", "--db", db],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    times = ALERT.findall(listed.stdout)
    assert len(times) == 2 * len(printed[0])  # both fleets' alerts, raised within the hour
    assert times == sorted(times)  # oldest first
