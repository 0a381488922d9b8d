"""``trajwatch bench --quick --json``: the benchmark command runs end to end (a real
``serve`` child on loopback, a replay, a memory child) and reports every figure the
README's bench table and docs/measurements show, with values that hang together. It checks that the
command works, not how fast anything is: no speed threshold here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.support.paths import ROOT
from trajwatch.bench.run import format_report

pytestmark = pytest.mark.slow  # a `trajwatch bench --quick` child, which starts `serve`


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cwd = tmp_path_factory.mktemp("bench")  # no trajwatch.toml there: the defaults
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(cwd)}
    done = subprocess.run(
        [sys.executable, "-m", "trajwatch.cli.main", "bench", "--quick", "--json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --json: no progress lines
    result: dict[str, Any] = json.loads(done.stdout)  # exactly one JSON object
    # nothing left behind: the stores and the write-ahead log were temporary
    assert not [p for p in cwd.iterdir() if p.name.startswith("trajwatch-bench-")]
    return result


def test_the_machine_and_the_sizes_are_reported(report: dict[str, Any]) -> None:
    assert report["machine"]["cores"] >= 1
    assert report["machine"]["cpu"]
    assert report["machine"]["python"].count(".") == 2
    placement = os.environ.get("TRAJWATCH_CPU") or "auto"  # as the serve child read it
    assert report["throughput"]["serve_threads_cpu"] == placement
    assert report["sizes"]["traces"] >= 1
    assert len(report["detectors"]) >= 8


def test_serve_stores_what_replay_stores_on_the_same_spans(report: dict[str, Any]) -> None:
    t = report["throughput"]
    assert t["spans"] == 100 * report["sizes"]["traces"]
    assert t["steps"] > t["spans"]  # a tool span is a call and a result
    assert t["alerts"] >= 1  # every fourth run loops
    assert t["serve_steps"] == t["steps"]
    assert t["serve_alerts_equal_replay"] is True
    assert t["serve_requests"] == report["sizes"]["traces"] * -(-100 // report["batch"])
    # rates are spans over seconds, and the ratios are theirs
    assert t["serve_acknowledged_s"] <= t["serve_committed_s"]
    assert t["serve_spans_per_s"] == pytest.approx(t["spans"] / t["serve_committed_s"], rel=0.01)
    assert t["serve_over_replay"] == pytest.approx(
        t["serve_spans_per_s"] / t["replay_spans_per_s"], rel=0.01
    )
    assert t["from_string_spans_per_s"] > t["replay_spans_per_s"] > 0
    assert 0 < t["replay_over_from_string"] < 1


def test_latency_is_measured_at_half_the_load_reached(report: dict[str, Any]) -> None:
    lat = report["latency"]
    assert lat["load_spans_per_s"] == pytest.approx(
        report["throughput"]["serve_spans_per_s"] / 2, abs=1
    )
    assert lat["alerts"] >= 1
    assert 0 <= lat["p50_ms"] <= lat["p99_ms"] <= lat["max_ms"] < 60_000
    assert lat["lateness_ms"] == 10_000  # the default, reported beside


def test_memory_and_state_per_session(report: dict[str, Any]) -> None:
    mem = report["memory"]
    assert mem["sessions"] == mem["sessions_in_memory"] == report["sizes"]["sessions"]
    assert mem["pending_steps"] > 0  # sessions active: steps still held for ordering
    assert mem["steps"] > mem["sessions"]  # and some released through the detectors
    assert 0 < mem["rss_base_bytes"] <= mem["rss_peak_bytes"]
    assert mem["rss_end_bytes"] <= mem["rss_peak_bytes"]
    assert mem["bytes_per_session"] > 0
    assert 0 < mem["state_bytes_median"] <= mem["state_bytes_max"]
    assert set(mem["state_bytes_by_detector"]) == set(report["detectors"])
    assert mem["state_bytes_end_of_run_max"] > mem["state_bytes_max"]  # 33 rounds, not 4


def test_stages_cover_every_detector_and_the_report_prints(report: dict[str, Any]) -> None:
    st = report["stages_us_per_step"]
    assert set(st["detectors"]) == set(report["detectors"])
    for stage in ("decode", "normalise", "features", "store", "replay_total"):
        assert st[stage] > 0
    assert st["detectors_total"] == pytest.approx(sum(st["detectors"].values()), abs=0.05)
    assert st["decode"] + st["normalise"] < st["replay_total"]
    assert set(report["targets"]) == {
        "serve_over_replay",
        "p99_span_to_alert_ms",
        "rss_at_10k_sessions",
        "detector_state_per_session",
    }
    text = format_report(report, "trajwatch bench --quick")
    assert f"{report['throughput']['serve_spans_per_s']:,} spans/s" in text
    assert "| detector `runaway_loop` |" in text
