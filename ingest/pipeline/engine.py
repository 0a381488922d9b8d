"""The one pipeline every byte goes through: decode → order → sequence → detect → store.

Live consumers, ``trajwatch replay`` and the tests all drive this class; only
the source and the clock differ. Input arrives per *partition* (a Kafka
partition, a recorded file) and is put in event-time order per partition
(:mod:`ingest.pipeline.ordering`).

Per released draft, in event-time order:

1. the session is resolved (:mod:`ingest.pipeline.resolution`): the draft's own session
   id, else the session its trace is known to belong to, else the trace id;
2. the step id is finalised (:mod:`ingest.pipeline.turns`, :mod:`ingest.pipeline.identity`)
   and checked against what is stored (:mod:`ingest.pipeline.lookups`: a re-delivered
   span or event is dropped here, before any detector sees it);
3. the session's cursor gives it ``seq`` and ``model_session``; a sharp drop in
   input tokens inserts an inferred compaction step first (:mod:`ingest.pipeline.sequencing`);
4. the session's detectors see the step and may raise alerts.

:meth:`Pipeline.feed_decoded` is the one entry point for decoded input (what any
decoder returns: spans, drafts and dead letters); ``feed_otlp_proto``, ``feed_otlp_json``
and ``feed_event`` decode and then call it. :meth:`Pipeline.commit` writes the steps,
alerts, dead letters, session cursors and input offsets of everything released so far
in one store transaction, with what each :class:`~ingest.pipeline.sinks.Sink` adds to it (the
actions' outbox), and tells the sinks once it is durable.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from detectors.agent_baseline.detector import AgentBaseline
from detectors.base import Detector
from detectors.duplicate_side_effect import DuplicateSideEffect
from detectors.registry import DetectorSet
from detectors.score_series import encode_chunk
from detectors.workspace_conflict.detector import WorkspaceConflict
from features.calls.step_features import StepFeatures, analysed_view
from features.redact.engine import redact_dead_letter
from ingest.decoded import Decoded, Draft
from ingest.formats.otlp_json import decode_otlp_json
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.formats.session_events import decode_event
from ingest.pipeline import letters
from ingest.pipeline.adoption import (
    adopted,
    adopted_alert,
    merged,
    provisional_ids,
    trace_session,
)
from ingest.pipeline.baselines import BaselineStage
from ingest.pipeline.identity import LINKED, check_identity, merge_sources, parent_of
from ingest.pipeline.intake import guarded_decode
from ingest.pipeline.lookups import Lookups, look_up
from ingest.pipeline.options import PipelineOptions
from ingest.pipeline.ordering import Ordering
from ingest.pipeline.predecessors import CALL_KINDS, with_predecessor_effects
from ingest.pipeline.probe import Probe
from ingest.pipeline.rejudge import rejudge, superseded
from ingest.pipeline.resolution import CAUSE_STEP, Resolved
from ingest.pipeline.sequencing import Sequenced, sequence
from ingest.pipeline.session import LiveSession, read_stored, restore, updated_info
from ingest.pipeline.silence import Clocks, marks, next_due, silence_step
from ingest.pipeline.sinks import Committed, Sink
from ingest.pipeline.stats import DEAD_LETTER_EXAMPLES, Stats
from ingest.pipeline.turns import key_turns, turn_edges
from ingest.pipeline.workspaces import WorkspaceStage
from models.records import Alert, DeadLetter, SessionInfo, Step, StepKind
from models.storable import Unstorable
from models.store import SessionCursor, Store, StoreUnit

_START_OR_END = (StepKind.START, StepKind.END)  # read once: a member read is an enum lookup
_START = StepKind.START

_Unjudged = tuple[LiveSession, Step, StepFeatures | None, int]
"""A step a ``judge_once`` release placed and judges after (``Pipeline._judge_deferred``):
its session, the step, its features and the number of dead letters held when placed."""


def _calls_of(unit: StoreUnit, placed: Sequence[Step], session_id: str) -> list[Step]:
    """Session ``session_id``'s tool calls and results, in ``seq`` order: those stored,
    then those ``placed`` in this release (not stored yet)."""
    stored = unit.steps(session_id, kinds=CALL_KINDS)
    known = {step.step_id for step in stored}
    fresh = [
        step
        for step in placed
        if step.session_id == session_id and step.kind in CALL_KINDS and step.step_id not in known
    ]
    return [*stored, *fresh]


@dataclass(frozen=True, slots=True)
class Released:
    """What one release (:meth:`Pipeline._release`) placed and raised, for the commit to
    store."""

    steps: list[Step]
    """The steps placed, in order, as the detectors saw them."""
    storable: list[Step]
    """Those of them the columns can hold, made storable (what
    :func:`~models.storable.storable_step` gives: the store takes them unchecked,
    :meth:`~models.store.StoreUnit.add_storable_steps`)."""
    unstorable: list[tuple[Step, str]]
    """The others, with the reason no column can hold them: dead-lettered by the commit."""
    alerts: list[Alert]
    """The alerts raised."""
    touched: list[str]
    """The sessions whose cursor or facts changed, in the order first touched."""
    adopting: list[str]
    """The named sessions that placed a step of a trace whose provisional session is
    live or stored (:mod:`ingest.pipeline.adoption`): to be settled now, adopting it."""
    settling: list[str]
    """The sessions the commit re-judges (:meth:`Pipeline._settling`), in that order."""


def _without(released: Released, gone: set[str]) -> Released:
    """``released`` without what it placed and raised in the sessions ``gone`` (provisional
    sessions adopted in the same commit: their steps are stored again in the adopter)."""
    return replace(
        released,
        steps=[step for step in released.steps if step.session_id not in gone],
        alerts=[alert for alert in released.alerts if alert.session_id not in gone],
        touched=[session_id for session_id in released.touched if session_id not in gone],
    )


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
        judge_once: bool = False,
    ) -> None:
        """Every commit stores each touched session's cursor and facts, and a checkpoint
        of its analysis (detectors, features) every ``settings.checkpoint_steps`` steps,
        at its end and at :meth:`close` (:mod:`ingest.pipeline.session_state`). A session
        reopened (after an eviction, a restart or a rebalance) is restored from its
        checkpoint and rolled forward through the steps stored since, so it raises the
        alerts an unbroken run would have (:func:`ingest.pipeline.session.restore`).

        ``judge_once`` (a replay of recorded files, :mod:`trajwatch.service.replay`): a
        commit places every step it releases first and runs the detectors after, skipping
        the steps of the sessions it re-judges (:mod:`ingest.pipeline.rejudge`) - that
        judgement in arrival order would be thrown away within the same commit, so each
        such session is judged once, in event-time order. The steps, alerts (superseded
        ones too), cursors and checkpoints stored are the same; what is not stored is a
        dead letter of a detector that failed only in the discarded judgement (the
        re-judgement's own failures are stored as before), and the others keep their
        order. Off (the live service, a worker), each step is judged as it is placed."""
        self.store = store
        self.sinks = list(sinks)
        self.settings = settings or PipelineOptions()
        self.detectors = detectors or DetectorSet([])
        self.stats = Stats()
        self._judge_once = judge_once
        self._ordering = Ordering(self.settings, self.stats, self._reject)
        self._sessions: OrderedDict[str, LiveSession] = OrderedDict()
        self._resolved: list[Resolved] = []
        self._dead: list[DeadLetter] = []
        self._offsets: dict[tuple[str, str], int] = {}
        self._moves: dict[tuple[str, str], tuple[int | None, int]] = {}
        # the cross-session check, when its detector is configured (ingest.pipeline.workspaces)
        judge = next(
            (p for p in self.detectors.prototypes if isinstance(p, WorkspaceConflict)), None
        )
        self._workspaces = WorkspaceStage(judge) if judge is not None else None
        # the per-agent baseline's cross-session part (ingest.pipeline.baselines)
        baseline = next(
            (p for p in self.detectors.prototypes if isinstance(p, AgentBaseline)), None
        )
        self._baselines = BaselineStage(baseline) if baseline is not None else None
        # a resumed run's inheritance, when its detector is configured
        # (ingest.pipeline.predecessors): how many completed side effects it remembers
        duplicates = next(
            (p for p in self.detectors.prototypes if isinstance(p, DuplicateSideEffect)), None
        )
        self._inherited = duplicates.window if duplicates is not None else None
        self._cross = frozenset(
            p.name for p in self.detectors.prototypes if getattr(p, "cross_session", False)
        )
        self._clocks = Clocks(marks(self.settings.silence_first_ms, self.settings.silence_last_ms))
        self._relayed: dict[str, tuple[str, str]] = {}
        """Clock name → (lane, input partition) of the clocks relayed through Kafka's
        repartition topic (:meth:`feed_clock`): watched durably (:meth:`watch`)."""
        self._marks: list[tuple[int, str, int]] = []
        """Clock marks fed since the last commit: (index in ``_resolved`` they come
        before, clock name, event time)."""

    # -- input -------------------------------------------------------------------

    def feed_otlp_proto(self, data: bytes, *, source: str, location: str, partition: str) -> None:
        decoded = guarded_decode(
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
        decoded = guarded_decode(
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
                data, source=source, location=location, arrival=self._ordering.arrival
            )
        except Exception as error:  # a decoder bug must cost one record, not the loop
            drafts, dead = [], letters.decoder_failed(data, source, location, error)
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
            self._ordering.add_spans(decoded.spans, partition=partition, position=position)
        if decoded.drafts:
            self._ordering.add_drafts(decoded.drafts, partition=partition, position=position)

    def _add_dead_letter(self, letter: DeadLetter, at: int | None = None) -> None:
        """Hold ``letter``, redacted (the gate every dead letter passes): after the held
        ones, or at index ``at`` among them - where it would have been added had it come
        then (a ``judge_once`` release judges after placing). The examples kept in
        :attr:`stats` (the first dead letters since the pipeline started) follow the
        same order."""
        letter = redact_dead_letter(letter)
        held, stats = self._dead, self.stats
        index = len(held) if at is None else at
        number = stats.dead_letters - len(held) + index  # since the pipeline started
        held.insert(index, letter)
        stats.dead_letters += 1
        if number < DEAD_LETTER_EXAMPLES:
            stats.first_dead_letters.insert(number, letter)
            del stats.first_dead_letters[DEAD_LETTER_EXAMPLES:]

    def _reject(self, record: Step | Alert | SessionInfo, reason: str) -> None:
        """Dead-letter a record no column can hold (see :mod:`models.storable`)."""
        self.stats.unstorable += 1
        self._add_dead_letter(letters.unstorable(record, reason))

    def _detector_failed(self, step: Step, detector: Detector, error: Exception) -> None:
        """A detector raised on ``step``: the step is stored all the same, and a dead
        letter keeps the step and the error so the bug can be reproduced."""
        self._add_dead_letter(letters.detector_failed(step, detector, error))

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
        self._ordering.end_partition(partition)

    def pending(self) -> int:
        """Drafts held for ordering or waiting for the next commit."""
        return self._ordering.held() + len(self._resolved) + len(self._marks)

    def newest_event_time(self, partition: str) -> int | None:
        """The newest event time ``partition`` has seen since it was opened (its
        watermark plus the lateness); None when it holds no ordering state."""
        return self._ordering.newest_event_time(partition)

    def resume_partition(self, partition: str, *, newest_event_time: int) -> None:
        """Open ``partition`` as one that had seen ``newest_event_time`` already: a source
        re-reading from the position it committed with that time (:meth:`held_from`)
        rebuilds the ordering state it had, and releases in the same order."""
        self._ordering.resume_partition(partition, newest_event_time=newest_event_time)

    def held_from(self, partition: str) -> int | None:
        """The earliest input position (see :meth:`feed_decoded`) of a draft ``partition``
        still holds for ordering, or None when it holds none: a source that commits its
        read positions commits this one, so a restart re-reads whatever was not released."""
        return self._ordering.held_from(partition)

    # -- the ordering stage's output, the sequencing stage's input ---------------

    def resolve(self) -> list[Resolved]:
        """Take every released draft with its session resolved (and an egress step's
        cause looked up): the ordering stage's whole output. :meth:`commit` calls it; a
        worker whose sequencing runs elsewhere calls it and sends the result on (the
        drafts its ordering stage retracted are not sent: a CodeAct step's inferred
        calls stored before a traced call read after them stay, there)."""
        self._ordering.take_retracted()  # for a commit here only
        return self._ordering.resolve()

    def feed_resolved(self, resolved: Iterable[Resolved], *, lane: str | None = None) -> None:
        """Input of the sequencing stage: drafts another process ordered and resolved,
        in the order it released them; stored by the next :meth:`commit`.

        ``lane``: they came through that repartition partition, each ``draft.partition``
        naming the input partition it was read from; their sessions' silence is measured
        by that partition's clock as relayed on the lane (:meth:`feed_clock`). Without it,
        all are on one clock (``""``)."""
        if lane is None:
            self._resolved.extend(resolved)
            return
        for item in resolved:
            item.draft.partition = self._relayed_clock(lane, item.draft.partition)
            self._resolved.append(item)

    def feed_clock(self, lane: str, partition: str, ts: int) -> None:
        """Input partition ``partition`` released a draft at event time ``ts`` of a
        session not on ``lane`` (:mod:`ingest.sources.clock_relay`): between the drafts
        fed before and after, its clock on the lane passes ``ts`` — the silence steps due
        before it are placed there, as the draft itself would have placed them."""
        self._marks.append((len(self._resolved), self._relayed_clock(lane, partition), ts))

    def watch(self, lane: str, watched: Iterable[tuple[str, str, int]]) -> None:
        """Watch again what the store says was watched on ``lane`` (``(session_id, input
        partition, due)``, :meth:`~models.store.Store.silence_watch`): a stage taking a
        lane over places the silence steps its last owner would have, though the
        sessions are not in memory (each is reopened from the store when one is due)."""
        for session_id, partition, due in watched:
            self._clocks.watch(self._relayed_clock(lane, partition), session_id, due)

    def _relayed_clock(self, lane: str, partition: str) -> str:
        """The clock of input ``partition`` as relayed on ``lane``: one per pair, since
        each lane is told only what its own sessions need to hear."""
        name = f"{lane}<{partition}"
        if name not in self._relayed:
            self._relayed[name] = (lane, partition)
        return name

    def take_dead_letters(self) -> list[DeadLetter]:
        """The dead letters not yet committed (a stage that does not commit sends them on)."""
        dead, self._dead = self._dead, []
        return dead

    # -- the pre-execution check ----------------------------------------------------

    def probe(self, session_id: str) -> Probe:
        """A detached copy of session ``session_id``'s analysis state
        (:meth:`Probe.copied`): the live session when it is in memory, else its stored
        cursor, else a fresh session. Nothing of the pipeline or the store changes, then
        or when the probe is run. Not thread-safe against :meth:`commit`: the caller
        holds the pipeline thread's lock."""
        session = self._sessions.get(session_id)
        if session is not None:
            return Probe.copied(session)
        cursor = self.store.session_cursor(session_id) or SessionCursor(session_id=session_id)
        stored = read_stored(cursor, partial(self.store.steps, session_id))
        return Probe.taking(restore(stored, self.detectors, self.settings))

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
        retracted = self._ordering.take_retracted()
        ready, self._resolved = [*self._resolved, *self.resolve()], []
        clock_marks, self._marks = self._marks, []
        offsets, self._offsets = self._offsets, {}
        moves, self._moves = self._moves, {}
        with self.store.unit() as unit:
            revised = self._retract(unit, retracted) if retracted else []
            released = self._release(
                ready,
                clock_marks,
                unit,
                checked=checked,
                revised=revised,
                every_session=checkpoint_all,
            )
            if revised:
                released = replace(
                    released, touched=[*dict.fromkeys([*released.touched, *revised])]
                )
            inserted, refused = unit.add_storable_steps(released.storable)
            refused = [*released.unstorable, *refused]
            left_out = {step.step_id for step, _ in refused}
            for step, reason in refused:
                self.stats.store_rejected += 1
                self._reject(step, reason)
                # its detectors saw a step the store does not hold: no roll-forward
                # could see it again, so the checkpoint must be past it
                self._sessions[step.session_id].checkpoint_due = True
            settled, gone = self._settle(unit, released.settling)
            raised = released.alerts
            if settled:  # the judgement in order replaces what arrival order raised
                raised = [a for a in raised if a.session_id not in settled]
                raised += [a for alerts in settled.values() for a in alerts]
            if gone:  # provisional sessions adopted: what they placed now is the adopter's
                raised = [a for a in raised if a.session_id not in gone]
                released = _without(released, gone)
            touched = list(dict.fromkeys([*released.touched, *settled]))
            if self._baselines is not None:
                # before the cursors: the checkpoints then hold what it learnt and attached
                raised = [*raised, *self._baselines.run(unit, self._sessions, touched)]
            if checkpoint_all:
                behind = (
                    s for s, session in self._sessions.items() if session.upto < session.next_seq
                )
                touched = list(dict.fromkeys([*touched, *behind]))
            every = self.settings.checkpoint_steps
            new_alerts, refused_alerts = unit.add_alerts_or_reject(raised)
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
            if self._relayed:
                unit.watch_silences(self._watched(touched))
            if self._workspaces is not None:
                # after the steps, the sessions' facts and the alerts: the stage reads them
                placed = [step for step in released.steps if step.step_id not in left_out]
                infos = {
                    s: self._sessions[s].info
                    for s in dict.fromkeys([*(step.session_id for step in placed), *settled])
                }
                cross = self._workspaces.run(unit, placed, infos, reread=list(settled))
                stored_cross, refused_cross = unit.add_alerts_or_reject(cross)
                new_alerts = [*new_alerts, *stored_cross]
                for alert, reason in refused_cross:
                    self._reject(alert, reason)
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
            steps = released.steps
            if refused:
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
        open_partitions = set(self._ordering.partitions())
        self._clocks.forget(lambda p: p in open_partitions or p in self._relayed)
        self._evict()
        return new_alerts

    def close(self) -> list[Alert]:
        """End of all input: release every partition and commit."""
        for partition in self._ordering.partitions():
            self.end_partition(partition)
        return self.commit(checkpoint_all=True)

    def _watched(self, touched: Sequence[str]) -> list[tuple[str, str, str, int | None]]:
        """``(lane, session, input partition, due)`` of the ``touched`` sessions last
        heard on a relayed clock: what the store's silence watch keeps (due None: none)."""
        rows = []
        for session_id in touched:
            home = self._clocks.home(session_id)
            session = self._sessions.get(session_id)
            if home in self._relayed and session is not None:
                lane, partition = self._relayed[home]
                rows.append((lane, session_id, partition, next_due(session, self._clocks.bounds)))
        return rows

    def _retract(self, unit: StoreUnit, step_ids: Sequence[str]) -> list[str]:
        """Delete the stored steps among ``step_ids`` (drafts the ordering stage retracted:
        :meth:`~ingest.pipeline.ordering.Ordering.take_retracted`) before anything of
        this commit is placed; their sessions are left unsettled, to be judged again in
        event-time order when they settle (:mod:`ingest.pipeline.rejudge`). Returns them."""
        sessions = sorted(unit.drop_steps(step_ids))
        for session_id in sessions:
            session = self._sessions.get(session_id) or self._reopen(session_id, unit)
            if session is not None:
                session.unsettled = True
        return [s for s in sessions if s in self._sessions]

    def _reopen(self, session_id: str, unit: StoreUnit) -> LiveSession | None:
        """Session ``session_id`` from the store (None: not stored), made live: a
        watched session whose silence is due while it is not in memory."""
        cursors = unit.session_cursors([session_id])
        if session_id not in cursors:
            return None
        stored = read_stored(cursors[session_id], partial(unit.steps, session_id))
        session = restore(stored, self.detectors, self.settings)
        self._sessions[session_id] = session
        return session

    def _release(
        self,
        ready: list[Resolved],
        clock_marks: list[tuple[int, str, int]],
        unit: StoreUnit,
        *,
        checked: bool,
        revised: Sequence[str] = (),
        every_session: bool = False,
    ) -> Released:
        """Sequence and judge the released drafts (:class:`Released`), each relayed clock
        mark (:meth:`feed_clock`) applied before the draft it was fed before. What the
        store holds that this needs is read first, in one place (:func:`look_up`);
        nothing is written. ``checked``: every draft's step was made storable by
        :func:`~ingest.pipeline.intake.make_storable`. ``revised``: the sessions whose
        stored steps the commit retracted (:meth:`_retract`); ``every_session``: the
        input ends. Both decide which sessions the commit re-judges
        (:attr:`Released.settling`), and with ``judge_once`` those are not judged here."""
        resolved = [(item.draft, item.session_id) for item in ready]
        egress_parents = {
            id(item.draft): item.egress_parent for item in ready if item.egress_parent
        }
        # A parent is linked only if it is a step (stored, or placed before in this
        # release): a result whose call was lost to a dead letter points nowhere.
        parents = [parent_of(draft, session, egress_parents) for draft, session in resolved]
        edges = turn_edges(resolved)
        found = look_up(unit, resolved, parents, edges, live=self._sessions)
        key_turns(edges, found.sources, lambda session_id: self._session(session_id, found))
        ids = [draft.step_id_for(session) for draft, session in resolved]
        stored = found.step_ids
        seen: set[str] = set()
        steps: list[Step] = []
        storable: list[Step] = []
        unstorable: list[tuple[Step, str]] = []
        alerts: list[Alert] = []
        touched: dict[str, None] = {}
        merge_sources(resolved, ids)
        # after the merge, so a cost a source reported wins over a list price
        priced = self.detectors.prices.priced
        for draft, _ in resolved:
            draft.step = priced(draft.step)
        placed: set[str] = set()
        stats, failed = self.stats, self._detector_failed
        clocks, relayed = self._clocks, self._relayed

        def live(session_id: str) -> LiveSession | None:
            session = self._sessions.get(session_id)
            if session is None and clocks.home(session_id) in relayed:
                session = self._reopen(session_id, unit)
            return session

        deferred: list[_Unjudged | None] | None = [] if self._judge_once else None
        dead = self._dead

        def judged(session: LiveSession, placed: list[Sequenced]) -> None:
            for final, features, form in placed:
                steps.append(final)
                if isinstance(form, str):  # the reason it cannot be stored
                    unstorable.append((final, form))
                else:
                    storable.append(form)
                stats.steps += 1
                if deferred is not None:  # judged once all is placed (_judge_deferred)
                    deferred.append((session, final, features, len(dead)))
                    continue
                # detectors read a bounded head of each field, and the step's features,
                # worked out once for all of them
                view = analysed_view(final, features)
                # every detector in order, its score recorded; a detector's bug is a
                # dead letter, not the batch's end
                session.scores.judge(view, alerts, partial(failed, final))

        def tick(clock: str, ts: int, speaker: str | None) -> None:
            # the silences event time ``ts`` on ``clock`` shows (ingest.pipeline.silence)
            for quiet, due in clocks.due_before(clock, ts, live, speaker):
                step = silence_step(quiet, due)
                touched[quiet.info.session_id] = None
                draft_of_tick = Draft(step, step.step_id)
                judged(quiet, sequence(quiet, draft_of_tick, step.step_id, None, checked=False))

        pending_marks = iter(clock_marks)
        mark = next(pending_marks, None)
        for index, ((draft, session_id), step_id, parent) in enumerate(
            zip(resolved, ids, parents, strict=True)
        ):
            while mark is not None and mark[0] <= index:
                tick(mark[1], mark[2], None)
                mark = next(pending_marks, None)
            # the silences this draft's event time shows, before it
            tick(draft.partition, draft.step.ts, session_id)
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
                    session = self._session(session_id, found)
                    session.info = updated_info(session.info, draft.step)
                    touched[session_id] = None
                continue
            seen.add(step_id)
            try:
                check_identity(draft, session_id, step_id)
            except Unstorable as error:
                stats.drafts_unstorable += 1
                self._reject(draft.step.with_(step_id=step_id, session_id=session_id), error.reason)
                continue
            stats.drafts_stepped += 1
            session = self._session(session_id, found)
            if (
                self._inherited is not None
                and draft.step.kind is _START
                and session.info.predecessor is None
            ):
                draft.step = with_predecessor_effects(
                    draft.step,
                    session_id,
                    partial(_calls_of, unit, steps),
                    window=self._inherited,
                )
            touched[session_id] = None
            stats.sessions.add(session_id)
            if draft.step.kind in LINKED and parent not in stored and parent not in placed:
                if parent is not None and draft.step.kind is StepKind.EGRESS:
                    # its call is another session's (a provisional one): for a re-judgement
                    # that adopts it to link (ingest.pipeline.adoption)
                    draft.step = draft.step.with_(detail={**draft.step.detail, CAUSE_STEP: parent})
                parent = None
            sequenced = sequence(session, draft, step_id, parent, checked=checked)
            placed.update(final.step_id for final, _, _ in sequenced)
            judged(session, sequenced)
            clocks.spoke(session, draft.partition)
        while mark is not None:  # the marks fed after the last draft
            tick(mark[1], mark[2], None)
            mark = next(pending_marks, None)
        # after placing: a provisional session this release opened is live
        adopting = self._adopting(unit, resolved)
        settling = self._settling([*dict.fromkeys([*touched, *revised])], adopting, every_session)
        if deferred is not None:
            self._judge_deferred(deferred, set(settling), alerts)
        return Released(steps, storable, unstorable, alerts, list(touched), adopting, settling)

    def _judge_deferred(
        self, deferred: list[_Unjudged | None], settling: AbstractSet[str], alerts: list[Alert]
    ) -> None:
        """Judge the steps a ``judge_once`` release placed, in the order it placed them,
        but for those of the sessions ``settling`` (re-judged by this commit: their
        judgement here would be discarded, :meth:`_settle`). A detector's failure is
        dead-lettered where judging the step as it was placed would have put it (the
        number of dead letters then, kept with the step), so the order is the same."""
        failures: list[tuple[int, DeadLetter]] = []

        def failed(mark: int, step: Step, detector: Detector, error: Exception) -> None:
            failures.append((mark, letters.detector_failed(step, detector, error)))

        for index, entry in enumerate(deferred):
            deferred[index] = None  # the features the detectors work out go with the step
            assert entry is not None
            session, final, features, mark = entry
            if session.info.session_id in settling:
                continue
            session.scores.judge(
                analysed_view(final, features), alerts, partial(failed, mark, final)
            )
        for added, (mark, letter) in enumerate(failures):
            # each after the ones held before it and the failures placed before it
            self._add_dead_letter(letter, at=mark + added)

    def _adopting(self, unit: StoreUnit, resolved: Sequence[tuple[Draft, str]]) -> list[str]:
        """The named sessions among ``resolved``'s that place a step of a trace whose
        provisional session (the trace id: :mod:`ingest.pipeline.adoption`) is live or
        stored: one query on the sessions' keys, for the traces not live."""
        wanted: dict[str, str] = {}
        for draft, session_id in resolved:
            provisional = trace_session(draft.trace_id)
            if provisional is not None and provisional != session_id:
                wanted.setdefault(provisional, session_id)
        if not wanted:
            return []
        live = self._sessions
        found = {p for p in wanted if p in live}
        unknown = [p for p in wanted if p not in live]
        if unknown:
            found |= unit.known_sessions(unknown)
        # a named session only: one whose drafts were all duplicates may not be live
        return list(dict.fromkeys(s for p, s in wanted.items() if p in found and s in live))

    def _settling(
        self, touched: Sequence[str], adopting: Sequence[str], every_session: bool
    ) -> list[str]:
        """The sessions to judge again now, in order (:meth:`_settle`): each of
        ``adopting`` first (a provisional session they take is not judged on its own),
        then each unsettled session that settles now: one ``touched`` whose end is placed,
        one idle for ``settings.settle_idle_ms`` of event time, or (``every_session``: the
        input ends) every live one. Read once the release has placed its steps: nothing
        the commit does after changes it."""
        due = [s for s in touched if (live := self._sessions[s]).unsettled and live.info.ended_ts]
        if every_session:
            due += [s for s, live in self._sessions.items() if live.unsettled]
        else:
            due += self._idle_unsettled()
        return list(dict.fromkeys([*adopting, *due]))

    def _settle(
        self, unit: StoreUnit, due: Sequence[str]
    ) -> tuple[dict[str, list[Alert]], set[str]]:
        """Judge again, in event-time order, each session ``due`` (:meth:`_settling`;
        :mod:`ingest.pipeline.rejudge`), an adopter with the steps of its traces'
        provisional sessions (:mod:`ingest.pipeline.adoption`), which every settle
        adopts. Its steps are stored again at their new places, the alerts it raised
        before and no longer raises are marked superseded, those it raises again are
        restated; returns, per session settled, the alerts it raises that are not stored
        yet (the caller stores and delivers them), and the provisional sessions adopted
        (deleted: the caller writes nothing more of them)."""
        out: dict[str, list[Alert]] = {}
        gone: set[str] = set()
        for session_id in due:
            if session_id in gone:
                continue
            previous = self._sessions[session_id]
            own = unit.steps(session_id)
            taken = self._adopt(unit, session_id, own)
            for provisional in taken:  # settled on its own before: its alerts are adopted
                gone.add(provisional)
                out.pop(provisional, None)
            again = rejudge(
                merged(own, [step for steps in taken.values() for step in steps]),
                previous,
                self.detectors,
                self.settings,
                self._detector_failed,
            )
            for step, reason in again.unstorable:
                self._reject(step, reason)
            unit.replace_session_steps(session_id, again.storable)
            self._sessions[session_id] = again.session
            stored = {
                a.alert_id: a
                for a in unit.alerts([session_id], superseded=True)
                if a.detector not in self._cross  # not this session's judgement alone
            }
            raised: dict[str, Alert] = {}
            for alert in again.alerts:  # the first raised of an id stands, as when stored
                raised.setdefault(alert.alert_id, alert)
            unit.restate_alerts(
                [a for i, a in raised.items() if i in stored]
                + [superseded(a) for i, a in stored.items() if i not in raised and not a.superseded]
            )
            out[session_id] = [a for i, a in raised.items() if i not in stored]
            self.stats.rejudged += 1
            self.stats.rejudged_steps += len(again.steps)
        return out, gone

    def _adopt(
        self, unit: StoreUnit, session_id: str, own: Sequence[Step]
    ) -> dict[str, list[Step]]:
        """Take the provisional sessions of ``session_id``'s traces (read from ``own``, its
        stored steps) that are stored: per provisional session, its steps as
        ``session_id``'s (:func:`~ingest.pipeline.adoption.adopted`). Each is deleted from
        the store and from memory, its alerts marked superseded (kept, with their actions)."""
        candidates = provisional_ids(own, session_id)
        if not candidates:
            return {}
        # the live ones too: one this commit opened has no row until the commit's end
        found = unit.known_sessions(candidates) | {c for c in candidates if c in self._sessions}
        taken: dict[str, list[Step]] = {}
        for provisional in sorted(found):
            taken[provisional] = adopted(unit.steps(provisional), provisional, session_id)
            unit.restate_alerts(
                [
                    adopted_alert(alert, session_id)
                    for alert in unit.alerts([provisional])  # the standing ones
                ]
            )
            unit.drop_session(provisional)
            self._sessions.pop(provisional, None)
            home = self._clocks.home(provisional)
            if home in self._relayed:  # watched for silence: watched no more
                lane, partition = self._relayed[home]
                unit.watch_silences([(lane, provisional, partition, None)])
            self._clocks.forget_session(provisional)
            self.stats.sessions.discard(provisional)  # what was seen: one session, not two
            self.stats.adopted += 1
        return taken

    def _idle_unsettled(self) -> list[str]:
        """The live unsettled sessions whose last step is ``settle_idle_ms`` or more of event
        time behind the newest event time any partition has seen."""
        newest = [t for p in self._ordering.partitions() if (t := self.newest_event_time(p))]
        if not newest:
            return []
        horizon = max(newest) - self.settings.settle_idle_ms * 1_000_000
        return [
            s for s, live in self._sessions.items() if live.unsettled and live.last_ts < horizon
        ]

    def _session(self, session_id: str, found: Lookups) -> LiveSession:
        """The live session ``session_id``; restored from what the store holds of it
        (``found``, read by the release for every session it may open) when it is not
        live."""
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
            return session
        session = restore(found.stored(session_id), self.detectors, self.settings)
        self._sessions[session_id] = session
        return session

    def _evict(self) -> None:
        # Evicted sessions' cursors, facts and checkpoints are in the store (written by
        # the commit that just ran), and so are the steps placed since their checkpoints:
        # a session that returns is reloaded and rolled forward (see session.restore). Not
        # checkpointed here: a worker's evicted session may belong to a partition it has
        # lost, and only the commit of that partition's batch may write its cursor.
        while len(self._sessions) > self.settings.max_sessions:
            session_id, _ = self._sessions.popitem(last=False)
            if self._clocks.home(session_id) not in self._relayed:  # else watched durably
                self._clocks.forget_session(session_id)
