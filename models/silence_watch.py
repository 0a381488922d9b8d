"""The store's side of the silence watch a Kafka worker keeps (``silence_watch``).

Functions on a connection inside a transaction (:class:`models.store.StoreUnit` and
:class:`models.store.Store` call them): write what a commit changed of the watch, and read
one lane's watch back when a worker takes the lane over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table, delete, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite

from models.tables import SilenceWatchRow

__all__ = ["Watched", "read", "write"]

_watch: Table = SilenceWatchRow.__table__  # type: ignore[assignment]

Watched = tuple[str, str, str, int | None]
"""``(lane, session_id, clock, due)``; ``due`` None: nothing is due any more."""


def _insert(connection: Connection) -> Any:
    if connection.dialect.name == "sqlite":
        return sqlite.insert(_watch)
    return postgresql.insert(_watch)


def write(connection: Connection, rows: Sequence[Watched]) -> None:
    """Upsert the rows with a ``due``, delete those without: one statement each."""
    keep = [
        {"lane": lane, "session_id": s, "clock": clock, "due": due}
        for lane, s, clock, due in rows
        if due is not None
    ]
    gone = [(lane, s) for lane, s, _, due in rows if due is None]
    if keep:
        insert = _insert(connection)
        connection.execute(
            insert.on_conflict_do_update(
                index_elements=["lane", "session_id"],
                set_={"clock": insert.excluded.clock, "due": insert.excluded.due},
            ),
            keep,
        )
    for start in range(0, len(gone), 500):
        chunk = gone[start : start + 500]
        connection.execute(
            delete(_watch).where(tuple_(_watch.c.lane, _watch.c.session_id).in_(chunk))
        )


def read(connection: Connection, lane: str) -> list[tuple[str, str, int]]:
    """``(session_id, clock, due)`` of every session watched on ``lane``, by session."""
    query = (
        select(_watch.c.session_id, _watch.c.clock, _watch.c.due)
        .where(_watch.c.lane == lane)
        .order_by(_watch.c.session_id)
    )
    return [(s, clock, due) for s, clock, due in connection.execute(query)]
