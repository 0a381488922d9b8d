"""The one pipeline every byte goes through: decode → order → sequence → detect → store.

Live consumers, ``trajwatch replay`` and the tests all drive this class; only
the source and the clock differ. Input arrives per *partition* (a Kafka
partition, a recorded file): each partition has its own event-time
:class:`~features.ordering.Reorderer`, so one slow source does not hold up
another, and a partition's end flushes what it still holds.

Per released draft, in event-time order:

1. the session is resolved: the draft's own session id, else the session its
   trace is known to belong to, else the trace id;
2. the step id is finalised and checked against what is stored (a re-delivered
   span or event is dropped here, before any detector sees it);
3. the session's cursor gives it ``seq`` and ``model_session``; a sharp drop in
   input tokens inserts an inferred compaction step first;
4. the session's detectors see the step and may raise alerts.

:meth:`Pipeline.feed_decoded` is the one entry point for decoded input (what any
decoder returns: spans, drafts and dead letters); ``feed_otlp_proto``, ``feed_otlp_json``
and ``feed_event`` decode and then call it. :meth:`Pipeline.commit` writes the steps,
alerts, dead letters, session cursors and input offsets of everything released so far
in one store transaction, with what each :class:`~ingest.sinks.Sink` adds to it (the
actions' outbox), and tells the sinks once it is durable.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from detectors.base import Detector
from detectors.registry import DetectorSet
from features.compaction import CompactionInference
from features.ordering import Reorderer
from features.trajectory import TrajectoryFeatures
from ingest.draft import Draft
from ingest.options import PipelineOptions
from ingest.otlp_json import decode_otlp_json
from ingest.otlp_proto import Decoded, decode_otlp_proto
from ingest.semconv import SPAN_SOURCE, session_hint, spans_to_drafts
from ingest.session_events import decode_event
from ingest.session_state import dump_state, load_state
from ingest.sinks import Committed, Sink
from ingest.spans import SpanRecord
from ingest.trace_index import TraceIndex
from models.records import Alert, DeadLetter, SessionInfo, Step, StepKind
from models.store import SessionCursor, Store, StoreUnit


@dataclass(slots=True)
class _Session:
    """A session's in-memory state; ``cursor()`` is what the store keeps of it."""

    info: SessionInfo
    next_seq: int
    model_session: int
    last_ts: int
    compaction: CompactionInference
    detectors: list[Detector]
    features: TrajectoryFeatures = field(default_factory=TrajectoryFeatures)
    state: bytes | None = None
    turns: dict[str, int] = field(default_factory=dict)
    """Turn index by trace, for a conversation traced one trace per turn; the trace of
    turn 0 owns the session's ``start`` and ``end``. Kept in the state; a session stored
    before states were kept reads the owner back from the stored start."""

    def cursor(self) -> SessionCursor:
        """The cursor with the session's whole state (:mod:`ingest.session_state`)."""
        self.state = dump_state(
            info=self.info,
            compaction=self.compaction,
            features=self.features,
            turns=self.turns,
            detectors=self.detectors,
        )
        return SessionCursor(
            session_id=self.info.session_id,
            next_seq=self.next_seq,
            model_session=self.model_session,
            last_ts=self.last_ts,
            state=self.state,
        )


@dataclass(slots=True)
class Resolved:
    """A released draft with its session known: what the ordering stage hands the
    sequencing stage (in one process, or through Kafka's repartition topic keyed by
    ``session_id``; :mod:`ingest.repartition`)."""

    draft: Draft
    session_id: str
    egress_parent: str | None = None
    """For an egress step: the step id of the tool call that caused it, looked up in
    the span tree when the draft was released (the tree lives with the ordering stage)."""


DEAD_LETTER_EXAMPLES = 5
"""Dead letters kept whole in :class:`Stats` (the rest are only counted)."""


@dataclass(slots=True)
class Stats:
    """What the pipeline has seen since it started (for summaries and metrics)."""

    sessions: set[str] = field(default_factory=set)
    steps: int = 0
    """Distinct steps of the input, whether stored now or already stored before."""
    new_steps: int = 0
    duplicates: int = 0
    dead_letters: int = 0
    first_dead_letters: list[DeadLetter] = field(default_factory=list)
    """The first :data:`DEAD_LETTER_EXAMPLES` dead letters, for summaries to show why."""
    new_alerts: int = 0
    late_steps: int = 0


class Pipeline:
    """Owns the per-partition ordering buffers, the trace index and the in-memory
    session cursors; the store owns everything durable."""

    def __init__(
        self,
        store: Store,
        *,
        settings: PipelineOptions | None = None,
        detectors: DetectorSet | None = None,
        sinks: Sequence[Sink] = (),
    ) -> None:
        self.store = store
        self.sinks = list(sinks)
        self.settings = settings or PipelineOptions()
        self.detectors = detectors or DetectorSet([])
        self.stats = Stats()
        self._lateness_ns = self.settings.lateness_ms * 1_000_000
        self._partitions: dict[str, Reorderer[Draft]] = {}
        self._traces = TraceIndex(max_traces=self.settings.max_traces)
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._arrival = 0
        self._ready: list[Draft] = []
        self._resolved: list[Resolved] = []
        self._dead: list[DeadLetter] = []
        self._offsets: dict[tuple[str, str], int] = {}
        self._moves: dict[tuple[str, str], tuple[int | None, int]] = {}

    # -- input -------------------------------------------------------------------

    def feed_otlp_proto(self, data: bytes, *, source: str, location: str, partition: str) -> None:
        decoded = decode_otlp_proto(
            data,
            source=source,
            location=location,
            max_attribute_bytes=self.settings.max_attribute_bytes,
        )
        self.feed_decoded(decoded, partition=partition)

    def feed_otlp_json(
        self, data: bytes | str | Mapping[str, Any], *, source: str, location: str, partition: str
    ) -> None:
        decoded = decode_otlp_json(
            data,
            source=source,
            location=location,
            max_attribute_bytes=self.settings.max_attribute_bytes,
        )
        self.feed_decoded(decoded, partition=partition)

    def feed_event(
        self, data: bytes | str | Mapping[str, Any], *, source: str, location: str, partition: str
    ) -> None:
        drafts, dead = decode_event(data, source=source, location=location, arrival=self._arrival)
        rejects = [dead] if dead is not None else []
        self.feed_decoded(Decoded(drafts=drafts, rejects=rejects), partition=partition)

    def feed_decoded(self, decoded: Decoded, *, partition: str, position: int = -1) -> None:
        """The one entry point for decoded input: the rejects are kept as dead letters, the
        spans mapped to drafts, and the drafts (a span decoder's, then the decoder's own)
        put in event-time order on ``partition``. ``position`` is where the input was read
        (a Kafka offset): :meth:`held_from` tells the earliest one still held."""
        for letter in decoded.rejects:
            self._dead.append(letter)
            self.stats.dead_letters += 1
            if len(self.stats.first_dead_letters) < DEAD_LETTER_EXAMPLES:
                self.stats.first_dead_letters.append(letter)
        if decoded.spans:
            self._add_spans(decoded.spans, partition=partition, position=position)
        if decoded.drafts:
            self._add_drafts(decoded.drafts, partition=partition, position=position)

    def _add_spans(
        self, spans: Sequence[SpanRecord], *, partition: str, position: int = -1
    ) -> None:
        attribute = self.settings.session_attribute
        for span in spans:
            self._traces.observe_span(
                span.trace_id, span.span_id, span.parent_span_id, session_hint(span, attribute)
            )
        self._add_drafts(
            spans_to_drafts(spans, session_attribute=attribute, arrival=self._arrival),
            partition=partition,
            position=position,
        )

    def _add_drafts(self, drafts: Iterable[Draft], *, partition: str, position: int = -1) -> None:
        reorderer = self._partitions.get(partition)
        if reorderer is None:
            reorderer = self._partitions[partition] = Reorderer(lateness_ns=self._lateness_ns)
        for draft in drafts:
            draft.arrival = self._arrival
            draft.position = position
            self._arrival += 1
            self._traces.observe_draft(draft)
            reorderer.push(draft.step.ts, draft)
        self._ready.extend(reorderer.pop_ready())

    def set_offset(self, source: str, partition: str, position: int) -> None:
        """Record how far a source has been read; stored with the next commit."""
        self._offsets[(source, partition)] = position

    def move_offset(self, source: str, partition: str, start: int | None, end: int) -> None:
        """Record that ``[start, end)`` of a source's partition was read: the next commit
        stores ``end`` only if the stored position is still ``start`` (None: never stored),
        else it raises :class:`~models.store.OffsetMovedError` and stores nothing. For a
        partition that can move between workers (Kafka); successive calls extend the range."""
        earlier = self._moves.get((source, partition))
        self._moves[(source, partition)] = (earlier[0] if earlier else start, end)

    def end_partition(self, partition: str) -> None:
        """The partition has no more input (end of a recorded file): release all it holds."""
        reorderer = self._partitions.pop(partition, None)
        if reorderer is not None:
            self._ready.extend(reorderer.flush())

    def pending(self) -> int:
        """Drafts held for ordering or waiting for the next commit."""
        return (
            len(self._ready) + len(self._resolved) + sum(len(r) for r in self._partitions.values())
        )

    def newest_event_time(self, partition: str) -> int | None:
        """The newest event time ``partition`` has seen since it was opened (its
        watermark plus the lateness); None when it holds no ordering state."""
        reorderer = self._partitions.get(partition)
        return None if reorderer is None else reorderer.max_ts

    def resume_partition(self, partition: str, *, newest_event_time: int) -> None:
        """Open ``partition`` as one that had seen ``newest_event_time`` already: a source
        re-reading from the position it committed with that time (:meth:`held_from`)
        rebuilds the ordering state it had, and releases in the same order."""
        reorderer = self._partitions[partition] = Reorderer(lateness_ns=self._lateness_ns)
        reorderer.max_ts = newest_event_time

    def held_from(self, partition: str) -> int | None:
        """The earliest input position (see :meth:`feed_decoded`) of a draft ``partition``
        still holds for ordering, or None when it holds none: a source that commits its
        read positions commits this one, so a restart re-reads whatever was not released."""
        reorderer = self._partitions.get(partition)
        if reorderer is None:
            return None
        return min((draft.position for draft in reorderer.items()), default=None)

    # -- the ordering stage's output, the sequencing stage's input ---------------

    def resolve(self) -> list[Resolved]:
        """Take every released draft with its session resolved (and an egress step's
        cause looked up): the ordering stage's whole output. :meth:`commit` calls it; a
        worker whose sequencing runs elsewhere calls it and sends the result on."""
        ready, self._ready = self._ready, []
        out = []
        for draft in ready:
            session_id = self._resolve_session(draft)
            parent = None
            if draft.step.kind == StepKind.EGRESS:
                call = self._traces.enclosing_tool_call(draft.trace_id, draft.parent_span_id)
                parent = call.step_id_for(session_id) if call else None
            out.append(Resolved(draft, session_id, parent))
        return out

    def feed_resolved(self, resolved: Iterable[Resolved]) -> None:
        """Input of the sequencing stage: drafts another process ordered and resolved,
        in the order it released them; stored by the next :meth:`commit`."""
        self._resolved.extend(resolved)

    def take_dead_letters(self) -> list[DeadLetter]:
        """The dead letters not yet committed (a stage that does not commit sends them on)."""
        dead, self._dead = self._dead, []
        return dead

    def forget_sessions(self) -> None:
        """Drop every live session (their state is in the store since the last commit):
        after a rebalance another worker may have moved them on."""
        self._sessions.clear()

    # -- release -----------------------------------------------------------------

    def commit(self) -> list[Alert]:
        """Sequence, detect and store everything released; returns the new alerts.

        Steps, alerts, dead letters, session cursors and offsets go into one
        transaction: after a crash, either all of a commit is stored or none of it.
        When it raises, the in-memory sessions are ahead of the store: discard this
        pipeline and re-read the input from the stored offsets (the Kafka worker does).
        """
        ready, self._resolved = [*self._resolved, *self.resolve()], []
        dead, self._dead = self._dead, []
        offsets, self._offsets = self._offsets, {}
        moves, self._moves = self._moves, {}
        with self.store.unit() as unit:
            steps, alerts, touched = self._release(ready, unit)
            if steps:
                unit.add_steps(steps)
            new_alerts = unit.add_alerts(alerts) if alerts else []
            for session_id in touched:
                session = self._sessions[session_id]
                unit.upsert_session(session.info, session.cursor())
            if dead:
                unit.add_dead_letters(dead)
            for (source, partition), position in offsets.items():
                unit.set_offset(source, partition, position)
            for (source, partition), (start, end) in moves.items():
                unit.move_offset(source, partition, start, end)
            committed = Committed(steps=steps, alerts=new_alerts, dead_letters=dead)
            for sink in self.sinks:
                sink.in_transaction(unit, committed)
        for sink in self.sinks:
            sink.after_commit(committed)
        self.stats.new_steps += len(steps)
        self.stats.new_alerts += len(new_alerts)
        self._evict()
        return new_alerts

    def close(self) -> list[Alert]:
        """End of all input: release every partition and commit."""
        for partition in list(self._partitions):
            self.end_partition(partition)
        return self.commit()

    def _resolve_session(self, draft: Draft) -> str:
        # the draft's own session, else its trace's, else the trace (see the module docstring)
        return (
            draft.session_hint
            or self._traces.session_of(draft.trace_id)
            or draft.trace_id
            or "unknown"
        )

    def _release(
        self, ready: list[Resolved], unit: StoreUnit
    ) -> tuple[list[Step], list[Alert], list[str]]:
        resolved = [(item.draft, item.session_id) for item in ready]
        egress_parents = {
            id(item.draft): item.egress_parent for item in ready if item.egress_parent
        }
        # The stored cursors of every session this release opens, in one query.
        opening = [s for s in dict.fromkeys(s for _, s in resolved) if s not in self._sessions]
        cursors = unit.session_cursors(opening) if opening else {}
        self._key_turns(resolved, cursors, unit)
        ids = [draft.step_id_for(session) for draft, session in resolved]
        # A model call may have been stored with an inferred compaction before it;
        # ask for those too so a re-delivery counts the same steps.
        wanted = set(ids) | {
            f"{step_id}/compaction-inferred"
            for (draft, _), step_id in zip(resolved, ids, strict=True)
            if draft.step.kind == StepKind.MODEL_CALL
        }
        stored = unit.existing_step_ids(wanted) if ids else set()
        seen: set[str] = set()
        steps: list[Step] = []
        alerts: list[Alert] = []
        touched: dict[str, None] = {}
        _merge_sources(resolved, ids)
        for (draft, session_id), step_id in zip(resolved, ids, strict=True):
            if step_id in stored or step_id in seen:
                self.stats.duplicates += 1 + (f"{step_id}/compaction-inferred" in stored)
                self.stats.sessions.add(session_id)
                if step_id in stored and draft.step.kind in (StepKind.START, StepKind.END):
                    # Too late for the detectors, but the session record learns the
                    # facts only this source had (policy, budget, claimed_done).
                    session = self._session(session_id, cursors)
                    session.info = _updated_info(session.info, draft.step)
                    touched[session_id] = None
                continue
            seen.add(step_id)
            session = self._session(session_id, cursors)
            touched[session_id] = None
            self.stats.sessions.add(session_id)
            for final in self._sequence(session, draft, step_id, egress_parents):
                steps.append(final)
                self.stats.steps += 1
                for detector in session.detectors:
                    alerts.extend(detector.update(final))
        return steps, alerts, list(touched)

    def _key_turns(
        self,
        resolved: list[tuple[Draft, str]],
        cursors: Mapping[str, SessionCursor],
        unit: StoreUnit,
    ) -> None:
        """Give the start and end of a conversation's later turns their own identity.

        A conversation traced one trace per turn (the same ``gen_ai.conversation.id`` or
        ``session.id`` on each) has an outermost agent span per turn; each says
        ``start``/``end``. The first trace to start the session owns those keys (so a
        ``session_start`` event and the span still fold into one step); any other
        trace's become ``start/<trace>``/``end/<trace>``, with ``detail.turn`` (the
        turn's index) and, on the end, ``detail.turn_end`` (an end that does not close
        the session). Turn 0's end is released before a later turn is known, so it
        carries no mark. Ownership is read from the live session, else from the stored
        start's source (a re-delivery after a restart keeps its ids)."""
        # in event-time order: partitions release their drafts one after another
        turns = sorted(
            (
                (draft, session_id)
                for draft, session_id in resolved
                if draft.trace_id
                and draft.natural_key in ("start", "end")
                and draft.step.kind in (StepKind.START, StepKind.END)
            ),
            key=lambda pair: (pair[0].step.ts, pair[0].arrival),
        )
        if not turns:
            return
        wanted = {
            f"{session_id}/{key}"
            for draft, session_id in turns
            for key in ("start", f"start/{draft.trace_id}", f"end/{draft.trace_id}")
        }
        sources = unit.step_sources(wanted)
        for draft, session_id in turns:
            trace = draft.trace_id or ""
            natural = draft.natural_key or ""
            session = self._session(session_id, cursors)
            if not session.turns:
                # who started the session: a span of some trace, else nobody yet (or a
                # session_start event, which the first trace's start folds into)
                source = sources.get(f"{session_id}/start")
                if source is not None and source[0] == SPAN_SOURCE:
                    session.turns[source[1].partition(":")[0]] = 0
            if f"{session_id}/{natural}/{trace}" in sources:  # a later turn, stored
                index = session.turns.setdefault(trace, max(1, len(session.turns)))
            else:
                index = session.turns.setdefault(trace, len(session.turns))
            if index == 0:
                continue
            detail = {**draft.step.detail, "turn": index}
            if draft.step.kind == StepKind.END:
                detail["turn_end"] = True
            draft.natural_key = f"{natural}/{trace}"
            draft.step = draft.step.with_(detail=detail)

    @staticmethod
    def _parent_of(draft: Draft, session_id: str, egress_parents: Mapping[int, str]) -> str | None:
        step = draft.step
        if step.kind == StepKind.TOOL_RESULT:
            if step.call_id:
                return f"{session_id}/tool_call/{step.call_id}"
            return draft.fallback_id.removesuffix(":result") + ":call" if draft.span_id else None
        if step.kind == StepKind.EGRESS:
            return egress_parents.get(id(draft))
        return step.parent_step_id

    def _sequence(
        self, session: _Session, draft: Draft, step_id: str, egress_parents: Mapping[int, str]
    ) -> list[Step]:
        """Give the draft's step its identity and place; may prepend an inferred compaction."""
        out: list[Step] = []
        step = draft.step
        session_id = session.info.session_id
        if step.kind == StepKind.COMPACTION:
            session.compaction.explicit()
        elif step.kind == StepKind.MODEL_CALL:
            inferred = session.compaction.model_call(draft.context or "main", step.tokens_in)
            if inferred is not None:
                compaction = Step(
                    step_id=f"{step_id}/compaction-inferred",
                    session_id=session_id,
                    kind=StepKind.COMPACTION,
                    ts=step.ts,
                    agent=step.agent,
                    source=step.source,
                    source_ref=step.source_ref,
                    detail={
                        "tokens_before": inferred.tokens_before,
                        "tokens_after": inferred.tokens_after,
                        "inferred": True,
                    },
                )
                out.append(self._place(session, compaction))
        parent = self._parent_of(draft, session_id, egress_parents)
        out.append(
            self._place(
                session, step, step_id=step_id, session_id=session_id, parent_step_id=parent
            )
        )
        return out

    def _place(self, session: _Session, step: Step, **identity: Any) -> Step:
        """``step`` (plus ``identity`` fields) at the session's next position: one copy."""
        if step.kind == StepKind.COMPACTION:
            session.model_session += 1
        late = step.ts < session.last_ts
        if late:
            self.stats.late_steps += 1
        detail = step.detail
        features = session.features.observe(step, seq=session.next_seq)
        if features or late:
            detail = {**detail, **features, **({"late": True} if late else {})}
        placed = step.with_(
            seq=session.next_seq,
            model_session=session.model_session,
            detail=detail,
            **identity,
        )
        session.next_seq += 1
        session.last_ts = max(session.last_ts, step.ts)
        session.info = _updated_info(session.info, placed)
        return placed

    def _session(self, session_id: str, cursors: Mapping[str, SessionCursor]) -> _Session:
        """The live session ``session_id``; opened from its stored cursor (``cursors``,
        loaded by the caller for every session it may open) when it is not live."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
            return session
        cursor = cursors.get(session_id) or SessionCursor(session_id=session_id)
        compaction = CompactionInference(
            drop=self.settings.compaction_drop, min_tokens=self.settings.compaction_min_tokens
        )
        session = _Session(
            info=SessionInfo(session_id=session_id),
            next_seq=cursor.next_seq,
            model_session=cursor.model_session,
            last_ts=cursor.last_ts,
            compaction=compaction,
            detectors=self.detectors.for_session(),
            state=cursor.state,
        )
        state = load_state(cursor.state) if cursor.state is not None else None
        if state is not None:
            # a restart, a rebalance or an eviction: continue exactly where it stopped
            session.info = state.info
            session.compaction = state.compaction
            session.features = state.features
            session.turns = state.turns
            for detector in session.detectors:
                if detector.name in state.detectors:
                    detector.load_state_dict(state.detectors[detector.name])
        self._sessions[session_id] = session
        return session

    def _evict(self) -> None:
        # Evicted sessions' cursors and states are in the store (written by the commit
        # that just ran): a session that returns is reloaded whole.
        while len(self._sessions) > self.settings.max_sessions:
            self._sessions.popitem(last=False)


def _merge_sources(resolved: list[tuple[Draft, str]], ids: list[str]) -> None:
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


def _updated_info(info: SessionInfo, step: Step) -> SessionInfo:
    """Session facts a step teaches: the goal and policy from the (outermost) start,
    the outcome from the end, the first event time from any step."""
    started = step.ts if info.started_ts is None else min(info.started_ts, step.ts)
    if step.kind == StepKind.START and not step.detail.get("subagent"):
        detail = step.detail
        # a later turn's input is a further user message, not the session's goal
        goal = info.goal or (None if detail.get("turn") else step.text) or None
        return replace(
            info,
            goal=goal,
            agent=info.agent or step.agent,
            workspace=info.workspace or detail.get("workspace"),
            repository=info.repository or detail.get("repository"),
            policy_id=info.policy_id or detail.get("policy_id"),
            budget=info.budget or detail.get("budget") or {},
            started_ts=started,
        )
    if step.kind == StepKind.END:
        claimed = step.detail.get("claimed_done")
        return replace(
            info,
            agent=info.agent or step.agent,
            started_ts=started,
            ended_ts=step.ts,
            end_status=step.detail.get("end_status") or info.end_status,
            claimed_done=claimed if claimed is not None else info.claimed_done,
        )
    if info.started_ts is None or info.agent is None:
        return replace(info, agent=info.agent or step.agent, started_ts=started)
    return info
