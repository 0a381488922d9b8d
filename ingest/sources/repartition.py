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


def encode_resolved(item: Resolved) -> bytes:
    """The record's value (its key is ``item.session_id``, UTF-8)."""
    draft = item.draft
    record: dict[str, Any] = {
        "v": VERSION,
        "session_id": item.session_id,
        "egress_parent": item.egress_parent,
        "step": step_to_json(draft.step),
    }
    for name in _DRAFT_FIELDS:
        record[name] = getattr(draft, name)
    return _encode(record).encode("ascii")


class RecordError(ValueError):
    """A repartition record that is not one this version wrote."""


def decode_resolved(data: bytes) -> Resolved:
    """The :class:`Resolved` draft of a record; raises :class:`RecordError` (with the
    reason) for anything else."""
    try:
        record = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"repartition record is not JSON: {exc}") from exc
    if not isinstance(record, dict) or record.get("v") != VERSION:
        raise RecordError(f"repartition record is not of version {VERSION}")
    try:
        step = step_from_json(record["step"])
        draft = Draft(step, **{name: record[name] for name in _DRAFT_FIELDS})
        session_id = record["session_id"]
        parent = record["egress_parent"]
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"repartition record is malformed: {exc!r}") from exc
    if not isinstance(session_id, str) or not (parent is None or isinstance(parent, str)):
        raise RecordError("repartition record is malformed: session_id/egress_parent not text")
    return Resolved(draft, session_id, parent)
