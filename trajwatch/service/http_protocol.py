"""``serve``'s HTTP/1.1 connections, bounded: header size and count, read deadlines.

uvicorn's httptools protocol (the C parser ``serve`` uses: half h11's CPU per request)
keeps every header it is sent and waits for a request's bytes for ever: a request of
2,000,000 headers took ``serve`` from 97 to 344 MB before its 401, and 1,800 connections
that sent half a request line stayed open indefinitely. :func:`bounded_protocol` gives the
same protocol with

- at most ``max_headers`` header fields and ``max_header_bytes`` of request line and
  headers: past either, ``431 Request Header Fields Too Large`` and the connection closes
  (the parser stops at once: the rest of what was sent is never kept). The close lingers
  (RFC 9112 §9.6): the answer is sent with a FIN and what the client still sends is read
  and dropped for up to ``LINGER_S``, so the client reads its 431 instead of a reset that
  closing on unread bytes would send;
- a deadline for the request line and headers (``header_timeout_s``, counted from the
  connection's start, or from the first byte of a later request on a kept-alive
  connection: an idle kept-alive connection is closed by uvicorn's ``timeout_keep_alive``)
  and one for the body (``body_timeout_s`` from the end of the headers): past it,
  ``408 Request Timeout`` (if no answer has started) and the connection closes; a handler
  still reading the body sees the client disconnect.

Connections beyond uvicorn's ``limit_concurrency`` are answered 503 (``serve`` sets it to
``max_connections``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["LINGER_S", "MAX_HEADERS", "MAX_HEADER_BYTES", "bounded_protocol"]

MAX_HEADERS = 256
"""Header fields per request: an OTLP exporter sends under ten, a Collector with custom
headers a few dozen."""
MAX_HEADER_BYTES = 64 << 10
"""Request line and headers, names and values: as nginx's default buffers (4 × 8 KiB)
allow, and more."""
LINGER_S = 2.0
"""After a 431, how long what the client still sends is read and dropped before the
connection closes (the client has its answer and a FIN by then)."""
_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s"
)


class _HeadersTooLarge(Exception):
    pass


def bounded_protocol(
    *,
    header_timeout_s: float,
    body_timeout_s: float,
    max_headers: int = MAX_HEADERS,
    max_header_bytes: int = MAX_HEADER_BYTES,
) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with these bounds (pass it as ``Config(http=...)``)."""

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._deadline: asyncio.TimerHandle | None = None
            self._header_count = 0
            self._header_bytes = 0
            self._refusal: bytes | None = None
            self._lingering = False

        # -- deadlines ------------------------------------------------------------

        def _arm(self, seconds: float) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._timed_out)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _timed_out(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(_TIMEOUT)
            self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm(header_timeout_s)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._header_count = self._header_bytes = 0
            self._arm(header_timeout_s)

        def on_headers_complete(self) -> None:
            self._arm(body_timeout_s)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        # -- header bounds ----------------------------------------------------------

        def on_url(self, url: bytes) -> None:
            self._count(len(url), 0)
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value), 1)
            super().on_header(name, value)

        def _count(self, size: int, fields: int) -> None:
            self._header_bytes += size
            self._header_count += fields
            if self._header_count > max_headers:
                self._refuse(f"more than {max_headers} header fields")
            if self._header_bytes > max_header_bytes:
                self._refuse(f"request line and headers over {max_header_bytes} bytes")

        def _refuse(self, why: str) -> None:
            text = why.encode()
            self._refusal = _TOO_LARGE % (len(text), text)
            raise _HeadersTooLarge(why)  # the parser stops; uvicorn answers below

        def send_400_response(self, msg: str) -> None:
            if self._refusal is None:
                super().send_400_response(msg)
                return
            self._disarm()
            self.transport.write(self._refusal)
            if not self.transport.can_write_eof():
                self.transport.close()
                return
            self.transport.write_eof()  # the answer, then a FIN; reading goes on, below
            self._lingering = True
            self._deadline = self.loop.call_later(LINGER_S, self.transport.close)

        def data_received(self, data: bytes) -> None:
            if not self._lingering:  # after a 431 the rest is dropped unparsed
                super().data_received(data)

    return BoundedHttpToolsProtocol
