"""``trajwatch breaker`` on loopback, the monitored agent as the adversary (it runs shell
commands on the same host): Standard Webhooks verification (the published test vector,
stale timestamps refused), a kill opening the session's breaker, the Claude Code
PreToolUse hook denying on an open breaker; re-enabling and listing need the operator
token (no cookie, query-string or form path), the hook its own token; the check client
sends serve's token to a real ``serve``; every way the check or the hook's input can fail
(serve down, slow, 401, 4xx, 5xx, not JSON, a body too large or too deep, a bug) is a
decision of the failure policy — logged and counted in ``/metrics`` — never a 500."""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import uvicorn
from standardwebhooks import Webhook

from models.errors import ConfigError
from tests.integration.serve.test_check import ADDR, SECRET_VALUE, serve, stored_session
from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.webhook_receiver import SECRET
from trajwatch.actions import signing
from trajwatch.breaker.auth import Credentials, Tokens
from trajwatch.breaker.check import CheckClient
from trajwatch.breaker.hook import nesting
from trajwatch.breaker.server import Effect, create_app
from trajwatch.breaker.state import Breakers
from trajwatch.check_failure import FailurePolicy
from trajwatch.cli import main as cli
from trajwatch.settings import Settings

__all__ = ["serve"]  # the fixture, imported from test_check

# The published vector (standard-webhooks spec, "Verifying webhooks": test vector).
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TS = 1614265330
VECTOR_BODY = '{"test": 2432232314}'
VECTOR_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

OPERATOR_TOKEN = "op-3J9vQk2pXw7LmN4sT8yZ"
HOOK_TOKEN = "hk-Qw8eR5tY2uI9oP3aS6dF"
SERVE_TOKEN = "sv-Zx4cV7bN1mK8jH5gF2dS"
OPERATOR = {"authorization": f"Bearer {OPERATOR_TOKEN}"}
HOOK = {"authorization": f"Bearer {HOOK_TOKEN}"}
HOOK_PATH = "/v1/hooks/claude-code/pre-tool-use"
BREAKER_ENV = {
    "TRAJWATCH_BREAKER_SECRET": SECRET,
    "TRAJWATCH_BREAKER_TOKEN": f"alice={OPERATOR_TOKEN}",
    "TRAJWATCH_HOOK_TOKEN": HOOK_TOKEN,
}
"""What ``trajwatch breaker`` run as a process needs (the operator's own environment)."""


class Running:
    """A breaker (``create_app``) on a free loopback port, served by uvicorn in a thread."""

    def __init__(
        self,
        tmp: Path,
        check_url: str | None = None,
        effects: Sequence[Effect] = (),
        *,
        check_token: str | None = None,
        check_timeout: float = 3.0,
        hook_token: str | None = HOOK_TOKEN,
        **options: Any,
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.state = tmp / "breaker.db"
        self.breakers = Breakers(str(self.state))
        credentials = Credentials(
            webhook_secrets=(SECRET,),
            operators=Tokens.parse(f"alice={OPERATOR_TOKEN}", variable="operator"),
            hooks=Tokens.parse(hook_token, variable="hook") if hook_token else None,
            check_token=check_token,
        )
        check = (
            CheckClient(check_url, token=check_token, timeout=check_timeout) if check_url else None
        )
        app = create_app(self.breakers, credentials, check=check, effects=effects, **options)
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

    def metrics(self) -> str:
        return requests.get(f"{self.base}/metrics", timeout=5).text


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


def hook_body(session: str = "s1", tool: str = "Bash", **tool_input: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input or {"command": "ls"},
        "tool_use_id": "toolu_1",
    }


def hook(
    base: str, session: str = "s1", agent: str | None = None, tool: str = "Bash"
) -> dict[str, Any]:
    answer = requests.post(
        f"{base}{HOOK_PATH}",
        params={"agent": agent} if agent else {},
        json=hook_body(session, tool),
        headers=HOOK,
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["hookSpecificOutput"])


def breaker_cli(
    base: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TRAJWATCH_")}
    environ.update(env if env is not None else {"TRAJWATCH_BREAKER_TOKEN": OPERATOR_TOKEN})
    return subprocess.run(
        [sys.executable, "-m", "trajwatch.cli.main", "breaker", *args, "--url", base],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
        env={**environ, "PYTHONPATH": str(ROOT)},
    )


def close_cli(base: str, *args: str) -> subprocess.CompletedProcess[str]:
    return breaker_cli(base, "close", *args)


# --- webhooks --------------------------------------------------------------------------


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
    assert 'trajwatch_breaker_refused_total{endpoint="webhooks"} 2.0' in breaker.metrics()


def test_a_replayed_webhook_is_applied_once(breaker: Running) -> None:
    assert send(breaker.base, "al_2:breaker:kill", kill(alert="al_2")).json()["applied"]
    breaker.breakers.close("s1")
    again = send(breaker.base, "al_2:breaker:kill", kill(alert="al_2"))
    assert again.status_code == 200 and again.json() == {"applied": False}
    assert breaker.breakers.state("session", "s1")[0] == "closed"  # not re-opened by the repeat
    assert len(breaker.breakers.listing("s1")["audit"]) == 2


# --- the operator's endpoints: re-enable and list ---------------------------------------


@pytest.mark.slow  # trajwatch breaker close as a process
def test_kill_opens_the_breaker_hook_denies_then_allows_after_close(
    breaker: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "trajwatch.breaker")
    assert "permissionDecision" not in hook(breaker.base)  # closed: no decision
    assert send(breaker.base, "al_1:breaker:kill", kill()).json() == {"applied": True}
    denied = hook(breaker.base)
    assert denied["permissionDecision"] == "deny"
    assert "ledger-mirror.net" in denied["permissionDecisionReason"]
    assert "permissionDecision" not in hook(breaker.base, "other")  # per session
    assert breaker.breakers.state("agent", "codewright")[0] == "open"
    closed = close_cli(breaker.base, "s1", "--by", "alice@laptop")
    assert closed.returncode == 0, closed.stderr
    assert "closed" in closed.stdout and "close by alice (alice@laptop)" in closed.stdout
    assert "permissionDecision" not in hook(breaker.base)
    trail = breaker.breakers.listing("s1")["audit"]
    assert [a["state"] for a in trail] == ["open", "closed"]
    assert "egress_gaming" in trail[0]["reason"]
    assert trail[1]["source"] == "close by alice (alice@laptop)"  # the token's name and --by
    logged = caplog.text
    assert 'webhook applied: type="trajwatch.kill" session="s1" agent="codewright"' in logged
    assert 'hook deny: session="s1" tool="Bash"' in logged and "ledger-mirror.net" in logged
    assert 'breaker of session "s1" now closed: close by alice (alice@laptop)' in logged


@pytest.mark.slow  # trajwatch breaker close as a process
def test_close_without_the_operator_token_is_refused_and_the_breaker_stays_open(
    breaker: Running,
) -> None:
    """The agent's shell: a plain curl, a wrong token, the token anywhere but the header,
    a cross-site form post: each 401, and the next tool call is still denied."""
    assert send(breaker.base, "al_1:breaker:kill", kill()).ok
    url = f"{breaker.base}/v1/breakers/s1/close"
    agent_url = f"{breaker.base}/v1/breakers/codewright/close?scope=agent"
    attempts = [
        requests.post(url, timeout=5),
        requests.post(agent_url, timeout=5),
        requests.post(url, headers={"authorization": "Bearer wrong-token-000000000"}, timeout=5),
        requests.post(url, headers={"authorization": f"Basic {OPERATOR_TOKEN}"}, timeout=5),
        requests.post(url, headers={"authorization": OPERATOR_TOKEN}, timeout=5),
        requests.post(url, params={"token": OPERATOR_TOKEN}, timeout=5),
        requests.post(url, params={"access_token": OPERATOR_TOKEN}, timeout=5),
        requests.post(url, cookies={"token": OPERATOR_TOKEN}, timeout=5),
        requests.post(  # what an HTML form on another site can send
            url,
            data={"token": OPERATOR_TOKEN, "authorization": f"Bearer {OPERATOR_TOKEN}"},
            headers={"origin": "https://evil.example", "content-type": "text/plain"},
            timeout=5,
        ),
        requests.post(  # the hook's token opens nothing but the hook
            url, headers={"authorization": f"Bearer {HOOK_TOKEN}"}, timeout=5
        ),
    ]
    assert [a.status_code for a in attempts] == [401] * len(attempts)
    assert attempts[0].headers["www-authenticate"].startswith("Bearer")
    assert breaker.breakers.state("session", "s1")[0] == "open"
    assert breaker.breakers.state("agent", "codewright")[0] == "open"
    assert hook(breaker.base)["permissionDecision"] == "deny"
    assert [a["source"] for a in breaker.breakers.listing("s1")["audit"]] == [
        "webhook al_1:breaker:kill"
    ]
    assert 'trajwatch_breaker_refused_total{endpoint="close"} 10.0' in breaker.metrics()
    # the CLI without the token, and with a wrong one: refused too, one line each
    missing = breaker_cli(breaker.base, "close", "s1", env={})
    assert missing.returncode == 2 and "TRAJWATCH_BREAKER_TOKEN" in missing.stderr
    wrong = breaker_cli(
        breaker.base, "close", "s1", env={"TRAJWATCH_BREAKER_TOKEN": "wrong-token-000000000"}
    )
    assert wrong.returncode == 2 and "refused the token (401)" in wrong.stderr
    assert breaker.breakers.state("session", "s1")[0] == "open"


@pytest.mark.slow  # trajwatch breaker show as a process
def test_listing_needs_the_operator_token(breaker: Running) -> None:
    assert send(breaker.base, "al_1:breaker:kill", kill()).ok
    for path in ("/v1/breakers", "/v1/breakers/s1", "/v1/breakers/codewright?scope=agent"):
        assert requests.get(f"{breaker.base}{path}", timeout=5).status_code == 401
        assert requests.get(f"{breaker.base}{path}", headers=HOOK, timeout=5).status_code == 401
        assert requests.get(f"{breaker.base}{path}", headers=OPERATOR, timeout=5).ok
    listed = requests.get(f"{breaker.base}/v1/breakers", headers=OPERATOR, timeout=5).json()
    assert {(b["scope"], b["key"]) for b in listed["breakers"]} == {
        ("session", "s1"),
        ("agent", "codewright"),
    }
    shown = breaker_cli(breaker.base, "show", "s1")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["breakers"][0]["state"] == "open"


@pytest.mark.slow  # trajwatch breaker close as a process
def test_an_agents_open_breaker_stops_its_other_sessions_until_the_agent_is_closed(
    breaker: Running,
) -> None:
    """The agent scope is opt-in (``?agent=NAME`` in the hook's URL)."""
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
    assert trail[1]["source"].startswith("close by alice (")  # --by's default: user@host
    assert "@" in trail[1]["source"]
    shown = requests.get(
        f"{breaker.base}/v1/breakers/codewright",
        params={"scope": "agent"},
        headers=OPERATOR,
        timeout=5,
    ).json()
    assert [b["state"] for b in shown["breakers"]] == ["closed"]
    bad = requests.post(
        f"{breaker.base}/v1/breakers/codewright/close",
        params={"scope": "team"},
        headers=OPERATOR,
        timeout=5,
    )
    assert bad.status_code == 400


@pytest.mark.slow  # trajwatch breaker close as a process
def test_closing_a_breaker_it_never_opened_is_an_error_naming_the_ones_it_holds(
    breaker: Running,
) -> None:
    """Issue 25, item 12: ``close <typo>`` printed "closed" and exited 0 while the real
    session's breaker stayed open."""
    empty = close_cli(breaker.base, "s1")
    assert empty.returncode == 2 and empty.stdout == ""
    assert "holds no breaker yet" in empty.stderr and len(empty.stderr.splitlines()) == 1
    assert send(breaker.base, "al_1:breaker:kill", kill(session="session-7f3a")).ok
    typo = close_cli(breaker.base, "session-7f3b")
    assert typo.returncode == 2 and typo.stdout == ""
    (line,) = typo.stderr.splitlines()
    assert line.startswith("trajwatch: error: the breaker at http://127.0.0.1:")
    assert "no breaker for session 'session-7f3b'" in line
    assert "(did you mean `session-7f3a`?)" in line and "give one it holds: session-7f3a" in line
    agent = close_cli(breaker.base, "codewrite", "--agent")
    assert agent.returncode == 2 and "(did you mean `codewright`?)" in agent.stderr
    answer = requests.post(
        f"{breaker.base}/v1/breakers/nope/close", headers=OPERATOR, timeout=5
    )
    assert answer.status_code == 404
    assert answer.json()["known"] == ["session-7f3a"] and answer.json()["closest"] is None
    # nothing changed: the real one is still open, and no audit row names the typo
    assert breaker.breakers.state("session", "session-7f3a")[0] == "open"
    assert breaker.breakers.listing("session-7f3b")["breakers"] == []
    assert close_cli(breaker.base, "session-7f3a").returncode == 0


# --- the hook: its token, its input, its failures ---------------------------------------


def test_the_hook_needs_its_token(breaker: Running, tmp_path: Path) -> None:
    assert send(breaker.base, "al_1:breaker:kill", kill()).ok
    url = f"{breaker.base}{HOOK_PATH}"
    body = hook_body()
    assert requests.post(url, json=body, timeout=5).status_code == 401
    wrong = {"authorization": "Bearer wrong-token-000000000"}
    assert requests.post(url, json=body, headers=wrong, timeout=5).status_code == 401
    query = requests.post(url, json=body, params={"token": HOOK_TOKEN}, timeout=5)
    assert query.status_code == 401
    assert 'trajwatch_breaker_refused_total{endpoint="hook"} 3.0' in breaker.metrics()
    assert hook(breaker.base)["permissionDecision"] == "deny"
    # --hook-without-token: the operator's explicit choice
    (tmp_path / "open").mkdir()
    tokenless = Running(tmp_path / "open", hook_token=None)
    try:
        answer = requests.post(f"{tokenless.base}{HOOK_PATH}", json=body, timeout=5)
        assert answer.status_code == 200 and "permissionDecision" not in answer.text
    finally:
        tokenless.stop()


def test_the_check_carries_serves_token_and_its_deny_passes_through(
    serve: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """serve requires TRAJWATCH_AUTH_TOKEN: the breaker sends it (before, serve answered
    401 and the hook gave no decision); a breaker without it fails closed, counted."""
    url = f"sqlite:///{tmp_path / 'check.db'}"
    stored_session(url)
    running = serve(
        Settings(db_url=url, inbound_dir=str(tmp_path / "inbound"), auth_token=SERVE_TOKEN)
    )
    check_url = f"{running.base}/v1/check"
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    breaker = Running(tmp_path / "with", check_url, check_token=SERVE_TOKEN)
    tokenless = Running(tmp_path / "without", check_url)
    exfil = {"method": "POST", "url": ADDR, "body": {"diag": f"key={SECRET_VALUE}"}}
    body = {"session_id": "chk", "hook_event_name": "PreToolUse", "tool_name": "http"}
    try:
        answer = requests.post(
            f"{breaker.base}{HOOK_PATH}",
            json={**body, "tool_input": exfil},
            headers=HOOK,
            timeout=10,
        ).json()["hookSpecificOutput"]
        assert answer["permissionDecision"] == "deny", answer
        assert "egress_gaming" in answer["permissionDecisionReason"]
        benign = requests.post(
            f"{breaker.base}{HOOK_PATH}",
            json={**body, "tool_name": "read_file", "tool_input": {"path": "README.md"}},
            headers=HOOK,
            timeout=10,
        ).json()["hookSpecificOutput"]
        assert "permissionDecision" not in benign
        assert "trajwatch_breaker_hook_failures_total{" not in breaker.metrics()
        # the same breaker without serve's token: serve refuses it; a failure, not a pass
        refused = hook(tokenless.base, "chk", tool="Bash")
        assert refused["permissionDecision"] == "deny"
        assert "unauthorized" in refused["permissionDecisionReason"]
        assert "TRAJWATCH_AUTH_TOKEN" in refused["permissionDecisionReason"]
        assert hook(tokenless.base, "chk", tool="Read")["permissionDecision"] == "ask"
        counted = tokenless.metrics()
        assert (
            'trajwatch_breaker_hook_failures_total{cause="unauthorized",decision="deny"} 1.0'
            in counted
        )
        assert 'cause="unauthorized",decision="ask"} 1.0' in counted
        assert 'hook failure: session="chk" tool="Bash" cause=unauthorized' in caplog.text
    finally:
        breaker.stop()
        tokenless.stop()
    running.stop()


def test_serve_down_denies_what_is_not_read_only_asks_the_rest_logged_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: with serve down the hook allowed every call, silently."""
    down = f"http://127.0.0.1:{free_port()}/v1/check"  # nothing listens there
    breaker = Running(tmp_path, down)
    try:
        bash = hook(breaker.base, tool="Bash")
        assert bash["permissionDecision"] == "deny"
        assert "the check failed (unreachable" in bash["permissionDecisionReason"]
        assert hook(breaker.base, tool="Read")["permissionDecision"] == "ask"
        assert hook(breaker.base, tool="mcp__github__create_issue")["permissionDecision"] == "deny"
        counted = breaker.metrics()
        assert 'hook_failures_total{cause="unreachable",decision="deny"} 2.0' in counted
        assert 'hook_failures_total{cause="unreachable",decision="ask"} 1.0' in counted
        assert 'trajwatch_breaker_hook_decisions_total{decision="deny"} 2.0' in counted
        lines = [r.getMessage() for r in caplog.records if r.name == "trajwatch.breaker"]
        assert (
            'hook failure: session="s1" tool="Bash" cause=unreachable '
            "(serve's check is unreachable (ConnectionError)) decision=deny"
        ) in lines
        assert any('tool="Read" cause=unreachable' in m and "decision=ask" in m for m in lines)
    finally:
        breaker.stop()
    # the policy is the operator's: allow = no decision, deny for read-only tools too
    (tmp_path / "lenient").mkdir()
    lenient = Running(
        tmp_path / "lenient",
        down,
        policy=FailurePolicy(dangerous="ask", other="allow", read_only_tools=frozenset({"Grep"})),
    )
    try:
        assert hook(lenient.base, tool="Bash")["permissionDecision"] == "ask"
        assert "permissionDecision" not in hook(lenient.base, tool="Grep")
        assert hook(lenient.base, tool="Read")["permissionDecision"] == "ask"  # not listed
    finally:
        lenient.stop()


class Stub:
    """A stand-in for serve's check that answers as the test scripts it."""

    def __init__(self) -> None:
        self.status, self.body, self.delay = 200, b"{}", 0.0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                time.sleep(stub.delay)
                self.send_response(stub.status)
                self.send_header("content-length", str(len(stub.body)))
                self.end_headers()
                self.wfile.write(stub.body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/check"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("status", "body", "delay", "cause"),
    [
        (500, b'{"error": "boom"}', 0.0, "server_error"),
        (503, b"", 0.0, "server_error"),
        (401, b'{"error": "missing or wrong bearer token"}', 0.0, "unauthorized"),
        (400, b'{"error": "session_id is required"}', 0.0, "rejected"),
        (200, b"<html>a proxy's page</html>", 0.0, "bad_answer"),
        (200, b'{"decision": "allow"}', 0.0, "bad_answer"),
        (302, b"", 0.0, "bad_answer"),
        (200, b'{"hookSpecificOutput": {"hookEventName": "PreToolUse"}}', 1.5, "timeout"),
    ],
)
def test_every_way_the_check_fails_is_a_decision(
    tmp_path: Path, status: int, body: bytes, delay: float, cause: str
) -> None:
    stub = Stub()
    stub.status, stub.body, stub.delay = status, body, delay
    breaker = Running(tmp_path, stub.url, check_timeout=0.5)
    try:
        started = time.monotonic()
        bash = hook(breaker.base, tool="Bash")
        assert time.monotonic() - started < 1.4  # the check's deadline, not serve's delay
        assert bash["permissionDecision"] == "deny"
        assert f"the check failed ({cause}" in bash["permissionDecisionReason"]
        assert hook(breaker.base, tool="Read")["permissionDecision"] == "ask"
        assert f'cause="{cause}",decision="deny"}} 1.0' in breaker.metrics()
    finally:
        breaker.stop()
        stub.stop()


def test_a_good_check_answer_is_passed_on_and_a_granted_allow_is_dropped(
    tmp_path: Path,
) -> None:
    stub = Stub()
    breaker = Running(tmp_path, stub.url)
    try:
        stub.body = json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "trajwatch egress_gaming (critical)",
                    "extra": "dropped",
                }
            }
        ).encode()
        assert hook(breaker.base) == {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "trajwatch egress_gaming (critical)",
        }
        stub.body = json.dumps(
            {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
        ).encode()
        assert hook(breaker.base) == {"hookEventName": "PreToolUse"}  # a monitor never grants
    finally:
        breaker.stop()
        stub.stop()


def post_hook(base: str, data: bytes | str) -> requests.Response:
    return requests.post(
        f"{base}{HOOK_PATH}",
        data=data,
        headers={**HOOK, "content-type": "application/json"},
        timeout=10,
    )


def test_too_deep_or_bad_input_is_a_decision_not_a_500(breaker: Running) -> None:
    """Before: ``[`` x 100,000 answered 500 (RecursionError), which Claude Code treats as a
    non-blocking error: the call ran."""
    for data in ("[" * 100_000, '{"a":' * 100_000, "[" * 65 + "]" * 65):
        answer = post_hook(breaker.base, data)
        assert answer.status_code == 200
        decided = answer.json()["hookSpecificOutput"]
        assert decided["permissionDecision"] == "deny"  # the tool is unknown: dangerous
        assert "too_deep" in decided["permissionDecisionReason"]
    # a tool input nested deeper than the limit, with the tool known
    deep: Any = "x"
    for _ in range(200):
        deep = {"k": deep}
    read = hook_body(tool="Read", file_path="/etc/hosts", extra=deep)
    decided = post_hook(breaker.base, json.dumps(read)).json()["hookSpecificOutput"]
    assert decided["permissionDecision"] == "deny"  # unparsed: the tool is not known
    # brackets inside strings are not nesting; a body at the limit is judged as usual
    ok = hook_body(command="echo " + "[{" * 5000)
    assert (
        "permissionDecision"
        not in post_hook(breaker.base, json.dumps(ok)).json()["hookSpecificOutput"]
    )
    # not JSON, not an object, no session_id: decisions too (Read: ask)
    for data in (b"\xff\xfe not json", "[1, 2]", json.dumps({"tool_name": "Read"}), ""):
        answer = post_hook(breaker.base, data)
        assert answer.status_code == 200
        assert "bad_input" in answer.json()["hookSpecificOutput"]["permissionDecisionReason"]
    no_session = post_hook(breaker.base, json.dumps({"tool_name": "Read"}))
    assert no_session.json()["hookSpecificOutput"]["permissionDecision"] == "ask"
    counted = breaker.metrics()
    assert 'cause="too_deep",decision="deny"} 4.0' in counted
    assert 'cause="bad_input",decision="deny"} 3.0' in counted


def test_nesting_is_linear_and_ignores_brackets_in_strings() -> None:
    assert nesting(b'{"a": [1, {"b": "[[[[\\"]]]"}]}', 10) == 3
    assert nesting(b"[" * 1_000_000, 64) == 65  # stops at the limit
    started = time.process_time()
    assert nesting(b'["' + b'\\"' * 500_000 + b'"]', 64) == 1
    assert nesting(b'"' + b'\\"' * 500_000, 64) == 0  # unterminated: the parser refuses it
    assert nesting(json.dumps([["a" * 10] * 50_000]).encode(), 64) == 2
    assert time.process_time() - started < 2.0


def read_answer(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, json.loads(response.read())


def test_a_50_mib_body_is_a_decision_without_being_read_whole(breaker: Running) -> None:
    """Before: the hook read any body whole. Now a declared length over the cap is decided
    at once, and a chunked body once the cap is passed; the rest is never read."""
    total = 50 << 20
    for chunked in (False, True):
        sent = [0]
        with socket.create_connection(("127.0.0.1", breaker.port), timeout=10) as sock:
            framing = "transfer-encoding: chunked" if chunked else f"content-length: {total}"
            sock.sendall(
                f"POST {HOOK_PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                f"authorization: Bearer {HOOK_TOKEN}\r\ncontent-type: application/json\r\n"
                f"{framing}\r\n\r\n".encode()
            )

            def feed(
                sock: socket.socket = sock, sent: list[int] = sent, chunked: bool = chunked
            ) -> None:
                piece = b'{"session_id": "s1", "tool_input": "' + b"a" * (64 << 10)
                try:
                    while sent[0] < total:
                        data = piece[: total - sent[0]]
                        sock.sendall(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
                        sent[0] += len(data)
                except OSError:
                    pass  # the breaker answered and closed: it stopped reading

            feeder = threading.Thread(target=feed, daemon=True)
            feeder.start()
            status, answer = read_answer(sock)
            at_answer = sent[0]
        feeder.join(10)
        assert status == 200
        decided = answer["hookSpecificOutput"]
        assert decided["permissionDecision"] == "deny"
        assert "too_large" in decided["permissionDecisionReason"]
        assert at_answer < total // 4, at_answer  # answered long before the body was sent
    assert 'cause="too_large",decision="deny"} 2.0' in breaker.metrics()


def test_an_exception_inside_the_hook_is_a_decision(breaker: Running) -> None:
    breaker.breakers._db.close()  # the state's reads now raise sqlite3.ProgrammingError
    bash = hook(breaker.base, tool="Bash")
    assert bash["permissionDecision"] == "deny"
    assert "internal: ProgrammingError in the breaker" in bash["permissionDecisionReason"]
    assert hook(breaker.base, tool="Read")["permissionDecision"] == "ask"
    health = requests.get(f"{breaker.base}/healthz", timeout=5)
    assert health.status_code == 503
    assert health.json() == {"status": "error", "state_file": "unreachable"}


# --- health, start, configuration ------------------------------------------------------


def test_healthz_answers_without_a_token_and_says_only_ok(breaker: Running) -> None:
    assert breaker.state.stat().st_mode & 0o777 == 0o600  # created for its owner only
    health = requests.get(f"{breaker.base}/healthz", timeout=5)
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "state_file": "reachable"}
    breaker.state.unlink()  # deleted under a running breaker: its writes would be lost
    assert requests.get(f"{breaker.base}/healthz", timeout=5).status_code == 503


@pytest.mark.parametrize(
    ("env", "args", "message"),
    [
        ({"TRAJWATCH_BREAKER_SECRET": SECRET}, [], "needs an operator token"),
        ({**BREAKER_ENV, "TRAJWATCH_HOOK_TOKEN": ""}, [], "--hook-without-token"),
        ({**BREAKER_ENV, "TRAJWATCH_BREAKER_TOKEN": "short"}, [], "too short"),
        (
            {**BREAKER_ENV, "TRAJWATCH_HOOK_TOKEN": OPERATOR_TOKEN},
            [],
            "a token of its own",
        ),
        (BREAKER_ENV, ["--check-url", "localhost:1"], "needs http:// or https://"),
        (BREAKER_ENV, ["--check-url", "ftp://127.0.0.1/v1/check"], "needs http:// or https://"),
        (BREAKER_ENV, ["--check-url", "http:///v1/check"], "needs http:// or https://"),
        (BREAKER_ENV, ["--check-url", "http://u:p@127.0.0.1:1/"], "must not hold credentials"),
        (BREAKER_ENV, ["--check-url", "http://127.0.0.1:99999/"], "is not a URL"),
        (BREAKER_ENV, ["--check-url", "http://127.0.0.1:1/", "--check-timeout", "0"], "> 0"),
    ],
)
def test_the_breaker_refuses_to_start_misconfigured(
    env: dict[str, str],
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in [*BREAKER_ENV, "TRAJWATCH_WEBHOOK_SECRET", "TRAJWATCH_AUTH_TOKEN"]:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["breaker", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert OPERATOR_TOKEN not in err


def test_tokens_are_named_and_compared_whole() -> None:
    tokens = Tokens.parse(
        f"alice={OPERATOR_TOKEN} {HOOK_TOKEN} dGhpcyBpcyBhIGJhc2U2NA==", variable="T"
    )
    assert tokens.names == ["alice", "operator"]
    assert tokens.match([f"Bearer {OPERATOR_TOKEN}"]) == "alice"
    assert tokens.match([f"bearer  {HOOK_TOKEN} "]) == "operator"
    assert tokens.match(["Bearer dGhpcyBpcyBhIGJhc2U2NA=="]) == "operator"  # padding kept
    assert tokens.match([f"Bearer {OPERATOR_TOKEN[:-1]}"]) is None
    assert tokens.match([f"Bearer {OPERATOR_TOKEN}x"]) is None
    assert tokens.match([f"Bearer {OPERATOR_TOKEN}"] * 2) is None  # two headers: ambiguous
    assert tokens.match([]) is None
    with pytest.raises(ConfigError, match="too short"):
        Tokens.parse("alice=short", variable="T")


@pytest.mark.slow  # trajwatch breaker as a process
def test_the_command_logs_its_start_without_a_token_and_serves_healthz(tmp_path: Path) -> None:
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TRAJWATCH_")}
    environ.update(BREAKER_ENV, PYTHONPATH=str(ROOT), TRAJWATCH_HOOK_TOKEN="")
    argv = [sys.executable, "-m", "trajwatch.cli.main", "breaker", "--port", str(port),
            "--state", str(tmp_path / "b.db"), "--hook-without-token",
            "--check-url", f"http://127.0.0.1:{free_port()}/v1/check"]  # fmt: skip
    (tmp_path / "b.db").touch(0o644)  # an existing state file other users may read
    log = tmp_path / "breaker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(argv, env=environ, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok:
                    break
            except requests.ConnectionError:
                time.sleep(0.1)
        answer = requests.post(
            f"http://127.0.0.1:{port}{HOOK_PATH}", json=hook_body(), timeout=10
        ).json()["hookSpecificOutput"]
        assert answer["permissionDecision"] == "deny"  # serve is down: the hook fails closed
    finally:
        process.terminate()
        process.wait(15)
    text = log.read_text()
    assert f"listening on http://127.0.0.1:{port}" in text
    assert "1 operator token(s) (alice)" in text and "NO hook token" in text
    assert "WARNING: --hook-without-token" in text
    assert "no TRAJWATCH_AUTH_TOKEN" in text
    assert "is open to other users: chmod 600 it" in text
    assert 'hook failure: session="s1" tool="Bash" cause=unreachable' in text
    assert OPERATOR_TOKEN not in text and SECRET not in text
