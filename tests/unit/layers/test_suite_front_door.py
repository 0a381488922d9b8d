"""What ``make test`` asks of a new user's machine, said where they read first (issue 25,
item 16): the README's quick start names PostgreSQL, Chromium and how long the suite takes,
and offers the quick loop; the quick loop starts no child Python process (the guard in
``tests/conftest.py`` fails a test that does unless it is marked ``slow``)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from tests.support.children import is_python, python_children
from tests.support.paths import ROOT


def _quick_start() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_says_what_make_test_needs_and_how_long_it_takes() -> None:
    text = _quick_start()
    block = text.split("```sh", 1)[1].split("```", 1)[0]
    make_test = next(line for line in block.splitlines() if line.startswith("make test "))
    assert "PostgreSQL" in make_test and "Chromium" in make_test  # in the command's comment
    assert re.search(r"\d+[–-]\d+ min", make_test)
    assert any(line.startswith("make test-quick") for line in block.splitlines())
    assert "127.0.0.1:5432" in text and "chromium" in text  # and how, below it


def test_make_test_quick_is_the_loop_without_postgresql_chromium_or_children() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ntest-quick:", 1)[1].split("\n\n", 1)[0]
    assert '-m "not slow and not postgres"' in recipe
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    markers = pytest_options["ini_options"]["markers"]
    names = {m.split(":")[0] for m in markers}
    assert {"slow", "postgres", "browser"} <= names


def test_the_guard_sees_child_python_processes_only() -> None:
    assert is_python([sys.executable, "-m", "trajwatch.cli.main"])
    assert is_python(["python3", "fixtures/fleet.py"]) and is_python("python -c pass")
    assert not is_python(["true"]) and not is_python("git status") and not is_python([])
    with python_children() as started:
        subprocess.run(["true"], check=True)
    assert started == []
