"""``trajwatch breaker --langgraph-url`` against a real LangGraph API server on loopback:
``langgraph dev`` (langgraph-cli[inmem], the in-memory runtime) serving a small graph
whose run takes a checkpointed superstep every ~0.1 s and no LLM. A kill or rollback alert
on the run's thread goes through trajwatch's outbox and dispatcher (zero config:
``TRAJWATCH_WEBHOOK_URL``/``_SECRET``/``_ALLOW_PRIVATE``) as a signed webhook to
``trajwatch breaker --langgraph-url`` (the command, as a process), which calls
LangGraph's ``runs.cancel``: a kill interrupts the run (its
checkpoints are kept), a rollback deletes the run and its checkpoints (the thread is back
to before the run). The same webhook delivered again cancels nothing more."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from detectors.testing import Session
from ingest.pipeline.sinks import Committed
from models.errors import ConfigError
from models.records import Action, Alert, SessionInfo, Severity
from models.store import SessionCursor, Store
from tests.integration.breaker.test_breaker import BREAKER_ENV, OPERATOR, Running, kill, send
from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.wait import wait_until
from tests.support.webhook_receiver import SECRET
from trajwatch import actions
from trajwatch.breaker.langgraph import LangGraphCanceller
from trajwatch.config import actions_config
from trajwatch.settings import Settings

GRAPH = """
import asyncio
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    steps: int
    until: int


async def work(state: State) -> dict:
    for _ in range(5):  # a slow tool: 0.1 s a superstep, each one checkpointed
        await asyncio.sleep(0.02)
    return {"steps": state["steps"] + 1}


builder = StateGraph(State)
builder.add_node("work", work)
builder.add_edge(START, "work")
builder.add_conditional_edges(
    "work", lambda state: "work" if state["steps"] < state["until"] else END
)
graph = builder.compile()
"""
QUIET = {
    # no telemetry, analytics, LangSmith tracing or version check: nothing leaves loopback
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
FOREVER = 1_000_000  # supersteps: the run is still going when the alert arrives


@contextlib.contextmanager
def serving(argv: list[str], *, cwd: Path, env: dict[str, str], ready: str) -> Iterator[None]:
    """A server process, up once ``ready`` answers 200; its output in ``cwd/server.log``
    (shown if it dies); stopped with its process group."""
    with (cwd / "server.log").open("wb") as log:
        server = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 90
            while True:
                assert server.poll() is None, (cwd / "server.log").read_text()[-3000:]
                assert time.monotonic() < deadline, f"{argv[:4]} did not answer in 90 s"
                try:
                    if requests.get(ready, timeout=1).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
                time.sleep(0.1)
            yield
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(5)


@pytest.fixture(scope="module")
def langgraph_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``langgraph dev`` serving GRAPH, in memory, on a free loopback port."""
    root = tmp_path_factory.mktemp("langgraph")
    (root / "agent.py").write_text(GRAPH)
    (root / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"agent": "./agent.py:graph"}})
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_"))
    }
    env.update(QUIET, HOME=str(root))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload",
            "--host", "127.0.0.1", "--port", str(port), "--config", "langgraph.json"]  # fmt: skip
    with serving(argv, cwd=root, env=env, ready=f"{url}/ok"):
        yield url


@pytest.fixture(scope="module")
def breaker_url(tmp_path_factory: pytest.TempPathFactory, langgraph_url: str) -> Iterator[str]:
    """The command a user runs: ``trajwatch breaker --langgraph-url URL``."""
    root = tmp_path_factory.mktemp("breaker")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "trajwatch.cli.main", "breaker", "--port", str(port),
            "--state", str(root / "breaker.db"), "--langgraph-url", langgraph_url]  # fmt: skip
    env = {**os.environ, **BREAKER_ENV, "PYTHONPATH": str(ROOT)}
    with serving(argv, cwd=root, env=env, ready=f"{url}/healthz"):
        yield url


def audit(breaker_url: str, session: str) -> dict[str, Any]:
    """The breaker's state and audit trail for a session (``GET /v1/breakers/SESSION``)."""
    answer = requests.get(f"{breaker_url}/v1/breakers/{session}", headers=OPERATOR, timeout=5)
    assert answer.status_code == 200
    return dict(answer.json())


class Trajwatch:
    """A store, the outbox sink and a running dispatcher, configured as a user would:
    ``TRAJWATCH_WEBHOOK_URL``, ``TRAJWATCH_WEBHOOK_SECRET``, ``..._ALLOW_PRIVATE=1``."""

    def __init__(self, tmp: Path, webhook_url: str) -> None:
        db_url = f"sqlite:///{tmp / 'trajwatch.db'}"
        self.store = Store.open(db_url)
        environ = {
            "TRAJWATCH_WEBHOOK_URL": webhook_url,
            "TRAJWATCH_WEBHOOK_SECRET": SECRET,
            "TRAJWATCH_WEBHOOK_ALLOW_PRIVATE": "1",
        }
        fast = {"backoff_s": 0.05, "max_backoff_s": 0.2, "timeout_s": 5, "lease_s": 10}
        # the operator confirmed the loop detector's kills: this tests the delivery path,
        # not the kill discipline (tests/unit/trajwatch/test_action_policy.py)
        table = {"retry": fast, "confirmed_kills": ["runaway_loop"]}
        config = actions_config({"actions": table}, Settings.from_env(environ))
        self.sink, self.dispatcher = actions.start(db_url, config)

    def alert(self, thread_id: str, action: Action) -> str:
        """Store an alert on session ``thread_id`` as the pipeline commits one — steps,
        alert and outbox rows in one transaction — and wake the dispatcher; its id."""
        s = Session(thread_id, agent="langgraph-agent")
        steps = [s.start(), s.checkpoint("ck-1", "abc1234"), *s.tool("fetch", {"url": "x"})]
        alert = Alert(
            alert_id=f"al_{action}_{thread_id[:8]}",
            session_id=thread_id,
            detector="runaway_loop",
            severity=Severity.CRITICAL,
            score=0.95,
            onset_seq=2,
            onset_step_id=steps[2].step_id,
            evidence=({"step": 2},),
            reason="the same fetch again and again",
            action=action,
            ts=steps[-1].ts,
        )
        committed = Committed(steps=steps, alerts=[alert], dead_letters=[])
        with self.store.unit() as unit:
            unit.upsert_session(
                SessionInfo(session_id=thread_id, agent="langgraph-agent"),
                SessionCursor(session_id=thread_id, next_seq=len(steps)),
            )
            unit.add_steps(steps)
            unit.add_alerts([alert])
            self.sink.in_transaction(unit, committed)
        self.sink.after_commit(committed)
        return alert.alert_id

    def delivered(self, alert_id: str) -> str:
        def done() -> bool:
            return any(
                d.alert_id == alert_id and d.status == "delivered"
                for d in self.store.outbox().list()
            )

        wait_until(done, 20, f"{alert_id} to be delivered")
        (row,) = [d for d in self.store.outbox().list() if d.alert_id == alert_id]
        return row.delivery_id

    def close(self) -> None:
        self.dispatcher.stop()
        self.store.close()


@pytest.fixture
def trajwatch(tmp_path: Path, breaker_url: str) -> Iterator[Trajwatch]:
    running = Trajwatch(tmp_path, f"{breaker_url}/v1/webhooks")
    yield running
    running.close()


@pytest.fixture
def lg(langgraph_url: str) -> Iterator[Any]:
    """The LangGraph SDK's client, as the agent's own code would use it."""
    from langgraph_sdk import get_sync_client

    with get_sync_client(url=langgraph_url, api_key=None) as opened:
        yield opened


def long_run(lg: Any, thread_id: str) -> tuple[str, int]:
    """Start a run that would take a day and wait until it has checkpointed a few
    supersteps; its id and how many it had then."""
    run_id = str(lg.runs.create(thread_id, "agent", input={"steps": 0, "until": FOREVER})["run_id"])

    def progress() -> int:
        values = lg.threads.get_state(thread_id)["values"] or {}
        return int(values["steps"]) if values.get("until") == FOREVER else 0

    wait_until(lambda: progress() >= 3, 20, "the run to make progress")
    return run_id, progress()


def run_ids_in_history(lg: Any, thread_id: str) -> set[str]:
    history = lg.threads.get_history(thread_id, limit=1000)
    return {str(c["metadata"].get("run_id")) for c in history if c.get("metadata")}


@pytest.mark.slow  # `langgraph dev` and `trajwatch breaker` in child processes
def test_a_kill_interrupts_the_run_and_keeps_its_checkpoints(
    trajwatch: Trajwatch, breaker_url: str, lg: Any
) -> None:
    thread_id = str(lg.threads.create()["thread_id"])
    run_id, steps_before = long_run(lg, thread_id)
    alert_id = trajwatch.alert(thread_id, Action.KILL)
    trajwatch.delivered(alert_id)
    wait_until(
        lambda: lg.runs.get(thread_id, run_id)["status"] == "interrupted", 20, "the interrupt"
    )
    wait_until(lambda: lg.threads.get(thread_id)["status"] != "busy", 20, "the thread to settle")
    values = lg.threads.get_state(thread_id)["values"]
    assert values["until"] == FOREVER and values["steps"] >= steps_before  # the run's state
    assert run_id in run_ids_in_history(lg, thread_id)  # and its checkpoints are kept
    time.sleep(0.5)
    assert lg.threads.get_state(thread_id)["values"]["steps"] == values["steps"]  # stopped
    trail = audit(breaker_url, thread_id)
    assert trail["breakers"][0]["state"] == "open"
    assert any(f"interrupt run {run_id}" in (a["reason"] or "") for a in trail["audit"])


@pytest.mark.slow  # `langgraph dev` and `trajwatch breaker` in child processes
def test_a_rollback_deletes_the_run_and_its_checkpoints_and_a_repeat_cancels_nothing(
    trajwatch: Trajwatch, breaker_url: str, lg: Any
) -> None:
    thread_id = str(lg.threads.create()["thread_id"])
    before = lg.runs.wait(thread_id, "agent", input={"steps": 0, "until": 2})
    assert before == {"steps": 2, "until": 2}
    first = run_ids_in_history(lg, thread_id)
    run_id, _ = long_run(lg, thread_id)
    assert run_id in run_ids_in_history(lg, thread_id)
    alert_id = trajwatch.alert(thread_id, Action.ROLLBACK)
    delivery = trajwatch.delivered(alert_id)
    assert delivery.endswith(":default:rollback")

    def gone() -> bool:
        try:
            lg.runs.get(thread_id, run_id)
        except Exception as exc:
            assert getattr(getattr(exc, "response", None), "status_code", None) == 404, exc
            return True
        return False

    wait_until(gone, 20, "the rolled-back run to go")
    wait_until(lambda: lg.threads.get(thread_id)["status"] == "idle", 20, "the thread to be idle")
    time.sleep(0.5)  # a superstep in flight at the cancel would have checkpointed by now
    assert lg.threads.get_state(thread_id)["values"] == before  # as before the run
    assert run_ids_in_history(lg, thread_id) == first  # its checkpoints deleted

    # A new run on the thread, then the same webhook delivered again (`trajwatch
    # deliveries redeliver`, same webhook-id): the breaker answers it and cancels nothing.
    again, _ = long_run(lg, thread_id)
    assert trajwatch.store.outbox().redeliver([delivery]) == 1
    trajwatch.dispatcher.wake()
    trajwatch.delivered(alert_id)
    row = trajwatch.store.outbox().get(delivery)
    assert row is not None and row.attempts == 1  # sent and answered 2xx again
    time.sleep(0.5)
    assert lg.runs.get(thread_id, again)["status"] == "running"
    cancels = [
        a for a in audit(breaker_url, thread_id)["audit"] if a["source"].startswith("langgraph:")
    ]
    assert [a["reason"] for a in cancels] == [
        f"langgraph: rollback run {run_id} on thread {thread_id}"
    ]
    lg.runs.cancel(thread_id, again, action="interrupt")


def test_langgraph_down_answers_503_and_records_no_cancel(tmp_path: Path) -> None:
    """The cancel is recorded only once it succeeded: with LangGraph unreachable the
    breaker answers 503 (the dispatcher retries the same id) and remembers nothing."""
    canceller = LangGraphCanceller(f"http://127.0.0.1:{free_port()}")  # nothing listens
    breaker = Running(tmp_path, effects=[canceller])
    try:
        # the SDK retries the connection for ~8 s before it gives up
        answer = send(breaker.base, "al_1:default:kill", kill("t-1"), timeout=30)
        assert answer.status_code == 503 and "langgraph" in answer.json()["error"]
        assert breaker.breakers.state("session", "t-1")[0] == "open"  # the breaker opened
        ran = breaker.breakers.once("langgraph:al_1:default:kill", lambda: "ran")
        assert ran == (True, "ran")  # the failed cancel was not recorded as done
    finally:
        breaker.stop()
        canceller.close()


def test_without_the_sdk_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph_sdk", None)
    with pytest.raises(ConfigError, match=r"pip install 'trajwatch\[langgraph\]'"):
        LangGraphCanceller("http://127.0.0.1:1")
