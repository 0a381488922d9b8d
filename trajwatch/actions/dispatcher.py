"""The dispatcher: sends the outbox's due deliveries as signed Standard Webhooks.

A background thread with its own store connection pool claims due rows (see
:mod:`models.outbox`), hands each to a small pool of sender threads — so one slow
receiver holds one sender, not the others and never the pipeline — and records each
outcome:

- 2xx: ``delivered``.
- 410 Gone: the endpoint is disabled (visible in ``trajwatch deliveries list``), its
  deliveries held as ``disabled`` until ``trajwatch deliveries enable NAME``.
- Anything else — a 3xx (redirects are never followed), 4xx, 5xx, a timeout
  (:attr:`RetryPolicy.timeout_s`, 15 s), a connection error or a name that does not
  resolve — is a failed attempt, retried with exponential backoff and jitter, honouring
  ``Retry-After``; after the last attempt the delivery is ``dead`` (``trajwatch deliveries
  redeliver`` resends it).
- A destination the SSRF guard refuses (:mod:`trajwatch.actions.ssrf`), or an endpoint no
  longer configured: ``dead`` at once, with the reason.

Each attempt parses the endpoint's URL, resolves its host once and judges every address
(:func:`~trajwatch.actions.ssrf.pin`); the request then goes to those addresses and no
other (:mod:`trajwatch.actions.transport`).

Failures are loud: a stopping action (kill, rollback) that is refused, dead or held by a
disabled endpoint is an ERROR line in the process's log, naming the session and the
reason (a notify: a WARNING), and counts in ``trajwatch_deliveries_failed_total``
(:mod:`trajwatch.actions.metrics`); each failed attempt of a stopping action is a
WARNING. At start, each endpoint the guard refuses is an ERROR line too.

Every attempt of a delivery sends the same body under the same ``webhook-id``, with a
fresh ``webhook-timestamp`` and signatures. The pipeline's
:class:`~trajwatch.actions.sink.ActionSink` wakes the thread after each commit; it also
polls every ``poll_s`` (retries coming due, rows written by other processes).
"""

from __future__ import annotations

import email.utils
import http.client
import logging
import random
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

from prometheus_client import CollectorRegistry

from features.redact.engine import redact
from models.errors import DestinationRefused
from models.records import Delivery
from models.store import Store
from trajwatch.actions import signing
from trajwatch.actions.endpoints import ActionsConfig, Endpoint
from trajwatch.actions.metrics import DeliveryMetrics
from trajwatch.actions.ssrf import AddressPolicy, Resolver, pin, system_resolver
from trajwatch.actions.transport import Reply, post

log = logging.getLogger(__name__)

USER_AGENT = "trajwatch-webhooks/1"
STOPPING = ("kill", "rollback")
"""Actions that stop or rewind an agent: one of these not delivered is an ERROR."""


class Dispatcher:
    """Sends the outbox of the store at ``db_url`` to ``config.endpoints``.

    ``registry``: where the delivery metrics go (``serve`` passes the registry its
    ``/metrics`` serves; None: a registry of the dispatcher's own, :attr:`metrics`).
    ``resolver`` and ``tls`` are seams for tests: the DNS lookup
    (:data:`~trajwatch.actions.ssrf.Resolver`) and the TLS context."""

    def __init__(
        self,
        db_url: str,
        config: ActionsConfig,
        *,
        senders: int = 4,
        poll_s: float = 0.5,
        rng: random.Random | None = None,
        clock: Callable[[], int] = time.time_ns,
        registry: CollectorRegistry | None = None,
        resolver: Resolver = system_resolver,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._store = Store.open(db_url)
        self._outbox = self._store.outbox()
        self._endpoints: Mapping[str, Endpoint] = config.endpoints
        self._retry = config.retry
        self._addresses = AddressPolicy(
            allow_private=config.allow_private, allow_addresses=config.allow_addresses
        )
        self._resolver = resolver
        self._tls = tls
        self.metrics = DeliveryMetrics(registry)
        self._senders = senders
        self._poll_s = poll_s
        self._rng = rng or random.Random()
        self._clock = clock
        self._pool = ThreadPoolExecutor(senders, thread_name_prefix="trajwatch-send")
        self._inflight: set[Future[None]] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.sent = 0
        """Attempts made (any outcome), for tests and metrics."""

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> Dispatcher:
        self._thread = threading.Thread(target=self._loop, name="trajwatch-dispatch", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """New rows may be due: look now rather than at the next poll."""
        self._wake.set()

    def stop(self, timeout: float = 20.0) -> None:
        """Stop claiming, let the attempts in flight finish (up to ``timeout``), close."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._store.close()

    def drain(self, timeout: float) -> bool:
        """Wait until nothing is pending (delivered, dead or held) or ``timeout`` passes;
        True if the outbox drained. Retries keep their backoff."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                busy = bool(self._inflight)
            if not busy and self._outbox.pending() == 0:
                return True
            self.wake()
            time.sleep(0.02)
        return False

    # --- the loop ------------------------------------------------------------------

    def _loop(self) -> None:
        self._check_endpoints()
        while not self._stopping.is_set():
            try:
                claimed = self.pump()
            except Exception:  # the store went away for a moment: poll again later
                log.exception("dispatcher: claiming due deliveries failed")
                claimed = 0
            if not claimed:
                self._wake.wait(self._poll_s)
                self._wake.clear()

    def _check_endpoints(self) -> None:
        """Say at once, in the log, which endpoints the SSRF guard refuses: a kill sent
        there would be dead without anyone having looked."""
        for endpoint in self._endpoints.values():
            shown = redact(endpoint.url)
            try:
                pin(endpoint.url, self._addresses, self._resolver)
            except DestinationRefused as refused:
                log.error(
                    "webhook endpoint %s (%s) is REFUSED by the SSRF guard: %s. Every kill, "
                    "rollback and notify sent to it will be dead, and no agent stopped",
                    endpoint.name,
                    shown,
                    refused,
                )
            except OSError as exc:
                log.warning(
                    "webhook endpoint %s (%s) does not resolve now (%s); deliveries to it "
                    "are retried",
                    endpoint.name,
                    shown,
                    exc,
                )

    def pump(self) -> int:
        """Claim as many due rows as there are idle senders and start sending them;
        returns how many were claimed."""
        with self._lock:
            free = self._senders - len(self._inflight)
        if free <= 0 or self._stopping.is_set():
            return 0
        lease_ns = int(self._retry.lease_s * 1e9)
        claimed = self._outbox.claim_due(self._clock(), lease_ns, free)
        for delivery in claimed:
            future = self._pool.submit(self._attempt, delivery)
            with self._lock:
                self._inflight.add(future)
            future.add_done_callback(self._done)
        return len(claimed)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._inflight.discard(future)
        self._wake.set()

    # --- one attempt ---------------------------------------------------------------

    def _attempt(self, delivery: Delivery) -> None:
        try:
            self._send(delivery)
        except Exception:
            # Recording the outcome failed (the store is down): the lease makes the row
            # due again, and the receiver drops the repeat by its webhook-id.
            log.exception("dispatcher: recording delivery %s failed", delivery.delivery_id)

    def _send(self, delivery: Delivery) -> None:
        endpoint = self._endpoints.get(delivery.endpoint)
        if endpoint is None:
            error = f"endpoint {delivery.endpoint!r} is not configured"
            self._final(delivery, "dead", error, reason="unconfigured")
            return
        try:
            pinned = pin(endpoint.url, self._addresses, self._resolver)
        except DestinationRefused as refused:
            self._final(delivery, "dead", f"refused: {refused}", reason="refused")
            return
        except OSError as exc:  # the name does not resolve now: DNS comes back
            self._failed(delivery, f"destination does not resolve: {_first_line(exc)}", None, None)
            return
        body = delivery.payload or "{}"
        stamp = self._clock() // 1_000_000_000
        headers = signing.headers(endpoint.signers, delivery.delivery_id, stamp, body)
        headers.update({"content-type": "application/json", "user-agent": USER_AGENT})
        self.sent += 1
        try:
            reply = post(
                pinned, body.encode(), headers, timeout_s=self._retry.timeout_s, tls=self._tls
            )
        except TimeoutError:
            self._failed(delivery, f"no answer within {self._retry.timeout_s:g} s", None, None)
            return
        except (OSError, http.client.HTTPException) as exc:
            self._failed(delivery, f"{type(exc).__name__}: {_first_line(exc)}", None, None)
            return
        self._answered(delivery, reply)

    def _answered(self, delivery: Delivery, reply: Reply) -> None:
        code = reply.status
        if 200 <= code < 300:
            self._outbox.record(
                delivery.delivery_id, status="delivered", now=self._clock(), status_code=code
            )
            self.metrics.delivered.labels(delivery.endpoint, str(delivery.action)).inc()
        elif code == 410:
            reason = f"410 Gone from {delivery.endpoint}: endpoint disabled"
            self._outbox.record(
                delivery.delivery_id,
                status="pending",
                now=self._clock(),
                next_attempt_at=None,
                error=reason,
                status_code=code,
            )
            self._outbox.disable_endpoint(delivery.endpoint, reason, now=self._clock())
            self._loud(delivery, f"{reason}; held until `trajwatch deliveries enable "
                       f"{delivery.endpoint}`", reason="disabled")
        else:
            what = f"HTTP {code}" + (" (redirects are not followed)" if 300 <= code < 400 else "")
            self._failed(delivery, what, code, retry_after(reply.headers.get("retry-after")))

    def _failed(
        self, delivery: Delivery, error: str, code: int | None, retry_after_s: float | None
    ) -> None:
        error = redact(error)
        if delivery.attempts >= self._retry.max_attempts:
            gave_up = f"{error}; gave up after {delivery.attempts} attempts"
            self._final(delivery, "dead", gave_up, code, reason="dead")
            return
        wait = self._retry.delay_s(delivery.attempts, self._rng.random(), retry_after_s)
        now = self._clock()
        action = str(delivery.action)
        self.metrics.retried.labels(delivery.endpoint, action).inc()
        if action in STOPPING:
            log.warning(
                "%s of session %r not delivered yet to %s (attempt %d of %d): %s; next try "
                "in %.1f s",
                action,
                delivery.session_id,
                delivery.endpoint,
                delivery.attempts,
                self._retry.max_attempts,
                error,
                wait,
            )
        self._outbox.record(
            delivery.delivery_id,
            status="pending",
            now=now,
            next_attempt_at=now + int(wait * 1e9),
            error=error,
            status_code=code,
        )

    def _final(
        self, delivery: Delivery, status: str, error: str, code: int | None = None, *, reason: str
    ) -> None:
        error = redact(error)
        self._outbox.record(
            delivery.delivery_id,
            status=status,
            now=self._clock(),
            error=error,
            status_code=code,
        )
        self._loud(delivery, error, reason=reason)

    def _loud(self, delivery: Delivery, error: str, *, reason: str) -> None:
        """A delivery failed for good (``reason`` as in
        :data:`~trajwatch.actions.metrics.FAILURES`): count it, and say so in the log — an
        ERROR for a stopping action, whose agent goes on running."""
        action = str(delivery.action)
        self.metrics.failed.labels(delivery.endpoint, action, reason).inc()
        stopping = action in STOPPING
        log.log(
            logging.ERROR if stopping else logging.WARNING,
            "%s of session %r NOT DELIVERED to %s: %s.%s Delivery %s: `trajwatch "
            "deliveries list` shows it, `trajwatch deliveries redeliver` resends it",
            action,
            delivery.session_id,
            delivery.endpoint,
            error,
            " The agent was not stopped." if stopping else "",
            delivery.delivery_id,
        )


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date).

    >>> retry_after("120"), retry_after(None), retry_after("soon")
    (120.0, None, None)
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "no detail"
