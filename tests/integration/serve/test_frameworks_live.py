"""The live suite: real agent frameworks, in their own venv, export to ``trajwatch serve``.

Opt-in (minutes, and a venv the project does not install): set ``TRAJWATCH_FWVENV`` to the
venv made as ``fixtures/frameworks/README.md`` says, or run ``make test-frameworks``.
``fixtures/frameworks/live_check.py`` does the work: serve started on a free port, each
framework's real agent loop with a scripted model exporting to it over OTLP/HTTP, then one
session a run, END last, no dead letter, live alerts equal to a replay's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

FWVENV = os.environ.get("TRAJWATCH_FWVENV", "")


@pytest.mark.slow
@pytest.mark.skipif(
    not FWVENV or not (Path(FWVENV) / "bin" / "python").exists(),
    reason="set TRAJWATCH_FWVENV to the frameworks' venv (fixtures/frameworks/README.md)",
)
def test_real_frameworks_live_against_serve() -> None:
    check = ROOT / "fixtures" / "frameworks" / "live_check.py"
    done = subprocess.run(
        [sys.executable, str(check), "--fwvenv", FWVENV],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert " 0 dead letters" in done.stdout
