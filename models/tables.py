"""The ORM tables behind :class:`models.store.Store`.

These classes never leave the ``models`` package: the public API speaks the records of
:mod:`models.records`. The store uses them mostly as typed ``Table`` objects for Core
bulk statements; the mapped classes keep the schema readable and let alembic compare it.

Conventions:

- Times are ``BigInteger`` nanoseconds since the Unix epoch (event time for steps,
  sessions and alerts; wall-clock time for the outbox and dead letters).
- Column names of :class:`StepRow` are exactly the field names of :class:`~models.records.Step`
  so a row converts to a record with ``Step(**row)``; a test keeps the two in step.
- Constraint names come from :data:`NAMING_CONVENTION`, so the migration and the metadata
  name them the same on SQLite and PostgreSQL.
- Changing anything here needs a new migration in ``models/migrations/versions``; the test
  ``test_migrated_schema_matches_metadata`` fails until it exists.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

ID = String(1024)
"""Step ids embed a session id (up to 512) plus a call id or source reference."""
SESSION_ID = String(512)
SHORT = String(128)
"""Enum-like values: kinds, statuses, severities, detector names."""
NAME = String(512)
"""Agents, tools, models, hosts, endpoints."""


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class SessionRow(Base):
    """One agent session: what is known about it, plus the pipeline's cursor.

    The cursor (``next_seq``, ``model_session``, ``last_ts``, ``state``) is what the
    pipeline needs to resume the session after a restart or a rebalance: ``state`` is an
    opaque blob (serialised feature and detector state) that reflects every step below
    ``next_seq``. ``updated_seq`` counts the writes to the row (a version number), so a
    reader can tell whether a session changed since it last looked.
    """

    __tablename__ = "sessions"

    session_id: Mapped[str] = mapped_column(SESSION_ID, primary_key=True)
    goal: Mapped[str | None] = mapped_column(Text)
    agent: Mapped[str | None] = mapped_column(NAME)
    workspace: Mapped[str | None] = mapped_column(Text)
    repository: Mapped[str | None] = mapped_column(Text)
    policy_id: Mapped[str | None] = mapped_column(NAME)
    budget: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    started_ts: Mapped[int | None] = mapped_column(BigInteger, index=True)
    ended_ts: Mapped[int | None] = mapped_column(BigInteger)
    end_status: Mapped[str | None] = mapped_column(SHORT)
    claimed_done: Mapped[bool | None] = mapped_column(Boolean)
    branch: Mapped[str | None] = mapped_column(Text)
    revision: Mapped[str | None] = mapped_column(Text)
    host: Mapped[str | None] = mapped_column(Text)
    predecessor: Mapped[str | None] = mapped_column(SESSION_ID)
    next_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    model_session: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_ts: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    state: Mapped[bytes | None] = mapped_column(LargeBinary)
    updated_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class StepRow(Base):
    """One :class:`~models.records.Step`, stored once (``step_id``) at its place in the
    session (``session_id``, ``seq``). The unique index on (session_id, seq) also serves
    ``WHERE session_id = ? ORDER BY seq``."""

    __tablename__ = "steps"
    __table_args__ = (UniqueConstraint("session_id", "seq"),)

    step_id: Mapped[str] = mapped_column(ID, primary_key=True)
    session_id: Mapped[str] = mapped_column(SESSION_ID, ForeignKey("sessions.session_id"))
    kind: Mapped[str] = mapped_column(SHORT)
    ts: Mapped[int] = mapped_column(BigInteger)
    seq: Mapped[int] = mapped_column(Integer)
    end_ts: Mapped[int | None] = mapped_column(BigInteger)
    agent: Mapped[str | None] = mapped_column(NAME)
    tool: Mapped[str | None] = mapped_column(NAME)
    action: Mapped[str | None] = mapped_column(Text)
    call_id: Mapped[str | None] = mapped_column(NAME)
    arguments: Mapped[str | None] = mapped_column(Text)
    result: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str | None] = mapped_column(SHORT)
    error: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str | None] = mapped_column(NAME)
    finish_reason: Mapped[str | None] = mapped_column(SHORT)
    tokens_in: Mapped[int | None] = mapped_column(Integer)
    tokens_out: Mapped[int | None] = mapped_column(Integer)
    cost: Mapped[float | None] = mapped_column(Float)
    model_session: Mapped[int] = mapped_column(Integer)
    egress_host: Mapped[str | None] = mapped_column(NAME)
    egress_url: Mapped[str | None] = mapped_column(Text)
    egress_method: Mapped[str | None] = mapped_column(String(16))
    http_status: Mapped[int | None] = mapped_column(Integer)
    idempotency_key: Mapped[str | None] = mapped_column(NAME)
    parent_step_id: Mapped[str | None] = mapped_column(ID)
    source: Mapped[str] = mapped_column(String(16))
    source_ref: Mapped[str] = mapped_column(Text)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)


class AlertRow(Base):
    """One :class:`~models.records.Alert`; ``alert_id`` is deterministic, so a replay
    finds the row it would insert already there."""

    __tablename__ = "alerts"
    __table_args__ = (Index(None, "session_id", "onset_seq", "detector"),)

    alert_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(SESSION_ID)
    detector: Mapped[str] = mapped_column(SHORT)
    severity: Mapped[str] = mapped_column(String(16))
    score: Mapped[float] = mapped_column(Float)
    onset_seq: Mapped[int] = mapped_column(Integer)
    onset_step_id: Mapped[str] = mapped_column(ID)
    raised_seq: Mapped[int] = mapped_column(Integer)
    evidence: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    reason: Mapped[str] = mapped_column(Text)
    action: Mapped[str] = mapped_column(String(16))
    checkpoint_id: Mapped[str | None] = mapped_column(NAME)
    ts: Mapped[int] = mapped_column(BigInteger)
    superseded: Mapped[str | None] = mapped_column(Text)
    """Why the alert no longer stands (see :attr:`models.records.Alert.superseded`)."""


DELIVERY_STATUSES = ("pending", "delivered", "dead", "disabled", "shadow", "suppressed")
"""``pending`` (due at ``next_attempt_at``, retried until ``delivered`` or ``dead``);
``disabled`` (held: its endpoint answered 410 and is disabled until re-enabled);
``shadow`` and ``suppressed`` record what the action policy decided without sending
(shadow mode; a per-session cooldown) and are never sent."""


class DeliveryRow(Base):
    """The webhook outbox: one row per (alert, endpoint), written in the transaction that
    stores the alert, with what the action policy decided.

    ``delivery_id`` is ``f"{alert_id}:{endpoint}:{action}"`` and doubles as the Standard
    Webhooks ``webhook-id`` idempotency key: the same on every retry. ``payload`` is the
    JSON body, fixed when the row is written, so every attempt signs the same bytes.
    ``session_id``/``alert_ts``/``action`` feed the per-session cooldown. Status is one of
    :data:`DELIVERY_STATUSES`; the dispatcher polls ``status = 'pending' AND
    next_attempt_at <= now`` (indexed).
    """

    __tablename__ = "deliveries"
    __table_args__ = (
        UniqueConstraint("alert_id", "endpoint"),
        Index(None, "status", "next_attempt_at"),
        Index(None, "session_id"),
    )

    delivery_id: Mapped[str] = mapped_column(Text, primary_key=True)
    alert_id: Mapped[str] = mapped_column(String(64), ForeignKey("alerts.alert_id"))
    endpoint: Mapped[str] = mapped_column(NAME)
    status: Mapped[str] = mapped_column(String(16), default="pending", server_default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_attempt_at: Mapped[int | None] = mapped_column(BigInteger)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    created: Mapped[int] = mapped_column(BigInteger)
    updated: Mapped[int] = mapped_column(BigInteger)
    action: Mapped[str] = mapped_column(String(16), default="notify", server_default="notify")
    mode: Mapped[str] = mapped_column(String(16), default="enforce", server_default="enforce")
    session_id: Mapped[str | None] = mapped_column(SESSION_ID)
    agent: Mapped[str | None] = mapped_column(NAME)
    alert_ts: Mapped[int | None] = mapped_column(BigInteger)
    decision: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[str | None] = mapped_column(Text)


class EndpointRow(Base):
    """A webhook endpoint's state, by the name the config gives it. A row exists once an
    endpoint was disabled (a 410 answer) or re-enabled; an endpoint without one is enabled."""

    __tablename__ = "webhook_endpoints"

    name: Mapped[str] = mapped_column(NAME, primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(Text)
    updated: Mapped[int] = mapped_column(BigInteger)


class DeadLetterRow(Base):
    """One :class:`~models.records.DeadLetter`, kept whole (payloads of 10+ MB are fine:
    BYTEA on PostgreSQL, BLOB on SQLite).

    ``received_seq`` is the primary key rather than ``dead_letter_id`` because SQLite only
    auto-increments an INTEGER PRIMARY KEY; it gives the listing order. ``dead_letter_id``
    is unique, which is what makes storing the same bad input twice a no-op.
    """

    __tablename__ = "dead_letters"

    received_seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dead_letter_id: Mapped[str] = mapped_column(String(64), unique=True)
    source: Mapped[str] = mapped_column(NAME)
    location: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    content_type: Mapped[str] = mapped_column(SHORT)
    received_at: Mapped[int] = mapped_column(BigInteger)


class InputOffsetRow(Base):
    """How far an input has been consumed, committed with the state it produced.

    ``("kafka:otlp_spans", "3") -> 1042`` is the next Kafka offset to read from partition 3;
    ``("file:/var/log/agent.jsonl", "<sha256 of the first line>") -> 120`` is lines consumed.
    """

    __tablename__ = "input_offsets"

    source: Mapped[str] = mapped_column(NAME, primary_key=True)
    partition: Mapped[str] = mapped_column(SHORT, primary_key=True)
    position: Mapped[int] = mapped_column(BigInteger)


class ScoreChunkRow(Base):
    """Each detector's score after every step of a session from ``start_seq`` to
    ``end_seq - 1``, as the pipeline computed them: written with the analysis checkpoint
    at ``end_seq``, in its transaction (:mod:`detectors.score_series` encodes ``data``,
    opaque to the store). One row per session per checkpoint, not per step; the explorer
    draws the scores from these instead of replaying the steps. A session stored before
    the table existed has none (the explorer then replays)."""

    __tablename__ = "score_chunks"

    session_id: Mapped[str] = mapped_column(
        SESSION_ID, ForeignKey("sessions.session_id"), primary_key=True
    )
    start_seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    end_seq: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class WorkspaceWriteRow(Base):
    """One place of a workspace a session's step wrote (:class:`~models.records.WorkspaceWrite`):
    what the cross-session ``workspace_conflict`` check reads of the *other* sessions of
    a workspace. Keyed by the step and the place, so a step stored again (a replay, a
    re-judgement) writes nothing twice. Pruned by event time (the check keeps its window)."""

    __tablename__ = "workspace_writes"
    __table_args__ = (Index(None, "workspace_key", "ts"),)

    step_id: Mapped[str] = mapped_column(ID, primary_key=True)
    path: Mapped[str] = mapped_column(ID, primary_key=True)
    op: Mapped[str] = mapped_column(SHORT, primary_key=True)
    workspace_key: Mapped[str] = mapped_column(ID)
    session_id: Mapped[str] = mapped_column(SESSION_ID)
    seq: Mapped[int] = mapped_column(Integer)
    ts: Mapped[int] = mapped_column(BigInteger)
    source_ref: Mapped[str] = mapped_column(Text)
    target: Mapped[str | None] = mapped_column(SHORT)


class WorkspaceRow(Base):
    """One row per workspace key the check has seen: the row a commit locks (an upsert)
    before it reads and writes the workspace's writes, so two PostgreSQL transactions
    judging one workspace run one after the other and the later sees the earlier's rows.
    ``writes`` counts the commits that touched it (the upsert needs something to set)."""

    __tablename__ = "workspaces"

    workspace_key: Mapped[str] = mapped_column(ID, primary_key=True)
    writes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class AgentBaselineRow(Base):
    """One row per agent (or service) name: the per-agent behaviour baseline's history of
    sessions (:mod:`detectors.agent_baseline.history`), a versioned pickle bounded in size
    by the detector's ``keep``. The row is also what a commit locks before it reads and
    writes the history, so PostgreSQL workers learning one agent take turns
    (:mod:`models.agent_baselines`)."""

    __tablename__ = "agent_baselines"

    agent: Mapped[str] = mapped_column(NAME, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    sessions: Mapped[int] = mapped_column(Integer)
    """How many sessions the history holds (for listings; the state is the truth)."""
    state: Mapped[bytes] = mapped_column(LargeBinary)


class SilenceWatchRow(Base):
    """A session whose silence a Kafka worker's sequencing stage is watching: the next
    silence step due (``due``, event time) by the clock of input partition ``clock``,
    as relayed on repartition partition ``lane`` (:mod:`ingest.pipeline.silence`). Written
    in the transaction that stores the session's steps, so the lane's next owner (after a
    rebalance or a restart) watches exactly what the last one did; deleted once nothing
    more is due (the session ended, spoke from no relayed clock, or is past the last bound)."""

    __tablename__ = "silence_watch"

    lane: Mapped[str] = mapped_column(NAME, primary_key=True)
    session_id: Mapped[str] = mapped_column(SESSION_ID, primary_key=True)
    clock: Mapped[str] = mapped_column(NAME)
    due: Mapped[int] = mapped_column(BigInteger)
