"""Waiting for something another thread or process does: the tests' one polling loop."""

from __future__ import annotations

import time
from collections.abc import Callable

import requests


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Return once ``condition()`` is true, polling every 50 ms; raise AssertionError
    ("timed out after TIMEOUT s waiting for WHAT") if it is still false after ``timeout``
    seconds. A refused connection counts as "not yet": a server being started refuses
    until it listens. Any other exception from ``condition`` propagates."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (ConnectionError, requests.ConnectionError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
