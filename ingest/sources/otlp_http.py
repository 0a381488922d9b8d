"""The OTLP/HTTP receiver: ``POST /v1/traces`` and ``/v1/logs`` into a bounded queue.

A source, like ``files``: it checks what arrives and hands it on; it never decodes
spans or runs detectors in the event loop. Per the OTLP/HTTP specification:

- ``Content-Type`` ``application/x-protobuf`` or ``application/json``, else 415;
  ``Content-Encoding`` ``gzip``, ``deflate`` or none, else 415;
- the body, counted *after* decompression, at most ``max_body_bytes``, else 413 (a
  gzip bomb is cut off at the cap, never inflated whole);
- optional bearer-token auth: 401 without the token;
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
import hmac
import json
import queue
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ingest.decoded import Decoded
from ingest.formats.otlp_json import to_otlp_json
from ingest.formats.otlp_proto import PROTOBUF
from ingest.formats.table import HTTP_KINDS, RawRecord, decode

__all__ = [
    "Accepted",
    "Answer",
    "ReceiverMetrics",
    "answer_all",
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
    check: Callable[[Any], tuple[int, dict[str, Any]]] | None = None,
) -> Starlette:
    """The receiver as an ASGI app. ``inbox`` is the bounded queue the pipeline thread
    reads; ``accepting()`` turns false when the service drains (503 from then on).
    ``check``, when given, answers ``POST /v1/check`` (a JSON body in, a status and a JSON
    answer out; the composition root's pre-execution check), in a worker thread."""
    metrics = metrics or ReceiverMetrics()
    token = f"Bearer {auth_token}".encode() if auth_token else None

    async def receive(request: Request, signal: str) -> Response:
        content = _content(request.headers.get("content-type", ""))
        try:
            if token is not None and not hmac.compare_digest(
                request.headers.get("authorization", "").encode(), token
            ):
                raise _Refused(401, "missing or wrong bearer token")
            if content is None:
                raise _Refused(
                    415,
                    f"Content-Type must be {PROTOBUF} or {JSON}, "
                    f"got {request.headers.get('content-type', '')!r}",
                )
            body = await _read_body(request, max_body_bytes)
            if not accepting():
                raise _Refused(503, "shutting down")
            accepted = Accepted(
                kind=f"{signal}/{content}",
                body=body,
                answer=asyncio.get_running_loop().create_future(),
            )
            try:
                inbox.put_nowait(accepted)
            except queue.Full:
                raise _Refused(503, "ingest queue full") from None
            metrics.queue_depth.set(inbox.qsize())
            answer = await accepted.answer
        except _Refused as refused:
            answer = Answer(status=refused.status, message=refused.message)
        metrics.requests.labels(signal, str(answer.status)).inc()
        return _respond(signal, content or "json", answer)

    async def traces(request: Request) -> Response:
        return await receive(request, "traces")

    async def logs(request: Request) -> Response:
        return await receive(request, "logs")

    async def pre_check(request: Request) -> Response:
        if check is None:
            return Response(json.dumps({"error": "no check configured"}), 404, media_type=JSON)
        if token is not None and not hmac.compare_digest(
            request.headers.get("authorization", "").encode(), token
        ):
            return Response(
                json.dumps({"error": "missing or wrong bearer token"}),
                401,
                {"WWW-Authenticate": "Bearer"},
                JSON,
            )
        try:
            body = json.loads(await _capped(request.stream(), max_body_bytes))
        except _Refused as refused:
            return Response(json.dumps({"error": refused.message}), refused.status, media_type=JSON)
        except ValueError:
            return Response(json.dumps({"error": "the body is not JSON"}), 400, media_type=JSON)
        status, answer = await run_in_threadpool(check, body)
        return Response(json.dumps(answer), status, media_type=JSON)

    async def health(request: Request) -> Response:
        status = 200 if accepting() else 503
        return Response(json.dumps({"ok": status == 200}), status, media_type=JSON)

    async def prometheus(request: Request) -> Response:
        metrics.queue_depth.set(inbox.qsize())
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(
        routes=[
            Route("/v1/traces", traces, methods=["POST"]),
            Route("/v1/logs", logs, methods=["POST"]),
            Route("/v1/check", pre_check, methods=["POST"]),
            Route("/healthz", health, methods=["GET"]),
            Route("/metrics", prometheus, methods=["GET"]),
        ]
    )


def _content(content_type: str) -> str | None:
    return _CONTENT.get(content_type.split(";")[0].strip().lower())


async def _read_body(request: Request, cap: int) -> bytes:
    """The body, decompressed, or :class:`_Refused` (413 past ``cap``, 415 for an unknown
    encoding, 400 for a corrupt stream). Inflation stops at the cap: no gzip bomb."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return await _capped(request.stream(), cap)
    wbits = _WBITS.get(encoding)
    if wbits is None:
        raise _Refused(415, f"Content-Encoding {encoding!r} is not gzip or deflate")
    inflater = zlib.decompressobj(wbits)
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in _limited(request.stream(), cap):
            data = chunk
            while data:
                # never more than one byte past the cap, however well it compresses
                out = inflater.decompress(data, cap - size + 1)
                size += len(out)
                if size > cap:
                    raise _Refused(413, f"body over {cap} bytes once decompressed")
                parts.append(out)
                data = inflater.unconsumed_tail
        tail = inflater.flush(cap - size + 1)
    except zlib.error as exc:
        raise _Refused(400, f"corrupt {encoding} body: {exc}") from None
    size += len(tail)
    if size > cap:
        raise _Refused(413, f"body over {cap} bytes once decompressed")
    if not inflater.eof:
        raise _Refused(400, f"truncated {encoding} body")
    parts.append(tail)
    return b"".join(parts)


async def _limited(stream: AsyncIterator[bytes], cap: int) -> AsyncIterator[bytes]:
    """The wire bytes, with 413 as soon as more than ``cap`` arrived."""
    size = 0
    async for chunk in stream:
        size += len(chunk)
        if size > cap:
            raise _Refused(413, f"body over {cap} bytes")
        yield chunk


async def _capped(stream: AsyncIterator[bytes], cap: int) -> bytes:
    return b"".join([chunk async for chunk in _limited(stream, cap)])


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
