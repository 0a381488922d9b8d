"""``trajwatch serve``: the OTLP/HTTP receiver, the pipeline and the store in one process.

Threads: uvicorn's event loop runs the receiver (:mod:`ingest.sources.otlp_http`), which only
checks requests and queues them (bounded: a full queue answers 503); OTLP/gRPC's receiver
(:mod:`ingest.sources.otlp_grpc`) queues into the same queue from its own; one pipeline thread
(:class:`LiveIngest`) owns the :class:`~ingest.pipeline.engine.Pipeline` and does everything
else, in order:

1. takes the queued requests, several at once (group commit);
2. appends their bodies to the write-ahead log (:mod:`ingest.sources.inbound_log`: sealed,
   0600, emptied as soon as its records are committed) and fsyncs;
3. decodes them and answers them all at once (one wake-up of the event loop:
   :func:`~ingest.sources.otlp_http.answer_all`) — 200 (with ``partial_success`` for what it
   rejected) or 400 — now that a restart would see them again: the exporter's retry is
   the only redelivery needed;
4. feeds them to the pipeline, one partition per trace (spans) or session (logs);
5. ends the partitions that have been quiet for ``idle_flush_ms`` (a replay ends a
   recording's partition at the end of the file);
6. commits — steps, alerts, dead letters and each touched session's cursor in one
   transaction, with a checkpoint of its detector state every ``checkpoint_steps`` steps
   and at its end (the drain writes the rest) — and retires the log records whose
   partitions are all ended and committed. While the pipeline has time to spare it
   commits every cycle; when it is saturated it goes on feeding the requests that keep
   coming for up to ``commit_wait_ms`` or ``commit_every`` records first
   (:class:`CommitCadence`): a commit's cost is mostly per commit and per session
   touched, not per step, so fewer, larger commits keep up with more input (the answers
   do not wait for commits: step 3).

Why a log and not a flush per request: the live pipeline holds steps back by the
lateness watermark, so that a run's root span — sent last, children before parents —
still takes its place first. Flushing to answer sooner would judge steps out of order and
raise different alerts than a replay. With the log, what the pipeline holds is also on
disk: after a crash, the live records are fed again in order, the steps already stored are
recognised by their ids, the sessions resume from their last checkpoint rolled forward
through the steps stored since (:mod:`ingest.pipeline.session_state`), and the alerts are those of
an unbroken run.

SIGTERM (or Ctrl-C): uvicorn stops accepting connections and finishes the requests in
flight; the pipeline thread drains the queue, commits and closes the log. Partitions are
not ended at shutdown: their records stay in the log and the next start resumes them.
"""

from __future__ import annotations

import contextlib
import logging
import math
import queue
import socket
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TextIO

import uvicorn

from detectors.registry import DetectorSet
from ingest.decoded import Decoded
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.probe import Probe
from ingest.pipeline.sinks import Committed, Sink
from ingest.sources.inbound_cipher import FrameCipher
from ingest.sources.inbound_log import InboundLog, LogSyncer
from ingest.sources.otlp_grpc import GrpcReceiver
from ingest.sources.otlp_http import (
    SOURCE,
    Accepted,
    Answer,
    ReceiverMetrics,
    answer_all,
    create_app,
    decode_body,
    unreadable,
)
from ingest.sources.request_budget import InFlight
from models.records import Alert, DeadLetter
from models.store import Store
from trajwatch.actions import ActionsConfig, Dispatcher
from trajwatch.actions import start as start_actions
from trajwatch.check_failure import CheckMetrics, FailurePolicy
from trajwatch.listing import alert_line
from trajwatch.service.check_route import check_route
from trajwatch.service.cpu_placement import place
from trajwatch.service.gc_tuning import tune_gc
from trajwatch.service.http_protocol import bounded_protocol
from trajwatch.service.listen import bind
from trajwatch.service.logs import log_to_stderr
from trajwatch.settings import Settings

__all__ = ["LiveIngest", "Service", "serve"]

log = logging.getLogger("trajwatch.service.serve")

GROUP_MAX = 64
"""Most requests taken from the queue at once."""
TICK_S = 0.05
"""How often the pipeline thread looks for quiet partitions when no request comes."""
LINGER_S = 0.01
"""With fed input not yet committed (a saturated pipeline: :class:`CommitCadence`), how long
the pipeline thread waits for another request before committing: longer than an
exporter's round trip (the answer, sent once the log is synced, then its next request)."""
BUSY_WINDOW_S = 0.5
"""The time constant of the pipeline thread's busy average."""
BATCH_WHEN_BUSY = 0.9
"""Above this share of its time busy, the pipeline thread batches commits
(:class:`CommitCadence`). Measured by the benchmark's half load: ~0.5 on a quiet machine,
~0.76 beside other jobs; at full load 0.94-0.99."""
KEEP_ALIVE_S = 5
"""An idle kept-alive connection is closed after this (uvicorn's default, said here: the
exporters' connections come back within their batch delay)."""
MIN_TOKEN_CHARS = 16
"""A shorter ``TRAJWATCH_AUTH_TOKEN`` is warned about at start (as the breaker refuses one)."""
RESUME_GRACE_S = 10.0
"""After a restart, the partitions fed again from the log are not quiet: their senders
were refused while the service was down and are backing off (an OTel exporter gives up
on a batch after its 10 s timeout). Their idle clocks start when the first request comes
in, or after this long."""


@dataclass(slots=True)
class _Open:
    """A partition the pipeline holds steps of, and the log records that fed it."""

    last: float
    records: set[int] = field(default_factory=set)


class CommitCadence:
    """When the pipeline thread commits what it has fed.

    A commit costs a transaction and a row per session touched, whatever the number of
    steps: one per request wastes a saturated pipeline's time, yet batching requests
    delays alerts. So: while the pipeline has time to spare (busy less than
    :data:`BATCH_WHEN_BUSY` of the time, a moving average over about
    :data:`BUSY_WINDOW_S`), it commits after every cycle, as soon as the input is fed;
    when saturated, it goes on feeding the requests that keep coming, and commits after
    ``commit_every`` records, after ``wait_s`` of holding, or when no request came within
    :data:`LINGER_S`."""

    def __init__(self, wait_s: float, every: int, now: float) -> None:
        self._wait_s = wait_s
        self._every = every
        self.busy = 0.0
        """Moving average of the fraction of time spent other than waiting for requests."""
        self._cycle_start = now
        self.held = False
        """Fed since the last commit."""
        self._since = 0.0
        self._received = 0.0
        self._records = 0

    def timeout(self, closing: Sequence[object]) -> float:
        """How long the next take may wait for a first request."""
        return LINGER_S if self.held or closing else TICK_S

    def waited(self, start: float, end: float) -> None:
        """The pipeline thread waited for requests from ``start`` to ``end`` (monotonic)
        and now starts a cycle."""
        elapsed = end - self._cycle_start
        if elapsed > 0:
            weight = math.exp(-elapsed / BUSY_WINDOW_S)
            busy = (start - self._cycle_start) / elapsed
            self.busy = weight * self.busy + (1 - weight) * busy
        self._cycle_start = end

    def fed(self, now: float, records: int, received: float) -> None:
        """Requests holding ``records`` spans and log records, the earliest received at
        ``received``, were fed at ``now``."""
        if not self.held:
            self.held, self._since, self._received, self._records = True, now, received, 0
        self._records += records
        self._received = min(self._received, received)

    def due(self, now: float, *, took: bool) -> bool:
        """Commit now? ``took``: this cycle took requests."""
        return (
            not self.held
            or not took
            or self.busy < BATCH_WHEN_BUSY
            or self._records >= self._every
            or now - self._since >= self._wait_s
        )

    def committed(self, now: float) -> float:
        """A commit is made; when the earliest request it holds was received (alert
        latency counts from there)."""
        received = self._received if self.held else now
        self.held = False
        return received


class LiveIngest:
    """The pipeline thread. ``start()``, then ``stop()`` to drain and finish."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        detectors: DetectorSet,
        inbox: queue.Queue[Accepted],
        metrics: ReceiverMetrics,
        on_failure: Callable[[], None] = lambda: None,
        sinks: Sequence[Sink] = (),
    ) -> None:
        self.settings = settings
        self._on_failure = on_failure
        self.pipeline = Pipeline(store, settings=settings, detectors=detectors, sinks=sinks)
        self.lock = threading.Lock()
        """Held while the pipeline thread changes sessions; :meth:`probe` takes it."""
        self.inbox = inbox
        self.metrics = metrics
        self.log = InboundLog(
            Path(settings.inbound_dir),
            cipher=FrameCipher.from_secret(settings.inbound_key) if settings.inbound_key else None,
        )
        self._syncer = LogSyncer(self.log)
        """Answers each group once its records are durable, while the pipeline goes on."""
        self.failed: BaseException | None = None
        self._idle_s = settings.idle_flush_ms / 1000
        self._commit_wait_s = settings.commit_wait_ms / 1000
        self._open: dict[str, _Open] = {}
        self._closing: list[tuple[str, _Open]] = []
        """Partitions ended since the last commit: their records retire with the next."""
        self._partitions_of: dict[int, set[str]] = {}
        """The open partitions each live log record fed (only records that fed one)."""
        self._fed_nothing: list[int] = []
        self._stopping = threading.Event()
        # daemon: a process that is exiting (a failed start, an embedding that never
        # stopped the service) must not hang on it; what it acknowledged is in the log
        self._thread = threading.Thread(target=self._run, name="trajwatch-pipeline", daemon=True)
        self._seen = (0, 0)
        self._resumed: list[str] = []
        self.recovered = self._recover()

    # -- lifecycle ----------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Finish what is queued, commit, close the log; returns when done."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        self._syncer.close()
        self.log.close()

    def probe(self, session_id: str) -> Probe:
        """A detached copy of a session's analysis state for the pre-execution check
        (:mod:`trajwatch.service.check`). Taken under :attr:`lock`, between two pipeline cycles,
        so the copy is consistent; the check then runs the copies without the lock, and
        the pipeline never waits for it longer than the copy takes."""
        with self.lock:
            return self.pipeline.probe(session_id)

    def _recover(self) -> int:
        """Feed the log's live records again, as they were accepted."""
        records = self.log.recovered
        now = time.monotonic()
        for record in records:
            self._feed(record.seq, self._decode(record.kind, record.body), now)
        if records:
            self._commit(now)
        self.log.recovered = []
        self._resumed = list(self._open)
        for entry in self._open.values():
            entry.last = now + RESUME_GRACE_S
        return len(records)

    def _run(self) -> None:
        try:
            cadence = CommitCadence(
                self._commit_wait_s, self.settings.commit_every, time.monotonic()
            )
            while True:
                if self._syncer.error is not None:  # what it answers next is refused
                    raise self._syncer.error
                waiting = time.monotonic()
                group = self._take(cadence.timeout(self._closing))
                now = time.monotonic()
                cadence.waited(waiting, now)
                self.metrics.busy.set(cadence.busy)
                with self.lock:
                    if group:
                        records = self._accept(group, now)
                        cadence.fed(now, records, min(a.received for a in group))
                    self._quiet(now)
                    if (cadence.held or self._closing) and cadence.due(now, took=bool(group)):
                        self._commit(cadence.committed(now))
                if not group and self._stopping.is_set() and self.inbox.empty():
                    with self.lock:  # a drain: the next start needs no roll-forward
                        self.pipeline.commit(checkpoint_all=True)
                    return
        except BaseException as exc:  # the store failed: stop, and let a restart replay
            self.failed = exc
            log.exception("pipeline thread stopped; accepted input is in %s", self.log.directory)
            self._refuse_queued()
            self._on_failure()

    def _take(self, timeout: float) -> list[Accepted]:
        """The queued requests, up to :data:`GROUP_MAX`, waiting up to ``timeout`` for
        the first."""
        try:
            group = [self.inbox.get(timeout=timeout)]
        except queue.Empty:
            return []
        while len(group) < GROUP_MAX:
            try:
                group.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        self.metrics.queue_depth.set(self.inbox.qsize())
        return group

    def _refuse_queued(self) -> None:
        while True:
            try:
                accepted = self.inbox.get_nowait()
            except queue.Empty:
                return
            accepted.release()
            answer_all([(accepted, Answer(status=503, message="pipeline stopped"))])

    # -- one cycle ------------------------------------------------------------------

    def _accept(self, group: list[Accepted], now: float) -> int:
        """Log, decode, answer (once durable) and feed ``group``; the records it held."""
        for partition in self._resumed:  # input has resumed: see RESUME_GRACE_S
            if partition in self._open:
                self._open[partition].last = now
        self._resumed = []
        seqs = self.log.write((a.kind, a.body) for a in group)
        batches = [self._decode(accepted.kind, accepted.body) for accepted in group]
        answers = [(a, _answer(batch)) for a, batch in zip(group, batches, strict=True)]
        self._syncer.after_sync(partial(_answer_durable, answers))
        for accepted, seq, batch in zip(group, seqs, batches, strict=True):
            if accepted.kind.startswith("traces"):
                self.metrics.spans.inc(batch.records)
            else:
                self.metrics.log_records.inc(batch.records)
            self._feed(seq, batch, now)
        for accepted in group:  # decoded and fed: the in-flight budget is free again
            accepted.release()
        # held until a commit, perhaps a few cycles on: the gauge says so meanwhile (the
        # pending steps, a walk over every open partition, are counted at commits)
        self.metrics.inbound.set(self.log.live_count())
        return sum(batch.records for batch in batches)

    def _decode(self, kind: str, body: bytes) -> Decoded:
        # Not the seq: an exporter's retry of a batch is another record, and its rejects
        # are the same dead letters (their ids derive from the location and the bytes).
        location = f"/v1/{kind.split('/')[0]}"
        try:
            return decode_body(
                kind, body, location=location, max_attribute_bytes=self.settings.max_attribute_bytes
            )
        except Exception as exc:  # a decoder bug must not make the logged record a poison pill
            log.exception("decoding %s failed", location)
            reason = f"decoder failed: {type(exc).__name__}: {exc}"
            return Decoded(
                rejects=[DeadLetter(source=SOURCE, location=location, reason=reason, payload=body)]
            )

    def _feed(self, seq: int, batch: Decoded, now: float) -> None:
        """A request's batch is one unit: its spans by trace, its log drafts by session."""
        pipeline = self.pipeline
        pipeline.feed_decoded(Decoded(rejects=batch.rejects), partition="")
        parts: set[str] = set()
        traces = defaultdict(list)
        for span in batch.spans:
            traces[span.trace_id].append(span)
        for trace_id, spans in traces.items():
            partition = f"trace:{trace_id}"
            pipeline.feed_decoded(Decoded(spans=spans), partition=partition)
            parts.add(partition)
        sessions = defaultdict(list)
        for draft in batch.drafts:
            sessions[draft.session_hint or draft.trace_id or ""].append(draft)
        for key, drafts in sessions.items():
            partition = f"session:{key}"
            pipeline.feed_decoded(Decoded(drafts=drafts), partition=partition)
            parts.add(partition)
        for partition in parts:
            entry = self._open.get(partition)
            if entry is None:
                entry = self._open[partition] = _Open(now)
            entry.last = now
            entry.records.add(seq)
        if parts:
            self._partitions_of[seq] = parts
        else:  # nothing but dead letters: retired with the commit that stores them
            self._fed_nothing.append(seq)

    def _quiet(self, now: float) -> None:
        """End the partitions quiet for ``idle_flush_ms``: their records retire with the
        next commit (a later request for the same trace opens it again)."""
        closed = [p for p, entry in self._open.items() if now - entry.last >= self._idle_s]
        for partition in closed:
            self.pipeline.end_partition(partition)
            self._closing.append((partition, self._open.pop(partition)))

    def _commit(self, since: float) -> None:
        alerts = self.pipeline.commit()
        # only the records of the partitions just ended can have become retirable: not a
        # walk over every live record per commit (tens of thousands with many open runs)
        done, self._fed_nothing = self._fed_nothing, []
        closing, self._closing = self._closing, []
        for partition, entry in closing:
            for seq in entry.records:
                parts = self._partitions_of.get(seq)
                if parts is not None:
                    parts.discard(partition)
                    if not parts:
                        done.append(seq)
                        del self._partitions_of[seq]
        if done:
            self.log.retire(done)
        self._measure(alerts, since)

    def _measure(self, alerts: list[Alert], since: float) -> None:
        stats, metrics = self.pipeline.stats, self.metrics
        steps, dead = self._seen
        metrics.steps.inc(stats.new_steps - steps)
        metrics.dead_letters.inc(stats.dead_letters - dead)
        self._seen = (stats.new_steps, stats.dead_letters)
        elapsed = time.monotonic() - since
        for alert in alerts:
            metrics.alerts.labels(alert.detector, str(alert.severity)).inc()
            metrics.alert_latency.observe(elapsed)
        metrics.pending.set(self.pipeline.pending())
        metrics.inbound.set(self.log.live_count())


class AlertPrinter(Sink):
    """Prints each alert new to the store, once its commit is durable, one line each
    (as ``trajwatch alerts`` shows them): a person watching ``serve`` sees them appear."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def after_commit(self, committed: Committed) -> None:
        for alert in committed.alerts:
            print(alert_line(alert), file=self._out, flush=True)


def _answer_durable(answers: list[tuple[Accepted, Answer]], durable: bool) -> None:
    """Send ``answers`` once their requests are in the log; a 503 (the exporter retries)
    if the log could not make them durable."""
    if not durable:
        refused = Answer(status=503, message="the write-ahead log failed")
        answers = [(accepted, refused) for accepted, _ in answers]
    answer_all(answers)


def _answer(batch: Decoded) -> Answer:
    if unreadable(batch):
        return Answer(status=400, message=batch.rejects[0].reason)
    if batch.rejects:
        first = batch.rejects[0]
        return Answer(
            rejected=len(batch.rejects),
            message=f"{len(batch.rejects)} rejected; first: {first.location}: {first.reason}",
        )
    return Answer()


class _Server(uvicorn.Server):
    """uvicorn, minus one habit: after a graceful stop it raises the caught SIGTERM again,
    which would end the process before the pipeline thread drains. The service drains,
    then exits with its own status."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()


class Service:
    """The whole of ``serve``: store, pipeline thread, receiver and HTTP server."""

    def __init__(
        self,
        settings: Settings,
        detectors: DetectorSet,
        *,
        host: str,
        port: int,
        actions: ActionsConfig | None = None,
        echo: TextIO | None = None,
        grpc_port: int = 0,
    ) -> None:
        self.settings = settings
        tune_gc()
        self.store = Store.open(settings.db_url)
        sinks: list[Sink] = [AlertPrinter(echo)] if echo is not None else []
        self.metrics = ReceiverMetrics()
        self.dispatcher: Dispatcher | None = None
        if actions is not None and actions.endpoints:
            # its counters beside the receiver's: one /metrics shows an undelivered kill
            sink, self.dispatcher = start_actions(
                settings.db_url, actions, registry=self.metrics.registry
            )
            sinks.append(sink)
        self.inbox: queue.Queue[Accepted] = queue.Queue(maxsize=settings.queue_size)
        self.ingest = LiveIngest(
            settings,
            self.store,
            detectors,
            self.inbox,
            self.metrics,
            on_failure=self.shutdown,
            sinks=sinks,
        )
        self._draining = False
        policy = FailurePolicy(
            dangerous=settings.check_failure_dangerous,
            other=settings.check_failure_other,
            read_only_tools=FailurePolicy.tools(settings.check_read_only_tools),
        )
        check = check_route(
            self.ingest.probe,
            policy=policy,
            metrics=CheckMetrics(self.metrics.registry),
            max_body_bytes=settings.check_max_body_bytes,
            timeout_s=settings.check_timeout_ms / 1000,
        )
        app = create_app(
            self.inbox,
            max_body_bytes=settings.max_body_bytes,
            auth_token=settings.auth_token,
            metrics=self.metrics,
            accepting=lambda: not self._draining and self.ingest.failed is None,
            routes=[check],
            max_request_items=settings.max_request_items,
            inflight=InFlight(
                max_bytes=settings.max_inflight_bytes, max_items=settings.max_inflight_items
            ),
        )
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            # httptools, the C parser (half h11's CPU per request, on the GIL serve
            # shares), with bounded headers and read deadlines
            http=bounded_protocol(
                header_timeout_s=settings.http_header_timeout_ms / 1000,
                body_timeout_s=settings.http_body_timeout_ms / 1000,
            ),
            limit_concurrency=settings.max_connections,
            timeout_keep_alive=KEEP_ALIVE_S,
            lifespan="off",
            log_level="warning",
            access_log=False,
        )
        self.server = _Server(config)
        self.grpc: GrpcReceiver | None = None
        """OTLP/gRPC beside OTLP/HTTP, into the same queue (``grpc_port`` 0: none)."""
        if grpc_port:
            self.grpc = GrpcReceiver(
                self.inbox,
                host=host,
                port=grpc_port,
                max_body_bytes=settings.max_body_bytes,
                auth_token=settings.auth_token,
                metrics=self.metrics,
                accepting=lambda: not self._draining and self.ingest.failed is None,
            )

    def run(self, sock: socket.socket | None = None) -> int:
        """Serve until SIGTERM/SIGINT (or :meth:`shutdown`); then drain. Exit status.
        ``sock``: the OTLP/HTTP listening socket, already bound
        (:func:`~trajwatch.service.listen.bind`); else uvicorn binds ``host:port`` itself."""
        try:
            if self.grpc is not None:  # first: a port in use fails before anything runs
                self.grpc.start()
            self.ingest.start()
            self.server.run(sockets=None if sock is None else [sock])
        finally:
            if self.grpc is not None:  # its requests in flight answered, as uvicorn's were
                self.grpc.stop()
            self._draining = True
            self.ingest.stop()
            if self.dispatcher is not None:  # after the drain: its last commits' actions too
                self.dispatcher.stop()
            self.store.close()
        return 1 if self.ingest.failed is not None else 0

    def shutdown(self) -> None:
        """Ask :meth:`run` to return, as SIGTERM does (from another thread)."""
        self.server.should_exit = True


def serve(
    settings: Settings,
    detectors: DetectorSet,
    *,
    host: str,
    port: int,
    actions: ActionsConfig | None = None,
    grpc_port: int = 0,
) -> int:
    """``trajwatch serve``: run until signalled, printing each new alert to stdout as it
    is committed and trajwatch's log lines (an undelivered kill among them) to stderr;
    the exit status. A port it cannot listen on is a :class:`~models.errors.ConfigError`
    before anything starts. Owns the process: its threads are placed first, as
    ``settings.cpu`` says (:mod:`trajwatch.service.cpu_placement`; an embedded :class:`Service`
    leaves its host's threads alone)."""
    sock = bind(host, port, command="serve")  # a taken port: one line, before anything starts
    cpu = place(settings.cpu, single=True)
    log_to_stderr("serve")
    if settings.auth_token is None:
        log.warning(
            "TRAJWATCH_AUTH_TOKEN is not set: any local process (the monitored agent too) "
            "can send spans, ask /v1/check and read /metrics (docs/security.md)"
        )
    elif len(settings.auth_token) < MIN_TOKEN_CHARS:
        log.warning(
            "TRAJWATCH_AUTH_TOKEN is %d characters: under %d, an agent on the same host can "
            "guess it; generate one with python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'",
            len(settings.auth_token),
            MIN_TOKEN_CHARS,
        )
    service = Service(
        settings,
        detectors,
        host=host,
        port=port,
        actions=actions,
        echo=sys.stdout,
        grpc_port=grpc_port,
    )
    if service.grpc is not None:  # a port in use is one line, before the banner
        service.grpc.start()
    print(
        f"trajwatch serve: OTLP/HTTP on http://{host}:{port} (/v1/traces, /v1/logs), "
        f"{f'OTLP/gRPC on {host}:{grpc_port}' if grpc_port else 'OTLP/gRPC off'}, "
        f"store {settings.db_url}, {service.ingest.recovered} logged requests resumed, "
        f"actions to {len(actions.endpoints) if actions else 0} webhook endpoints, "
        f"{'threads on CPU ' + str(cpu) if cpu is not None else 'threads placed by the OS'}",
        file=sys.stderr,
        flush=True,
    )
    return service.run(sock)
