"""The one pipeline every byte goes through: decode → order → sequence → detect → store.

Live consumers, ``trajwatch replay`` and the tests all drive this class; only
the source and the clock differ. Input arrives per *partition* (a Kafka
partition, a recorded file): each partition has its own event-time
:class:`~features.session.ordering.Reorderer`, so one slow source does not hold up
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
in one store transaction, with what each :class:`~ingest.pipeline.sinks.Sink` adds to it (the
actions' outbox), and tells the sinks once it is durable.
"""

from __future__ import annotations

import copy
import hashlib
import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from detectors.base import Detector
from detectors.registry import DetectorSet
from detectors.score_series import ScoreChunk, ScoreRecorder, encode_chunk
from features.calls.step_features import StepFeatures, analysed_view
from features.redact.engine import redact_dead_letter, redact_step
from features.session.compaction import CompactionInference
from features.session.ordering import Reorderer
from features.session.trajectory import TrajectoryFeatures
from features.text.clip import analysed_step
from ingest.decoded import Decoded, Draft, SpanRecord
from ingest.formats.otlp_json import decode_otlp_json
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.formats.session_events import decode_event
from ingest.pipeline.options import PipelineOptions
from ingest.pipeline.session_state import dump_analysis, dump_state, load_state, roll_forward
from ingest.pipeline.sinks import Committed, Sink
from ingest.pipeline.trace_index import TraceIndex
from ingest.semconv.codeact import CodeMemory
from ingest.semconv.spans import SPAN_SOURCE, resource_session_hint, session_hint, spans_to_drafts
from models.errors import DecodeError
from models.records import Alert, DeadLetter, SessionInfo, Step, StepKind, step_replacer
from models.storable import (
    Unstorable,
    check_step_identity,
    clean_id,
    json_payload,
    payload_of,
    plain_text,
    storable_placed,
    storable_step,
)
from models.store import SessionCursor, Store, StoreUnit

# The kinds read once: on Python 3.11 each read of ``StepKind.X`` goes through the enum
# metaclass's ``__getattr__`` hook (~170 ns, a module global ~20 ns), and the per-step
# path below reads ~15 of them a step.
_START, _END, _MODEL_CALL = StepKind.START, StepKind.END, StepKind.MODEL_CALL
_TOOL_CALL, _TOOL_RESULT = StepKind.TOOL_CALL, StepKind.TOOL_RESULT
_EGRESS, _COMPACTION = StepKind.EGRESS, StepKind.COMPACTION
_START_OR_END = (_START, _END)
_START_OR_MODEL_CALL = (_START, _MODEL_CALL)


@dataclass(slots=True)
class _Session:
    """A session's in-memory state; ``cursor()`` is what the store keeps of it."""

    info: SessionInfo
    next_seq: int
    model_session: int
    last_ts: int
    compaction: CompactionInference
    detectors: list[Detector]
    scores: ScoreRecorder
    """The detectors' scores since the checkpoint (from :attr:`upto`)."""
    features: TrajectoryFeatures = field(default_factory=TrajectoryFeatures)
    analysis: bytes | None = None
    """The analysis checkpoint the store holds
    (:func:`~ingest.pipeline.session_state.dump_analysis`; None: fresh detectors and
    features), reflecting the steps below :attr:`upto`."""
    upto: int = 0
    chunk: ScoreChunk | None = None
    """The scores the last checkpoint covered, until the commit stores them with it."""
    checkpoint_due: bool = False
    """The next commit writes a checkpoint whatever the steps since the last: the session
    ended, the store refused a step the detectors saw, or its stored analysis is of an
    older layout."""
    instructions: bytes | None = None
    """Digest of the system instructions last stored in the session: a model call repeating
    them (the GenAI conventions put ``gen_ai.system_instructions`` on every inference
    span) does not store them again. Live only: after a restart they are stored once more."""
    turns: dict[str, int] = field(default_factory=dict)
    """Turn index by trace, for a conversation traced one trace per turn; the trace of
    turn 0 owns the session's ``start`` and ``end``. Kept in the state; a session stored
    before states were kept reads the owner back from the stored start."""

    def cursor(self, *, checkpoint: bool) -> SessionCursor:
        """The cursor with the session's state (:mod:`ingest.pipeline.session_state`): its facts as
        they are now; its analysis as of the last checkpoint, or (``checkpoint``) as of now."""
        if checkpoint and (self.upto < self.next_seq or self.checkpoint_due):
            self.analysis = dump_analysis(features=self.features, detectors=self.detectors)
            self.chunk = self.scores.take(upto=self.next_seq)
            self.upto = self.next_seq
            self.checkpoint_due = False
        return SessionCursor(
            session_id=self.info.session_id,
            next_seq=self.next_seq,
            model_session=self.model_session,
            last_ts=self.last_ts,
            state=dump_state(
                info=self.info,
                compaction=self.compaction,
                turns=self.turns,
                analysis=self.analysis,
                upto=self.upto,
            ),
        )

    def take_chunk(self) -> ScoreChunk | None:
        """The scores the last checkpoint covered, if not yet stored; handed over once."""
        chunk, self.chunk = self.chunk, None
        return chunk

    def checkpoint_wanted(self, every: int) -> bool:
        """Whether this commit should write the analysis: ``every`` steps placed since
        the last checkpoint, or :attr:`checkpoint_due`."""
        return self.checkpoint_due or self.next_seq - self.upto >= every


@dataclass(slots=True)
class Resolved:
    """A released draft with its session known: what the ordering stage hands the
    sequencing stage (in one process, or through Kafka's repartition topic keyed by
    ``session_id``; :mod:`ingest.sources.repartition`)."""

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
    drafts: int = 0
    """Drafts decoded from the input. Once released, each is exactly one of: a step placed
    in its session (``drafts_stepped``), a duplicate of a step stored or placed before
    (``drafts_duplicate``), or a dead letter because a value fits no column
    (``drafts_unstorable``). A placed step is stored unless the store refuses it, a last
    resort counted in ``store_rejected`` (and dead-lettered too)."""
    drafts_stepped: int = 0
    drafts_duplicate: int = 0
    drafts_unstorable: int = 0
    unstorable: int = 0
    """Records dead-lettered because a value fits no column (drafts, steps, alerts,
    session facts); see :mod:`models.storable`."""
    store_rejected: int = 0
    """Placed steps the store still refused (a last resort: the pipeline checks first)."""


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
        """Every commit stores each touched session's cursor and facts, and a checkpoint
        of its analysis (detectors, features) every ``settings.checkpoint_steps`` steps,
        at its end and at :meth:`close` (:mod:`ingest.pipeline.session_state`). A session reopened
        (after an eviction, a restart or a rebalance) is restored from its checkpoint and
        rolled forward through the steps stored since, so it raises the alerts an
        unbroken run would have."""
        self.store = store
        self.sinks = list(sinks)
        self.settings = settings or PipelineOptions()
        self.detectors = detectors or DetectorSet([])
        self.stats = Stats()
        self._lateness_ns = self.settings.lateness_ms * 1_000_000
        self._partitions: dict[str, Reorderer[Draft]] = {}
        self._traces = TraceIndex(max_traces=self.settings.max_traces)
        self._code = CodeMemory()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._arrival = 0
        self._ready: list[Draft] = []
        self._resolved: list[Resolved] = []
        self._dead: list[DeadLetter] = []
        self._offsets: dict[tuple[str, str], int] = {}
        self._moves: dict[tuple[str, str], tuple[int | None, int]] = {}

    # -- input -------------------------------------------------------------------

    def feed_otlp_proto(self, data: bytes, *, source: str, location: str, partition: str) -> None:
        decoded = _guarded_decode(
            decode_otlp_proto,
            data,
            source=source,
            location=location,
            max_attribute_bytes=self.settings.max_attribute_bytes,
        )
        self.feed_decoded(decoded, partition=partition)

    def feed_otlp_json(
        self, data: bytes | str | Mapping[str, Any], *, source: str, location: str, partition: str
    ) -> None:
        decoded = _guarded_decode(
            decode_otlp_json,
            data,
            source=source,
            location=location,
            max_attribute_bytes=self.settings.max_attribute_bytes,
        )
        self.feed_decoded(decoded, partition=partition)

    def feed_event(
        self, data: bytes | str | Mapping[str, Any], *, source: str, location: str, partition: str
    ) -> None:
        try:
            drafts, dead = decode_event(
                data, source=source, location=location, arrival=self._arrival
            )
        except Exception as error:  # a decoder bug must cost one record, not the loop
            drafts, dead = [], _decoder_failed(data, source, location, error)
        rejects = [dead] if dead is not None else []
        self.feed_decoded(Decoded(drafts=drafts, rejects=rejects), partition=partition)

    def feed_decoded(self, decoded: Decoded, *, partition: str, position: int = -1) -> None:
        """The one entry point for decoded input: the rejects are kept as dead letters, the
        spans mapped to drafts, and the drafts (a span decoder's, then the decoder's own)
        put in event-time order on ``partition``. ``position`` is where the input was read
        (a Kafka offset): :meth:`held_from` tells the earliest one still held."""
        for letter in decoded.rejects:
            self._add_dead_letter(letter)
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
                span.trace_id,
                span.span_id,
                span.parent_span_id,
                session_hint(span, attribute),
                resource_session_hint(span, attribute),
            )
        self._add_drafts(
            spans_to_drafts(
                spans, session_attribute=attribute, arrival=self._arrival, memory=self._code
            ),
            partition=partition,
            position=position,
        )

    def _add_drafts(self, drafts: Iterable[Draft], *, partition: str, position: int = -1) -> None:
        reorderer = self._partitions.get(partition)
        if reorderer is None:
            reorderer = self._partitions[partition] = Reorderer(lateness_ns=self._lateness_ns)
        for draft in drafts:
            self.stats.drafts += 1
            # The one gate every step passes: nothing a decoder left unredacted goes on.
            draft.step = redact_step(draft.step)
            try:
                _make_storable(draft)
            except Unstorable as error:
                self.stats.drafts_unstorable += 1
                self._reject(draft.step, error.reason)
                continue
            draft.arrival = self._arrival
            draft.position = position
            self._arrival += 1
            self._traces.observe_draft(draft)
            reorderer.push(draft.step.ts, draft)
        self._ready.extend(reorderer.pop_ready())

    def _add_dead_letter(self, letter: DeadLetter) -> None:
        letter = redact_dead_letter(letter)  # the gate every dead letter passes
        self._dead.append(letter)
        self.stats.dead_letters += 1
        if len(self.stats.first_dead_letters) < DEAD_LETTER_EXAMPLES:
            self.stats.first_dead_letters.append(letter)

    def _reject(self, record: Step | Alert | SessionInfo, reason: str) -> None:
        """Dead-letter a record no column can hold (see :mod:`models.storable`)."""
        self.stats.unstorable += 1
        kind = type(record).__name__.lower()
        self._add_dead_letter(
            DeadLetter(
                source=getattr(record, "source", "pipeline"),
                location=getattr(record, "source_ref", "") or record.session_id,
                reason=f"unstorable {kind}: {reason}",
                payload=payload_of(record),
                content_type="application/json",
            )
        )

    def _detector_failed(self, step: Step, detector: Detector, error: Exception) -> None:
        """A detector raised on ``step``: the step is stored all the same, and a dead
        letter keeps the step and the error so the bug can be reproduced."""
        self._add_dead_letter(
            DeadLetter(
                source=step.source,
                location=step.source_ref or step.step_id,
                reason=f"detector {detector.name} failed: {type(error).__name__}: {error}",
                payload=payload_of(step),
                content_type="application/json",
            )
        )

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
            if draft.step.kind == _EGRESS:
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

    # -- the pre-execution check ----------------------------------------------------

    def probe(self, session_id: str) -> Probe:
        """A detached copy of session ``session_id``'s analysis state (its detectors by
        ``clone()`` + ``load_state_dict(state_dict())``, its trajectory features): the live
        session when it is in memory, else its stored cursor, else a fresh session.
        Nothing of the pipeline or the store changes, then or when the probe is run. Not
        thread-safe against :meth:`commit`: the caller holds the pipeline thread's lock."""
        session = self._sessions.get(session_id)
        if session is None:
            cursor = self.store.session_cursor(session_id) or SessionCursor(session_id=session_id)
            restored = self._restored(
                cursor, lambda start, end: self.store.steps(session_id, start, end)
            )
            return Probe(
                session_id=session_id,
                next_seq=restored.next_seq,
                last_ts=restored.last_ts,
                agent=restored.info.agent,
                features=restored.features,
                detectors=restored.detectors,
            )
        copies = []
        for detector in session.detectors:
            copy_ = detector.clone()
            copy_.load_state_dict(detector.state_dict())
            copies.append(copy_)
        return Probe(
            session_id=session_id,
            next_seq=session.next_seq,
            last_ts=session.last_ts,
            agent=session.info.agent,
            features=copy.deepcopy(session.features),
            detectors=copies,
        )

    # -- release -----------------------------------------------------------------

    def commit(self, *, checkpoint_all: bool = False) -> list[Alert]:
        """Sequence, detect and store everything released; returns the new alerts.

        Steps, alerts, dead letters, session cursors and offsets go into one
        transaction: after a crash, either all of a commit is stored or none of it.
        When it raises, the in-memory sessions are ahead of the store: discard this
        pipeline and re-read the input from the stored offsets (the Kafka worker does).

        ``checkpoint_all`` also writes the analysis of every live session placed past its
        checkpoint (the end of a replay, a service shutting down): only for a process
        that owns every session it holds (not a worker, whose sessions may have moved to
        another since it last committed them).
        """
        # drafts fed in resolved (another process's ordering stage: the repartition topic)
        # were not made storable here: their steps get the whole check
        checked = not self._resolved
        ready, self._resolved = [*self._resolved, *self.resolve()], []
        offsets, self._offsets = self._offsets, {}
        moves, self._moves = self._moves, {}
        with self.store.unit() as unit:
            steps, storable, unstorable, alerts, touched = self._release(
                ready, unit, checked=checked
            )
            inserted, refused = unit.add_storable_steps(storable)
            refused = [*unstorable, *refused]
            for step, reason in refused:
                self.stats.store_rejected += 1
                self._reject(step, reason)
                # its detectors saw a step the store does not hold: no roll-forward
                # could see it again, so the checkpoint must be past it
                self._sessions[step.session_id].checkpoint_due = True
            if checkpoint_all:
                behind = (
                    s for s, session in self._sessions.items() if session.upto < session.next_seq
                )
                touched = list(dict.fromkeys([*touched, *behind]))
            every = self.settings.checkpoint_steps
            new_alerts, refused_alerts = unit.add_alerts_or_reject(alerts)
            for alert, reason in refused_alerts:
                self._reject(alert, reason)
            checkpoints = {
                s: checkpoint_all or self._sessions[s].checkpoint_wanted(every) for s in touched
            }
            refused_infos = unit.upsert_sessions(
                [
                    (self._sessions[s].info, self._sessions[s].cursor(checkpoint=checkpoint))
                    for s, checkpoint in checkpoints.items()
                ]
            )
            for info, error in refused_infos:
                # Keep the cursor (the steps stored need it); the facts go to a
                # dead letter, and the session learns them again from a later step.
                self._reject(info, error.reason)
                session = self._sessions[info.session_id]
                session.info = SessionInfo(session_id=info.session_id)
                cursor = session.cursor(checkpoint=checkpoints[info.session_id])
                unit.upsert_session(session.info, cursor)
            chunks = [
                (session_id, chunk)
                for session_id in checkpoints
                if (chunk := self._sessions[session_id].take_chunk()) is not None
            ]
            if chunks:  # the scores the checkpoints cover, after their sessions' rows
                unit.add_score_chunks([(s, c.start, c.end, encode_chunk(c)) for s, c in chunks])
            dead, self._dead = self._dead, []
            if dead:
                unit.add_dead_letters(dead)
            for (source, partition), position in offsets.items():
                unit.set_offset(source, partition, position)
            if refused:
                left_out = {step.step_id for step, _ in refused}
                steps = [step for step in steps if step.step_id not in left_out]
            if moves:
                unit.move_offsets(moves)
            committed = Committed(steps=steps, alerts=new_alerts, dead_letters=dead)
            for sink in self.sinks:
                sink.in_transaction(unit, committed)
        for sink in self.sinks:
            sink.after_commit(committed)
        self.stats.new_steps += inserted
        self.stats.new_alerts += len(new_alerts)
        self._evict()
        return new_alerts

    def close(self) -> list[Alert]:
        """End of all input: release every partition and commit."""
        for partition in list(self._partitions):
            self.end_partition(partition)
        return self.commit(checkpoint_all=True)

    def _resolve_session(self, draft: Draft) -> str:
        # the draft's own session, else its trace's (named by a span of it, else by a
        # span's resource: ingest.pipeline.trace_index), else the trace; the trace index
        # learns session hints from raw span attributes: repaired here as the draft's own
        # fields were (see models.storable)
        return clean_id(
            draft.session_hint
            or self._traces.session_of(draft.trace_id)
            or draft.trace_id
            or "unknown"
        )

    def _release(
        self, ready: list[Resolved], unit: StoreUnit, *, checked: bool
    ) -> tuple[list[Step], list[Step], list[tuple[Step, str]], list[Alert], list[str]]:
        """Sequence and judge the released drafts: the steps placed, the same made
        storable (what :func:`~models.storable.storable_step` gives: the store takes them
        unchecked, :meth:`~models.store.StoreUnit.add_storable_steps`), those no column
        can hold with the reason, the alerts raised, and the sessions touched.
        ``checked``: every draft's step was made storable by :func:`_make_storable`."""
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
        # A parent is linked only if it is a step (stored, or placed before in this
        # release): a result whose call was lost to a dead letter points nowhere.
        parents = [self._parent_of(draft, session, egress_parents) for draft, session in resolved]
        wanted = (
            set(ids)
            | {p for p in parents if p}
            | {
                f"{step_id}/{suffix}"
                for (draft, _), step_id in zip(resolved, ids, strict=True)
                if draft.step.kind == _MODEL_CALL
                for suffix in ("compaction-inferred", "compaction-signalled")
            }
        )
        stored = unit.existing_step_ids(wanted) if ids else set()
        seen: set[str] = set()
        steps: list[Step] = []
        storable: list[Step] = []
        unstorable: list[tuple[Step, str]] = []
        alerts: list[Alert] = []
        touched: dict[str, None] = {}
        _merge_sources(resolved, ids)
        placed: set[str] = set()
        stats, failed = self.stats, self._detector_failed
        for (draft, session_id), step_id, parent in zip(resolved, ids, parents, strict=True):
            if step_id in stored or step_id in seen:
                stats.drafts_duplicate += 1
                stats.duplicates += (
                    1
                    + (f"{step_id}/compaction-inferred" in stored)
                    + (f"{step_id}/compaction-signalled" in stored)
                )
                stats.sessions.add(session_id)
                if step_id in stored and draft.step.kind in _START_OR_END:
                    # Too late for the detectors, but the session record learns the
                    # facts only this source had (policy, budget, claimed_done).
                    session = self._session(session_id, cursors, unit)
                    session.info = _updated_info(session.info, draft.step)
                    touched[session_id] = None
                continue
            seen.add(step_id)
            try:
                _check_identity(draft, session_id, step_id)
            except Unstorable as error:
                stats.drafts_unstorable += 1
                self._reject(draft.step.with_(step_id=step_id, session_id=session_id), error.reason)
                continue
            stats.drafts_stepped += 1
            session = self._session(session_id, cursors, unit)
            touched[session_id] = None
            stats.sessions.add(session_id)
            if draft.step.kind in _LINKED and parent not in stored and parent not in placed:
                parent = None
            for final, features, form in self._sequence(
                session, draft, step_id, parent, checked=checked
            ):
                placed.add(final.step_id)
                steps.append(final)
                if isinstance(form, str):  # the reason it cannot be stored
                    unstorable.append((final, form))
                else:
                    storable.append(form)
                stats.steps += 1
                # detectors read a bounded head of each field, and the step's features,
                # worked out once for all of them
                view = analysed_view(final, features)
                # every detector in order, its score recorded; a detector's bug is a
                # dead letter, not the batch's end
                session.scores.judge(view, alerts, partial(failed, final))
        return steps, storable, unstorable, alerts, list(touched)

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
                and draft.step.kind in _START_OR_END
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
            session = self._session(session_id, cursors, unit)
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
            if draft.step.kind == _END:
                detail["turn_end"] = True
            draft.natural_key = f"{natural}/{trace}"
            draft.step = draft.step.with_(detail=detail)

    @staticmethod
    def _parent_of(draft: Draft, session_id: str, egress_parents: Mapping[int, str]) -> str | None:
        step = draft.step
        if step.kind == _TOOL_RESULT:
            if step.call_id:
                return f"{session_id}/tool_call/{step.call_id}"
            return draft.fallback_id.removesuffix(":result") + ":call" if draft.span_id else None
        if step.kind == _EGRESS:
            return egress_parents.get(id(draft))
        return step.parent_step_id

    def _sequence(
        self,
        session: _Session,
        draft: Draft,
        step_id: str,
        parent: str | None,
        *,
        checked: bool,
    ) -> list[tuple[Step, StepFeatures | None, Step | str]]:
        """Give the draft's step its identity and place; may prepend an inferred
        compaction. Each placed step comes with the features worked out for it, if any,
        and its storable form or the reason it has none (:func:`_with_stored_form`);
        ``checked``: the draft's step was made storable (:func:`_make_storable`)."""
        out: list[tuple[Step, StepFeatures | None, Step | str]] = []
        step = _once_per_session_instructions(session, draft.step)
        session_id = session.info.session_id
        if step.kind == _COMPACTION:
            session.compaction.explicit()
        elif step.kind == _MODEL_CALL:
            context = draft.context or "main"
            if session.compaction.signalled(context, *_compaction_signal(step)):
                before = session.compaction.last_tokens(context)
                compaction = _signalled_compaction(step, step_id, session_id, before)
                out.append(_with_stored_form(self._place(session, compaction), storable_step))
            inferred = session.compaction.model_call(context, step.tokens_in)
            if inferred is not None:
                compaction = Step(
                    step_id=f"{step_id}/compaction-inferred",
                    session_id=session_id,
                    kind=_COMPACTION,
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
                out.append(_with_stored_form(self._place(session, compaction), storable_step))
        placed = self._place(session, step, (step_id, session_id, parent))
        # a checked draft's step is storable but for what placing it changed: its
        # identity, its place and the entries added to its (checked) detail
        added = placed[2]
        out.append(
            _with_stored_form(
                placed, (lambda s: storable_placed(s, added)) if checked else storable_step
            )
        )
        return out

    def _place(
        self, session: _Session, step: Step, identity: tuple[str, str, str | None] | None = None
    ) -> tuple[Step, StepFeatures | None, dict[str, Any]]:
        """``step`` at the session's next position, with ``identity`` (its step id, session
        id and parent step id) when given: one copy; with the features of a tool call (the
        trajectory features read them first), and the entries added to its detail."""
        if step.kind == _COMPACTION:
            session.model_session += 1
        elif step.kind == _END:  # a run's end: its whole analysis is worth keeping
            session.checkpoint_due = True
        late = step.ts < session.last_ts
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
        session.last_ts = max(session.last_ts, step.ts)
        session.info = _updated_info(session.info, placed)
        return placed, shared, added

    def _session(
        self, session_id: str, cursors: Mapping[str, SessionCursor], unit: StoreUnit
    ) -> _Session:
        """The live session ``session_id``; opened from its stored cursor (``cursors``,
        loaded by the caller for every session it may open) when it is not live."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
            return session
        cursor = cursors.get(session_id) or SessionCursor(session_id=session_id)
        session = self._restored(cursor, lambda start, end: unit.steps(session_id, start, end))
        self._sessions[session_id] = session
        return session

    def _restored(
        self, cursor: SessionCursor, stored_steps: Callable[[int, int], list[Step]]
    ) -> _Session:
        """A session as ``cursor`` left it (a restart, a rebalance, an eviction): its
        facts, its analysis checkpoint, rolled forward through the steps stored past it
        (``stored_steps(start, end)``) — exactly where it stopped."""
        compaction = CompactionInference(
            drop=self.settings.compaction_drop, min_tokens=self.settings.compaction_min_tokens
        )
        session = _Session(
            info=SessionInfo(session_id=cursor.session_id),
            next_seq=cursor.next_seq,
            model_session=cursor.model_session,
            last_ts=cursor.last_ts,
            compaction=compaction,
            detectors=(detectors := self.detectors.for_session()),
            scores=ScoreRecorder(detectors, start=cursor.next_seq),
            upto=cursor.next_seq,
        )
        state = load_state(cursor.state) if cursor.state is not None else None
        if state is None:  # new, or stored before states were kept: fresh from here
            return session
        session.info = state.info
        session.compaction = state.compaction
        session.features = state.features
        session.turns = state.turns
        for detector in session.detectors:
            if detector.name in state.detectors:  # just unpickled: its own
                detector.load_state_dict(state.detectors[detector.name], owned=True)
        session.upto, session.analysis = state.upto, state.analysis
        session.scores = ScoreRecorder(session.detectors, start=state.upto)
        if state.upto < cursor.next_seq:
            roll_forward(
                stored_steps(state.upto, cursor.next_seq),
                session.features,
                session.detectors,
                session.scores,
            )
        return session

    def _evict(self) -> None:
        # Evicted sessions' cursors, facts and checkpoints are in the store (written by
        # the commit that just ran), and so are the steps placed since their checkpoints:
        # a session that returns is reloaded and rolled forward (see _restored). Not
        # checkpointed here: a worker's evicted session may belong to a partition it has
        # lost, and only the commit of that partition's batch may write its cursor.
        while len(self._sessions) > self.settings.max_sessions:
            self._sessions.popitem(last=False)


@dataclass(slots=True)
class Probe:
    """A session's analysis state detached from the pipeline (:meth:`Pipeline.probe`):
    :meth:`run` shows what its detectors would raise on a proposed step."""

    session_id: str
    next_seq: int
    last_ts: int
    agent: str | None
    features: TrajectoryFeatures
    detectors: list[Detector]

    def run(self, step: Step) -> list[Alert]:
        """The alerts ``step`` would raise as the session's next step (given the next
        ``seq`` and the features the pipeline would add). A detector that raises is
        skipped: a check must answer."""
        step = redact_step(step)
        shared = StepFeatures(analysed_step(step))
        features = self.features.observe(step, seq=self.next_seq, features=shared)
        placed = step.with_(
            seq=self.next_seq,
            session_id=self.session_id,
            agent=step.agent or self.agent,
            ts=max(step.ts, self.last_ts),
            detail={**step.detail, **features},
        )
        view = analysed_view(placed, shared)
        alerts: list[Alert] = []
        for detector in self.detectors:
            try:
                alerts.extend(detector.update(view))
            except Exception:  # a detector bug: the live run dead-letters it
                continue
        return alerts


_LINKED = (_TOOL_RESULT, _EGRESS)
"""Kinds whose parent the pipeline derives (a result's call, an egress's tool call)."""


def _guarded_decode(
    decode: Callable[..., Decoded], data: Any, *, source: str, location: str, **options: Any
) -> Decoded:
    """``decode(data, …)``, with an exception out of the decoder (a bug: decoders reject
    bad records themselves) turned into one reject of the whole input, so it costs that
    input, kept whole with the reason, and never the loop."""
    try:
        return decode(data, source=source, location=location, **options)
    except Exception as error:
        return Decoded(spans=[], rejects=[_decoder_failed(data, source, location, error)])


def _decoder_failed(data: Any, source: str, location: str, error: Exception) -> DeadLetter:
    reason = error.reason if isinstance(error, DecodeError) else f"{type(error).__name__}: {error}"
    if isinstance(data, bytes):
        payload = data
    elif isinstance(data, str):
        payload = data.encode("utf-8", "surrogatepass")
    else:
        payload = json_payload(data)
    return DeadLetter(
        source=source,
        location=location,
        reason=f"the decoder failed: {reason}",
        payload=payload,
        content_type="application/octet-stream" if isinstance(data, bytes) else "application/json",
    )


_at_place = step_replacer(("seq", "model_session", "detail"))
"""A step's copy at its place (:meth:`Pipeline._place`): ``(step, seq, model_session,
detail)``."""
_at_place_as = step_replacer(
    ("step_id", "session_id", "parent_step_id", "seq", "model_session", "detail")
)
""":data:`_at_place` with the step's identity: ``(step, step_id, session_id,
parent_step_id, seq, model_session, detail)``."""


def _with_stored_form(
    placed: tuple[Step, StepFeatures | None, dict[str, Any]], storable: Callable[[Step], Step]
) -> tuple[Step, StepFeatures | None, Step | str]:
    """A placed step and its features, with the step made ``storable`` (a function of
    :mod:`models.storable`), or the reason it cannot be: stored or dead-lettered at the
    commit, after the detectors saw it."""
    step, features, _ = placed
    try:
        return step, features, storable(step)
    except Unstorable as error:
        return step, features, error.reason


def _make_storable(draft: Draft) -> None:
    """Repair the draft's text and check its values (:func:`models.storable.storable_step`)
    before it is ordered by its ``ts`` or seen by a detector; raises ``Unstorable``."""
    draft.step = storable_step(draft.step)
    for name, value in zip(_DRAFT_TEXT, _draft_texts(draft), strict=True):
        if value is None or plain_text(value):
            continue  # the common case: what clean_id returns as it is
        if not isinstance(value, str):
            raise Unstorable(f"{name}: a {type(value).__name__} where text belongs")
        setattr(draft, name, clean_id(value))


_DRAFT_TEXT = (  # ids all: repaired as ids are (models.storable.clean_id)
    "fallback_id",
    "natural_key",
    "session_hint",
    "trace_id",
    "span_id",
    "parent_span_id",
    "context",
)
_draft_texts = operator.attrgetter(*_DRAFT_TEXT)


def _check_identity(draft: Draft, session_id: str, step_id: str) -> None:
    """The ids the step is about to get fit their columns (a model call's may get an
    inferred compaction, whose id is longer); raises ``Unstorable``."""
    suffix = "/compaction-inferred" if draft.step.kind == _MODEL_CALL else ""
    check_step_identity(session_id, step_id, suffix)


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
    if step.kind == _START and not step.detail.get("subagent"):
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
    if step.kind == _END:
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


def _compaction_signal(step: Step) -> tuple[bool, str | None]:
    """A model call's compaction signals (:func:`ingest.semconv.spans._compaction_signal`):
    (marked compacted, the id of its compaction part or None)."""
    detail = step.detail if isinstance(step.detail, Mapping) else {}
    part = detail.get("compaction_part")
    part_id = part.get("id") if isinstance(part, Mapping) else None
    return detail.get("compacted") is True, part_id if isinstance(part_id, str) else None


def _signalled_compaction(
    call: Step, step_id: str, session_id: str, tokens_before: int | None
) -> Step:
    """The explicit compaction a model call's signals report, placed just before it."""
    detail = call.detail if isinstance(call.detail, Mapping) else {}
    part = detail.get("compaction_part")
    summary = part.get("summary") if isinstance(part, Mapping) else None
    signal = "compaction part" if isinstance(part, Mapping) else "gen_ai.conversation.compacted"
    return Step(
        step_id=f"{step_id}/compaction-signalled",
        session_id=session_id,
        kind=_COMPACTION,
        ts=call.ts,
        agent=call.agent,
        source=call.source,
        source_ref=call.source_ref,
        text=summary if isinstance(summary, str) else None,
        detail={
            "tokens_before": tokens_before,
            "tokens_after": call.tokens_in,
            "inferred": False,
            "signal": signal,
        },
    )


def _once_per_session_instructions(session: _Session, step: Step) -> Step:
    """``step`` without the system instructions the session has already stored (see
    :attr:`_Session.instructions`): the first copy stays, and each change."""
    if step.kind not in _START_OR_MODEL_CALL:
        return step
    detail = step.detail if isinstance(step.detail, Mapping) else {}
    text = detail.get("system_instructions")
    if not isinstance(text, str):
        return step
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    if digest != session.instructions:
        session.instructions = digest
        return step
    return step.with_(detail={k: v for k, v in detail.items() if k != "system_instructions"})
