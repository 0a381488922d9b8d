"""The store: sessions, steps, alerts, the webhook outbox, dead letters and input offsets.

One :class:`Store` per process, opened on a SQLAlchemy URL (SQLite embedded, PostgreSQL in
production; the same code and migrations). Writes go through a :class:`StoreUnit`, one
database transaction: the pipeline puts a batch's steps, alerts, outbox rows, session
cursors *and* the input offsets that produced them in one unit, so after a crash the
stored state and the position to resume from always agree (faust's "state next to its
offsets"). Every insert is idempotent on the record's stable id, so reprocessing input
never stores a second step, alert or webhook.

The API speaks :mod:`models.records`; the ORM rows of :mod:`models.tables` stay inside.

>>> import tempfile, pathlib
>>> from models.records import Step, StepKind
>>> path = pathlib.Path(tempfile.mkdtemp()) / "doc.db"
>>> store = Store.open(f"sqlite:///{path}")
>>> step = Step(step_id="s1#0", session_id="s1", kind=StepKind.START, ts=1, seq=0)
>>> with store.unit() as unit:
...     unit.add_steps([step])
1
>>> with store.unit() as unit:
...     unit.add_steps([step])  # the same step again: stored once
0
>>> store.steps("s1") == [step]
True
>>> store.close()
"""

from __future__ import annotations

import dataclasses
import json
import operator
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import (
    Connection,
    Engine,
    Executable,
    Table,
    any_,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError, DataError, DBAPIError, IntegrityError, StatementError
from sqlalchemy.pool import ConnectionPoolEntry

from models import agent_baselines as _agent_baselines
from models import migrations
from models import outbox as _outbox
from models import silence_watch as _silence_watch
from models import workspace_writes as _workspace_writes
from models.errors import StoreOpenError
from models.open_errors import EXAMPLE_URLS, open_error, shown
from models.records import (
    Action,
    Alert,
    DeadLetter,
    Delivery,
    SessionInfo,
    Severity,
    Step,
    StepKind,
    WorkspaceWrite,
)
from models.storable import (
    Unstorable,
    storable_alert,
    storable_dead_letter,
    storable_info,
    storable_step,
)
from models.tables import (
    AlertRow,
    DeadLetterRow,
    DeliveryRow,
    InputOffsetRow,
    ScoreChunkRow,
    SessionRow,
    StepRow,
)

__all__ = ["OffsetMovedError", "Rejected", "SessionCursor", "Store", "StoreUnit", "is_data_error"]

_LISTED = "listed"
"""The bound parameter holding the values of a ``column IN <list>`` (:func:`_is_listed`)."""

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite writer waits for another process's write lock before failing."""

_sessions: Table = SessionRow.__table__  # type: ignore[assignment]
_steps: Table = StepRow.__table__  # type: ignore[assignment]
_alerts: Table = AlertRow.__table__  # type: ignore[assignment]
_deliveries: Table = DeliveryRow.__table__  # type: ignore[assignment]
_dead_letters: Table = DeadLetterRow.__table__  # type: ignore[assignment]
_offsets: Table = InputOffsetRow.__table__  # type: ignore[assignment]
_score_chunks: Table = ScoreChunkRow.__table__  # type: ignore[assignment]

_COUNTABLE: dict[str, Table] = {
    t.name: t for t in (_sessions, _steps, _alerts, _dead_letters, _deliveries, _offsets)
}
_STEP_FIELDS = tuple(f.name for f in dataclasses.fields(Step))
_INFO_FIELDS = tuple(f.name for f in dataclasses.fields(SessionInfo) if f.name != "session_id")
_CURSOR_COLUMNS = ("next_seq", "model_session", "last_ts", "state")

_R = TypeVar("_R", Step, Alert)

Rejected = tuple[_R, str]
"""A record the store did not take, and why (the reason a dead letter carries)."""


def is_data_error(error: BaseException) -> bool:
    """Whether ``error``, raised by a write, is about the *data* (a value the database
    or its driver refuses, a constraint) rather than the infrastructure (connection lost,
    database down, lock timeout), which must propagate.

    The drivers raise their own errors for some values before the database sees them
    (sqlite3: ``OverflowError`` for an int beyond int64, ``UnicodeEncodeError`` for a
    lone surrogate); SQLAlchemy wraps what a bind processor raises in a
    ``StatementError`` that is not a ``DBAPIError``."""
    if isinstance(error, DataError | IntegrityError | Unstorable):
        return True
    if isinstance(error, DBAPIError):
        return False
    if isinstance(error, StatementError) and error.orig is not None:
        error = error.orig
    return isinstance(error, ValueError | TypeError | OverflowError)


# Compact JSON, and unicode kept as is (the default escapes every non-ASCII character).
# One encoder, built once: json.dumps with arguments builds a new one per call (~1 µs).
_json_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _encoder_of_checked(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode`` for a dict already made storable (:func:`clean_json`: no cycle,
    at most ``MAX_JSON_DEPTH`` deep), the same text for ~40% of the cost: ``encode``
    builds its C encoder anew on each call, this one is built once, without the cycle
    check (a cycle would recurse until ``RecursionError`` rather than raise
    ``ValueError``; a checked value has none)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has the C encoder
        return encoder.encode
    from json.encoder import encode_basestring, encode_basestring_ascii

    iterencode = make(
        None,  # no cycle check: see above
        encoder.default,
        encode_basestring_ascii if encoder.ensure_ascii else encode_basestring,
        encoder.indent,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    join = "".join

    def encode(value: Any) -> str:
        return join(iterencode(value, 0))

    return encode


_detail_json = _encoder_of_checked(json.JSONEncoder(separators=(",", ":"), ensure_ascii=False))
"""A step's ``detail`` as the engine's serializer (``_json_dumps``) writes it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionCursor:
    """Where the pipeline is in a session: enough to resume it after a restart.

    ``next_seq`` is the seq the next step gets; ``model_session`` the current model-session
    index; ``last_ts`` the event time of the last step; ``state`` the serialised
    feature/detector state reflecting every step below ``next_seq`` (opaque to the store).
    """

    session_id: str
    next_seq: int = 0
    model_session: int = 0
    last_ts: int = 0
    state: bytes | None = None


class OffsetMovedError(RuntimeError):
    """:meth:`StoreUnit.move_offset` found the stored position elsewhere than expected:
    another process consumed the same input since this one read it (a partition that
    moved to another worker). The transaction must be rolled back and the input re-read
    from the stored position."""


class Store:
    """The database behind trajwatch. Open with :meth:`open`; write through :meth:`unit`;
    the read helpers each run in their own short transaction.

    Thread-safe as far as the engine's pool is: use one unit per thread.
    """

    def __init__(self, engine: Engine, url: str) -> None:
        """Wrap an engine prepared by :meth:`open`; call :meth:`open` instead."""
        self._engine = engine
        self.url = url

    @classmethod
    def open(cls, url: str, *, migrate: bool = True, pre_ping: bool = True) -> Store:
        """Connect to ``url`` (``sqlite:///path.db`` or ``postgresql+psycopg://...``) and,
        when ``migrate``, upgrade the schema to the newest migration.

        On PostgreSQL, ``pre_ping`` checks a pooled connection before each use (a round
        trip), so that one the server dropped is replaced instead of failing the next
        transaction. A caller that retries a failed transaction anyway (the Kafka
        worker's stages: the failure drops the pool's connections and the retry connects
        afresh) saves that round trip with ``pre_ping=False``.

        SQLite connections use WAL (readers never block the writer), enforce foreign keys,
        wait up to :data:`SQLITE_BUSY_TIMEOUT_MS` for a lock, and let SQLAlchemy emit
        ``BEGIN`` so every transaction, reads and DDL included, is really one transaction.

        Raises :class:`~models.errors.StoreOpenError` (one actionable line) when the URL
        does not parse, names a database other than SQLite or PostgreSQL or a driver that
        is not installed, or the first connection fails (see :mod:`models.open_errors`).
        """
        engine: Engine | None = None
        try:
            backend = make_url(url).get_backend_name()
            if backend not in ("sqlite", "postgresql"):
                raise StoreOpenError(
                    f"unsupported database {backend!r} in the store URL {shown(url)!r}; "
                    f"use {EXAMPLE_URLS}",
                    url=shown(url),
                )
            if backend == "sqlite":
                engine = create_engine(url, json_serializer=_json_dumps)
                _configure_sqlite(engine)
            else:
                engine = create_engine(url, json_serializer=_json_dumps, pool_pre_ping=pre_ping)
            with engine.connect():  # the pool keeps it for the migration below
                pass
        except (ArgumentError, ImportError, DBAPIError) as exc:
            if engine is not None:
                engine.dispose()
            raise open_error(url, exc) from exc
        store = cls(engine, url)
        if migrate:
            try:
                migrations.upgrade(engine)
            except BaseException:
                engine.dispose()
                raise
        return store

    def close(self) -> None:
        """Close every pooled connection. The store is unusable afterwards."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self._engine.url!r})"  # the engine's URL hides the password

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine, for migrations and tests; application code uses units."""
        return self._engine

    @contextmanager
    def unit(self) -> Iterator[StoreUnit]:
        """One transaction: everything done through the yielded unit commits together when
        the block ends, or not at all if it raises. On SQLite the write lock is taken at
        the start (``BEGIN IMMEDIATE``), so two writers queue instead of deadlocking."""
        with self._engine.connect() as connection:
            if self._engine.dialect.name == "sqlite":
                connection.execution_options(sqlite_begin="IMMEDIATE")
            with connection.begin():
                yield StoreUnit(connection)

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self._engine.connect() as connection, connection.begin():
            yield connection

    def session_cursor(self, session_id: str) -> SessionCursor | None:
        """The stored cursor of ``session_id``; None if the session is unknown."""
        with self._read() as connection:
            return _session_cursor(connection, session_id)

    def sessions(self, session_ids: Sequence[str] | None = None) -> list[SessionInfo]:
        """What is known about the sessions in ``session_ids`` (all if None), ordered by
        session id. Unknown ids are left out."""
        query = select(*(_sessions.c[f] for f in ("session_id", *_INFO_FIELDS)))
        with self._read() as connection:
            rows = _select_in(connection, query, _sessions.c.session_id, session_ids)
        rows.sort(key=lambda row: row["session_id"])
        return [SessionInfo(**row) for row in rows]

    def steps(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        *,
        kinds: Collection[StepKind] | None = None,
    ) -> list[Step]:
        """The stored steps of ``session_id`` ordered by seq (those with ``start <= seq <
        end`` when given; only those of ``kinds`` when given)."""
        with self._read() as connection:
            return _session_steps(connection, session_id, start, end, kinds)

    def alerts(
        self, session_ids: Sequence[str] | None = None, *, superseded: bool = False
    ) -> list[Alert]:
        """The standing alerts of the sessions in ``session_ids`` (all if None), ordered by
        ``(session_id, onset_seq, detector, alert_id)``; with ``superseded``, also those
        a re-judgement no longer raises (:attr:`~models.records.Alert.superseded`)."""
        with self._read() as connection:
            return _session_alerts(connection, session_ids, superseded=superseded)

    def dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        """The ``limit`` most recently stored dead letters, newest first."""
        query = (
            select(
                _dead_letters.c.source,
                _dead_letters.c.location,
                _dead_letters.c.reason,
                _dead_letters.c.payload,
                _dead_letters.c.content_type,
            )
            .order_by(_dead_letters.c.received_seq.desc())
            .limit(limit)
        )
        with self._read() as connection:
            rows = connection.execute(query).mappings().all()
        return [DeadLetter(**row) for row in rows]

    def dead_letter_reasons(self) -> list[tuple[str, int]]:
        """Every distinct dead-letter reason with how many dead letters give it, the most
        frequent first (then by reason); payloads are not read."""
        n = func.count().label("n")
        query = (
            select(_dead_letters.c.reason, n)
            .group_by(_dead_letters.c.reason)
            .order_by(n.desc(), _dead_letters.c.reason)
        )
        with self._read() as connection:
            return [(reason, count) for reason, count in connection.execute(query)]

    def checkpoints(self, session_ids: Sequence[str]) -> list[tuple[str, int, str, str | None]]:
        """(session, seq, checkpoint id, workspace commit) of the sessions' checkpoints."""
        with self._read() as connection:
            return _outbox.checkpoints(connection, session_ids)

    def score_chunks(self, session_id: str) -> list[tuple[int, int, bytes]]:
        """``(start_seq, end_seq, data)`` of every score chunk stored for ``session_id``
        (:meth:`StoreUnit.add_score_chunks`), by ``start_seq``."""
        query = (
            select(_score_chunks.c.start_seq, _score_chunks.c.end_seq, _score_chunks.c.data)
            .where(_score_chunks.c.session_id == session_id)
            .order_by(_score_chunks.c.start_seq)
        )
        with self._read() as connection:
            return [(int(a), int(b), bytes(c)) for a, b, c in connection.execute(query)]

    def outbox(self) -> _outbox.Outbox:
        """The webhook outbox on this store's engine (the dispatcher, the CLI)."""
        return _outbox.Outbox(self._engine)

    def count(self, table: str) -> int:
        """Rows in ``table``: sessions, steps, alerts, dead_letters, deliveries or
        input_offsets. Raises ``ValueError`` for any other name."""
        if table not in _COUNTABLE:
            raise ValueError(f"unknown table {table!r}; expected one of {sorted(_COUNTABLE)}")
        with self._read() as connection:
            return connection.execute(
                select(func.count()).select_from(_COUNTABLE[table])
            ).scalar_one()

    def step_count(self, session_ids: Sequence[str]) -> int:
        """Steps stored for ``session_ids`` (large lists are queried in chunks)."""
        with self._read() as connection:
            dialect = connection.dialect.name
            query = select(func.count()).where(_is_listed(_steps.c.session_id, dialect))
            return connection.execute(query, _listed(session_ids, dialect)).scalar_one()

    def session_activity(self, session_ids: Sequence[str] | None = None) -> list[SessionActivity]:
        """Per session (all if None; ordered by session id): its steps, tokens and cost so
        far, its last event time, and its alerts by severity. One grouped query per table."""
        per_step = select(
            _steps.c.session_id,
            func.count().label("steps"),
            func.coalesce(func.sum(_steps.c.tokens_in), 0).label("tokens_in"),
            func.coalesce(func.sum(_steps.c.tokens_out), 0).label("tokens_out"),
            func.coalesce(func.sum(_steps.c.cost), 0.0).label("cost"),
            func.max(func.coalesce(_steps.c.end_ts, _steps.c.ts)).label("last_ts"),
        ).group_by(_steps.c.session_id)
        per_alert = select(
            _alerts.c.session_id, _alerts.c.severity, func.count().label("n")
        ).group_by(_alerts.c.session_id, _alerts.c.severity)
        with self._read() as connection:
            steps = {r["session_id"]: dict(r) for r in connection.execute(per_step).mappings()}
            alerts: dict[str, dict[str, int]] = {}
            for row in connection.execute(per_alert).mappings():
                alerts.setdefault(row["session_id"], {})[row["severity"]] = row["n"]
        return [
            _activity(info, steps.get(info.session_id), alerts.get(info.session_id, {}))
            for info in self.sessions(session_ids)
        ]

    def get_offset(self, source: str, partition: str) -> int | None:
        """The stored position of ``(source, partition)``; None if never set."""
        query = select(_offsets.c.position).where(
            _offsets.c.source == source, _offsets.c.partition == partition
        )
        with self._read() as connection:
            return connection.execute(query).scalar_one_or_none()

    def silence_watch(self, lane: str) -> list[tuple[str, str, int]]:
        """``(session_id, clock, due)`` of the sessions watched for silence on ``lane``
        (:mod:`models.silence_watch`)."""
        with self._read() as connection:
            return _silence_watch.read(connection, lane)


@dataclass(frozen=True, slots=True)
class SessionActivity:
    """A session with what its stored steps and alerts add up to
    (:meth:`Store.session_activity`)."""

    info: SessionInfo
    steps: int
    tokens_in: int
    tokens_out: int
    cost: float
    last_ts: int | None
    alerts: Mapping[str, int]
    """Alerts by severity."""


def _activity(
    info: SessionInfo, steps: Mapping[str, Any] | None, alerts: Mapping[str, int]
) -> SessionActivity:
    if steps is None:
        return SessionActivity(info, 0, 0, 0, 0.0, None, alerts)
    return SessionActivity(
        info=info,
        steps=int(steps["steps"]),
        tokens_in=int(steps["tokens_in"]),
        tokens_out=int(steps["tokens_out"]),
        cost=float(steps["cost"]),
        last_ts=steps["last_ts"],
        alerts=alerts,
    )


class StoreUnit:
    """The writes of one transaction (see :meth:`Store.unit`). Do not keep it past the
    ``with`` block: its connection is closed there."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._dialect = connection.dialect.name

    def _insert(self, table: Table) -> sqlite.Insert | postgresql.Insert:
        if self._dialect == "sqlite":
            return sqlite.insert(table)
        return postgresql.insert(table)

    def _insert_many(self, statement: Executable, rows: list[dict[str, Any]]) -> int:
        """executemany ``statement`` (an INSERT ... ON CONFLICT DO NOTHING, or an UPDATE);
        rows written.

        Counted by the driver: both sqlite3 and psycopg sum ``rowcount`` over an
        executemany, and ``preserve_rowcount`` makes SQLAlchemy keep it. Cheaper than
        RETURNING, which on psycopg costs ~7x (insertmanyvalues' huge statements are
        re-parsed by the driver for every page; see benchmarks/bench_store.py).
        """
        result = self._connection.execute(statement.execution_options(preserve_rowcount=True), rows)
        if result.rowcount < 0:
            raise RuntimeError(f"{self._dialect} driver did not report the rows inserted")
        return result.rowcount

    def existing_step_ids(self, step_ids: Collection[str]) -> set[str]:
        """The ids among ``step_ids`` that are already stored."""
        query = select(_steps.c.step_id)
        rows = _select_in(self._connection, query, _steps.c.step_id, step_ids)
        return {row["step_id"] for row in rows}

    def steps(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        *,
        kinds: Collection[StepKind] | None = None,
    ) -> list[Step]:
        """:meth:`Store.steps`, as this transaction sees them."""
        return _session_steps(self._connection, session_id, start, end, kinds)

    def alerts(self, session_ids: Sequence[str], *, superseded: bool = False) -> list[Alert]:
        """:meth:`Store.alerts` of ``session_ids``, as this transaction sees them."""
        return _session_alerts(self._connection, session_ids, superseded=superseded)

    def replace_session_steps(self, session_id: str, steps: Sequence[Step]) -> None:
        """Store ``steps`` (made storable) as the whole of session ``session_id``, in place
        of what it held, and drop its detectors' score chunks (the checkpoint written with
        the steps stores them again): a session judged again in event-time order
        (:mod:`ingest.pipeline.rejudge`)."""
        connection = self._connection
        connection.execute(delete(_score_chunks).where(_score_chunks.c.session_id == session_id))
        connection.execute(delete(_steps).where(_steps.c.session_id == session_id))
        self.add_steps(steps)

    def drop_steps(self, step_ids: Collection[str]) -> set[str]:
        """Delete the stored steps among ``step_ids``; returns their sessions. For the
        steps a CodeAct step inferred before a traced call read after it showed what they
        were (:class:`ingest.semconv.codeact.CodeMemory`): the pipeline judges those
        sessions again when they settle, which stores their steps again in order."""
        query = select(_steps.c.step_id, _steps.c.session_id)
        rows = _select_in(self._connection, query, _steps.c.step_id, step_ids)
        if rows:
            found = [row["step_id"] for row in rows]
            self._connection.execute(delete(_steps).where(_steps.c.step_id.in_(found)))
        return {row["session_id"] for row in rows}

    def known_sessions(self, session_ids: Collection[str]) -> set[str]:
        """The ids among ``session_ids`` of stored sessions (their keys only: no cursor,
        no state read)."""
        query = select(_sessions.c.session_id)
        rows = _select_in(self._connection, query, _sessions.c.session_id, session_ids)
        return {row["session_id"] for row in rows}

    def drop_session(self, session_id: str) -> None:
        """Delete session ``session_id``: its steps, score chunks, workspace writes and row.
        Its alerts (and the outbox rows of their actions) are kept: mark them superseded
        first (:meth:`restate_alerts`). For a provisional session whose steps another
        session adopted (:mod:`ingest.pipeline.adoption`)."""
        connection = self._connection
        connection.execute(delete(_score_chunks).where(_score_chunks.c.session_id == session_id))
        connection.execute(delete(_steps).where(_steps.c.session_id == session_id))
        _workspace_writes.drop_session(connection, session_id)
        connection.execute(delete(_sessions).where(_sessions.c.session_id == session_id))

    def restate_alerts(self, alerts: Sequence[Alert]) -> None:
        """Write ``alerts`` (stored already, by id) over their rows: a re-judgement raised
        them again, with its own onset, evidence and score, and clears or sets
        ``superseded``."""
        if not alerts:
            return
        columns = [c for c in _alert_row(alerts[0]) if c != "alert_id"]
        statement = (
            update(_alerts)
            .where(_alerts.c.alert_id == bindparam("key"))
            .values({c: bindparam(c) for c in columns})
        )
        rows = [{**_alert_row(a), "key": a.alert_id} for a in alerts]
        for row in rows:
            del row["alert_id"]
        self._connection.execute(statement, rows)

    def step_sources(self, step_ids: Collection[str]) -> dict[str, tuple[str, str]]:
        """``(source, source_ref)`` of the stored steps among ``step_ids``: which input
        a stored step came from (the pipeline asks it of a session's start, to tell a
        conversation's later turn from a re-delivery of its first)."""
        query = select(_steps.c.step_id, _steps.c.source, _steps.c.source_ref)
        rows = _select_in(self._connection, query, _steps.c.step_id, step_ids)
        return {row["step_id"]: (row["source"], row["source_ref"]) for row in rows}

    def add_steps(self, steps: Sequence[Step]) -> int:
        """Store ``steps``, skipping any whose ``step_id`` is already stored; returns the
        number inserted. Creates a bare session row for a session not seen before (the
        step's foreign key needs it; :meth:`upsert_session` fills it in).

        Raises ``ValueError`` for an unsequenced step (``seq < 0``): the pipeline orders
        steps before storing them. Two different steps at the same ``(session_id, seq)``
        raise ``sqlalchemy.exc.IntegrityError`` — a pipeline bug, never silently dropped.
        """
        if not steps:
            return 0
        for step in steps:
            if step.seq < 0:
                raise ValueError(
                    f"step {step.step_id!r} is unsequenced (seq={step.seq}); "
                    "assign seq before storing it"
                )
        session_ids = sorted({step.session_id for step in steps})
        self._connection.execute(
            self._insert(_sessions).on_conflict_do_nothing(index_elements=["session_id"]),
            [{"session_id": session_id} for session_id in session_ids],
        )
        # The steps go through the driver's own executemany: SQLAlchemy's per-row
        # parameter processing cost ~20 µs a row, more than SQLite's insert itself.
        # The statement is still compiled by SQLAlchemy for the dialect (paramstyle,
        # ON CONFLICT); the values are what its bind processors would send (only
        # ``detail`` has one: the engine's JSON serializer, the same _json_dumps).
        sql, positional = self._raw_steps_insert()
        if positional:
            params: list[Any] = [_step_values(step) for step in steps]
        else:
            params = [dict(zip(_STEP_FIELDS, _step_values(step), strict=True)) for step in steps]
        result = self._connection.exec_driver_sql(
            sql, params, execution_options={"preserve_rowcount": True}
        )
        if result.rowcount < 0:
            raise RuntimeError(f"{self._dialect} driver did not report the rows inserted")
        return result.rowcount

    def add_steps_or_reject(self, steps: Sequence[Step]) -> tuple[int, list[Rejected[Step]]]:
        """Store ``steps`` as :meth:`add_steps` does, never failing the unit for a bad row;
        returns the number inserted and the steps not stored, each with the reason.

        Each step is made storable first (:func:`models.storable.storable_step`: text
        repaired, a value no column holds rejected). If the database still refuses the
        batch on its data, the batch is rolled back to a savepoint and the steps are
        inserted one by one, each in its own savepoint, so only the refused ones are left
        out. Infrastructure errors (see :func:`is_data_error`) propagate.
        """
        good, rejected = _checked(steps, storable_step)
        inserted, refused = self.add_storable_steps(good)
        return inserted, [*rejected, *refused]

    def add_storable_steps(self, steps: Sequence[Step]) -> tuple[int, list[Rejected[Step]]]:
        """:meth:`add_steps_or_reject` for steps the caller has made storable already,
        each one as :func:`models.storable.storable_step` returns it (the pipeline makes
        each step storable where it places it): they are not checked again, so only the
        database can still refuse one."""
        if not steps:  # no savepoint: two round trips for nothing
            return 0, []
        try:
            with self._connection.begin_nested():
                return self.add_steps(steps), []
        except Exception as error:
            if not is_data_error(error):
                raise
        inserted = 0
        rejected: list[Rejected[Step]] = []
        for step in steps:
            try:
                with self._connection.begin_nested():
                    inserted += self.add_steps([step])
            except Exception as error:
                if not is_data_error(error):
                    raise
                rejected.append((step, f"the database refused the step: {_why(error)}"))
        return inserted, rejected

    def _raw_steps_insert(self) -> tuple[str, bool]:
        """The steps INSERT … ON CONFLICT DO NOTHING as driver SQL, and whether its
        parameters are positional; compiled once per dialect."""
        cached = _RAW_STEPS_INSERT.get(self._dialect)
        if cached is None:
            statement = self._insert(_steps).on_conflict_do_nothing(index_elements=["step_id"])
            compiled = statement.compile(
                dialect=self._connection.dialect, column_keys=list(_STEP_FIELDS)
            )
            positional = bool(compiled.positional)
            order = tuple(compiled.positiontup or ()) if positional else tuple(compiled.params)
            if order != _STEP_FIELDS:
                raise RuntimeError(f"steps INSERT binds {order}, expected {_STEP_FIELDS}")
            cached = _RAW_STEPS_INSERT[self._dialect] = (str(compiled), positional)
        return cached

    def add_alerts(self, alerts: Sequence[Alert]) -> list[Alert]:
        """Store ``alerts``, skipping any whose ``alert_id`` is already stored; returns the
        newly stored ones in input order (each id once) — the ones to deliver."""
        if not alerts:
            return []
        rows = [_alert_row(alert) for alert in alerts]
        statement = (
            self._insert(_alerts)
            .on_conflict_do_nothing(index_elements=["alert_id"])
            .returning(_alerts.c.alert_id)
        )
        inserted = set(self._connection.execute(statement, rows).scalars())
        fresh = []
        for alert in alerts:
            if alert.alert_id in inserted:
                inserted.discard(alert.alert_id)
                fresh.append(alert)
        return fresh

    def add_alerts_or_reject(
        self, alerts: Sequence[Alert]
    ) -> tuple[list[Alert], list[Rejected[Alert]]]:
        """Store ``alerts`` as :meth:`add_alerts` does, never failing the unit for a bad
        row (as :meth:`add_steps_or_reject`); returns the newly stored alerts and the ones
        not stored, each with the reason."""
        good, rejected = _checked(alerts, storable_alert)
        if not good:  # most commits raise none: no savepoint
            return [], rejected
        try:
            with self._connection.begin_nested():
                return self.add_alerts(good), rejected
        except Exception as error:
            if not is_data_error(error):
                raise
        fresh: list[Alert] = []
        for alert in good:
            try:
                with self._connection.begin_nested():
                    fresh.extend(self.add_alerts([alert]))
            except Exception as error:
                if not is_data_error(error):
                    raise
                rejected.append((alert, f"the database refused the alert: {_why(error)}"))
        return fresh, rejected

    def add_dead_letters(self, letters: Sequence[DeadLetter]) -> int:
        """Store ``letters``, skipping any whose ``dead_letter_id`` is already stored;
        returns the number inserted. Each is made storable first
        (:func:`models.storable.storable_dead_letter`), which never fails: a dead letter
        is the last place a record can go."""
        if not letters:
            return 0
        letters = [storable_dead_letter(letter) for letter in letters]
        now = time.time_ns()
        rows = [
            {
                "dead_letter_id": letter.dead_letter_id,
                "source": letter.source,
                "location": letter.location,
                "reason": letter.reason,
                "payload": letter.payload,
                "content_type": letter.content_type,
                "received_at": now,
            }
            for letter in letters
        ]
        statement = self._insert(_dead_letters).on_conflict_do_nothing(
            index_elements=["dead_letter_id"]
        )
        return self._insert_many(statement, rows)

    def upsert_session(self, info: SessionInfo, cursor: SessionCursor) -> None:
        """Create or update the session row.

        Merge rule: each ``info`` field that is not None (``budget``: not empty) replaces
        the stored value; None keeps what is stored. The cursor is written whole — it is
        the pipeline's own state, always current. ``updated_seq`` goes up by one.

        Raises ``ValueError`` if ``info`` and ``cursor`` name different sessions, and
        :class:`~models.storable.Unstorable` (a ``ValueError``) if a field of ``info``
        fits no column (text is repaired, see :mod:`models.storable`).
        """
        known, row = self._session_row(info, cursor)
        self._connection.execute(self._upsert_session_statement(known), row)

    def upsert_sessions(
        self, sessions: Sequence[tuple[SessionInfo, SessionCursor]]
    ) -> list[tuple[SessionInfo, Unstorable]]:
        """:meth:`upsert_session` for each ``(info, cursor)`` of different sessions, in one
        executemany per set of known info fields (a round trip a session cost ~1 ms on
        PostgreSQL, and ~5 ms more beside a busy thread, waiting for the interpreter
        lock). Returns, unwritten, each one whose ``info`` fits no column, with the error;
        the rest are written."""
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        refused: list[tuple[SessionInfo, Unstorable]] = []
        for info, cursor in sessions:
            try:
                known, row = self._session_row(info, cursor)
            except Unstorable as error:
                refused.append((info, error))
                continue
            groups.setdefault(known, []).append(row)
        for known, rows in groups.items():
            self._connection.execute(self._upsert_session_statement(known), rows)
        return refused

    def _session_row(
        self, info: SessionInfo, cursor: SessionCursor
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The known info fields and the bound values of ``info``'s upsert (see
        :meth:`upsert_session`, which raises what this raises)."""
        info = storable_info(info)
        if info.session_id != cursor.session_id:
            raise ValueError(
                f"session info is for {info.session_id!r} but the cursor is for "
                f"{cursor.session_id!r}"
            )
        known = {
            name: value
            for name in _INFO_FIELDS
            if (value := getattr(info, name)) is not None and value != {}
        }
        if "budget" in known:
            known["budget"] = dict(known["budget"])
        cursor_values = {name: getattr(cursor, name) for name in _CURSOR_COLUMNS}
        return tuple(known), {"session_id": info.session_id, "budget": {}, **known, **cursor_values}

    def _upsert_session_statement(self, known: tuple[str, ...]) -> Executable:
        """The session upsert for this set of known info fields, built once per dialect
        (at most one per subset of the info fields).

        Building the INSERT … ON CONFLICT DO UPDATE cost ~0.3 ms per session per commit;
        the statement depends only on which fields are set, not on their values, which
        are bound at execution (so SQLAlchemy's compiled cache also hits).
        """
        key = (self._dialect, known)
        cached = _UPSERT_SESSION.get(key)
        if cached is None:
            columns = ("session_id", "budget", *known, *_CURSOR_COLUMNS)
            insert = self._insert(_sessions).values(
                {
                    **{
                        name: bindparam(name, type_=_sessions.c[name].type)
                        for name in dict.fromkeys(columns)
                    },
                    "updated_seq": 1,
                }
            )
            cached = _UPSERT_SESSION[key] = insert.on_conflict_do_update(
                index_elements=["session_id"],
                set_={
                    **{name: insert.excluded[name] for name in (*known, *_CURSOR_COLUMNS)},
                    "updated_seq": _sessions.c.updated_seq + 1,
                },
            )
        return cached

    def session_cursor(self, session_id: str) -> SessionCursor | None:
        """The cursor of ``session_id`` as this transaction sees it; None if unknown."""
        return _session_cursor(self._connection, session_id)

    def session_cursors(self, session_ids: Sequence[str]) -> dict[str, SessionCursor]:
        """The cursors of the known sessions among ``session_ids``, as this transaction
        sees them, by session id: one query instead of one a session (each cost ~0.4 ms; a
        release often opens dozens of sessions)."""
        query = select(_sessions.c.session_id, *(_sessions.c[name] for name in _CURSOR_COLUMNS))
        rows = _select_in(self._connection, query, _sessions.c.session_id, session_ids)
        return {row["session_id"]: SessionCursor(**row) for row in rows}

    def add_score_chunks(self, chunks: Sequence[tuple[str, int, int, bytes]]) -> None:
        """Store detectors' scores: per ``(session_id, start, end, data)``, those of the
        session's steps ``start`` to ``end - 1`` (``data``, opaque here;
        :mod:`detectors.score_series`), written with the checkpoint at ``end`` (after
        :meth:`upsert_sessions`: the row's session must exist). A chunk already stored
        from ``start`` is replaced: the last checkpoint written wins, as the cursor does."""
        statement = _UPSERT_SCORE_CHUNK.get(self._dialect)
        if statement is None:  # built once per dialect, values bound at execution
            insert = self._insert(_score_chunks)
            statement = _UPSERT_SCORE_CHUNK[self._dialect] = insert.on_conflict_do_update(
                index_elements=["session_id", "start_seq"],
                set_={"end_seq": insert.excluded.end_seq, "data": insert.excluded.data},
            )
        self._connection.execute(
            statement,
            [
                {"session_id": s, "start_seq": start, "end_seq": end, "data": data}
                for s, start, end, data in chunks
            ],
        )

    def set_offset(self, source: str, partition: str, position: int) -> None:
        """Record that ``(source, partition)`` is consumed up to ``position``. Overwrites:
        the caller decides whether a position may move back (a deliberate re-read)."""
        insert = self._insert(_offsets).values(
            source=source, partition=partition, position=position
        )
        self._connection.execute(
            insert.on_conflict_do_update(
                index_elements=["source", "partition"],
                set_={"position": insert.excluded.position},
            )
        )

    def move_offset(self, source: str, partition: str, start: int | None, end: int) -> None:
        """Move ``(source, partition)`` from ``start`` (None: never stored) to ``end``;
        raises :class:`OffsetMovedError` when it is not at ``start``.

        A compare-and-set: a worker that lost a partition to another and has not noticed
        yet cannot store its batch beside the new owner's (on PostgreSQL the second of
        two concurrent moves waits for the first and then finds the position moved)."""
        if start is None:
            insert = self._insert(_offsets).values(source=source, partition=partition, position=end)
            moved = len(
                self._connection.execute(
                    insert.on_conflict_do_nothing(index_elements=["source", "partition"]).returning(
                        _offsets.c.position
                    )
                ).all()
            )
        else:
            moved = self._connection.execute(
                _offsets.update()
                .where(
                    _offsets.c.source == source,
                    _offsets.c.partition == partition,
                    _offsets.c.position == start,
                )
                .values(position=end)
            ).rowcount
        if moved != 1:
            raise OffsetMovedError(
                f"{source} partition {partition} is no longer at {start}: another worker "
                "consumed it"
            )

    def move_offsets(self, moves: Mapping[tuple[str, str], tuple[int | None, int]]) -> None:
        """:meth:`move_offset` for each ``(source, partition): (start, end)``, in one
        executemany for the positions stored and one for the new ones; raises
        :class:`OffsetMovedError` (and the unit must roll back) when any is not at its
        ``start``."""
        new = [(key, end) for key, (start, end) in moves.items() if start is None]
        old = [(key, start, end) for key, (start, end) in moves.items() if start is not None]
        moved = 0
        if new:
            insert = self._insert(_offsets).on_conflict_do_nothing(
                index_elements=["source", "partition"]
            )
            moved += self._insert_many(
                insert,
                [{"source": s, "partition": p, "position": end} for (s, p), end in new],
            )
        if old:
            update = (
                _offsets.update()
                .where(
                    _offsets.c.source == bindparam("b_source"),
                    _offsets.c.partition == bindparam("b_partition"),
                    _offsets.c.position == bindparam("b_start"),
                )
                .values(position=bindparam("b_end"))
            )
            moved += self._insert_many(
                update,
                [
                    {"b_source": s, "b_partition": p, "b_start": start, "b_end": end}
                    for (s, p), start, end in old
                ],
            )
        if moved != len(moves):
            where = ", ".join(
                f"{source} partition {partition} at {start}"
                for (source, partition), (start, _) in moves.items()
            )
            raise OffsetMovedError(
                f"of {where}: {len(moves) - moved} no longer there: another worker consumed it"
            )

    def add_deliveries(self, deliveries: Sequence[Delivery], *, now: int | None = None) -> int:
        """Queue ``deliveries`` (the action policy's decisions, one per alert and
        endpoint), due at once; returns the number of new outbox rows. A ``delivery_id``
        already queued is left as it is, whatever its status: replaying the same input
        never sends a second webhook.

        ``now`` (wall-clock ns, default the current time) stamps ``created``, ``updated``
        and ``next_attempt_at``. The alerts must be stored (foreign key) — in this unit or
        before.
        """
        if not deliveries:
            return 0
        stamp = time.time_ns() if now is None else now
        rows = {
            d.delivery_id: {
                **{f.name: getattr(d, f.name) for f in dataclasses.fields(Delivery)},
                "action": str(d.action),
                "next_attempt_at": stamp,
                "created": stamp,
                "updated": stamp,
            }
            for d in deliveries
        }
        statement = self._insert(_deliveries).on_conflict_do_nothing(index_elements=["delivery_id"])
        return self._insert_many(statement, list(rows.values()))

    def session_agents(self, session_ids: Sequence[str]) -> dict[str, str | None]:
        """session id → its agent (or workflow) name, for the stored sessions among
        ``session_ids`` (this unit's writes included)."""
        query = select(_sessions.c.session_id, _sessions.c.agent)
        rows = _select_in(self._connection, query, _sessions.c.session_id, session_ids)
        return {row["session_id"]: row["agent"] for row in rows}

    def sessions(self, session_ids: Sequence[str]) -> list[SessionInfo]:
        """:meth:`Store.sessions` of ``session_ids`` as this transaction sees them."""
        query = select(*(_sessions.c[f] for f in ("session_id", *_INFO_FIELDS)))
        rows = _select_in(self._connection, query, _sessions.c.session_id, session_ids)
        rows.sort(key=lambda row: row["session_id"])
        return [SessionInfo(**row) for row in rows]

    def checkpoints(self, session_ids: Sequence[str]) -> list[tuple[str, int, str, str | None]]:
        """(session, seq, checkpoint id, workspace commit) of the sessions' checkpoints."""
        return _outbox.checkpoints(self._connection, session_ids)

    # -- the silence watch (models.silence_watch) -----------------------------------------

    def watch_silences(self, rows: Sequence[tuple[str, str, str, int | None]]) -> None:
        """Record ``(lane, session_id, clock, due)`` of sessions watched for silence; a
        None ``due`` ends the watch (:mod:`models.silence_watch`)."""
        _silence_watch.write(self._connection, rows)

    # -- the workspaces' writes (models.workspace_writes) ---------------------------------

    def lock_workspaces(self, keys: Collection[str]) -> None:
        """Lock the rows of workspace ``keys`` until this transaction ends, so commits
        judging one workspace take turns (:mod:`models.workspace_writes`)."""
        _workspace_writes.lock(self._connection, keys)

    def recorded_writes(self, keys: Collection[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """The ``(step_id, path, op)`` among ``keys`` already recorded."""
        return _workspace_writes.existing(self._connection, keys)

    def add_workspace_writes(self, writes: Sequence[WorkspaceWrite]) -> None:
        """Record ``writes`` (each step, path and op once)."""
        _workspace_writes.add(self._connection, writes)

    def workspace_writes(
        self, key: str, since: int, until: int, *, limit: int = 4096
    ) -> list[WorkspaceWrite]:
        """The writes of workspace ``key`` with event time in ``[since, until]``, oldest
        first (the newest ``limit``)."""
        return _workspace_writes.read(self._connection, key, since, until, limit=limit)

    def workspace_write_count(self, key: str, session_id: str) -> int:
        """How many writes of ``session_id`` are recorded for workspace ``key``."""
        return _workspace_writes.count(self._connection, key, session_id)

    def seq_at(self, session_id: str, ts: int) -> int | None:
        """The seq of the session's last stored step at or before event time ``ts``."""
        return _workspace_writes.seq_at(self._connection, session_id, ts)

    def prune_workspace_writes(self, key: str, before: int) -> int:
        """Forget the writes of workspace ``key`` older than event time ``before``."""
        return _workspace_writes.prune(self._connection, key, before)

    # -- the per-agent baselines (models.agent_baselines) ----------------------------------

    def agent_baseline(self, agent: str) -> tuple[int, bytes] | None:
        """(version, state) of ``agent``'s behaviour baseline, or None; its row stays
        locked until this transaction ends (:mod:`models.agent_baselines`)."""
        return _agent_baselines.read(self._connection, agent)

    def put_agent_baseline(self, agent: str, version: int, sessions: int, state: bytes) -> None:
        """Store ``agent``'s behaviour baseline (insert or replace)."""
        _agent_baselines.write(self._connection, agent, version, sessions, state)

    def fired_actions(self, session_ids: Sequence[str]) -> list[tuple[str, int, Action]]:
        """(session, alert event time, action) of the actions already fired in the sessions."""
        return _outbox.fired(self._connection, session_ids)


_RAW_STEPS_INSERT: dict[str, tuple[str, bool]] = {}
_UPSERT_SESSION: dict[tuple[str, tuple[str, ...]], Executable] = {}
_UPSERT_SCORE_CHUNK: dict[str, Executable] = {}
_get_step_values = operator.attrgetter(*_STEP_FIELDS)
_KIND_INDEX = _STEP_FIELDS.index("kind")
_DETAIL_INDEX = _STEP_FIELDS.index("detail")


def _session_alerts(
    connection: Connection, session_ids: Sequence[str] | None, *, superseded: bool = False
) -> list[Alert]:
    """The standing alerts of ``session_ids`` (all if None; with ``superseded``, the
    superseded ones too), ordered by ``(session_id, onset_seq, detector, alert_id)``."""
    query = select(*(_alerts.c[f.name] for f in dataclasses.fields(Alert)))
    if not superseded:
        query = query.where(_alerts.c.superseded.is_(None))
    rows = _select_in(connection, query, _alerts.c.session_id, session_ids)
    rows.sort(key=lambda r: (r["session_id"], r["onset_seq"], r["detector"], r["alert_id"]))
    return [
        Alert(
            **{
                **row,
                "severity": Severity(row["severity"]),
                "action": Action(row["action"]),
                "evidence": tuple(row["evidence"]),
            }
        )
        for row in rows
    ]


def _step_values(step: Step) -> tuple[Any, ...]:
    """A step's column values in ``_STEP_FIELDS`` order, as the driver takes them."""
    values = list(_get_step_values(step))
    values[_KIND_INDEX] = str(step.kind)
    detail = step.detail
    values[_DETAIL_INDEX] = _detail_json(detail if type(detail) is dict else dict(detail))
    return tuple(values)


def _checked(
    records: Sequence[_R], storable: Callable[[_R], _R]
) -> tuple[list[_R], list[Rejected[_R]]]:
    """``records`` made storable, and the ones that cannot be, with the reason."""
    good: list[_R] = []
    rejected: list[Rejected[_R]] = []
    for record in records:
        try:
            good.append(storable(record))
        except Unstorable as error:
            rejected.append((record, error.reason))
    return good, rejected


def _why(error: BaseException) -> str:
    """The first line of what the database or driver said, without SQLAlchemy's SQL."""
    orig = getattr(error, "orig", None) or error
    return f"{type(orig).__name__}: {str(orig).splitlines()[0] if str(orig) else ''}"


def _alert_row(alert: Alert) -> dict[str, Any]:
    return {
        "alert_id": alert.alert_id,
        "session_id": alert.session_id,
        "detector": alert.detector,
        "severity": str(alert.severity),
        "score": alert.score,
        "onset_seq": alert.onset_seq,
        "onset_step_id": alert.onset_step_id,
        "raised_seq": alert.raised_seq,
        "evidence": [dict(e) for e in alert.evidence],
        "reason": alert.reason,
        "action": str(alert.action),
        "checkpoint_id": alert.checkpoint_id,
        "ts": alert.ts,
        "superseded": alert.superseded,
    }


def _session_steps(
    connection: Connection,
    session_id: str,
    start: int,
    end: int | None,
    kinds: Collection[StepKind] | None = None,
) -> list[Step]:
    query = select(*(_steps.c[f] for f in _STEP_FIELDS)).where(
        _steps.c.session_id == session_id, _steps.c.seq >= start
    )
    if end is not None:
        query = query.where(_steps.c.seq < end)
    if kinds is not None:  # fewer rows read and decoded, the same order
        query = query.where(_steps.c.kind.in_(sorted(str(kind) for kind in kinds)))
    rows = connection.execute(query.order_by(_steps.c.seq)).mappings().all()
    return [Step(**{**row, "kind": StepKind(row["kind"])}) for row in rows]


def _session_cursor(connection: Connection, session_id: str) -> SessionCursor | None:
    query = select(*(_sessions.c[name] for name in _CURSOR_COLUMNS)).where(
        _sessions.c.session_id == session_id
    )
    row = connection.execute(query).mappings().one_or_none()
    return None if row is None else SessionCursor(session_id=session_id, **row)


def _select_in(
    connection: Connection, query: Any, column: Any, values: Iterable[str] | None
) -> list[dict[str, Any]]:
    """Run ``query``, restricted to ``column IN values`` unless ``values`` is None.
    Row order is the caller's to impose."""
    if values is None:
        return [dict(row) for row in connection.execute(query).mappings()]
    dialect = connection.dialect.name
    restricted = query.where(_is_listed(column, dialect))
    result = connection.execute(restricted, _listed(values, dialect))
    return [dict(row) for row in result.mappings()]


def _is_listed(column: Any, dialect: str) -> Any:
    """``column`` is one of the values bound by :func:`_listed`: the list is one parameter
    (PostgreSQL ``= ANY(array)``, SQLite ``IN (SELECT value FROM json_each(json))``), so
    the statement is the same for every length - compiled and cached once - and no list
    is expanded into one bound parameter per value at every execution, which cost
    SQLAlchemy ~12 µs a value (~7 ms for a commit's 600 step ids; `serve` commits every
    few requests). Both forms use ``column``'s index."""
    if dialect == "postgresql":
        return column == any_(bindparam(_LISTED, type_=postgresql.ARRAY(column.type)))
    listed: Any = select(literal_column("value")).select_from(func.json_each(bindparam(_LISTED)))
    return column.in_(listed.scalar_subquery())


def _listed(values: Iterable[str], dialect: str) -> dict[str, Any]:
    """The parameters of :func:`_is_listed` for ``values`` (each value once)."""
    unique = list(dict.fromkeys(values))
    return {_LISTED: unique if dialect == "postgresql" else json.dumps(unique)}


def _bind_none_directly(dbapi: Any) -> None:
    """Let Python's ``sqlite3`` bind ``None`` without its adaptation lookup.

    ``sqlite3`` binds exact ``int``, ``float``, ``str`` and ``bytes`` at once; any other
    value, ``None`` included, is first looked up as an adapter, where the protocol's
    missing ``__adapt__`` is an ``AttributeError`` formatted and dropped: ~2,100 machine
    instructions a NULL more, and a stored step has ~14 NULL columns (a third of the
    steps INSERT's instructions; ``callgrind`` of an ``executemany`` of 28,462 recorded
    rows: 2,436M → 1,579M).
    Registered, the adapter is found first, and returns ``None`` (which ``sqlite3``
    binds as NULL, as before); ``{}.get`` is a C-level callable that does so, with no
    Python frame. Process-wide, as ``sqlite3``'s adapters are, and the same NULL for
    every user of the module."""
    if getattr(dbapi, "__name__", "") in ("sqlite3", "sqlite3.dbapi2"):
        dbapi.register_adapter(type(None), _NONE_AS_NONE)


_NOTHING: dict[None, None] = {}
"""Empty, and never written: :data:`_NONE_AS_NONE` looks in it."""
_NONE_AS_NONE = _NOTHING.get
"""``None`` → ``None``, in C (an empty dict's ``get``)."""


def _configure_sqlite(engine: Engine) -> None:
    """Per-connection SQLite settings, and SQLAlchemy in charge of BEGIN.

    Python 3.11's sqlite3 begins transactions only before DML, so reads and DDL would run
    outside any transaction; the documented SQLAlchemy recipe turns that off and emits
    BEGIN itself (``sqlite_begin="IMMEDIATE"`` execution option for writers).
    """
    _bind_none_directly(engine.dialect.dbapi)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        # first: switching a new file to WAL takes a lock another process opening the
        # same store at once (two workers starting, one migrating) may hold
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode=WAL")
        # In WAL mode NORMAL stays consistent on power loss, losing at most the last
        # commits — together with their offsets, so the input is simply re-read.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")
