"""Actions delivered through the outbox to a real receiver on loopback, on SQLite and
PostgreSQL: signed, retried, once per webhook-id, never lost — across receiver outages, a
SIGKILLed process, replays, 410s and slow receivers."""

from __future__ import annotations

import dataclasses
import heapq
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path

import pytest

from detectors.testing import Session
from features.session.workspace import with_workspace
from ingest.formats.table import delivered
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.sinks import Committed
from ingest.sources.files import read_recordings
from models.records import Action, Alert, SessionInfo, Severity
from models.store import SessionCursor, Store
from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.wait import wait_until
from tests.support.webhook_receiver import SECRET, Answer, Received, Receiver
from trajwatch.actions import ActionSink, Dispatcher, signing
from trajwatch.actions.endpoints import ActionsConfig, Endpoint, RetryPolicy
from trajwatch.actions.policy import ActionPolicy
from trajwatch.cli import main as cli
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import ReplaySummary, replay
from trajwatch.settings import Settings

RUNS = [
    ROOT / "fixtures" / "recorded" / "run-002-8e3cb0.events.jsonl.gz",
    ROOT / "fixtures" / "recorded" / "run-008-7aaac6.events.jsonl",
    ROOT / "fixtures" / "recorded" / "run-028-7216c2.events.jsonl",
]
DETECTORS = detector_set(load_config(None))
FAST = RetryPolicy(max_attempts=200, backoff_s=0.05, max_backoff_s=0.2, timeout_s=5, lease_s=10)


def config(url: str, *, retry: RetryPolicy = FAST, allow_private: bool = True) -> ActionsConfig:
    return ActionsConfig(
        endpoints={"breaker": Endpoint("breaker", url, signing.signers([SECRET], where="test"))},
        retry=retry,
        allow_private=allow_private,
        explorer_url="https://tw.example.com",
    )


def feed(store: Store, sink: ActionSink | None, paths: list[Path] = RUNS) -> Pipeline:
    settings = Settings()
    pipeline = Pipeline(
        store,
        settings=settings,
        detectors=DETECTORS,
        sinks=[sink] if sink else [],
    )
    for partition, files in read_recordings(paths):
        timed = [delivered(records, settings) for records in files]
        for _, step in heapq.merge(*timed, key=itemgetter(0)):
            step(pipeline)
        pipeline.end_partition(partition)
    pipeline.close()
    return pipeline


def run(paths: list[Path], settings: Settings, actions: ActionsConfig) -> ReplaySummary:
    """``trajwatch replay --deliver``: the replay waits for the dispatcher to finish."""
    return replay(
        paths,
        settings=settings,
        detectors=DETECTORS,
        actions_config=actions,
        deliver=True,
        deliver_timeout_s=20,
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


def outbox_ids(store: Store, status: str | None = None) -> set[str]:
    return {d.delivery_id for d in store.outbox().list(status)}


# --- signing -----------------------------------------------------------------------------


def test_the_published_standard_webhooks_test_vector_verifies() -> None:
    signer = signing.signers([SECRET], where="test")
    headers = signing.headers(
        signer, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}'
    )
    assert headers["webhook-signature"] == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_during_a_key_rotation_receivers_with_either_secret_verify() -> None:
    from standardwebhooks import Webhook, WebhookVerificationError

    old, new = SECRET, "whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA=="
    body, now = '{"type":"trajwatch.kill"}', int(time.time())
    headers = signing.headers(signing.signers([new, old], where="t"), "al_1:b:kill", now, body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        assert Webhook(secret).verify(body, headers) == json.loads(body)
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_dGhpcmQtc2VjcmV0").verify(body, headers)


# --- delivery ----------------------------------------------------------------------------


def test_a_receiver_down_for_a_while_gets_every_action_exactly_once_when_back(
    db_url: str,
) -> None:
    down = Receiver(free_port())  # not started: connections are refused
    dispatcher = Dispatcher(db_url, config(down.url)).start()
    store = Store.open(db_url)
    try:
        feed(store, ActionSink(config(down.url), dispatcher))
        queued = outbox_ids(store)
        assert len(queued) >= 4, "the runs raise alerts that fire actions"
        wait_until(lambda: all(d.attempts >= 2 for d in store.outbox().list()), 20, "retries")
        assert outbox_ids(store, "pending") == queued
        down.start()
        assert dispatcher.drain(20)
        assert outbox_ids(store, "delivered") == queued
        assert set(down.counts()) == queued
        assert set(down.counts().values()) == {1}
        assert down.rejected == 0 and down.applied_twice() == 0
        stored = {a.alert_id: a for a in store.alerts()}
        for webhook_id, body in down.applied.items():
            data = body["data"]
            assert webhook_id == f"{data['alert_id']}:breaker:{data['action']}"
            assert data["session_id"] == stored[data["alert_id"]].session_id
            assert body["type"] in ("trajwatch.kill", "trajwatch.rollback", "trajwatch.alert")
    finally:
        dispatcher.stop()
        down.stop()
        store.close()


def _cli_env(receiver: Receiver, tmp: Path) -> dict[str, str]:
    toml = tmp / "trajwatch.toml"
    toml.write_text(
        "[actions.retry]\nbackoff_s = 0.05\nmax_backoff_s = 0.2\nmax_attempts = 1000\n"
        "timeout_s = 1\nlease_s = 2\n"  # a row the killed process had claimed is due in 2 s
    )
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRAJWATCH_CONFIG": str(toml),
        "TRAJWATCH_WEBHOOK_URL": receiver.url,
        "TRAJWATCH_WEBHOOK_SECRET": SECRET,
        "TRAJWATCH_WEBHOOK_ALLOW_PRIVATE": "1",
    }


@pytest.mark.slow  # a replay process, killed and restarted
def test_a_process_killed_after_the_alert_commit_delivers_once_after_restart(
    db_url: str, tmp_path: Path
) -> None:
    receiver = Receiver(free_port())  # down while the first process runs
    env = _cli_env(receiver, tmp_path)
    command = [sys.executable, "-m", "trajwatch.cli.main"]
    first = subprocess.Popen(
        [*command, "replay", str(RUNS[0]), "--db", db_url, "--deliver", "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = Store.open(db_url)
    try:
        wait_until(lambda: first.poll() is None and store.count("deliveries") > 0, 60, "a delivery")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        queued = outbox_ids(store)
        assert queued and store.count("alerts") > 0
        assert not receiver.received
        receiver.start()
        restarted = subprocess.run(
            [*command, "dispatch", "--db", db_url, "--until-idle"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert restarted.returncode == 0, restarted.stderr
        assert outbox_ids(store, "delivered") == outbox_ids(store) == queued
        assert receiver.counts() == {webhook_id: 1 for webhook_id in queued}
    finally:
        if first.poll() is None:
            first.kill()
        receiver.stop()
        store.close()


def test_the_same_input_replayed_again_sends_no_second_webhook(
    db_url: str, receiver: Receiver
) -> None:
    settings = Settings(db_url=db_url)
    first = run(RUNS, settings, config(receiver.url))
    assert first.queued > 0 and first.undelivered == 0
    sent = receiver.counts()
    assert sum(sent.values()) == first.queued
    again = run(RUNS, settings, config(receiver.url))
    assert again.queued == 0
    assert [a.alert_id for a in again.alerts] == [a.alert_id for a in first.alerts]
    assert receiver.counts() == sent


def test_a_replay_reports_what_would_fire_and_sends_nothing_without_deliver(
    tmp_path: Path, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    os.environ["TRAJWATCH_WEBHOOK_URL"] = receiver.url
    os.environ["TRAJWATCH_WEBHOOK_SECRET"] = SECRET
    try:
        assert cli.main(["replay", *map(str, RUNS), "--db", db, "--json"]) == 0
    finally:
        del os.environ["TRAJWATCH_WEBHOOK_URL"], os.environ["TRAJWATCH_WEBHOOK_SECRET"]
    out = json.loads(capsys.readouterr().out)
    assert {"sessions", "steps", "dead_letters", "alerts", "skipped"} <= set(out)
    # no rules: every alert's recommended action, but for a kill the discipline withholds
    recommended = {a["id"]: a["action"] for a in out["alerts"]}
    fired = {f["alert_id"]: f for f in out["would_fire"]}
    assert set(fired) == set(recommended)
    for alert_id, decision in fired.items():
        withheld = "withheld: no independent signal" in decision["why"]
        carried = "corroborates" in decision["why"]  # a withheld stop, carried here
        if carried:
            assert decision["action"] in ("kill", "rollback")
        else:
            assert decision["action"] == ("notify" if withheld else recommended[alert_id])
        assert not withheld or recommended[alert_id] in ("kill", "rollback")
    with Store.open(db) as store:
        assert store.count("deliveries") == 0
    assert not receiver.received
    assert cli.main(["replay", str(RUNS[0]), "--db", db, "--deliver"]) == 2
    assert "--deliver needs a webhook endpoint" in capsys.readouterr().err


def test_a_410_disables_the_endpoint_visibly_until_it_is_re_enabled(
    db_url: str, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver.answer = lambda _: Answer(410)
    settings = Settings(db_url=db_url)
    summary = run(RUNS, settings, config(receiver.url))
    assert summary.undelivered == 0
    assert 1 <= len(receiver.received) <= 4  # only what was in flight when the 410 came
    assert cli.main(["deliveries", "list", "--db", db_url, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(e["name"], e["enabled"]) for e in listed["endpoints"]] == [("breaker", False)]
    assert "410" in listed["endpoints"][0]["reason"]
    assert {d["status"] for d in listed["deliveries"]} == {"disabled"}
    assert cli.main(["deliveries", "list", "--db", db_url]) == 0
    assert "endpoint breaker DISABLED" in capsys.readouterr().out

    receiver.answer = lambda _: Answer(200)
    assert cli.main(["deliveries", "enable", "breaker", "--db", db_url]) == 0
    dispatcher = Dispatcher(db_url, config(receiver.url)).start()
    try:
        assert dispatcher.drain(20)
    finally:
        dispatcher.stop()
    with Store.open(db_url) as store:
        assert outbox_ids(store, "delivered") == outbox_ids(store)
        assert set(receiver.applied) == outbox_ids(store)


def test_a_slow_receiver_does_not_stall_detection(db_url: str, receiver: Receiver) -> None:
    release = threading.Event()

    def slow(_: Received) -> Answer:
        release.wait(30)
        return Answer(200)

    receiver.answer = slow
    dispatcher = Dispatcher(db_url, config(receiver.url)).start()
    store = Store.open(db_url)
    try:
        started = time.monotonic()
        feed(store, ActionSink(config(receiver.url), dispatcher))
        feed(store, None, [ROOT / "fixtures" / "recorded" / "run-029-981e59.events.jsonl"])
        elapsed = time.monotonic() - started
        # Every sender is blocked on the receiver, yet every alert is stored and queued.
        wait_until(lambda: len(receiver.received) >= 1, 20, "a webhook")
        assert not receiver.applied
        assert store.count("alerts") > 0 and store.count("deliveries") > 0
        assert elapsed < 20
        release.set()
        assert dispatcher.drain(20)
        assert outbox_ids(store, "delivered") == outbox_ids(store)
    finally:
        release.set()
        dispatcher.stop()
        store.close()


def test_redirects_fail_retry_after_is_honoured_and_the_id_never_changes(
    db_url: str, receiver: Receiver
) -> None:
    def scripted(got: Received) -> Answer:
        n = receiver.counts()[got.webhook_id]
        if n == 1:
            return Answer(302, {"location": "http://127.0.0.1:9/elsewhere"})
        if n == 2:
            return Answer(503, {"retry-after": "1"})
        return Answer(200)

    receiver.answer = scripted
    dispatcher = Dispatcher(db_url, config(receiver.url)).start()
    store = Store.open(db_url)
    try:
        feed(store, ActionSink(config(receiver.url), dispatcher), RUNS[:1])
        assert dispatcher.drain(20)
        rows = store.outbox().list()
        assert rows and all((d.status, d.attempts) == ("delivered", 3) for d in rows)
        assert receiver.rejected == 0
        for row in rows:
            mine = [r for r in receiver.received if r.webhook_id == row.delivery_id]
            assert len(mine) == 3 and len({r.body for r in mine}) == 1
            assert mine[2].at - mine[1].at >= 0.95  # waited for Retry-After, not 0.05 s
    finally:
        dispatcher.stop()
        store.close()


def test_after_the_last_try_a_delivery_is_dead_until_redelivered(
    db_url: str, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver.answer = lambda _: Answer(500)
    retry = RetryPolicy(max_attempts=2, backoff_s=0.05, max_backoff_s=0.1, timeout_s=5, lease_s=10)
    dispatcher = Dispatcher(db_url, config(receiver.url, retry=retry)).start()
    store = Store.open(db_url)
    try:
        feed(store, ActionSink(config(receiver.url, retry=retry), dispatcher), RUNS[:1])
        assert dispatcher.drain(20)
        dead = outbox_ids(store, "dead")
        assert dead == outbox_ids(store) and len(receiver.received) == 2 * len(dead)
        assert cli.main(["deliveries", "list", "--status", "dead", "--db", db_url, "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["deliveries"]
        assert {d["id"] for d in listed} == dead
        assert all("HTTP 500" in d["last_error"] and d["attempts"] == 2 for d in listed)
        receiver.answer = lambda _: Answer(200)
        one = sorted(dead)[0]
        assert cli.main(["deliveries", "redeliver", one, "--db", db_url]) == 0
        assert dispatcher.drain(20)
        assert outbox_ids(store, "delivered") == {one}
        assert cli.main(["deliveries", "redeliver", "--dead", "--db", db_url]) == 0
        assert dispatcher.drain(20)
        assert outbox_ids(store, "delivered") == dead == set(receiver.applied)
    finally:
        dispatcher.stop()
        store.close()


def test_the_ssrf_guard_refuses_loopback_unless_allowed(tmp_path: Path, receiver: Receiver) -> None:
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    guarded = config(receiver.url, allow_private=False)
    summary = run(RUNS[:1], Settings(db_url=db), guarded)
    assert summary.queued > 0 and summary.undelivered == 0
    with Store.open(db) as store:
        rows = store.outbox().list()
    assert {d.status for d in rows} == {"dead"}
    assert all("loopback" in (d.last_error or "") for d in rows)
    assert not receiver.received


def test_a_rollback_names_the_checkpoint_and_its_commit_or_falls_back_to_kill(
    store: Store,
) -> None:
    s = Session("sess-rb", agent="coder")
    steps = [
        s.start(),
        s.checkpoint("ck-1", "abc1234"),
        *s.tool("bash", {"command": "ls"}),
        s.checkpoint("ck-2", "def5678"),
        *s.tool("bash", {"command": "rm -rf build"}),
    ]

    def rollback(n: int, onset: int) -> Alert:
        return Alert(
            alert_id=f"al_rb{n}",
            session_id="sess-rb",
            detector="compliance_decay",
            severity=Severity.CRITICAL,
            score=0.9,
            onset_seq=onset,
            onset_step_id=f"sess-rb#{onset}",
            evidence=({"step": onset},),
            reason="broke a rule",
            action=Action.ROLLBACK,
            ts=steps[-1].ts + n,
        )

    alerts = [rollback(1, onset=5), rollback(2, onset=1)]
    # the operator confirmed compliance_decay's stops: this tests the rollback target
    confirmed = ActionPolicy(confirmed=frozenset({"compliance_decay"}))
    hook = config("https://breaker.example.com/hook")
    sink = ActionSink(dataclasses.replace(hook, policy=confirmed))
    with store.unit() as unit:
        unit.upsert_session(
            SessionInfo(session_id="sess-rb", agent="coder"),
            SessionCursor(session_id="sess-rb", next_seq=len(steps)),
        )
        unit.add_steps(steps)
        unit.add_alerts(alerts)
        sink.in_transaction(unit, Committed(steps=steps, alerts=alerts, dead_letters=[]))
    rows = {d.alert_id: d for d in store.outbox().list()}
    back = json.loads(rows["al_rb1"].payload or "")
    assert (rows["al_rb1"].action, back["type"]) == (Action.ROLLBACK, "trajwatch.rollback")
    assert back["data"]["checkpoint"] == {"checkpoint_id": "ck-2", "commit": "def5678", "step": 4}
    assert back["data"]["agent"] == "coder"
    assert back["data"]["link"] == "https://tw.example.com/?session=sess-rb&alert=al_rb1"
    killed = json.loads(rows["al_rb2"].payload or "")
    assert (rows["al_rb2"].action, killed["type"]) == (Action.KILL, "trajwatch.kill")
    assert killed["data"]["checkpoint"] is None
    assert "no checkpoint before the onset" in killed["data"]["decision"]


def test_backtest_reports_per_agent_what_a_candidate_policy_would_fire(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    with Store.open(db) as store:
        feed(store, None)
        alerts = store.alerts()
        agents = {i.session_id: i.agent for i in store.sessions()}
    candidate = tmp_path / "candidate.toml"
    candidate.write_text(
        '[actions]\ncooldown_s = 86400\n[[actions.rules]]\naction = "notify"\n'
        "[actions.agents.codewright]\nshadow = true\n"
    )
    assert (
        cli.main(
            [
                "actions",
                "backtest",
                "--since",
                "3000w",
                "--db",
                db,
                "--config",
                str(candidate),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["alerts"] == len(alerts)
    by_agent = {r["agent"]: r for r in out["agents"]}
    assert set(by_agent) == {agents[a.session_id] for a in alerts}
    for agent, row in by_agent.items():
        mine = [a for a in alerts if agents[a.session_id] == agent]
        fired, shadow = sum(row["fired"].values()), sum(row["shadow"].values())
        assert fired + shadow + row["suppressed_by_cooldown"] + row["no_action"] == len(mine)
        assert row["fired"]["kill"] == row["fired"]["rollback"] == 0
        # a day of cooldown: one notify per session, the rest suppressed
        assert fired + shadow == len({a.session_id for a in mine})
        assert (fired == 0) == (agent == "codewright")  # shadow mode for codewright
    assert sum(r["suppressed_by_cooldown"] for r in out["agents"]) > 0
    with Store.open(db) as store:
        assert store.count("deliveries") == 0  # a backtest writes nothing
    assert cli.main(["actions", "backtest", "--since", "3000w", "--db", db]) == 0
    assert "would have fired" in capsys.readouterr().out


def test_a_resume_is_delivered_signed_retried_and_once_with_its_checkpoint_and_commit(
    db_url: str, receiver: Receiver
) -> None:
    """``resume`` goes the way kill and rollback go: outbox row in the alert's commit,
    Standard Webhooks signature, retried under one webhook-id, queued once however often
    its alert is committed; it names the last checkpoint up to the alert, where the session
    works and the commit to resume at; a session a kill stopped is never resumed."""
    s = Session("sess-stall", agent="coder", workspace="/home/ci/dates")
    start = s.start()
    start = start.with_(
        detail={
            **start.detail,
            "repository": "git@github.com:acme/dates.git",
            "branch": "fix/parser",
            "commit": "0a0a0a0",
            "host": "build-7",
        }
    )
    steps = [
        start,
        s.checkpoint("ck-1", "abc1234"),
        *s.tool("bash", {"command": "pytest -q"}),
        s.checkpoint("ck-2", "def5678"),
        s.tool("bash", {"command": "pytest -q tests/slow"})[0],  # a call with no result
    ]
    bare = Session("sess-bare", agent="coder")  # no checkpoint, no workspace facts
    bare_steps = [bare.start(), bare.tool("bash", {"command": "make"})[0]]
    killed = Session("sess-killed", agent="coder")
    killed_steps = [killed.start(), killed.checkpoint("ck-k", "fff0000")]

    def stalled(n: int, session: str, onset: int, ts: int, action: Action) -> Alert:
        return Alert(
            alert_id=f"al_st{n}",
            session_id=session,
            detector="stalled_run",
            severity=Severity.WARN,
            score=0.8,
            onset_seq=onset,
            onset_step_id=f"{session}#{onset}",
            evidence=({"step": onset},),
            reason="a tool call with no result, silent past its cadence",
            action=action,
            ts=ts,
            raised_seq=onset,
        )

    resume = stalled(1, "sess-stall", 5, steps[-1].ts + 1, Action.RESUME)
    resume_bare = stalled(2, "sess-bare", 1, bare_steps[-1].ts + 1, Action.RESUME)
    kill = stalled(3, "sess-killed", 1, killed_steps[-1].ts, Action.KILL)
    after_kill = stalled(4, "sess-killed", 1, killed_steps[-1].ts + 1, Action.RESUME)
    alerts = [resume, resume_bare, kill, after_kill]

    def answer(got: Received) -> Answer:  # each webhook-id fails once, then is taken
        return Answer(503) if receiver.counts()[got.webhook_id] == 1 else Answer(200)

    receiver.answer = answer
    # the operator confirmed the kill: this tests that no resume follows a stop
    policy = ActionPolicy(confirmed=frozenset({"stalled_run"}))
    actions = dataclasses.replace(config(receiver.url), policy=policy)
    dispatcher = Dispatcher(db_url, actions).start()
    store = Store.open(db_url)
    try:
        sink = ActionSink(actions, dispatcher)
        with store.unit() as unit:
            for session, mine in (
                (s, steps),
                (bare, bare_steps),
                (killed, killed_steps),
            ):
                info = with_workspace(
                    SessionInfo(session_id=session.session_id, agent="coder"), mine[0].detail
                )
                unit.upsert_session(
                    info, SessionCursor(session_id=session.session_id, next_seq=len(mine))
                )
                unit.add_steps(mine)
            unit.add_alerts(alerts)
            sink.in_transaction(unit, Committed(steps=steps, alerts=alerts, dead_letters=[]))
        sink.after_commit(Committed(steps=[], alerts=alerts, dead_letters=[]))
        assert dispatcher.drain(20)
        rows = {d.alert_id: d for d in store.outbox().list()}
        assert {a: str(r.action) for a, r in rows.items()} == {
            "al_st1": "resume",
            "al_st2": "resume",
            "al_st3": "kill",
            "al_st4": "notify",  # withheld: resuming would undo the kill
        }
        assert "resume withheld: a kill or rollback fired" in (rows["al_st4"].decision or "")
        assert all((r.status, r.attempts) == ("delivered", 2) for r in rows.values())
        assert receiver.rejected == 0 and receiver.applied_twice() == 0
        assert set(receiver.applied) == {r.delivery_id for r in rows.values()}
        sent = receiver.applied["al_st1:breaker:resume"]
        assert sent["type"] == "trajwatch.resume"
        assert sent["data"]["checkpoint"] == {
            "checkpoint_id": "ck-2",
            "commit": "def5678",
            "step": 4,
        }
        assert sent["data"]["workspace"] == {
            "host": "build-7",
            "directory": "/home/ci/dates",
            "repository": "git@github.com:acme/dates.git",
            "branch": "fix/parser",
            "commit": "def5678",  # the checkpoint's, not the start's
        }
        assert "resume from checkpoint ck-2 (def5678)" in sent["data"]["decision"]
        both = [r for r in receiver.received if r.webhook_id == "al_st1:breaker:resume"]
        assert len(both) == 2 and both[0].body == both[1].body  # one id, one body per retry
        bare_sent = receiver.applied["al_st2:breaker:resume"]["data"]
        assert bare_sent["checkpoint"] is None
        assert bare_sent["workspace"]["commit"] is None
        assert "no checkpoint: resume from the start" in bare_sent["decision"]
        # the same alerts committed again (a replay, a redelivered batch) queue nothing
        with store.unit() as unit:
            sink.in_transaction(unit, Committed(steps=[], alerts=alerts, dead_letters=[]))
        assert sink.queued == 4 and store.count("deliveries") == 4
    finally:
        dispatcher.stop()
        store.close()
