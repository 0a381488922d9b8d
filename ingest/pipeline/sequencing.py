"""A released draft's step placed in its session: its identity, its ``seq`` and
``model_session``, the trajectory features of a tool call, and the compactions a model
call's signals report or its input tokens give away, placed just before it.

:func:`sequence` gives each step placed with the features worked out for it (the
detectors read them) and its storable form, or the reason it has none: the step is
judged either way, then stored or dead-lettered by the commit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from features.calls.step_features import StepFeatures
from features.text.clip import analysed_step
from ingest.decoded import Draft
from ingest.pipeline.event_order import order_key
from ingest.pipeline.session import LiveSession, updated_info
from models.records import Step, StepKind, step_replacer
from models.storable import Unstorable, storable_placed, storable_step

# The kinds read once: on Python 3.11 each read of ``StepKind.X`` goes through the enum
# metaclass's ``__getattr__`` hook (~170 ns, a module global ~20 ns), and the per-step
# path below reads several of them a step.
_START, _END, _MODEL_CALL = StepKind.START, StepKind.END, StepKind.MODEL_CALL
_TOOL_CALL, _COMPACTION, _SILENCE = StepKind.TOOL_CALL, StepKind.COMPACTION, StepKind.SILENCE
_START_OR_MODEL_CALL = (_START, _MODEL_CALL)

Placed = tuple[Step, StepFeatures | None, dict[str, Any]]
"""What :func:`place` gives: the step at its place, the features of a tool call (else
None), and the entries added to its detail."""
Sequenced = tuple[Step, StepFeatures | None, Step | str]
"""What :func:`sequence` gives for each step it places: the step, its features, and its
storable form or the reason it has none."""


def sequence(
    session: LiveSession, draft: Draft, step_id: str, parent: str | None, *, checked: bool
) -> list[Sequenced]:
    """Give the draft's step its identity (``step_id``, ``parent``) and its place in
    ``session``; an inferred or signalled compaction may come first. ``checked``: the
    draft's step was made storable (:func:`ingest.pipeline.intake.make_storable`)."""
    out: list[Sequenced] = []
    step = draft.step
    if order_key(step) >= session.last_key:
        # a late step keeps its copy: where it belongs, it may be the first
        step = once_per_session_instructions(session, step)
    session_id = session.info.session_id
    if step.kind == _COMPACTION:
        session.compaction.explicit()
    elif step.kind == _MODEL_CALL:
        context = draft.context or "main"
        if session.compaction.signalled(context, *_compaction_signal(step)):
            before = session.compaction.last_tokens(context)
            compaction = _signalled_compaction(step, step_id, session_id, before)
            out.append(_with_stored_form(place(session, compaction), storable_step))
        detail = step.detail
        is_map = type(detail) is dict or isinstance(detail, Mapping)
        message = detail.get("user_message") if is_map else None
        if session.compaction.replaced(
            context, message if isinstance(message, str) else None, step.tokens_in
        ):
            before = session.compaction.last_tokens(context)
            compaction = _compaction_before(
                step,
                f"{step_id}/compaction-signalled",
                session_id,
                text=message if isinstance(message, str) else None,
                tokens_before=before,
                tokens_after=step.tokens_in,
                inferred=True,
                signal="history replaced",
            )
            out.append(_with_stored_form(place(session, compaction), storable_step))
        inferred = session.compaction.model_call(context, step.tokens_in)
        if inferred is not None:
            compaction = _compaction_before(
                step,
                f"{step_id}/compaction-inferred",
                session_id,
                tokens_before=inferred.tokens_before,
                tokens_after=inferred.tokens_after,
                inferred=True,
            )
            out.append(_with_stored_form(place(session, compaction), storable_step))
    placed = place(session, step, (step_id, session_id, parent))
    # a checked draft's step is storable but for what placing it changed: its
    # identity, its place and the entries added to its (checked) detail
    added = placed[2]
    out.append(
        _with_stored_form(
            placed, (lambda s: storable_placed(s, added)) if checked else storable_step
        )
    )
    return out


def place(
    session: LiveSession, step: Step, identity: tuple[str, str, str | None] | None = None
) -> Placed:
    """``step`` at the session's next position, with ``identity`` (its step id, session
    id and parent step id) when given: one copy; with the features of a tool call (the
    trajectory features read them first), and the entries added to its detail. A step
    whose event-time place (:func:`~ingest.pipeline.event_order.order_key`) is behind the
    last step placed is marked ``late`` and leaves the session *unsettled*: judged where it
    arrived until the session is re-judged in event-time order
    (:mod:`ingest.pipeline.rejudge`)."""
    if step.kind == _COMPACTION:
        session.model_session += 1
    elif step.kind == _END:  # a run's end: its whole analysis is worth keeping
        session.checkpoint_due = True
    key = order_key(step)
    late = key < session.last_key
    if late:
        session.unsettled = True
    else:
        session.last_key = key
    detail = step.detail
    # only a tool call has trajectory features (observe gives {} for the rest)
    if step.kind == _TOOL_CALL:
        shared = StepFeatures(analysed_step(step))
        features = session.features.observe(step, seq=session.next_seq, features=shared)
    else:
        shared, features = None, {}
    added = {**features, "late": True} if late else features
    if added:
        detail = {**detail, **added}
    if identity is None:
        placed = _at_place(step, session.next_seq, session.model_session, detail)
    else:
        placed = _at_place_as(step, *identity, session.next_seq, session.model_session, detail)
    session.next_seq += 1
    if step.kind is not _SILENCE:  # the silence goes on (ingest.pipeline.silence)
        session.last_ts = max(session.last_ts, step.ts)
    session.info = updated_info(session.info, placed)
    return placed, shared, added


_at_place = step_replacer(("seq", "model_session", "detail"))
"""A step's copy at its place (:func:`place`): ``(step, seq, model_session, detail)``."""
_at_place_as = step_replacer(
    ("step_id", "session_id", "parent_step_id", "seq", "model_session", "detail")
)
""":data:`_at_place` with the step's identity: ``(step, step_id, session_id,
parent_step_id, seq, model_session, detail)``."""


def _with_stored_form(placed: Placed, storable: Callable[[Step], Step]) -> Sequenced:
    """A placed step and its features, with the step made ``storable`` (a function of
    :mod:`models.storable`), or the reason it cannot be: stored or dead-lettered at the
    commit, after the detectors saw it."""
    step, features, _ = placed
    try:
        return step, features, storable(step)
    except Unstorable as error:
        return step, features, error.reason


def _compaction_signal(step: Step) -> tuple[bool, str | None]:
    """A model call's compaction signals (:func:`ingest.semconv.spans._compaction_signal`):
    (marked compacted, the id of its compaction part or None)."""
    detail = step.detail
    if type(detail) is not dict and not isinstance(detail, Mapping):
        detail = {}
    part = detail.get("compaction_part")
    part_id = part.get("id") if part is not None and isinstance(part, Mapping) else None
    return detail.get("compacted") is True, part_id if isinstance(part_id, str) else None


def _signalled_compaction(
    call: Step, step_id: str, session_id: str, tokens_before: int | None
) -> Step:
    """The explicit compaction a model call's signals report, placed just before it."""
    detail = call.detail if isinstance(call.detail, Mapping) else {}
    part = detail.get("compaction_part")
    summary = part.get("summary") if isinstance(part, Mapping) else None
    signal = "compaction part" if isinstance(part, Mapping) else "gen_ai.conversation.compacted"
    return _compaction_before(
        call,
        f"{step_id}/compaction-signalled",
        session_id,
        text=summary if isinstance(summary, str) else None,
        tokens_before=tokens_before,
        tokens_after=call.tokens_in,
        inferred=False,
        signal=signal,
    )


def _compaction_before(
    call: Step, step_id: str, session_id: str, *, text: str | None = None, **detail: Any
) -> Step:
    """A compaction step placed just before model ``call`` (its time and source), with
    ``detail`` (tokens before and after, whether inferred, the signal)."""
    return Step(
        step_id=step_id,
        session_id=session_id,
        kind=_COMPACTION,
        ts=call.ts,
        agent=call.agent,
        source=call.source,
        source_ref=call.source_ref,
        text=text,
        detail=detail,
    )


def once_per_session_instructions(session: LiveSession, step: Step) -> Step:
    """``step`` without the system instructions the session has already stored (see
    :attr:`LiveSession.instructions`): the first copy stays, and each change."""
    if step.kind not in _START_OR_MODEL_CALL:
        return step
    detail = step.detail
    if type(detail) is not dict and not isinstance(detail, Mapping):
        detail = {}
    text = detail.get("system_instructions")
    if not isinstance(text, str):
        return step
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    if digest != session.instructions:
        session.instructions = digest
        return step
    return step.with_(detail={k: v for k, v in detail.items() if k != "system_instructions"})
