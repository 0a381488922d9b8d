"""A session as the pipeline keeps it: live in memory (:class:`LiveSession`), as the store
holds it (:class:`Stored`), and the way back from one to the other (:func:`restore`).

A session reopened (after an eviction, a restart or a rebalance) is restored from its
analysis checkpoint and rolled forward through the steps stored since, so it raises the
alerts an unbroken run would have (:mod:`ingest.pipeline.session_state`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from detectors.base import Detector
from detectors.registry import DetectorSet
from detectors.score_series import ScoreChunk, ScoreRecorder
from features.session.compaction import CompactionInference
from features.session.lineage import with_predecessor
from features.session.trajectory import TrajectoryFeatures
from features.session.workspace import with_workspace
from features.text.requests import substantive
from ingest.pipeline.event_order import BEFORE_ALL, OrderKey
from ingest.pipeline.options import PipelineOptions
from ingest.pipeline.session_state import (
    SessionState,
    dump_analysis,
    dump_state,
    load_state,
    roll_forward,
)
from models.records import SessionInfo, Step, StepKind
from models.store import SessionCursor

# read once: a member read is an enum lookup
_START, _END, _MODEL_CALL = StepKind.START, StepKind.END, StepKind.MODEL_CALL


@dataclass(slots=True)
class LiveSession:
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
    last_key: OrderKey = BEFORE_ALL
    """The event-time place (:func:`~ingest.pipeline.event_order.order_key`) of the last
    step placed in order: a step placed behind it is *late*."""
    unsettled: bool = False
    """A late step was placed since the session was last judged in event-time order: its
    alerts are provisional until a re-judgement (:mod:`ingest.pipeline.rejudge`) when it
    settles."""
    turns: dict[str, int] = field(default_factory=dict)
    """Turn index by trace, for a conversation traced one trace per turn; the trace of
    turn 0 owns the session's ``start`` and ``end``. Kept in the state; a session stored
    before states were kept reads the owner back from the stored start."""

    def cursor(self, *, checkpoint: bool) -> SessionCursor:
        """The cursor with the session's state (:mod:`ingest.pipeline.session_state`): its
        facts as they are now; its analysis as of the last checkpoint, or (``checkpoint``)
        as of now."""
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
                order=(self.last_key, self.unsettled),
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


@dataclass(frozen=True, slots=True)
class Stored:
    """What the store holds of a session that is not live (:func:`read_stored`). Restored
    once: the live session takes the state's objects as its own."""

    cursor: SessionCursor
    state: SessionState | None = None
    """The cursor's state read back; None for a new session, or a state of no known
    layout (the session starts fresh from the cursor)."""
    past: Sequence[Step] = ()
    """The steps stored past the state's checkpoint (``state.upto`` up to the cursor's
    ``next_seq``), in seq order: what :func:`restore` rolls forward."""


def read_stored(cursor: SessionCursor, steps: Callable[[int, int], list[Step]]) -> Stored:
    """The session ``cursor`` is of, as stored: its state read back and the steps past its
    checkpoint, read with ``steps(start, end)`` (the seqs from ``start`` below ``end``)."""
    state = load_state(cursor.state) if cursor.state is not None else None
    if state is None or state.upto >= cursor.next_seq:
        return Stored(cursor, state)
    return Stored(cursor, state, steps(state.upto, cursor.next_seq))


def restore(stored: Stored, detectors: DetectorSet, options: PipelineOptions) -> LiveSession:
    """The live session ``stored`` is of (a restart, a rebalance, an eviction, or a new
    session with a bare cursor): its facts, its analysis checkpoint with this pipeline's
    ``detectors`` (a detector the state does not know starts fresh), rolled forward
    through the steps stored past it - exactly where it stopped."""
    cursor = stored.cursor
    compaction = CompactionInference(
        drop=options.compaction_drop, min_tokens=options.compaction_min_tokens
    )
    session = LiveSession(
        info=SessionInfo(session_id=cursor.session_id),
        next_seq=cursor.next_seq,
        model_session=cursor.model_session,
        last_ts=cursor.last_ts,
        compaction=compaction,
        detectors=(fresh := detectors.for_session()),
        scores=ScoreRecorder(fresh, start=cursor.next_seq),
        upto=cursor.next_seq,
    )
    state = stored.state
    if state is None:  # new, or stored before states were kept: fresh from here
        return session
    session.info = state.info
    session.compaction = state.compaction
    session.features = state.features
    session.turns = state.turns
    session.last_key, session.unsettled = state.order
    for detector in session.detectors:
        if detector.name in state.detectors:  # just unpickled: its own
            detector.load_state_dict(state.detectors[detector.name], owned=True)
    session.upto, session.analysis = state.upto, state.analysis
    session.scores = ScoreRecorder(session.detectors, start=state.upto)
    if state.upto < cursor.next_seq:
        roll_forward(stored.past, session.features, session.detectors, session.scores)
    return session


def updated_info(info: SessionInfo, step: Step) -> SessionInfo:
    """Session facts a step teaches: the goal, policy, workspace and predecessor from the
    (outermost) start, the outcome from the end, the first event time from any step. A
    session whose start carries no goal (many instrumentations put the task on the model
    call only: the OpenAI Agents SDK's, LangGraph's and LlamaIndex's through OpenInference,
    ADK's) takes the user message of its first model call that has one, as the detectors
    do."""
    started = step.ts if info.started_ts is None else min(info.started_ts, step.ts)
    if step.kind == _MODEL_CALL and not info.goal:
        message = step.detail.get("user_message")
        if isinstance(message, str) and message.strip():
            info = replace(info, goal=message)
    if step.kind == _START and not step.detail.get("subagent"):
        detail = step.detail
        # the session's goal is its first substantive request: a later turn adds to the
        # task (the detectors read it), and "continue" never becomes it
        goal = info.goal or (step.text if substantive(step.text) else None)
        return replace(
            with_predecessor(with_workspace(info, detail), detail),
            goal=goal,
            agent=info.agent or step.agent,
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
