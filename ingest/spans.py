"""A span as the decoders hand it on, whatever the wire format it came in.

Protobuf OTLP, OTLP/JSON and the TRAIL span-tree format all decode to
:class:`SpanRecord`; only :mod:`ingest.semconv` turns spans into steps. Keeping
one neutral shape is what makes "OTLP JSON and protobuf of the same spans give
identical steps" true by construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SPAN_KIND_INTERNAL = 1
SPAN_KIND_SERVER = 2
SPAN_KIND_CLIENT = 3
SPAN_KINDS = range(0, 6)
"""OTLP SpanKind values: UNSPECIFIED, INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER."""

STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2
STATUS_CODES = range(0, 3)

DEFAULT_MAX_ATTRIBUTE_BYTES = 1 << 20
"""A span with one attribute value larger than this is dead-lettered, not truncated:
a 10 MB prompt in an attribute is a producer bug that someone should see."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanRecord:
    """One decoded span. Ids are lowercase hex; times are Unix nanoseconds.

    ``attributes`` values are Python values: str, int, float, bool, bytes,
    list (OTLP arrays) or dict (OTLP kvlists). ``location`` says where the span
    sat in its input, for evidence links and dead letters.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    status_code: int = STATUS_UNSET
    status_message: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope: str = ""
    location: str = ""


def value_size(value: Any) -> int:
    """Approximate encoded size of an attribute value in bytes (for the size cap)."""
    if isinstance(value, str):
        # len() of a str counts code points; a cheap upper bound avoids encoding
        # every value: only values that might be over the cap are encoded.
        return len(value)
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, list):
        return sum(value_size(v) for v in value)
    if isinstance(value, dict):
        return sum(len(k) + value_size(v) for k, v in value.items())
    return 8


def oversized_attribute(attributes: Mapping[str, Any], cap: int) -> str | None:
    """The reason a span must be rejected for an attribute over ``cap`` bytes, or None."""
    for key, value in attributes.items():
        size = value_size(value)
        if size > cap:
            if isinstance(value, str):
                size = len(value.encode("utf-8", "surrogatepass"))
                if size <= cap:
                    continue
            return (
                f"attribute {key!r} is {size} bytes, over the {cap}-byte cap "
                "(raise max_attribute_bytes if such values are expected)"
            )
    return None
