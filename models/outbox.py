"""The webhook outbox's reads and writes outside the pipeline's commit: what the
dispatcher claims and records, what ``trajwatch deliveries`` lists and resends, and the
endpoints a 410 disabled.

Rows are written by :meth:`models.store.StoreUnit.add_deliveries`, in the transaction that
stores their alerts. The dispatcher then *claims* due rows (one short transaction that
pushes ``next_attempt_at`` out by a lease and counts the attempt), sends without holding
any transaction, and records the outcome in another short one. A dispatcher killed
between claim and outcome leaves the row due again when the lease ends: delivery is
at-least-once, and receivers drop repeats by ``webhook-id`` (the ``delivery_id``).
Several dispatchers may run on one store: SQLite serialises claims by its write lock,
PostgreSQL by ``FOR UPDATE SKIP LOCKED``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Table, select, update

from models.records import Action, Delivery
from models.tables import DeliveryRow, EndpointRow, StepRow

_deliveries: Table = DeliveryRow.__table__  # type: ignore[assignment]
_endpoints: Table = EndpointRow.__table__  # type: ignore[assignment]
_steps: Table = StepRow.__table__  # type: ignore[assignment]

_FIELDS = tuple(c.name for c in _deliveries.columns)
FIRED = ("pending", "delivered", "dead", "disabled", "shadow")
"""Statuses of a row whose action the policy fired (in shadow mode too): what the
per-session cooldown counts. ``suppressed`` rows did not fire."""


@dataclass(frozen=True, slots=True)
class EndpointState:
    name: str
    enabled: bool
    reason: str | None
    updated: int


def to_record(row: Any) -> Delivery:
    values = dict(row)
    values["action"] = Action(values["action"])
    return Delivery(**values)


def fired(connection: Connection, session_ids: Sequence[str]) -> list[tuple[str, int, Action]]:
    """(session, alert event time, action) of every action fired in ``session_ids``."""
    if not session_ids:
        return []
    query = (
        select(_deliveries.c.session_id, _deliveries.c.alert_ts, _deliveries.c.action)
        .where(_deliveries.c.session_id.in_(list(dict.fromkeys(session_ids))))
        .where(_deliveries.c.status.in_(FIRED))
        .distinct()
    )
    return [(s, ts or 0, Action(a)) for s, ts, a in connection.execute(query)]


def checkpoints(
    connection: Connection, session_ids: Sequence[str]
) -> list[tuple[str, int, str, str | None]]:
    """(session, seq, checkpoint id, workspace commit) of the checkpoint steps stored for
    ``session_ids``, in seq order."""
    if not session_ids:
        return []
    query = (
        select(_steps.c.session_id, _steps.c.seq, _steps.c.detail)
        .where(_steps.c.session_id.in_(list(dict.fromkeys(session_ids))))
        .where(_steps.c.kind == "checkpoint")
        .order_by(_steps.c.session_id, _steps.c.seq)
    )
    found = []
    for session_id, seq, detail in connection.execute(query):
        detail = detail or {}
        if detail.get("checkpoint_id"):
            commit = detail.get("commit")
            commit = None if commit is None else str(commit)
            found.append((session_id, seq, str(detail["checkpoint_id"]), commit))
    return found


class Outbox:
    """The outbox on one engine (the dispatcher's own connection pool, or the CLI's)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._postgres = engine.dialect.name == "postgresql"

    def _write(self) -> Any:
        connection = self._engine.connect()
        if not self._postgres:
            connection.execution_options(sqlite_begin="IMMEDIATE")
        return connection

    def claim_due(self, now: int, lease_ns: int, limit: int) -> list[Delivery]:
        """Up to ``limit`` pending rows due at ``now`` whose endpoint is not disabled,
        oldest due first, each with one more attempt counted and ``next_attempt_at`` put at
        ``now + lease_ns`` (so a dispatcher that dies mid-send leaves them due again)."""
        if limit <= 0:
            return []
        disabled = select(_endpoints.c.name).where(_endpoints.c.enabled.is_(False))
        due = (
            select(_deliveries.c.delivery_id)
            .where(_deliveries.c.status == "pending")
            .where(_deliveries.c.next_attempt_at <= now)
            .where(_deliveries.c.endpoint.not_in(disabled))
            .order_by(_deliveries.c.next_attempt_at)
            .limit(limit)
        )
        if self._postgres:
            due = due.with_for_update(skip_locked=True, of=_deliveries)
        with self._write() as connection, connection.begin():
            ids = [row[0] for row in connection.execute(due)]
            if not ids:
                return []
            connection.execute(
                update(_deliveries)
                .where(_deliveries.c.delivery_id.in_(ids))
                .values(
                    attempts=_deliveries.c.attempts + 1,
                    next_attempt_at=now + lease_ns,
                    updated=now,
                )
            )
            rows = connection.execute(
                select(_deliveries).where(_deliveries.c.delivery_id.in_(ids))
            ).mappings()
            claimed = {row["delivery_id"]: to_record(row) for row in rows}
        return [claimed[i] for i in ids if i in claimed]

    def record(
        self,
        delivery_id: str,
        *,
        status: str,
        now: int,
        next_attempt_at: int | None = None,
        error: str | None = None,
        status_code: int | None = None,
    ) -> None:
        """The outcome of one attempt: ``delivered``, ``dead``, or ``pending`` again at
        ``next_attempt_at``. A row no longer pending (resent, or already delivered by a
        dispatcher whose lease ran out) keeps its status unless this one delivered it."""
        statement = (
            update(_deliveries)
            .where(_deliveries.c.delivery_id == delivery_id)
            .values(
                status=status,
                next_attempt_at=next_attempt_at,
                last_error=error,
                last_status_code=status_code,
                updated=now,
            )
        )
        if status != "delivered":
            statement = statement.where(_deliveries.c.status == "pending")
        with self._write() as connection, connection.begin():
            connection.execute(statement)

    def disable_endpoint(self, name: str, reason: str, *, now: int | None = None) -> int:
        """Disable endpoint ``name`` (a 410 answer): its pending rows are held as
        ``disabled`` until :meth:`enable_endpoint`. Returns the rows held."""
        stamp = time.time_ns() if now is None else now
        with self._write() as connection, connection.begin():
            self._set_endpoint(connection, name, enabled=False, reason=reason, now=stamp)
            return connection.execute(
                update(_deliveries)
                .where(_deliveries.c.endpoint == name)
                .where(_deliveries.c.status == "pending")
                .values(status="disabled", updated=stamp)
            ).rowcount

    def enable_endpoint(self, name: str, *, now: int | None = None) -> int:
        """Re-enable endpoint ``name``; its held rows are due at once with a fresh count of
        attempts. Returns the rows requeued."""
        stamp = time.time_ns() if now is None else now
        with self._write() as connection, connection.begin():
            self._set_endpoint(connection, name, enabled=True, reason="re-enabled", now=stamp)
            return connection.execute(
                update(_deliveries)
                .where(_deliveries.c.endpoint == name)
                .where(_deliveries.c.status == "disabled")
                .values(status="pending", attempts=0, next_attempt_at=stamp, updated=stamp)
            ).rowcount

    def _set_endpoint(
        self, connection: Connection, name: str, *, enabled: bool, reason: str, now: int
    ) -> None:
        exists = connection.execute(
            select(_endpoints.c.name).where(_endpoints.c.name == name)
        ).first()
        values = {"enabled": enabled, "reason": reason, "updated": now}
        if exists:
            connection.execute(update(_endpoints).where(_endpoints.c.name == name).values(values))
        else:
            connection.execute(_endpoints.insert().values(name=name, **values))

    def endpoints(self) -> list[EndpointState]:
        """Endpoints with a recorded state (disabled, or re-enabled), by name."""
        with self._engine.connect() as connection:
            rows = connection.execute(select(_endpoints).order_by(_endpoints.c.name)).mappings()
            return [EndpointState(**row) for row in rows]

    def redeliver(self, delivery_ids: Sequence[str] = (), *, dead: bool = False) -> int:
        """Send again: the rows ``delivery_ids`` (whatever their status but shadow and
        suppressed, which never fired), or with ``dead`` every dead row. They are due at
        once with a fresh count of attempts, under the same ``webhook-id``. Returns how
        many were requeued."""
        now = time.time_ns()
        statement = update(_deliveries).values(
            status="pending", attempts=0, next_attempt_at=now, updated=now, last_error=None
        )
        if dead:
            statement = statement.where(_deliveries.c.status == "dead")
        else:
            statement = statement.where(_deliveries.c.delivery_id.in_(list(delivery_ids))).where(
                _deliveries.c.status.not_in(("shadow", "suppressed"))
            )
        with self._write() as connection, connection.begin():
            return connection.execute(statement).rowcount

    def list(self, status: str | None = None, limit: int | None = None) -> list[Delivery]:
        """Outbox rows (of one status), the newest first."""
        query = select(_deliveries).order_by(
            _deliveries.c.created.desc(), _deliveries.c.delivery_id
        )
        if status is not None:
            query = query.where(_deliveries.c.status == status)
        if limit is not None:
            query = query.limit(limit)
        with self._engine.connect() as connection:
            return [to_record(row) for row in connection.execute(query).mappings()]

    def get(self, delivery_id: str) -> Delivery | None:
        with self._engine.connect() as connection:
            row = (
                connection.execute(
                    select(_deliveries).where(_deliveries.c.delivery_id == delivery_id)
                )
                .mappings()
                .one_or_none()
            )
        return None if row is None else to_record(row)

    def statuses(self, alert_ids: Sequence[str]) -> dict[str, int]:
        """status → rows, over the deliveries of ``alert_ids``."""
        from sqlalchemy import func

        counts: dict[str, int] = {}
        ids = list(dict.fromkeys(alert_ids))
        with self._engine.connect() as connection:
            for start in range(0, len(ids), 500):
                query = (
                    select(_deliveries.c.status, func.count())
                    .where(_deliveries.c.alert_id.in_(ids[start : start + 500]))
                    .group_by(_deliveries.c.status)
                )
                for status, n in connection.execute(query):
                    counts[status] = counts.get(status, 0) + n
        return counts

    def pending(self) -> int:
        """Rows still to send (pending, whether due or waiting for a retry)."""
        from sqlalchemy import func

        with self._engine.connect() as connection:
            return connection.execute(
                select(func.count())
                .select_from(_deliveries)
                .where(_deliveries.c.status == "pending")
            ).scalar_one()
