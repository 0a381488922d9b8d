"""What a session stores does not depend on the string hash seed.

The live service, the workers and an analyst's replay run in different processes, each
with its own ``PYTHONHASHSEED``: a detector that walks a set into a bounded table keeps
different words in each, and a replay can then judge a later step differently from the
live run. Two replays of the recorded fixtures under two seeds must store the same
steps, the same alerts and the same detector state (compared as content: a set's order
in the pickle may differ, its members may not)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT
from trajwatch.bench.hashes import canonical, decoded_state

FIXTURES = ROOT / "fixtures" / "recorded"


def replayed(db: Path, seed: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "trajwatch.cli.main", "replay", str(FIXTURES), "--db", f"sqlite:///{db}"],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    con = sqlite3.connect(db)
    try:
        steps = con.execute("select * from steps order by step_id").fetchall()
        alerts = con.execute("select * from alerts order by alert_id").fetchall()
        states = {
            session: canonical(decoded_state(state))
            for session, state in con.execute(
                "select session_id, state from sessions where state is not null"
            )
        }
    finally:
        con.close()
    return {"steps": steps, "alerts": alerts, "states": states}


@pytest.mark.slow  # two replays of every fixture, each in a child process
def test_two_hash_seeds_store_the_same_steps_alerts_and_detector_state(tmp_path: Path) -> None:
    one = replayed(tmp_path / "one.db", "1")
    two = replayed(tmp_path / "two.db", "2")
    assert one["alerts"] and one["states"], "the fixtures raise alerts and keep state"
    assert one["steps"] == two["steps"]
    assert one["alerts"] == two["alerts"]
    differ = sorted(s for s in one["states"] if one["states"][s] != two["states"].get(s))
    assert not differ, f"{len(differ)} sessions' detector state follows the hash seed: {differ[:5]}"
