"""The repartition topic's records: a :class:`~ingest.pipeline.resolution.Resolved` draft as bytes.

The ordering stage (decode, order by event time, resolve the session) sends each
released draft to the repartition topic keyed by its session id, so that one worker
sequences and judges each session (the Kafka Streams way of re-keying). A record
carries everything the sequencing stage reads of a draft: the step as the source said
it, the identity parts (natural key, fallback id), the ids of its trace and span, its
context window and, for an egress step, the tool call that caused it.

JSON, ASCII-only (a lone surrogate in a redacted text survives as an escape):
:func:`decode_resolved` gives back a draft equal to the one :func:`encode_resolved` was
given, so the sequencing stage cannot tell it from the in-process hand-over.

Silence (:mod:`ingest.pipeline.silence`) is measured by each *input* partition's clock,
so a record also carries the input partition its draft was read from, and the clock of
that partition's drafts sent to other repartition partitions since the last record of it
on this one (``clock``: a :class:`ClockMark` that comes before the draft). A record of a
clock alone (no draft) carries the rest to a lane that hears nothing else for a while
(:mod:`ingest.sources.clock_relay`). Records without these fields (written before them)
read as a draft of partition ``""`` with no clock.

>>> from models.records import Step, StepKind
>>> from ingest.decoded import Draft
>>> from ingest.pipeline.resolution import Resolved
>>> step = Step(step_id="", session_id="", kind=StepKind.EGRESS, ts=5, detail={"a": [1]})
>>> item = Resolved(Draft(step, "t:s", trace_id="t", span_id="s"), "sess", "sess/tool_call/1")
>>> decode_resolved(encode_resolved(item)) == item
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ingest.decoded import Draft
from ingest.pipeline.resolution import Resolved
from models.records import step_from_json, step_to_json

VERSION = 1

_DRAFT_FIELDS = (
    "fallback_id",
    "natural_key",
    "session_hint",
    "trace_id",
    "span_id",
    "parent_span_id",
    "context",
    "arrival",
    "position",
)

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode


@dataclass(frozen=True, slots=True)
class ClockMark:
    """Input partition ``partition`` released a draft of event time ``ts`` (of a session
    not on this repartition partition): its sessions' silence is measured by it."""

    partition: str
    ts: int


def encode_resolved(item: Resolved, *, clock: int | None = None) -> bytes:
    """The record's value (its key is ``item.session_id``, UTF-8); ``clock``: the event
    time of its input partition's clock to apply before the draft (a :class:`ClockMark`)."""
    draft = item.draft
    record: dict[str, Any] = {
        "v": VERSION,
        "session_id": item.session_id,
        "egress_parent": item.egress_parent,
        "step": step_to_json(draft.step),
        "partition": draft.partition,
        "clock": clock,
    }
    for name in _DRAFT_FIELDS:
        record[name] = getattr(draft, name)
    return _encode(record).encode("ascii")


def encode_clock(mark: ClockMark) -> bytes:
    """A record of ``mark`` alone (no draft; sent to a chosen partition, its key empty).

    >>> decode_record(encode_clock(ClockMark("otlp_spans/0", 7)))
    (ClockMark(partition='otlp_spans/0', ts=7), None)
    """
    record = {"v": VERSION, "mark": {"partition": mark.partition, "ts": mark.ts}}
    return _encode(record).encode("ascii")


class RecordError(ValueError):
    """A repartition record that is not one this version wrote."""


def decode_resolved(data: bytes) -> Resolved:
    """The :class:`Resolved` draft of a record (its ``draft.partition`` the input
    partition it was read from); raises :class:`RecordError` (with the reason) for
    anything else, a record of a clock alone included."""
    _, item = decode_record(data)
    if item is None:
        raise RecordError("repartition record holds no draft")
    return item


def decode_record(data: bytes) -> tuple[ClockMark | None, Resolved | None]:
    """What a record holds: the clock mark to apply first (or None), then the draft (or
    None for a record of a clock alone); raises :class:`RecordError` (with the reason)
    for anything else."""
    try:
        record = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"repartition record is not JSON: {exc}") from exc
    if not isinstance(record, dict) or record.get("v") != VERSION:
        raise RecordError(f"repartition record is not of version {VERSION}")
    if "mark" in record:
        mark = record["mark"]
        if not isinstance(mark, dict) or not _is_mark(mark.get("partition"), mark.get("ts")):
            raise RecordError("repartition record is malformed: a clock mark without text/int")
        return ClockMark(mark["partition"], mark["ts"]), None
    try:
        step = step_from_json(record["step"])
        draft = Draft(step, **{name: record[name] for name in _DRAFT_FIELDS})
        session_id = record["session_id"]
        parent = record["egress_parent"]
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"repartition record is malformed: {exc!r}") from exc
    if not isinstance(session_id, str) or not (parent is None or isinstance(parent, str)):
        raise RecordError("repartition record is malformed: session_id/egress_parent not text")
    partition, clock = record.get("partition", ""), record.get("clock")
    if not isinstance(partition, str) or not (clock is None or _is_mark(partition, clock)):
        raise RecordError("repartition record is malformed: partition/clock not text/int")
    draft.partition = partition
    mark = ClockMark(partition, clock) if clock is not None else None
    return mark, Resolved(draft, session_id, parent)


def _is_mark(partition: object, ts: object) -> bool:
    return isinstance(partition, str) and isinstance(ts, int) and not isinstance(ts, bool)
