"""Stored steps as JSON lines: the ``session.jsonl`` of a debug bundle the explorer writes.

The store keeps steps, not the spans and events they came from, so a bundle made from
the store carries each step whole (:func:`step_line`: the fields of
:func:`models.records.step_to_json`, with the step's id). Read back
(:func:`step_line_drafts`, the ``step`` entry of :data:`ingest.formats.table.FORMATS`), each
line is a draft keeping its stored id, so the pipeline places the steps in the order they
were stored and the detectors raise alerts with the same ids as the stored ones.

What the pipeline derives again is dropped from a line before it is fed: the position
(``seq``, ``model_session``), the trajectory features (``detail.cluster``,
``detail.progress``) and the ``late`` flag; a step stored late (behind the watermark) is
fed after everything before it is released (:func:`was_late`), so it is placed, and
flagged, as it was. A stored compaction the pipeline had inferred
is kept as a step: fed before its model call, it explains that call's drop, so nothing is
inferred twice.

>>> from models.records import Step, StepKind
>>> step = Step(step_id="s/tool_call/c1", session_id="s", kind=StepKind.TOOL_CALL, ts=5, seq=3,
...             tool="bash", detail={"cluster": 0, "progress": 1.0, "side_effect": True})
>>> line = step_line(step)
>>> is_step_line(line), line["seq"]
(True, 3)
>>> [(d.fallback_id, d.step.seq, dict(d.step.detail)) for d in step_line_drafts(line)]
[('s/tool_call/c1', -1, {'side_effect': True})]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.decoded import Draft
from models.errors import DecodeError
from models.records import UNSEQUENCED, step_from_json, step_to_json

DERIVED_DETAIL = ("cluster", "progress", "late")
"""``detail`` keys the pipeline adds when it places a step."""
_REQUIRED = ("step_id", "session_id", "kind", "ts")


def step_line(step: Any) -> dict[str, Any]:
    """``step`` (a stored :class:`~models.records.Step`) as one line of a bundle's
    ``session.jsonl``."""
    return step_to_json(step)


def is_step_line(obj: Any) -> bool:
    """Whether a JSON value is a stored step (not a session event: those have ``type``)."""
    return isinstance(obj, Mapping) and "type" not in obj and all(k in obj for k in _REQUIRED)


def was_late(obj: Mapping[str, Any]) -> bool:
    """Whether the stored step arrived behind the watermark (``detail.late``)."""
    detail = obj.get("detail")
    return isinstance(detail, Mapping) and detail.get("late") is True


def step_line_drafts(obj: Mapping[str, Any]) -> list[Draft]:
    """The draft of one stored-step line; raises :class:`DecodeError` naming what is wrong."""
    try:
        stored = step_from_json({k: v for k, v in obj.items()})
    except (TypeError, ValueError, KeyError) as exc:
        raise DecodeError(f"not a stored step: {exc}") from None
    if not isinstance(stored.ts, int) or not stored.step_id or not stored.session_id:
        raise DecodeError("not a stored step: step_id, session_id and an integer ts are required")
    detail = {k: v for k, v in stored.detail.items() if k not in DERIVED_DETAIL}
    step = stored.with_(seq=UNSEQUENCED, model_session=0, detail=detail)
    return [Draft(step=step, fallback_id=stored.step_id, session_hint=stored.session_id)]
