"""How much decoding the OTLP/HTTP receiver lets in: per request, and across requests in
flight.

A request's size on the wire says little of what decoding it costs: three concurrent
15.6 MiB protobuf requests of 390,000 tiny spans each (40 bytes a span) took ``serve``
from 97 MB to 1.1 GB — a decoded span costs about 1 KB, an OTLP/JSON object about 0.5 KB,
whatever its size on the wire. So the receiver counts what a body will decode to,
*before* it is decoded, in **items**:

- a protobuf body: its spans or log records (valid or not: an invalid one is a dead
  letter, which costs as much), counted by upb's parse (about 3% of the decode's time)
  or, for a body upb refuses, by walking its wire format up to the cap;
- an OTLP/JSON body: its objects and arrays (every ``{`` and ``[``, an upper bound of
  the containers ``json.loads`` builds: a span with ten attributes is about 21).

and bounds

- each request: at most ``max_request_items`` items (413: not worth retrying; the
  exporter should send smaller batches) and ``max_body_bytes`` decompressed (413, the
  receiver's cap);
- every request read and not yet handed to the pipeline (being read, queued, or being
  decoded): at most ``max_inflight_bytes`` decompressed bytes and ``max_inflight_items``
  items (503 with ``Retry-After``: the exporter retries when the pipeline has caught up).
  Bytes are reserved as they are read, so bodies read at once cannot pass it either.

:class:`InFlight` is shared by the event loop (reserving) and the pipeline thread
(releasing, once a request is fed): a lock guards it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.message import DecodeError as ProtoDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.formats.otlp_proto import _Corrupt, _fields

__all__ = ["InFlight", "OverBudget", "Reservation", "count_items"]


class OverBudget(Exception):
    """A reservation would pass the in-flight budget: nothing of it was taken."""


@dataclass(slots=True)
class Reservation:
    """One request's share of the in-flight budget; :meth:`release` gives it back (once)."""

    budget: InFlight
    bytes: int = 0
    items: int = 0
    released: bool = False

    def add(self, *, bytes: int = 0, items: int = 0) -> None:
        """Take ``bytes`` and ``items`` more, or raise :class:`OverBudget` taking nothing."""
        self.budget._take(self, bytes, items)

    def release(self) -> None:
        self.budget._give_back(self)


class InFlight:
    """The decompressed bytes and items of the requests between the receiver and the
    pipeline, bounded."""

    def __init__(self, *, max_bytes: int, max_items: int) -> None:
        self.max_bytes = max_bytes
        self.max_items = max_items
        self.bytes = 0
        self.items = 0
        self._lock = threading.Lock()

    def reserve(self) -> Reservation:
        return Reservation(self)

    def _take(self, reservation: Reservation, nbytes: int, items: int) -> None:
        with self._lock:
            if reservation.released:
                raise OverBudget("the reservation was released")
            if self.bytes + nbytes > self.max_bytes or self.items + items > self.max_items:
                raise OverBudget(
                    f"{self.bytes + nbytes} bytes and {self.items + items} items in flight "
                    f"would pass {self.max_bytes} bytes or {self.max_items} items"
                )
            self.bytes += nbytes
            self.items += items
            reservation.bytes += nbytes
            reservation.items += items

    def _give_back(self, reservation: Reservation) -> None:
        with self._lock:
            if reservation.released:
                return
            reservation.released = True
            self.bytes -= reservation.bytes
            self.items -= reservation.items


def count_items(kind: str, body: bytes, limit: int) -> int:
    """The items ``body`` (decompressed; ``kind`` ``traces/proto``, ``logs/json``…) will
    decode to, as the module docstring counts them; a damaged protobuf body is counted up
    to ``limit + 1`` at most (it is refused past ``limit`` anyway)."""
    if kind.endswith("/json"):
        return body.count(b"{") + body.count(b"[")
    request = ExportTraceServiceRequest if kind.startswith("traces") else ExportLogsServiceRequest
    try:
        parsed = request.FromString(body)
    except ProtoDecodeError:
        return _walk(memoryview(body), limit)
    if isinstance(parsed, ExportTraceServiceRequest):
        return sum(len(s.spans) for r in parsed.resource_spans for s in r.scope_spans)
    return sum(len(s.log_records) for r in parsed.resource_logs for s in r.scope_logs)


def _walk(body: memoryview, limit: int) -> int:
    """Items of a body upb refuses, by its wire format: field 1 (resource spans or logs),
    within it field 2 (scope spans or logs), within that field 2 (spans or log records)
    — the same numbers for traces and logs. Damage ends the walk of the level it is in,
    as it ends the salvage path's."""
    count = 0
    for resource in _payloads(body, 1):
        for scope in _payloads(resource, 2):
            for _ in _payloads(scope, 2):
                count += 1
                if count > limit:
                    return count
    return count


def _payloads(buf: memoryview, number: int) -> Iterator[memoryview]:
    """The payloads of the length-delimited fields ``number`` of ``buf``, up to damage."""
    try:
        for field_number, _, payload, _truncated in _fields(buf):
            if field_number == number and payload is not None:
                yield payload
    except _Corrupt:
        return
