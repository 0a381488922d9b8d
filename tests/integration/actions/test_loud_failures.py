"""A kill or rollback that did not reach its breaker is loud: an ERROR log line naming the
session and the reason, and a count in the dispatcher's metrics — whether the guard
refused it, every attempt failed, or the endpoint answered 410 and holds it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from models.store import Store
from tests.support.outbox import queue_kill
from tests.support.webhook_receiver import SECRET, Answer, Receiver
from trajwatch.actions import Dispatcher, signing
from trajwatch.actions.endpoints import ActionsConfig, Endpoint, RetryPolicy

TWO_TRIES = RetryPolicy(max_attempts=2, backoff_s=0.05, max_backoff_s=0.1, timeout_s=2, lease_s=10)


def config(url: str, *, allow_private: bool = True) -> ActionsConfig:
    return ActionsConfig(
        endpoints={"breaker": Endpoint("breaker", url, signing.signers([SECRET], where="test"))},
        retry=TWO_TRIES,
        allow_private=allow_private,
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


def run(tmp_path: Path, actions: ActionsConfig) -> Dispatcher:
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    with Store.open(db) as store:
        queue_kill(store, actions, "s-loud")
    dispatcher = Dispatcher(db, actions).start()
    try:
        assert dispatcher.drain(20)
    finally:
        dispatcher.stop()
    return dispatcher


def failed(dispatcher: Dispatcher, reason: str) -> float | None:
    return dispatcher.metrics.registry.get_sample_value(
        "trajwatch_deliveries_failed_total",
        {"endpoint": "breaker", "action": "kill", "reason": reason},
    )


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]


def test_a_kill_dead_after_the_last_try_is_an_error_and_a_count(
    tmp_path: Path, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.answer = lambda _: Answer(500)
    dispatcher = run(tmp_path, config(receiver.url))
    assert len(receiver.received) == 2
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("kill of session 's-loud' not delivered yet to breaker (attempt 1 of 2)" in m
               for m in warned)
    [error] = errors(caplog)
    assert "kill of session 's-loud' NOT DELIVERED to breaker: HTTP 500; gave up after 2" in error
    assert "The agent was not stopped" in error
    assert failed(dispatcher, "dead") == 1


def test_a_refused_kill_is_an_error_at_start_and_when_sent(
    tmp_path: Path, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    dispatcher = run(tmp_path, config(receiver.url, allow_private=False))
    start, sent = errors(caplog)
    assert "webhook endpoint breaker" in start and "REFUSED by the SSRF guard" in start
    assert "kill of session 's-loud' NOT DELIVERED to breaker: refused: " in sent
    assert failed(dispatcher, "refused") == 1 and not receiver.received


def test_a_kill_held_by_a_410_is_an_error_and_a_count(
    tmp_path: Path, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.answer = lambda _: Answer(410)
    dispatcher = run(tmp_path, config(receiver.url))
    [error] = errors(caplog)
    assert "NOT DELIVERED to breaker: 410 Gone" in error and "deliveries enable breaker" in error
    assert failed(dispatcher, "disabled") == 1


def test_a_delivered_kill_is_counted_and_silent(
    tmp_path: Path, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    dispatcher = run(tmp_path, config(receiver.url))
    assert not errors(caplog) and len(receiver.applied) == 1
    assert dispatcher.metrics.registry.get_sample_value(
        "trajwatch_deliveries_delivered_total", {"endpoint": "breaker", "action": "kill"}
    ) == 1
