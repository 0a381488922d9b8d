"""The store's side of the cross-session workspace check: what sessions wrote where.

Functions on a connection inside a unit's transaction (:class:`models.store.StoreUnit`
calls them): lock the workspaces a commit judges, record writes once, read a workspace's
writes in a window of event time, and prune what fell out of it.

Ordering (PostgreSQL, READ COMMITTED): :func:`lock` upserts one ``workspaces`` row per
key, in sorted key order; the row stays locked until the transaction ends. Two commits
that judge one workspace therefore run their reads and writes of it one after the other,
and the later one's reads (each statement takes a fresh snapshot once the lock is held)
see every row the earlier one committed. SQLite has one writer at a time anyway
(``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Connection, Table, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from models.records import WorkspaceWrite
from models.tables import StepRow, WorkspaceRow, WorkspaceWriteRow

__all__ = ["add", "count", "drop_session", "existing", "lock", "prune", "read", "seq_at"]

_writes: Table = WorkspaceWriteRow.__table__  # type: ignore[assignment]
_workspaces: Table = WorkspaceRow.__table__  # type: ignore[assignment]
_steps: Table = StepRow.__table__  # type: ignore[assignment]
_FIELDS = tuple(c.name for c in _writes.columns)


def _insert(connection: Connection, table: Table) -> Any:
    if connection.dialect.name == "sqlite":
        return sqlite.insert(table)
    return postgresql.insert(table)


def lock(connection: Connection, keys: Collection[str]) -> None:
    """Lock the ``workspaces`` rows of ``keys`` (made if missing) until the transaction
    ends, in sorted order (two commits locking overlapping sets cannot deadlock)."""
    statement = _insert(connection, _workspaces)
    statement = statement.on_conflict_do_update(
        index_elements=["workspace_key"], set_={"writes": _workspaces.c.writes + 1}
    )
    for key in sorted(set(keys)):
        connection.execute(statement, {"workspace_key": key, "writes": 1})


def existing(
    connection: Connection, keys: Collection[tuple[str, str, str]]
) -> set[tuple[str, str, str]]:
    """The ``(step_id, path, op)`` among ``keys`` already recorded."""
    if not keys:
        return set()
    wanted = list(keys)
    found: set[tuple[str, str, str]] = set()
    step_ids = list({k[0] for k in wanted})
    for start in range(0, len(step_ids), 500):
        query = select(_writes.c.step_id, _writes.c.path, _writes.c.op).where(
            _writes.c.step_id.in_(step_ids[start : start + 500])
        )
        found.update((r[0], r[1], r[2]) for r in connection.execute(query))
    return found & set(wanted)


def add(connection: Connection, writes: Sequence[WorkspaceWrite]) -> None:
    """Record ``writes``; one already recorded (same step, path and op) is skipped."""
    if not writes:
        return
    statement = _insert(connection, _writes).on_conflict_do_nothing(
        index_elements=["step_id", "path", "op"]
    )
    connection.execute(statement, [{f: getattr(w, f) for f in _FIELDS} for w in writes])


def read(
    connection: Connection, key: str, since: int, until: int, *, limit: int
) -> list[WorkspaceWrite]:
    """The writes recorded for workspace ``key`` with event time in ``[since, until]``,
    oldest first, at most ``limit`` (the newest are kept when there are more)."""
    query = (
        select(*(_writes.c[f] for f in _FIELDS))
        .where(_writes.c.workspace_key == key)
        .where(_writes.c.ts >= since)
        .where(_writes.c.ts <= until)
        .order_by(_writes.c.ts.desc(), _writes.c.step_id, _writes.c.path, _writes.c.op)
        .limit(limit)
    )
    rows = [WorkspaceWrite(**row) for row in connection.execute(query).mappings()]
    rows.reverse()
    return rows


def count(connection: Connection, key: str, session_id: str) -> int:
    """How many writes of ``session_id`` are recorded for workspace ``key``."""

    query = (
        select(func.count())
        .select_from(_writes)
        .where(_writes.c.workspace_key == key)
        .where(_writes.c.session_id == session_id)
    )
    return int(connection.execute(query).scalar_one())


def prune(connection: Connection, key: str, before: int) -> int:
    """Forget the writes of workspace ``key`` older than event time ``before``."""
    result = connection.execute(
        delete(_writes).where(_writes.c.workspace_key == key).where(_writes.c.ts < before)
    )
    return int(result.rowcount or 0)


def drop_session(connection: Connection, session_id: str) -> int:
    """Forget every write of ``session_id`` (a provisional session adopted into another,
    whose steps are stored again there: :mod:`ingest.pipeline.adoption`); rows dropped."""
    result = connection.execute(delete(_writes).where(_writes.c.session_id == session_id))
    return int(result.rowcount or 0)


def seq_at(connection: Connection, session_id: str, ts: int) -> int | None:
    """The seq of session ``session_id``'s last stored step at or before event time
    ``ts``; None when it has none."""
    query = (
        select(func.max(_steps.c.seq))
        .where(_steps.c.session_id == session_id)
        .where(_steps.c.ts <= ts)
    )
    found = connection.execute(query).scalar_one()
    return None if found is None else int(found)
