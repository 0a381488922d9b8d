"""The store's side of the per-agent behaviour baseline: one row of state per agent.

Functions on a connection inside a unit's transaction (:class:`models.store.StoreUnit`
calls them). :func:`read` locks the agent's row (PostgreSQL ``SELECT … FOR UPDATE``;
SQLite has one writer at a time anyway), so two workers learning sessions of one agent
take turns and the later reads what the earlier committed; :func:`write` upserts it. The
state is opaque here (the detector's versioned pickle).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, select
from sqlalchemy.dialects import postgresql, sqlite

from models.tables import AgentBaselineRow

__all__ = ["read", "write"]

_table: Table = AgentBaselineRow.__table__  # type: ignore[assignment]


def read(connection: Connection, agent: str, *, lock: bool = True) -> tuple[int, bytes] | None:
    """(version, state) of ``agent``'s baseline, or None when none is stored; with
    ``lock`` the row stays locked until the transaction ends (PostgreSQL)."""
    query = select(_table.c.version, _table.c.state).where(_table.c.agent == agent)
    if lock and connection.dialect.name == "postgresql":
        query = query.with_for_update()
    row = connection.execute(query).first()
    return None if row is None else (int(row[0]), bytes(row[1]))


def write(connection: Connection, agent: str, version: int, sessions: int, state: bytes) -> None:
    """Store ``agent``'s baseline (insert or replace)."""
    insert: Any = (
        sqlite.insert(_table) if connection.dialect.name == "sqlite" else postgresql.insert(_table)
    )
    values = {"agent": agent, "version": version, "sessions": sessions, "state": state}
    statement = insert.values(**values).on_conflict_do_update(
        index_elements=["agent"], set_={"version": version, "sessions": sessions, "state": state}
    )
    connection.execute(statement)
