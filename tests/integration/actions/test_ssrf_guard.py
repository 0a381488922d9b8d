"""The SSRF guard against real listeners on loopback: the dispatcher connects exactly where
the guard looked, or nowhere.

Each bypass that once delivered a signed kill somewhere the guard had not judged has its
test: a backslash before a userinfo (the guard read one host, the client another), a DNS
answer that changed between the guard's lookup and the client's (rebinding), the shared
address space of a cloud's metadata service; and the neighbours of those holes: a name
resolving to loopback, a redirect to a private address, TLS to a pinned address verified
against the URL's host name.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from models.records import Action, Delivery
from models.store import Store
from tests.support.outbox import queue_kill
from tests.support.ports import free_port
from tests.support.tls import TestCA
from tests.support.webhook_receiver import SECRET, Answer, Receiver
from trajwatch.actions import Dispatcher, signing
from trajwatch.actions.endpoints import ActionsConfig, Endpoint, RetryPolicy
from trajwatch.actions.operations import redeliver
from trajwatch.actions.ssrf import addresses

ONE_TRY = RetryPolicy(max_attempts=1, backoff_s=0.05, max_backoff_s=0.1, timeout_s=1, lease_s=10)
FEW_TRIES = RetryPolicy(max_attempts=3, backoff_s=0.05, max_backoff_s=0.1, timeout_s=1, lease_s=10)
PUBLIC = "192.88.99.1"
"""A public address (the retired 6to4 relay anycast): what a rebinding name answers first.
Nothing on loopback listens there; a connection to it just fails."""


def config(
    url: str,
    *,
    allow_private: bool = False,
    allow: tuple[str, ...] = (),
    retry: RetryPolicy = ONE_TRY,
) -> ActionsConfig:
    return ActionsConfig(
        endpoints={"breaker": Endpoint("breaker", url, signing.signers([SECRET], where="test"))},
        retry=retry,
        allow_private=allow_private,
        allow_addresses=addresses(allow, where="test"),
    )


def deliver(
    db_url: str, actions: ActionsConfig, session_id: str = "s-guard", **options: Any
) -> tuple[list[Delivery], int]:
    """Queue a kill for ``session_id``, run a dispatcher until the outbox drains; the
    session's rows and the attempts the dispatcher made."""
    with Store.open(db_url) as store:
        queue_kill(store, actions, session_id)
        dispatcher = Dispatcher(db_url, actions, **options).start()
        try:
            assert dispatcher.drain(30), "the outbox did not drain"
        finally:
            dispatcher.stop()
        rows = [d for d in store.outbox().list() if d.session_id == session_id]
        return rows, dispatcher.sent


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'tw.db'}"


def test_a_backslash_before_a_userinfo_cannot_reach_loopback(db: str, receiver: Receiver) -> None:
    # urlsplit reads host 8.8.8.8; requests and browsers read host 127.0.0.1
    url = f"http://127.0.0.1:{receiver.port}\\@8.8.8.8/hook"
    rows, sent = deliver(db, config(url))
    assert [(d.status, d.action) for d in rows] == [("dead", Action.KILL)]
    assert "backslash" in (rows[0].last_error or "")
    assert sent == 0 and not receiver.received


def test_a_userinfo_is_refused_even_where_the_host_is_allowed(
    db: str, receiver: Receiver
) -> None:
    url = f"http://user:pw@127.0.0.1:{receiver.port}/hook"
    rows, sent = deliver(db, config(url, allow_private=True))
    assert rows[0].status == "dead" and "userinfo" in (rows[0].last_error or "")
    assert sent == 0 and not receiver.received


def test_a_name_resolving_to_loopback_is_refused(db: str, receiver: Receiver) -> None:
    rows, sent = deliver(db, config(f"http://localhost:{receiver.port}/hook"))
    assert rows[0].status == "dead" and "loopback" in (rows[0].last_error or "")
    assert sent == 0 and not receiver.received


def test_a_rebinding_name_never_leads_to_a_loopback_connection(
    db: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resolver answers a public address first, loopback after: the guard judged the
    first answer, so the client must connect to it, not ask again."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        asked.append(host)
        address = PUBLIC if len(asked) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    actions = config(f"http://rebind.test:{receiver.port}/hook")
    with Store.open(db) as store:
        queue_kill(store, actions)
        # not started: no loop, no look at the endpoints at start; one attempt per pump
        dispatcher = Dispatcher(db, actions)
        try:
            assert dispatcher.pump() == 1
            assert dispatcher.drain(30)
            assert not receiver.received, "the client asked DNS again and connected to loopback"
            # resolved once (public), connected there (nothing listens) and failed
            assert len(asked) == 1 and dispatcher.sent == 1
            row = store.outbox().list()[0]
            assert row.status == "dead" and "loopback" not in (row.last_error or "")
            # the next attempt resolves once more: loopback now, refused before connecting
            redeliver(store, [row.delivery_id])
            assert dispatcher.pump() == 1
            assert dispatcher.drain(30)
        finally:
            dispatcher.stop()
        row = store.outbox().list()[0]
    assert len(asked) == 2 and dispatcher.sent == 1 and not receiver.received
    assert row.status == "dead" and "rebind.test resolves to 127.0.0.1: loopback" in (
        row.last_error or ""
    )


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("100.100.100.200", "shared address space"),  # Alibaba Cloud's metadata
        ("100.64.0.1", "shared address space"),
        ("169.254.169.254", "link-local"),  # AWS, GCP, Azure
        ("fd00:ec2::254", "AWS's IPv6 metadata"),
        ("::ffff:169.254.169.254", "link-local"),
    ],
)
def test_metadata_addresses_are_refused_even_with_allow_private(
    db: str, address: str, why: str
) -> None:
    host = f"[{address}]" if ":" in address else address
    rows, sent = deliver(db, config(f"http://{host}:{free_port()}/latest", allow_private=True))
    assert rows[0].status == "dead" and why in (rows[0].last_error or "")
    assert sent == 0


def test_a_name_resolving_to_metadata_is_refused_with_allow_private(db: str) -> None:
    def resolver(host: str, port: int) -> list[Any]:
        return [(socket.AF_INET, ("100.100.100.200", port))]

    actions = config("http://metadata.internal.test/latest", allow_private=True)
    rows, sent = deliver(db, actions, resolver=resolver)
    assert rows[0].status == "dead" and "shared address space" in (rows[0].last_error or "")
    assert sent == 0
    by_name = config("http://metadata.google.internal/x", allow_private=True)
    rows, sent = deliver(db, by_name, "s-by-name", resolver=resolver)
    assert "cloud metadata service" in (rows[0].last_error or "") and sent == 0


def test_an_exact_allowed_address_is_reached_without_allow_private(
    db: str, receiver: Receiver
) -> None:
    rows, _ = deliver(db, config(receiver.url, allow=("127.0.0.1",)))
    assert rows[0].status == "delivered" and len(receiver.applied) == 1
    assert receiver.received[0].headers["host"] == f"127.0.0.1:{receiver.port}"


def test_a_redirect_to_a_private_address_is_not_followed(db: str) -> None:
    inner = Receiver(host="127.0.0.2").start()  # loopback, not allowed
    outer = Receiver().start()
    outer.answer = lambda _: Answer(302, {"location": inner.url})
    try:
        rows, sent = deliver(db, config(outer.url, allow=("127.0.0.1",), retry=FEW_TRIES))
        assert not inner.received
        assert len(outer.received) == sent == 3
        assert rows[0].status == "dead"
        assert "HTTP 302 (redirects are not followed)" in (rows[0].last_error or "")
    finally:
        inner.stop()
        outer.stop()


def test_https_to_a_pinned_address_verifies_the_urls_host_name(
    db: str, tmp_path: Path
) -> None:
    """The client connects to the address the guard judged, and still speaks TLS to the
    name in the URL: SNI and the certificate check are that name's, and so is Host."""
    ca = TestCA(tmp_path)

    def resolver(host: str, port: int) -> list[Any]:
        return [(socket.AF_INET, ("127.0.0.1", port))]

    good = Receiver(tls=ca.server("breaker.test")).start()
    wrong = Receiver(tls=ca.server("someone-else.test")).start()
    try:
        url = f"https://breaker.test:{good.port}/hook"
        rows, _ = deliver(db, config(url, allow=("127.0.0.1",)), resolver=resolver, tls=ca.client())
        assert rows[0].status == "delivered"
        assert good.server_names == ["breaker.test"]
        assert good.received[0].headers["host"] == f"breaker.test:{good.port}"
    finally:
        good.stop()
    try:
        url = f"https://breaker.test:{wrong.port}/hook"
        actions = config(url, allow=("127.0.0.1",))
        rows, _ = deliver(db, actions, "s-wrong-cert", resolver=resolver, tls=ca.client())
        assert rows[0].status == "dead"
        assert "CERTIFICATE_VERIFY_FAILED" in (rows[0].last_error or "")
        assert wrong.server_names == ["breaker.test"] and not wrong.received
    finally:
        wrong.stop()
