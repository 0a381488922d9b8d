"""A kill that could not be delivered is loud: ``trajwatch serve`` as a new user runs it,
with the breaker's webhook on loopback and no ``TRAJWATCH_WEBHOOK_ALLOW_PRIVATE``.

Before, serve printed ``action=kill`` and nothing else: every delivery was refused at
once and only ``trajwatch deliveries list`` said so. Now the refused endpoint is an ERROR
line when serve starts, each refused kill is an ERROR line naming its session and the
reason, and ``/metrics`` counts it."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.wait import wait_until
from tests.support.webhook_receiver import SECRET, Receiver

RECORDING = ROOT / "fixtures" / "recorded" / "run-007-55e226.otlp.jsonl.gz"
"""patchpilot retrying ``npm install``: a warning, then a critical runaway loop: a kill."""


def failed_kills(base: str) -> float:
    text = requests.get(f"{base}/metrics", timeout=5).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("trajwatch_deliveries_failed_total{")
        and 'action="kill"' in line
        and 'reason="refused"' in line
    )


@pytest.mark.slow  # `trajwatch serve` in a child process
def test_a_refused_kill_is_an_error_line_and_a_metric(tmp_path: Path) -> None:
    receiver = Receiver().start()  # on loopback: what the guard refuses by default
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        key: value for key, value in os.environ.items() if not key.startswith("TRAJWATCH_")
    }
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "TRAJWATCH_IDLE_FLUSH_MS": "300",
            "TRAJWATCH_INBOUND_DIR": str(tmp_path / "inbound"),
            "TRAJWATCH_WEBHOOK_URL": receiver.url,
            "TRAJWATCH_WEBHOOK_SECRET": SECRET,
        }
    )
    # the repository's config, with runaway_loop's kills confirmed by the operator: this
    # tests what happens to a kill that cannot be delivered, not the kill discipline
    config = tmp_path / "trajwatch.toml"
    config.write_text(
        (ROOT / "trajwatch.toml").read_text().replace('"fixtures/', f'"{ROOT}/fixtures/')
        + '\n[actions]\nconfirmed_kills = ["runaway_loop"]\n'
    )
    out, err = tmp_path / "serve.out", tmp_path / "serve.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        serve = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trajwatch.cli.main",
                "serve",
                "--db",
                f"sqlite:///{tmp_path / 'tw.db'}",
                "--port",
                str(port),
                "--grpc-port",
                "off",
                "--config",
                str(config),
            ],
            env=env,
            cwd=tmp_path,
            stdout=stdout,
            stderr=stderr,
        )
    try:
        wait_until(lambda: requests.get(f"{base}/healthz", timeout=1).ok, 60, "serve to start")
        wait_until(lambda: "REFUSED by the SSRF guard" in err.read_text(), 10, "the start check")
        for line in gzip.decompress(RECORDING.read_bytes()).splitlines():
            answer = requests.post(
                f"{base}/v1/traces",
                data=line,
                headers={"Content-Type": "application/json"},
                timeout=10,
            )
            assert answer.status_code == 200, answer.text
        wait_until(lambda: "action=kill" in out.read_text(), 30, "serve to print the kill")
        wait_until(lambda: failed_kills(base) >= 1, 10, "the refused kill in /metrics")
        killed = next(line for line in out.read_text().splitlines() if "action=kill" in line)
        session = killed.split("session=", 1)[1].split()[0]
        logged = err.read_text()
        assert f"ERROR kill of session '{session}' NOT DELIVERED to default: refused: " in logged
        assert "127.0.0.1 is loopback" in logged and "The agent was not stopped" in logged
        assert not receiver.received
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        finally:
            serve.kill()
            receiver.stop()
