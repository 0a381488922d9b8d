"""A released draft's identity: the parent it links to, the sources of one step folded
into one draft, and the check that the ids it is about to get fit their columns.

The step id itself is :meth:`ingest.decoded.Draft.step_id_for` (after
:func:`ingest.pipeline.turns.key_turns` gave a later turn's start and end their own key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.decoded import Draft
from models.records import Step, StepKind
from models.storable import check_step_identity

_MODEL_CALL, _TOOL_RESULT, _EGRESS = StepKind.MODEL_CALL, StepKind.TOOL_RESULT, StepKind.EGRESS

LINKED = (_TOOL_RESULT, _EGRESS)
"""Kinds whose parent the pipeline derives (a result's call, an egress's tool call): linked
only if the parent is a step, stored or placed before in the same release."""


def parent_of(draft: Draft, session_id: str, egress_parents: Mapping[int, str]) -> str | None:
    """The step id of the draft's parent: a tool result's call (by call id, else by its
    span), an egress step's tool call (``egress_parents``, by ``id(draft)``), else the
    parent the step names."""
    step = draft.step
    if step.kind == _TOOL_RESULT:
        if step.call_id:
            return f"{session_id}/tool_call/{step.call_id}"
        return draft.fallback_id.removesuffix(":result") + ":call" if draft.span_id else None
    if step.kind == _EGRESS:
        return egress_parents.get(id(draft))
    return step.parent_step_id


def check_identity(draft: Draft, session_id: str, step_id: str) -> None:
    """The ids the step is about to get fit their columns (a model call's may get an
    inferred compaction, whose id is longer); raises ``Unstorable``."""
    suffix = "/compaction-inferred" if draft.step.kind == _MODEL_CALL else ""
    check_step_identity(session_id, step_id, suffix)


def merge_sources(resolved: list[tuple[Draft, str]], ids: list[str]) -> None:
    """Fold drafts of the same step from several sources into the first one.

    The same session start seen as an ``invoke_agent`` span and as a
    ``session_start`` event is one step, but each source knows different facts
    (the span: the agent; the event: the policy, workspace, budget). The first
    draft in order is kept, with the empty fields and missing detail keys of the
    others filled in, so detectors see every fact the step has.
    """
    first: dict[str, Draft] = {}
    for (draft, _), step_id in zip(resolved, ids, strict=True):
        kept = first.setdefault(step_id, draft)
        if kept is not draft:
            kept.step = _fill(kept.step, draft.step)


def _fill(kept: Step, other: Step) -> Step:
    changes: dict[str, Any] = {
        name: getattr(other, name)
        for name in _FILLABLE
        if getattr(kept, name) in (None, "") and getattr(other, name) not in (None, "")
    }
    missing = {k: v for k, v in other.detail.items() if k not in kept.detail}
    if missing:
        changes["detail"] = {**kept.detail, **missing}
    return kept.with_(**changes) if changes else kept


_FILLABLE = (
    "agent",
    "tool",
    "action",
    "call_id",
    "arguments",
    "result",
    "text",
    "status",
    "error",
    "model",
    "finish_reason",
    "tokens_in",
    "tokens_out",
    "cost",
    "egress_host",
    "egress_url",
    "egress_method",
    "http_status",
    "idempotency_key",
)
