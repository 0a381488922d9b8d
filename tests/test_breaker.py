"""``trajwatch breaker`` on loopback: Standard Webhooks verification (the published test
vector, stale timestamps refused), a kill opening the session's breaker, the Claude Code
PreToolUse hook denying on an open breaker and allowing after re-enable, a replayed
webhook applied once, and the hook forwarded to ``serve``'s /v1/check when closed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import requests
import uvicorn
from standardwebhooks import Webhook

from tests.webhook_receiver import SECRET, free_port
from trajwatch.actions import signing
from trajwatch.breaker.server import Effect, create_app
from trajwatch.breaker.state import Breakers

ROOT = Path(__file__).resolve().parents[1]
# The published vector (standard-webhooks spec, "Verifying webhooks": test vector).
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TS = 1614265330
VECTOR_BODY = '{"test": 2432232314}'
VECTOR_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


class Running:
    def __init__(
        self, tmp: Path, check_url: str | None = None, effects: Sequence[Effect] = ()
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.breakers = Breakers(str(tmp / "breaker.db"))
        app = create_app(self.breakers, [SECRET], check_url=check_url, effects=effects)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        for _ in range(200):
            if self.server.started:
                return
            time.sleep(0.02)
        raise AssertionError("breaker did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def breaker(tmp_path: Path) -> Iterator[Running]:
    running = Running(tmp_path)
    yield running
    running.stop()


def send(
    base: str, msg_id: str, payload: dict[str, Any], secret: str = SECRET, timeout: float = 5
) -> requests.Response:
    body = json.dumps(payload)
    headers = signing.headers(signing.signers([secret], where="t"), msg_id, int(time.time()), body)
    headers["content-type"] = "application/json"
    return requests.post(f"{base}/v1/webhooks", data=body, headers=headers, timeout=timeout)


def kill(session: str = "s1", alert: str = "al_1") -> dict[str, Any]:
    return {
        "type": "trajwatch.kill",
        "timestamp": "2026-12-01T00:00:00Z",
        "data": {
            "alert_id": alert,
            "action": "kill",
            "session_id": session,
            "agent": "codewright",
            "detector": "egress_gaming",
            "severity": "critical",
            "reason": "a POST to ledger-mirror.net, an address first seen in a tool result",
        },
    }


def hook(base: str, session: str = "s1", agent: str | None = None) -> dict[str, Any]:
    body = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }
    answer = requests.post(
        f"{base}/v1/hooks/claude-code/pre-tool-use",
        params={"agent": agent} if agent else {},
        json=body,
        timeout=5,
    )
    assert answer.status_code == 200
    return dict(answer.json()["hookSpecificOutput"])


def test_published_vector_signs_and_a_stale_timestamp_is_refused(breaker: Running) -> None:
    import datetime as dt

    moment = dt.datetime.fromtimestamp(VECTOR_TS, tz=dt.UTC)
    assert Webhook(VECTOR_SECRET).sign(VECTOR_ID, moment, VECTOR_BODY) == VECTOR_SIG
    headers = {
        "webhook-id": VECTOR_ID,
        "webhook-timestamp": str(VECTOR_TS),
        "webhook-signature": VECTOR_SIG,
        "content-type": "application/json",
    }
    stale = requests.post(
        f"{breaker.base}/v1/webhooks", data=VECTOR_BODY, headers=headers, timeout=5
    )
    assert stale.status_code == 401  # the vector is from 2021: outside the tolerance
    forged = send(breaker.base, "msg_x", kill(), secret="whsec_" + "A" * 32)
    assert forged.status_code == 401 and breaker.breakers.applied() == 0
    assert send(breaker.base, "msg_fresh", kill()).status_code == 200


def test_kill_opens_the_breaker_hook_denies_then_allows_after_close(breaker: Running) -> None:
    assert "permissionDecision" not in hook(breaker.base)  # closed: no decision
    assert send(breaker.base, "al_1:breaker:kill", kill()).json() == {"applied": True}
    denied = hook(breaker.base)
    assert denied["permissionDecision"] == "deny"
    assert "ledger-mirror.net" in denied["permissionDecisionReason"]
    assert "permissionDecision" not in hook(breaker.base, "other")  # per session
    assert breaker.breakers.state("agent", "codewright")[0] == "open"
    command = ("breaker", "close", "s1", "--url", breaker.base)
    closed = subprocess.run(
        [sys.executable, "-m", "trajwatch.cli.main", *command],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert closed.returncode == 0, closed.stderr
    assert "closed" in closed.stdout
    assert "permissionDecision" not in hook(breaker.base)
    trail = breaker.breakers.listing("s1")["audit"]
    assert [a["state"] for a in trail] == ["open", "closed"]
    assert "egress_gaming" in trail[0]["reason"]


def close_cli(base: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trajwatch.cli.main", "breaker", "close", *args, "--url", base],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )


def test_an_agents_open_breaker_stops_its_other_sessions_until_the_agent_is_closed(
    breaker: Running,
) -> None:
    assert send(breaker.base, "al_3:breaker:kill", kill(session="s1", alert="al_3")).ok
    # a new session of the same agent: its own breaker is closed, the agent's is open
    denied = hook(breaker.base, "s2", agent="codewright")
    assert denied["permissionDecision"] == "deny"
    assert "agent codewright" in denied["permissionDecisionReason"]
    assert "permissionDecision" not in hook(breaker.base, "s2", agent="other-agent")
    assert "permissionDecision" not in hook(breaker.base, "s2")  # the hook names no agent
    assert close_cli(breaker.base, "s1").returncode == 0  # the session only
    assert hook(breaker.base, "s2", agent="codewright")["permissionDecision"] == "deny"
    closed = close_cli(breaker.base, "codewright", "--agent")
    assert closed.returncode == 0, closed.stderr
    assert "agent codewright: closed" in closed.stdout
    assert "permissionDecision" not in hook(breaker.base, "s2", agent="codewright")
    trail = breaker.breakers.listing("codewright", "agent")["audit"]
    assert [a["state"] for a in trail] == ["open", "closed"]
    shown = requests.get(
        f"{breaker.base}/v1/breakers/codewright", params={"scope": "agent"}, timeout=5
    ).json()
    assert [b["state"] for b in shown["breakers"]] == ["closed"]
    bad = requests.post(
        f"{breaker.base}/v1/breakers/codewright/close", params={"scope": "team"}, timeout=5
    )
    assert bad.status_code == 400


def test_a_replayed_webhook_is_applied_once(breaker: Running) -> None:
    assert send(breaker.base, "al_2:breaker:kill", kill(alert="al_2")).json()["applied"]
    breaker.breakers.close("s1")
    again = send(breaker.base, "al_2:breaker:kill", kill(alert="al_2"))
    assert again.status_code == 200 and again.json() == {"applied": False}
    assert breaker.breakers.state("session", "s1")[0] == "closed"  # not re-opened by the repeat
    assert len(breaker.breakers.listing("s1")["audit"]) == 2
