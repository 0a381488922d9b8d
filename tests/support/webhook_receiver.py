"""A real webhook receiver on loopback for the actions' tests and benchmark: verifies the
Standard Webhooks signature and timestamp, dedupes by ``webhook-id`` (as a circuit
breaker does), and answers as the test scripts it — down, slow, 3xx, 410, Retry-After.
It listens on any loopback address, over plain HTTP or TLS (recording the server name each
client asked for)."""

from __future__ import annotations

import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError

from tests.support.ports import free_port

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Received:
    webhook_id: str
    body: bytes
    headers: dict[str, str]
    at: float


class Receiver:
    """Counts every request (``received``), applies each verified webhook-id once
    (``applied``) and rejects a bad signature with 401 (``rejected``)."""

    def __init__(
        self,
        port: int | None = None,
        secret: str = SECRET,
        *,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port()
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}/hook"
        self.server_names: list[str | None] = []
        """The TLS server name (SNI) of each handshake, with ``tls``."""
        self.verifier = Webhook(secret)
        self.answer: Callable[[Received], Answer] = lambda _: Answer()
        self.received: list[Received] = []
        self.applied: dict[str, Any] = {}
        self.actions: Counter[tuple[str, str]] = Counter()
        """(alert id, action) → how many distinct webhook-ids applied it: > 1 is a double."""
        self.rejected = 0
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                got = Received(headers.get("webhook-id", ""), body, headers, time.monotonic())
                answer = receiver.handle(got)
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                self.send_response(answer.status)
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            self.tls.sni_callback = lambda _sock, name, _ctx: self.server_names.append(name)
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def handle(self, got: Received) -> Answer:
        with self.lock:
            self.received.append(got)
        try:
            data = self.verifier.verify(got.body, got.headers)
        except WebhookVerificationError:
            with self.lock:
                self.rejected += 1
            return Answer(401)
        answer = self.answer(got)
        if 200 <= answer.status < 300:
            with self.lock:
                if got.webhook_id not in self.applied:  # a repeat is dropped: the dedupe
                    self.applied[got.webhook_id] = data
                    self.actions[(data["data"]["alert_id"], data["data"]["action"])] += 1
        return answer

    def applied_twice(self) -> int:
        """Actions applied under more than one webhook-id (must be 0)."""
        with self.lock:
            return sum(1 for n in self.actions.values() if n > 1)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def counts(self) -> Counter[str]:
        with self.lock:
            return Counter(r.webhook_id for r in self.received)
