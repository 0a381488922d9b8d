"""A ``trajwatch serve`` started as a child process on loopback: a free port for it, and
the wait until it answers ``/healthz`` (the bench, the fleet demo and the frameworks'
live check start one each)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    """A loopback port nothing listens on: bound, then released (another process could take
    it before the caller binds it; on a test or bench machine that race is not seen)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_healthy(base_url: str, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    """Return once ``base_url``/healthz answers 200; raise :class:`RuntimeError` saying why
    if ``process`` exits first (with the tail of its stderr when that is a pipe) or
    ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = process.stderr.read().decode(errors="replace")[-2000:] if process.stderr else ""
            raise RuntimeError(f"trajwatch serve exited with {process.returncode} at start {said}")
        try:
            with urllib.request.urlopen(f"{base_url}/healthz", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"trajwatch serve did not answer at {base_url} within {seconds:.0f} s")
