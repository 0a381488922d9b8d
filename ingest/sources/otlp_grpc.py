"""The OTLP/gRPC receiver: ``TraceService/Export`` and ``LogsService/Export`` into the same
bounded queue as OTLP/HTTP.

An edge beside :mod:`ingest.sources.otlp_http`, with the same rules: it checks what
arrives and queues it as an :class:`~ingest.sources.otlp_http.Accepted` request; the
pipeline thread logs it, decodes it through the formats table and answers it. A gRPC
``Export*ServiceRequest`` is the very message an ``application/x-protobuf`` POST carries,
so its bytes are queued untouched as kind ``traces/proto`` or ``logs/proto``: the
write-ahead log, the decode, the dead letters (``/v1/traces``, source ``otlp_http``) and the
alerts are those of the same batch sent over HTTP. Per the OTLP/gRPC specification:

- ``grpc-encoding`` ``gzip`` or none (the codecs OTLP names); ``deflate`` is turned away by
  gRPC itself (``UNIMPLEMENTED``). gRPC's own inflation is off: it would inflate a gzip
  bomb whole before checking its size (a 512 KiB request took the server to 578 MB), so
  this edge inflates, and stops one byte past ``max_body_bytes``;
- the request, on the wire and once decompressed, at most ``max_body_bytes``, else
  ``RESOURCE_EXHAUSTED`` with no retry information (the exporter should not retry it);
- optional bearer-token auth (``authorization: Bearer <token>`` metadata, as the SDKs'
  ``OTEL_EXPORTER_OTLP_HEADERS`` send it): ``UNAUTHENTICATED`` without it;
- a full queue answers ``RESOURCE_EXHAUSTED``, a service that is shutting down, or whose
  write-ahead log failed, ``UNAVAILABLE``; both with ``RetryInfo`` (retry after
  :data:`~ingest.sources.otlp_http.RETRY_AFTER_S`), in the status details
  (``grpc-status-details-bin``, read by the Collector and the Go and Java SDKs) and as
  ``google.rpc.retryinfo-bin`` (read by the Python SDK): the exporter retries the batch;
- the accepted request is answered once the pipeline thread has made it durable: ``OK``
  with ``partial_success`` for the spans or log records it rejected, ``INVALID_ARGUMENT``
  when nothing in it was readable.

The server (``grpc.aio``) runs its own event loop on a thread of its own
(:class:`GrpcReceiver`): the HTTP receiver's loop belongs to uvicorn, and
:func:`~ingest.sources.otlp_http.answer_all` wakes each loop once per group whichever
receiver the requests came through. Requests are counted in the receiver's
``trajwatch_requests`` metric with the gRPC status name as ``code`` (``OK``,
``RESOURCE_EXHAUSTED``…).
"""

from __future__ import annotations

import asyncio
import queue
import socket
import threading
import zlib
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.duration_pb2 import Duration

from ingest.sources.bearer import BearerToken
from ingest.sources.otlp_http import (
    RETRY_AFTER_S,
    Accepted,
    Answer,
    ReceiverMetrics,
    export_response,
    varint,
)
from models.errors import ConfigError

__all__ = ["SERVICES", "GrpcReceiver", "add_handlers", "retry_trailers", "server_options"]

SERVICES = {
    "opentelemetry.proto.collector.trace.v1.TraceService": "traces",
    "opentelemetry.proto.collector.logs.v1.LogsService": "logs",
}
"""The OTLP services served (each has one method, ``Export``) and their signal."""
GRACE_S = 10.0
"""At shutdown, how long the requests in flight have to be answered (the pipeline thread
answers them once durable: a group's fsync)."""
GZIP_MAGIC = b"\x1f\x8b"
"""A gzip stream's first bytes. No protobuf message starts with ``0x1f`` (field 3 of wire
type 7, which does not exist), so a body that does was compressed by the client."""
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"

_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    503: grpc.StatusCode.UNAVAILABLE,
}
"""The gRPC status of an answer the pipeline thread gave as an HTTP status (the rest:
``INTERNAL``)."""
_ENABLED = 1 << 0 | 1 << 2
"""gRPC's compression algorithms this server accepts: identity (bit 0) and gzip (bit 2)."""


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry = retry


def add_handlers(
    server: grpc.aio.Server,
    inbox: queue.Queue[Accepted],
    *,
    max_body_bytes: int,
    auth_token: str | None = None,
    metrics: ReceiverMetrics | None = None,
    accepting: Callable[[], bool] = lambda: True,
) -> None:
    """Serve :data:`SERVICES`' ``Export`` on ``server``, queuing each accepted request in
    ``inbox`` (the bounded queue the pipeline thread reads) and answering what the
    pipeline thread decides. ``accepting()`` turns false when the service drains
    (``UNAVAILABLE`` from then on). Requests are taken as bytes, with no generated stubs
    and no parse in the event loop; ``server`` must have been made with
    :func:`server_options` (gRPC's own inflation off)."""
    metrics = metrics or ReceiverMetrics()
    token = BearerToken(auth_token)

    async def receive(
        signal: str, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Answer:
        """The pipeline thread's answer to an accepted request, or :class:`_Refused`."""
        if not token.matches(_metadata(context, "authorization")):
            raise _Refused(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        body = _inflate(request, max_body_bytes)
        if not accepting():
            raise _Refused(grpc.StatusCode.UNAVAILABLE, "shutting down", retry=True)
        accepted = Accepted(
            kind=f"{signal}/proto", body=body, answer=asyncio.get_running_loop().create_future()
        )
        try:
            inbox.put_nowait(accepted)
        except queue.Full:
            raise _Refused(
                grpc.StatusCode.RESOURCE_EXHAUSTED, "ingest queue full", retry=True
            ) from None
        metrics.queue_depth.set(inbox.qsize())
        answer = await accepted.answer
        if answer.status != 200:
            code = _CODES.get(answer.status, grpc.StatusCode.INTERNAL)
            raise _Refused(code, answer.message, retry=code is grpc.StatusCode.UNAVAILABLE)
        return answer

    def handler(signal: str) -> grpc.RpcMethodHandler:
        async def export(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            try:
                answer = await receive(signal, request, context)
            except _Refused as refused:
                metrics.requests.labels(signal, refused.code.name).inc()
                trailers = retry_trailers(refused.code, refused.message) if refused.retry else ()
                await context.abort(refused.code, refused.message, trailers)
                raise  # abort raised already
            metrics.requests.labels(signal, grpc.StatusCode.OK.name).inc()
            return export_response(signal, answer).SerializeToString()

        return grpc.unary_unary_rpc_method_handler(export)  # bytes in, bytes out

    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(service, {"Export": handler(signal)})
            for service, signal in SERVICES.items()
        ]
    )


def server_options(max_body_bytes: int) -> list[tuple[str, int]]:
    """The ``grpc.aio.server`` options :func:`add_handlers` relies on."""
    return [
        ("grpc.max_receive_message_length", max_body_bytes),  # on the wire; _inflate after
        ("grpc.per_message_decompression", 0),  # no whole-bomb inflation: _inflate
        ("grpc.compression_enabled_algorithms_bitset", _ENABLED),
        ("grpc.so_reuseport", 0),  # a port in use is an error, not a second listener
    ]


def _metadata(context: grpc.aio.ServicerContext[Any, Any], key: str) -> str:
    for name, value in context.invocation_metadata() or ():
        if name == key:
            return value if isinstance(value, str) else value.decode("latin-1")
    return ""


def _inflate(body: bytes, cap: int) -> bytes:
    """``body`` as the client wrote it: inflated if gzip (:data:`GZIP_MAGIC`), never more
    than one byte past ``cap`` (``RESOURCE_EXHAUSTED`` beyond; ``INVALID_ARGUMENT`` for a
    corrupt or truncated stream)."""
    if not body.startswith(GZIP_MAGIC):
        return body
    inflater = zlib.decompressobj(31)
    try:
        out = inflater.decompress(body, cap + 1)  # stops one byte past the cap
    except zlib.error as exc:
        raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, f"corrupt gzip body: {exc}") from None
    if len(out) > cap:
        raise _Refused(
            grpc.StatusCode.RESOURCE_EXHAUSTED, f"body over {cap} bytes once decompressed"
        )
    if not inflater.eof:
        raise _Refused(grpc.StatusCode.INVALID_ARGUMENT, "truncated gzip body")
    return out


def retry_trailers(
    code: grpc.StatusCode, message: str, delay_s: int = RETRY_AFTER_S
) -> tuple[tuple[str, bytes], ...]:
    """The trailing metadata that asks a client to retry after ``delay_s``: a
    ``google.rpc.Status`` whose details hold a ``google.rpc.RetryInfo``
    (``grpc-status-details-bin``, how gRPC carries rich errors) and the ``RetryInfo``
    alone (``google.rpc.retryinfo-bin``, what the Python SDK's exporter reads). Both are
    encoded by hand, as :mod:`ingest.sources.otlp_http` encodes its Status: two small
    messages, no dependency on ``googleapis-common-protos``.

    >>> trailers = dict(retry_trailers(grpc.StatusCode.UNAVAILABLE, "busy", 2))
    >>> trailers["google.rpc.retryinfo-bin"]  # RetryInfo{retry_delay: Duration{seconds: 2}}
    b'\\n\\x02\\x08\\x02'
    """
    retry_info = _field(1, Duration(seconds=delay_s).SerializeToString())
    detail = AnyMessage(type_url=RETRY_INFO, value=retry_info).SerializeToString()
    status = b"\x08" + varint(code.value[0]) + _field(2, message.encode()) + _field(3, detail)
    return (("grpc-status-details-bin", status), ("google.rpc.retryinfo-bin", retry_info))


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(data)) + data


class GrpcReceiver:
    """The OTLP/gRPC server on ``host:port``, on a thread and event loop of its own.
    :meth:`start` returns once it listens (or raises :class:`~models.errors.ConfigError`
    when it cannot: the port is taken); :meth:`stop` stops accepting, gives the requests
    in flight :data:`GRACE_S` to be answered, and returns when the thread has ended. The
    other arguments are :func:`add_handlers`'."""

    def __init__(
        self,
        inbox: queue.Queue[Accepted],
        *,
        host: str,
        port: int,
        max_body_bytes: int,
        auth_token: str | None = None,
        metrics: ReceiverMetrics | None = None,
        accepting: Callable[[], bool] = lambda: True,
    ) -> None:
        self.address = (
            f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"
        )
        self.port = port
        """The port listened on, once started."""
        self._handlers: dict[str, Any] = {
            "inbox": inbox,
            "max_body_bytes": max_body_bytes,
            "auth_token": auth_token,
            "metrics": metrics,
            "accepting": accepting,
        }
        self._max_body_bytes = max_body_bytes
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        # daemon: like the pipeline thread, a process that is exiting must not hang on it
        self._thread = threading.Thread(target=self._run, name="trajwatch-grpc", daemon=True)

    def start(self) -> None:
        """Listen (once: a second call returns, or raises the first one's error)."""
        if not self._ready.is_set() and not self._thread.is_alive():
            if _taken(self.address, self.port):  # one line, not also gRPC's own log line
                raise self._unavailable()
            self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    def stop(self) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and self._thread.is_alive():
            loop.call_soon_threadsafe(stopping.set)
            self._thread.join()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # before it listened: start() raises it
            if not self._ready.is_set():
                self._error = exc
                self._ready.set()
            else:
                raise

    async def _serve(self) -> None:
        server = grpc.aio.server(options=server_options(self._max_body_bytes))
        add_handlers(server, **self._handlers)
        try:
            self.port = server.add_insecure_port(self.address)
        except RuntimeError:
            raise self._unavailable() from None
        await server.start()
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._ready.set()
        await self._stopping.wait()
        await server.stop(GRACE_S)

    def _unavailable(self) -> ConfigError:
        return ConfigError(
            f"cannot listen for OTLP/gRPC on {self.address} (in use, or not an address of "
            "this host); choose another port with --grpc-port, or --grpc-port off"
        )


def _taken(address: str, port: int) -> bool:
    """Whether ``host:port`` cannot be bound now (as gRPC binds: ``SO_REUSEADDR``, so a
    closed connection's ``TIME_WAIT`` does not count)."""
    host = address.rsplit(":", 1)[0].strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False
