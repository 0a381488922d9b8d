"""Steps released under their trace id, adopted into their session once it is known.

A span released before any span naming its session (a tool span without
``gen_ai.conversation.id`` whose agent span comes later than the lateness window) is
resolved to its trace id (:func:`ingest.pipeline.resolution.session_of`) and stored as a
*provisional* session of that id. When a step of the same trace is later placed in a
named session, the provisional session's steps belong there: an in-order delivery would
have put them there. The pipeline then settles the named session at once
(:meth:`ingest.pipeline.engine.Pipeline._settle`), and the settle adopts them:

- the provisional session's stored steps are taken as the named session's
  (:func:`adopted`: session id, and the ids sequencing keyed by session, rewritten), a
  step the named session already holds under the same id (a re-delivery after the link
  was learnt) kept once;
- the named session is judged again from its first step in event-time order with them
  (:mod:`ingest.pipeline.rejudge`): its settled steps and alerts are an in-order
  delivery's;
- the provisional session is *deleted* from the store (its steps, score chunks,
  workspace writes and row: :meth:`models.store.StoreUnit.drop_session`). It was never a
  session, only a place to keep steps whose session was not known yet; everything it
  held now lives in the named session. Its alerts are kept, marked superseded with
  :func:`adopted_alert`'s reason naming the session that took its steps, beside the
  actions already sent for them (the outbox's audit trail).

Which provisional sessions a named session adopts is read from its own stored steps: the
traces of its span steps (:func:`provisional_ids`) that are stored sessions. Cost: one
query on the sessions' keys per release (the traces it places in named sessions) and one
per settle; a judgement of the named session per adoption, which happens once per trace
that had a step released before its session was known.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ingest.pipeline.resolution import CAUSE_STEP
from ingest.semconv.spans import SPAN_SOURCE
from models.records import Alert, Step
from models.storable import clean_id

ADOPTED = (
    "superseded: its steps were stored under their trace id before their session was "
    "known, and were adopted into session {session}"
)
"""The reason stored on a provisional session's alert (``{session}``: the one adopting)."""


def trace_session(trace_id: str | None) -> str | None:
    """The provisional session a step of ``trace_id`` is stored under while its session
    is not known (what :func:`ingest.pipeline.resolution.session_of` falls back to)."""
    return clean_id(trace_id) if trace_id else None


def provisional_ids(steps: Iterable[Step], session_id: str) -> list[str]:
    """The provisional sessions that steps of ``session_id``'s traces may have been stored
    under: the traces of its span steps (``source_ref`` ``trace:span``), other than itself,
    once each, in order."""
    out: dict[str, None] = {}
    for step in steps:
        if step.source == SPAN_SOURCE and step.source_ref:
            trace, _, _ = step.source_ref.partition(":")
            candidate = trace_session(trace)
            if candidate and candidate != session_id:
                out[candidate] = None
    return list(out)


def adopted(steps: Sequence[Step], provisional: str, session_id: str) -> list[Step]:
    """``steps`` (stored under ``provisional``) as steps of ``session_id``: the ids keyed by
    the session (``<session>/<natural key>``: a tool call's, a model call's, a result's link
    to its call) keyed by ``session_id`` instead, as a release that knew the session would
    have keyed them, and an egress step's unlinked cause (``detail.cause_step``); ids built
    from the span (``trace:span``) stay."""
    prefix, into = f"{provisional}/", f"{session_id}/"

    def rekeyed(step_id: str | None) -> str | None:
        if step_id is not None and step_id.startswith(prefix):
            return into + step_id[len(prefix) :]
        return step_id

    out = []
    for step in steps:
        step = step.with_(
            session_id=session_id,
            step_id=rekeyed(step.step_id) or step.step_id,
            parent_step_id=rekeyed(step.parent_step_id),
        )
        cause = step.detail.get(CAUSE_STEP)
        if isinstance(cause, str) and cause.startswith(prefix):
            step = step.with_(detail={**step.detail, CAUSE_STEP: rekeyed(cause)})
        out.append(step)
    return out


def merged(own: Sequence[Step], taken: Sequence[Step]) -> list[Step]:
    """A session's ``own`` stored steps with ``taken`` (adopted, :func:`adopted`), a step
    whose id it holds already left out (the same span delivered again once the session
    was known)."""
    ids = {step.step_id for step in own}
    return [*own, *(step for step in taken if step.step_id not in ids)]


def adopted_alert(alert: Alert, session_id: str) -> Alert:
    """``alert`` (raised on a provisional session) marked superseded: its steps were
    adopted into ``session_id``."""
    return replace(alert, superseded=ADOPTED.format(session=session_id))
