"""The OTLP/HTTP receiver: ``POST /v1/traces`` and ``/v1/logs`` into a bounded queue.

A source, like ``files``: it checks what arrives and hands it on; it never decodes
spans or runs detectors in the event loop. Per the OTLP/HTTP specification:

- ``Content-Type`` ``application/x-protobuf`` or ``application/json``, else 415;
  ``Content-Encoding`` ``gzip``, ``deflate`` or none, else 415; every member of a gzip
  body is read (a body of two requests is both), bytes after the last member or after a
  deflate stream are refused (400), as is a truncated stream;
- the body, counted *after* decompression, at most ``max_body_bytes``, else 413 (a
  gzip bomb is cut off at the cap, never inflated whole);
- what the body will decode to, counted before it is (spans, log records or JSON
  containers: :mod:`ingest.sources.request_budget`), at most ``max_request_items``, else
  413; and what all requests between this edge and the pipeline hold, at most the
  in-flight budget's bytes and items, else 503 with ``Retry-After``;
- optional bearer-token auth (:mod:`ingest.sources.bearer`): 401 without the token, on
  the OTLP endpoints, ``/metrics`` and the routes the composition root adds (``serve``'s
  ``POST /v1/check``); ``/healthz`` stays open for probes;
- a full queue, or a server that is shutting down, answers 503 with ``Retry-After``:
  the exporter retries the whole batch later;
- the accepted request waits until the pipeline thread has made it durable (see
  :mod:`ingest.sources.inbound_log`) and answers what the thread decided: 200 with
  ``partial_success`` for spans it rejected, 400 when nothing in the body was readable.

Answers and errors are encoded as the request was (protobuf ``Export*ServiceResponse``
/ ``google.rpc.Status``, or their OTLP/JSON form). Metrics: :class:`ReceiverMetrics`, one
Prometheus registry per app, served at ``/metrics``; ``/healthz`` for probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ingest.decoded import Decoded
from ingest.formats.otlp_json import to_otlp_json
from ingest.formats.otlp_proto import PROTOBUF
from ingest.formats.table import HTTP_KINDS, RawRecord, decode
from ingest.sources.bearer import BearerToken
from ingest.sources.request_budget import InFlight, OverBudget, Reservation, count_items

__all__ = [
    "Accepted",
    "Answer",
    "BodyTooLarge",
    "ReceiverMetrics",
    "answer_all",
    "capped",
    "create_app",
    "decode_body",
    "export_response",
    "unreadable",
    "varint",
]

SOURCE = "otlp_http"
JSON = "application/json"
_CONTENT = {PROTOBUF: "proto", JSON: "json"}
_WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 15}
RETRY_AFTER_S = 1
"""What a 503 asks the exporter to wait: about one pipeline commit."""


@dataclass(slots=True)
class Answer:
    """What the pipeline thread decided about one request."""

    status: int = 200
    rejected: int = 0
    message: str = ""


@dataclass(slots=True)
class Accepted:
    """One request that passed the edge's checks, waiting for the pipeline thread."""

    kind: str
    """``traces/proto``, ``traces/json``, ``logs/proto`` or ``logs/json``."""
    body: bytes
    """Decompressed."""
    answer: asyncio.Future[Answer]
    """Awaited by the request's handler in the receiver's event loop; set from the
    pipeline thread with :func:`answer_all`."""
    received: float = field(default_factory=time.monotonic)
    reservation: Reservation | None = None
    """Its share of the in-flight budget: released by the pipeline thread once the
    request is fed (or refused)."""

    def release(self) -> None:
        if self.reservation is not None:
            self.reservation.release()


def answer_all(answers: Iterable[tuple[Accepted, Answer]]) -> None:
    """Answer accepted requests from another thread, waking each event loop once for all
    of them: a wake-up per request would hand the GIL to the loop and back once per
    request (a switch interval, 5 ms, each time the loop is busy) — the pipeline thread's
    wait, not its work. A request whose client left (its handler cancelled) is skipped;
    a loop already closed (shutdown) has nobody left to answer."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Answer], Answer]]] = {}
    for accepted, answer in answers:
        by_loop.setdefault(accepted.answer.get_loop(), []).append((accepted.answer, answer))
    for loop, pairs in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(_resolve, pairs)


def _resolve(pairs: list[tuple[asyncio.Future[Answer], Answer]]) -> None:
    for future, answer in pairs:
        if not future.done():
            future.set_result(answer)


def unreadable(decoded: Decoded) -> bool:
    """Nothing in the body could be read: the answer is 400, not partial success."""
    return bool(decoded.rejects) and not decoded.spans and not decoded.drafts


# -- decoding (called on the pipeline thread) --------------------------------------------


def decode_body(kind: str, body: bytes, *, location: str, max_attribute_bytes: int) -> Decoded:
    """Decode an accepted request's body (``kind`` is ``traces/proto``, ``logs/json``…) by
    its format's decoder (:data:`ingest.formats.table.HTTP_KINDS`); never raises on bad
    bytes. Log records go through :mod:`ingest.formats.otlp_logs` (runtimes' own events,
    and session events in a record's body). ``records`` counts what the request carried."""
    record = RawRecord(HTTP_KINDS[kind], body, location, "", source=SOURCE)
    return decode(record, max_attribute_bytes=max_attribute_bytes)


# -- metrics ------------------------------------------------------------------------------


class ReceiverMetrics:
    """The service's Prometheus metrics, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "trajwatch_requests", "OTLP requests answered", ["signal", "code"], registry=r
        )
        self.spans = Counter("trajwatch_spans_received", "Spans received", registry=r)
        self.log_records = Counter(
            "trajwatch_log_records_received", "Log records received", registry=r
        )
        self.steps = Counter("trajwatch_steps", "Steps stored", registry=r)
        self.alerts = Counter(
            "trajwatch_alerts", "Alerts raised", ["detector", "severity"], registry=r
        )
        self.dead_letters = Counter("trajwatch_dead_letters", "Dead letters stored", registry=r)
        self.queue_depth = Gauge(
            "trajwatch_queue_depth", "Requests waiting for the pipeline", registry=r
        )
        self.inflight_bytes = Gauge(
            "trajwatch_inflight_bytes",
            "Decompressed bytes of the requests read and not yet fed to the pipeline",
            registry=r,
        )
        self.inflight_items = Gauge(
            "trajwatch_inflight_items",
            "Spans, log records or JSON containers of the requests not yet fed",
            registry=r,
        )
        self.pending = Gauge(
            "trajwatch_pending_steps", "Steps held for ordering or the next commit", registry=r
        )
        self.inbound = Gauge(
            "trajwatch_inbound_records", "Write-ahead log records not yet retired", registry=r
        )
        self.busy = Gauge(
            "trajwatch_pipeline_busy_ratio",
            "Share of the pipeline thread's time spent working, not waiting for requests "
            "(a moving average over ~0.5 s): near 1, the service is saturated",
            registry=r,
        )
        self.alert_latency = Histogram(
            "trajwatch_span_to_alert_seconds",
            "From receiving the request that released a step to its alert being stored",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )


# -- the app ------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_GRPC_CODE = {400: 3, 401: 16, 413: 8, 415: 3, 500: 13, 503: 14}
"""google.rpc.Code of an HTTP error, for the Status body."""


def create_app(
    inbox: queue.Queue[Accepted],
    *,
    max_body_bytes: int,
    auth_token: str | None = None,
    metrics: ReceiverMetrics | None = None,
    accepting: Callable[[], bool] = lambda: True,
    routes: Sequence[BaseRoute] = (),
    max_request_items: int | None = None,
    inflight: InFlight | None = None,
) -> Starlette:
    """The receiver as an ASGI app. ``inbox`` is the bounded queue the pipeline thread
    reads; ``accepting()`` turns false when the service drains (503 from then on).
    ``routes`` are the composition root's own endpoints (``serve``'s ``POST /v1/check``),
    served behind the same bearer token. ``max_request_items`` and ``inflight`` bound
    what decoding costs (:mod:`ingest.sources.request_budget`; None: unbounded)."""
    metrics = metrics or ReceiverMetrics()
    auth = BearerToken(auth_token)
    budget = inflight or InFlight(max_bytes=1 << 62, max_items=1 << 62)
    item_cap = max_request_items if max_request_items is not None else 1 << 62

    async def receive(request: Request, signal: str) -> Response:
        content = _content(request.headers.get("content-type", ""))
        reservation = budget.reserve()
        handed = False
        try:
            if content is None:
                raise _Refused(
                    415,
                    f"Content-Type must be {PROTOBUF} or {JSON}, "
                    f"got {request.headers.get('content-type', '')!r}",
                )
            if not accepting():
                raise _Refused(503, "shutting down")
            kind = f"{signal}/{content}"
            body = await _read_body(request, max_body_bytes, reservation)
            items = await _count(kind, body, item_cap)
            if items > item_cap:
                raise _Refused(
                    413,
                    f"{items if items <= item_cap + 1 else 'over ' + str(item_cap)} "
                    f"{_ITEMS[content]} in one request, over the {item_cap} allowed "
                    "(TRAJWATCH_MAX_REQUEST_ITEMS): send smaller batches",
                )
            try:
                reservation.add(items=items)
            except OverBudget:
                raise _Refused(503, "too much input in flight; retry later") from None
            accepted = Accepted(
                kind=kind,
                body=body,
                answer=asyncio.get_running_loop().create_future(),
                reservation=reservation,
            )
            try:
                inbox.put_nowait(accepted)
            except queue.Full:
                raise _Refused(503, "ingest queue full") from None
            handed = True
            metrics.queue_depth.set(inbox.qsize())
            answer = await accepted.answer
        except _Refused as refused:
            answer = Answer(status=refused.status, message=refused.message)
        except ClientDisconnect:  # nobody is left to read an answer
            answer = Answer(status=400, message="the client disconnected")
        finally:
            if not handed:  # else the pipeline thread releases it, once fed
                reservation.release()
        metrics.requests.labels(signal, str(answer.status)).inc()
        return _respond(signal, content or "json", answer)

    async def traces(request: Request) -> Response:
        return await receive(request, "traces")

    async def logs(request: Request) -> Response:
        return await receive(request, "logs")

    async def health(request: Request) -> Response:
        status = 200 if accepting() else 503
        return Response(json.dumps({"ok": status == 200}), status, media_type=JSON)

    async def prometheus(request: Request) -> Response:
        metrics.queue_depth.set(inbox.qsize())
        metrics.inflight_bytes.set(budget.bytes)
        metrics.inflight_items.set(budget.items)
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    def refuse(request: Request) -> Response:
        """The 401 of a request without the token, in its endpoint's own format."""
        path = request.url.path
        if path in ("/v1/traces", "/v1/logs"):
            signal = path.rsplit("/", 1)[1]
            metrics.requests.labels(signal, "401").inc()
            content = _content(request.headers.get("content-type", "")) or "json"
            return _respond(signal, content, Answer(401, message="missing or wrong bearer token"))
        body = json.dumps({"error": "missing or wrong bearer token"})
        return Response(body, 401, {"WWW-Authenticate": "Bearer"}, JSON)

    return Starlette(
        routes=[
            Route("/v1/traces", traces, methods=["POST"]),
            Route("/v1/logs", logs, methods=["POST"]),
            Route("/healthz", health, methods=["GET"]),
            Route("/metrics", prometheus, methods=["GET"]),
            *routes,
        ],
        middleware=[Middleware(_TokenGuard, auth=auth, refuse=refuse)],
    )


class _TokenGuard:
    """Every path but ``/healthz`` behind the bearer token, checked before routing and
    before any body is read: no route, present or added, is reached without it."""

    OPEN = frozenset({"/healthz"})

    def __init__(
        self, app: ASGIApp, *, auth: BearerToken, refuse: Callable[[Request], Response]
    ) -> None:
        self.app = app
        self.auth = auth
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.auth.required:
            request = Request(scope)
            if request.url.path not in self.OPEN and not self.auth.allows(request):
                await self.refuse(request)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _content(content_type: str) -> str | None:
    return _CONTENT.get(content_type.split(";")[0].strip().lower())


_ITEMS = {"proto": "spans or log records", "json": "JSON objects and arrays"}
COUNT_INLINE_BYTES = 1 << 20
"""Bodies up to this size are counted on the event loop (a 512-span batch: 0.2 ms);
larger ones in a worker thread."""
MAX_GZIP_MEMBERS = 64
"""A gzip body may hold several members (RFC 1952), each read; an exporter sends one."""


async def _count(kind: str, body: bytes, cap: int) -> int:
    if len(body) <= COUNT_INLINE_BYTES:
        return count_items(kind, body, cap)
    return await run_in_threadpool(count_items, kind, body, cap)


async def _read_body(request: Request, cap: int, reservation: Reservation) -> bytes:
    """The body, decompressed, or :class:`_Refused`: 413 past ``cap``, 415 for an unknown
    encoding, 400 for a corrupt, truncated or trailing stream, 503 when the bytes would
    pass the in-flight budget (reserved as they arrive). Inflation stops at the cap: no
    gzip bomb. A gzip body of several members is read whole (all of them, within the cap);
    anything after the last member, or after a deflate stream, is refused."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    wbits = None if encoding in ("", "identity") else _WBITS.get(encoding)
    if wbits is None and encoding not in ("", "identity"):
        raise _Refused(415, f"Content-Encoding {encoding!r} is not gzip or deflate")
    declared = request.headers.get("content-length", "").strip()
    if wbits is None and declared.isdigit() and int(declared) > cap:
        raise _Refused(413, f"body over {cap} bytes")
    parts: list[bytes] = []
    inflater = zlib.decompressobj(wbits) if wbits is not None else None
    members = 1
    size = 0
    try:
        async for chunk in _limited(request.stream(), cap):
            data = chunk
            while data:
                if inflater is None:
                    out, data = data, b""
                else:
                    if inflater.eof:  # another member follows
                        if wbits != 31:
                            raise _Refused(400, f"bytes after the end of the {encoding} stream")
                        members += 1
                        if members > MAX_GZIP_MEMBERS:
                            raise _Refused(400, f"more than {MAX_GZIP_MEMBERS} gzip members")
                        inflater = zlib.decompressobj(wbits)
                    # never more than one byte past the cap, however well it compresses
                    out = inflater.decompress(data, cap - size + 1)
                    data = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
                size += len(out)
                if size > cap:
                    raise _Refused(413, f"body over {cap} bytes once decompressed")
                reservation.add(bytes=len(out))
                parts.append(out)
        if inflater is not None:
            tail = inflater.flush(cap - size + 1)
            size += len(tail)
            if size > cap:
                raise _Refused(413, f"body over {cap} bytes once decompressed")
            reservation.add(bytes=len(tail))
            parts.append(tail)
            if not inflater.eof:
                raise _Refused(400, f"truncated {encoding} body")
    except BodyTooLarge as exc:
        raise _Refused(413, str(exc)) from None
    except OverBudget:
        raise _Refused(503, "too much input in flight; retry later") from None
    except zlib.error as exc:
        raise _Refused(400, f"corrupt {encoding} body: {exc}") from None
    return b"".join(parts)


class BodyTooLarge(Exception):
    """A request body past its cap (:func:`capped`): the rest was not read."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"body over {cap} bytes")
        self.cap = cap


async def _limited(stream: AsyncIterator[bytes], cap: int) -> AsyncIterator[bytes]:
    """The wire bytes, with :class:`BodyTooLarge` as soon as more than ``cap`` arrived."""
    size = 0
    async for chunk in stream:
        size += len(chunk)
        if size > cap:
            raise BodyTooLarge(cap)
        yield chunk


async def capped(request: Request, cap: int) -> bytes:
    """``request``'s body, at most ``cap`` bytes: :class:`BodyTooLarge` when its declared
    ``Content-Length`` is larger (before reading any) or once more arrived."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > cap:
        raise BodyTooLarge(cap)
    return b"".join([chunk async for chunk in _limited(request.stream(), cap)])


def _respond(signal: str, content: str, answer: Answer) -> Response:
    headers = {"Retry-After": str(RETRY_AFTER_S)} if answer.status == 503 else {}
    if answer.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    if answer.status != 200:
        code = _GRPC_CODE.get(answer.status, 2)
        if content == "proto":
            return Response(_status_proto(code, answer.message), answer.status, headers, PROTOBUF)
        body = json.dumps({"code": code, "message": answer.message})
        return Response(body, answer.status, headers, JSON)
    message = export_response(signal, answer)
    if content == "proto":
        return Response(message.SerializeToString(), 200, headers, PROTOBUF)
    return Response(json.dumps(to_otlp_json(message)), 200, headers, JSON)


def export_response(
    signal: str, answer: Answer
) -> ExportTraceServiceResponse | ExportLogsServiceResponse:
    """The ``Export*ServiceResponse`` of an accepted request (``signal``: ``traces`` or
    ``logs``), with ``partial_success`` when the pipeline thread rejected part of it; the
    same for OTLP/HTTP and OTLP/gRPC."""
    message: ExportTraceServiceResponse | ExportLogsServiceResponse
    if signal == "traces":
        message = ExportTraceServiceResponse()
        if answer.rejected or answer.message:
            message.partial_success.rejected_spans = answer.rejected
            message.partial_success.error_message = answer.message
    else:
        message = ExportLogsServiceResponse()
        if answer.rejected or answer.message:
            message.partial_success.rejected_log_records = answer.rejected
            message.partial_success.error_message = answer.message
    return message


def _status_proto(code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` {code, message} on the wire (two fields: no dependency)."""
    text = message.encode()
    return b"\x08" + varint(code) + b"\x12" + varint(len(text)) + text


def varint(n: int) -> bytes:
    """``n`` as a protobuf base-128 varint."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)
