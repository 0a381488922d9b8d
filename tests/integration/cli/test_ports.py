"""A port the servers cannot listen on (issue 25, item 11): ``serve``, ``breaker`` and ``ui``
with a taken port, or one outside 1-65535, say so in one line and exit 2, before anything
starts (no banner, no uvicorn or Streamlit line; the port is never taken modulo 65536)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from tests.support.paths import ROOT
from trajwatch.cli.main import main

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port something listens on for the test's length."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Each server's command line without ``--port``; the breaker's tokens in the
    environment, a store for the explorer; no server starts: a command that got as far as
    running uvicorn, or becoming Streamlit, fails the test instead of listening forever or
    replacing the test process."""
    monkeypatch.setenv("TRAJWATCH_BREAKER_TOKEN", "operator-" + "a" * 32)
    monkeypatch.setenv("TRAJWATCH_HOOK_TOKEN", "hook-" + "b" * 32)
    monkeypatch.setenv("TRAJWATCH_BREAKER_SECRET", SECRET)

    def started(*_: object, **__: object) -> None:
        raise AssertionError("the command went on to start its server")

    monkeypatch.setattr(os, "execve", started)
    monkeypatch.setattr(uvicorn.Server, "run", started)
    store = tmp_path / "tw.db"
    store.touch()
    db = f"sqlite:///{store}"
    return {
        "serve": ["serve", "--db", db, "--inbound-dir", str(tmp_path / "inbound")],
        "breaker": ["breaker", "--state", str(tmp_path / "breaker.db")],
        "ui": ["ui", "--db", db],
    }


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("trajwatch: error: ")
    return lines[0]


@pytest.mark.parametrize("command", ["serve", "breaker", "ui"])
def test_a_taken_port_is_one_line_and_exit_2(
    command: str,
    taken: int,
    servers: dict[str, list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main([*servers[command], "--port", str(taken)])
    out, err = capsys.readouterr()
    assert code == 2
    line = one_line(err)
    assert f"port {taken} is already in use" in line
    assert "--port" in line  # what to do
    assert out == ""  # no banner before the refusal
    assert not Path(servers["breaker"][-1]).exists()  # the breaker's state: never opened


@pytest.mark.parametrize("command", ["serve", "breaker", "ui"])
@pytest.mark.parametrize("number", ["99999", "0", "-1", "http"])
def test_a_port_outside_1_to_65535_is_refused_when_read(
    command: str,
    number: str,
    servers: dict[str, list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main([*servers[command], f"--port={number}"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "expected a port from 1 to 65535" in one_line(err)
    assert out == ""


@pytest.mark.slow
def test_serve_on_a_taken_port_as_a_process_prints_only_the_line(
    taken: int, tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trajwatch.cli.main",
            "serve",
            "--port",
            str(taken),
            "--db",
            f"sqlite:///{tmp_path / 'tw.db'}",
            "--inbound-dir",
            str(tmp_path / "in"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "already in use" in one_line(done.stderr)  # not uvicorn's "ERROR: [Errno 98]"
    assert not (tmp_path / "tw.db").exists()  # refused before the store was opened
