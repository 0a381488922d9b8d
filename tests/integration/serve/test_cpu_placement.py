"""Where ``serve``'s and a worker's threads run (:mod:`trajwatch.service.cpu_placement`).

Pinning changes the process it runs in, so every case that pins runs in a child process:
a small script for :func:`place` itself, and ``trajwatch serve`` for the whole command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from models.errors import ConfigError
from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.wait import wait_until
from trajwatch.service.cpu_placement import place
from trajwatch.settings import Settings

needs_two_cpus = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="pinning is observable only on Linux with at least two CPUs allowed",
)

PLACE_IN_A_CHILD = """
import json, os, sys, threading
from trajwatch.service.cpu_placement import place

before = threading.Event()
earlier = threading.Thread(target=before.wait, daemon=True)  # started before: pinned too
earlier.start()
cpu = place(sys.argv[1], single=sys.argv[2] == "serve")
later = []  # a thread started after place() inherits its placement
thread = threading.Thread(target=lambda: later.extend(sorted(os.sched_getaffinity(0))))
thread.start()
thread.join()
print(json.dumps({
    "cpu": cpu,
    "main": sorted(os.sched_getaffinity(0)),
    "earlier": sorted(os.sched_getaffinity(earlier.native_id)),
    "later": later,
}))
"""


def placed_in_a_child(choice: str, command: str) -> dict[str, object]:
    child = subprocess.run(
        [sys.executable, "-c", PLACE_IN_A_CHILD, choice, command],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=True,
    )
    return dict(json.loads(child.stdout))


@needs_two_cpus
@pytest.mark.slow  # a fresh interpreter per placement
def test_auto_keeps_every_thread_of_serve_on_the_cpu_it_started_on() -> None:
    placed = placed_in_a_child("auto", "serve")
    allowed = sorted(os.sched_getaffinity(0))
    assert placed["cpu"] in allowed
    assert placed["main"] == placed["earlier"] == placed["later"] == [placed["cpu"]]


@needs_two_cpus
@pytest.mark.slow  # a fresh interpreter per placement
def test_auto_leaves_a_worker_and_all_leaves_anything_to_the_os() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    for choice, command in (("auto", "worker"), ("all", "serve"), ("all", "worker")):
        placed = placed_in_a_child(choice, command)
        assert placed["cpu"] is None
        assert placed["main"] == placed["earlier"] == placed["later"] == allowed, choice


@needs_two_cpus
@pytest.mark.slow  # a fresh interpreter per placement
def test_a_cpu_number_pins_any_command_to_it() -> None:
    last = max(os.sched_getaffinity(0))
    placed = placed_in_a_child(str(last), "worker")
    assert placed["cpu"] == last
    assert placed["main"] == placed["earlier"] == placed["later"] == [last]


def test_a_cpu_the_process_may_not_use_is_one_actionable_error() -> None:
    if hasattr(os, "sched_getaffinity"):
        outside = str(max(os.sched_getaffinity(0)) + 1)
        with pytest.raises(ConfigError, match=rf"TRAJWATCH_CPU={outside}: .* CPUs .* only"):
            place(outside, single=True)


def test_the_setting_takes_auto_all_or_a_number_and_names_itself_otherwise() -> None:
    assert Settings.from_env({}).cpu == "auto"
    assert Settings.from_env({"TRAJWATCH_CPU": "all"}).cpu == "all"
    assert Settings.from_env({"TRAJWATCH_CPU": "1"}).cpu == "1"
    with pytest.raises(ConfigError, match="TRAJWATCH_CPU must be auto, all or a CPU number"):
        Settings.from_env({"TRAJWATCH_CPU": "fastest"})


@pytest.mark.slow  # `trajwatch serve` in a child process
@needs_two_cpus
@pytest.mark.parametrize("choice", ["auto", "all"])
def test_trajwatch_serve_places_all_its_threads(tmp_path: Path, choice: str) -> None:
    """The real command, serving: each of its threads (event loop, pipeline, log syncer)
    on the one CPU it names at start under ``auto``; on every allowed CPU under ``all``."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRAJWATCH_CPU": choice,
        "TRAJWATCH_INBOUND_DIR": str(tmp_path / "inbound"),
    }
    db = f"sqlite:///{tmp_path}/tw.db"
    serve = ["serve", "--db", db, "--port", str(port), "--grpc-port", "off"]
    child = subprocess.Popen(
        [sys.executable, "-m", "trajwatch.cli.main", *serve],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )

    def healthy() -> bool:
        assert child.poll() is None, "serve exited at start"
        return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok

    try:
        wait_until(healthy, 30, "serve to start")
        threads = {
            int(tid): frozenset(os.sched_getaffinity(int(tid)))
            for tid in os.listdir(f"/proc/{child.pid}/task")
        }
    finally:
        child.terminate()
        _, err = child.communicate(timeout=30)
    assert child.returncode == 0, err.decode()
    assert len(threads) >= 3, "the event loop, the pipeline thread and the log's syncer"
    # the banner (a warning may come first: no TRAJWATCH_AUTH_TOKEN here)
    started = next(line for line in err.decode().splitlines() if "OTLP/HTTP on" in line)
    if choice == "auto":
        [cpus] = set(threads.values())
        assert len(cpus) == 1
        assert started.endswith(f"threads on CPU {min(cpus)}")
    else:
        assert set(threads.values()) == {frozenset(os.sched_getaffinity(0))}
        assert started.endswith("threads placed by the OS")
