"""The shapes every part of ingest speaks: a leaf that imports only :mod:`models`.

- :class:`SpanRecord` (with :class:`SpanEvent`): a span as the decoders hand it on,
  whatever the wire format it came in;
- :class:`Draft`: a step before the pipeline knows its session and its place in it;
- :class:`Decoded`: what every decoder returns and the pipeline takes.

Protobuf OTLP, OTLP/JSON and the TRAIL span-tree format all decode to
:class:`SpanRecord`; only :mod:`ingest.semconv.spans` turns spans into steps. Keeping
one neutral shape is what makes "OTLP JSON and protobuf of the same spans give
identical steps" true by construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from models.records import DeadLetter, Step

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


@dataclass(frozen=True, slots=True)
class SpanLink:
    """A span's link to another span (OTLP ``Span.Link``), in any trace: the span a
    batch, a fork or a resumed run continues. Ids are lowercase hex."""

    trace_id: str
    span_id: str
    attributes: Mapping[str, Any]


MAX_LINKS = 8
"""Links read of one span; the rest are left out (a batch consumer links hundreds)."""


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
    links: tuple[SpanLink, ...] = ()
    """The first :data:`MAX_LINKS` links with valid ids."""


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


@dataclass(slots=True)
class Draft:
    """``step`` carries everything the source said; ``step.session_id`` may be "".

    Identity: ``natural_key`` (``tool_call/<call_id>``, ``model_call/<response_id>``,
    ``start``, ``end``) makes the same thing seen through two sources one step;
    without it, ``fallback_id`` (built from source ids) is the step id.
    """

    step: Step
    fallback_id: str
    natural_key: str | None = None
    session_hint: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None
    context: str | None = None
    """The context window a model call belongs to (``main`` or a sub-agent's span):
    inferred compaction compares input tokens within one context only."""
    arrival: int = 0
    """Arrival order, the tie-break after event time: deterministic for a given input."""
    position: int = -1
    """Where its input was read (a Kafka offset; -1 when the source keeps no positions)."""
    partition: str = field(default="", compare=False)
    """The partition it was read from (set by the ordering stage): whose event time is the
    clock its session's silence is measured by (:mod:`ingest.pipeline.silence`). Where it
    was delivered, not what it is: not compared; carried by the repartition topic, whose
    sequencing stage keeps the clock of each input partition as relayed on its lane."""

    def step_id_for(self, session_id: str) -> str:
        if self.natural_key:
            return f"{session_id}/{self.natural_key}"
        return self.fallback_id


def compaction_key(tokens_before: int | None, tokens_after: int | None) -> str | None:
    """A compaction reported by both the session log and a span marker is one step:
    it is identified by its token transition when both counts are known."""
    if tokens_before is None or tokens_after is None:
        return None
    return f"compaction/{tokens_before}-{tokens_after}"


@dataclass(slots=True)
class Decoded:
    """What a decoder returns, and what :meth:`ingest.pipeline.engine.Pipeline.feed_decoded` takes:
    the spans it could read (span decoders), the drafts it made (decoders of session logs
    and transcripts, which build steps directly) and the rest, as dead letters."""

    spans: list[SpanRecord] = field(default_factory=list)
    rejects: list[DeadLetter] = field(default_factory=list)
    drafts: list[Draft] = field(default_factory=list)
    skipped: int = 0
    """Records knowingly not read (a log record that is no event of a known runtime)."""
    records: int = 0
    """Input records the decoder read, whatever each became (set by the log decoders,
    which make several drafts of one record, or none)."""

    def extend(self, other: Decoded) -> None:
        self.spans.extend(other.spans)
        self.rejects.extend(other.rejects)
        self.drafts.extend(other.drafts)
        self.skipped += other.skipped
        self.records += other.records
