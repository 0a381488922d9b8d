"""The breaker's state: one SQLite file (``trajwatch breaker --state``) of small tables —
``seen`` webhook ids, ``breakers`` (one row per session or agent), ``audit`` (every change,
with its reason and its source: the webhook id, or who closed it), ``effects`` done.

The breaker is a separate service, usually next to the agents rather than next to
trajwatch's store, and must keep answering when that store is down: hence its own file.
One transaction per webhook, so the dedupe and the state change are atomic.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from typing import Any

from models.errors import closest

OPEN, HALF_OPEN, CLOSED = "open", "half-open", "closed"
OPENING = {"trajwatch.kill": OPEN, "trajwatch.rollback": OPEN, "trajwatch.alert": HALF_OPEN}
SCOPES = ("session", "agent")
SCHEMA = """
create table if not exists seen (webhook_id text primary key, at real not null);
create table if not exists breakers (
    scope text not null, key text not null, state text not null, reason text,
    alert_id text, updated real not null, primary key (scope, key));
create table if not exists audit (
    at real not null, scope text not null, key text not null, state text not null,
    reason text, source text not null);
create table if not exists effects (key text primary key, at real not null, outcome text);
"""


SHOW_KNOWN = 10
"""Known keys an :class:`UnknownBreaker` carries for the message (the latest changed)."""


class UnknownBreaker(LookupError):
    """A close of a breaker this state never held (nothing opened it: a typo, or another
    breaker's session). ``known``: the scope's keys, latest changed first (at most
    :data:`SHOW_KNOWN`); ``closest``: the known key nearest to ``key``, or None."""

    def __init__(self, scope: str, key: str, known: list[str], nearest: str | None) -> None:
        super().__init__(f"no breaker for {scope} {key!r}")
        self.scope = scope
        self.key = key
        self.known = known
        self.closest = nearest


class Breakers:
    """The breaker state in a SQLite file; safe from several threads. A new file is created
    readable by its owner only (0600; SQLite gives its journal the same mode): the audit
    trail is the operator's, and the breaker runs as a user the agent is not."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path != ":memory:":
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._effects = threading.Lock()  # effects one at a time; never held by state reads

    def apply(self, webhook_id: str, payload: dict[str, Any]) -> bool:
        """Apply one verified webhook; False if its id was applied before."""
        data = payload.get("data") or {}
        state = OPENING.get(str(payload.get("type")))
        reason = f"{data.get('detector')} ({data.get('severity')}): {data.get('reason')}"
        with self._lock:
            cur = self._db.cursor()
            cur.execute("begin immediate")
            try:
                if cur.execute("select 1 from seen where webhook_id = ?", (webhook_id,)).fetchone():
                    cur.execute("rollback")
                    return False
                cur.execute("insert into seen values (?, ?)", (webhook_id, time.time()))
                if state is not None:
                    for scope, key in (
                        ("session", data.get("session_id")),
                        ("agent", data.get("agent")),
                    ):
                        if key:
                            self._set(
                                cur,
                                scope,
                                str(key),
                                state,
                                reason,
                                data.get("alert_id"),
                                f"webhook {webhook_id}",
                                keep_open=state == HALF_OPEN,
                            )
                cur.execute("commit")
            except BaseException:
                cur.execute("rollback")
                raise
        return True

    def once(
        self, key: str, effect: Callable[[], str | None], *, session: str | None = None
    ) -> tuple[bool, str | None]:
        """Run ``effect`` once per ``key`` (``<effect>:<webhook-id>``): (False, what it did
        then) if it ran before, else (True, what it did now). The key is recorded, with
        the outcome in the session's audit trail, only after ``effect`` returned: one that
        raises runs again on the retry. Effects run one at a time, outside the state lock,
        so the hook's reads never wait for a remote call."""
        with self._effects:
            with self._lock:
                row = self._db.execute(
                    "select outcome from effects where key = ?", (key,)
                ).fetchone()
            if row is not None:
                return False, row[0]
            outcome = effect()
            with self._lock:
                cur = self._db.cursor()
                cur.execute("begin immediate")
                try:
                    now = time.time()
                    cur.execute("insert into effects values (?, ?, ?)", (key, now, outcome))
                    if session and outcome:
                        state = cur.execute(
                            "select state from breakers where scope = 'session' and key = ?",
                            (session,),
                        ).fetchone()
                        cur.execute(
                            "insert into audit values (?, 'session', ?, ?, ?, ?)",
                            (now, session, state[0] if state else CLOSED, outcome, key),
                        )
                    cur.execute("commit")
                except BaseException:
                    cur.execute("rollback")
                    raise
            return True, outcome

    def _set(
        self,
        cur: sqlite3.Cursor,
        scope: str,
        key: str,
        state: str,
        reason: str | None,
        alert_id: Any,
        source: str,
        *,
        keep_open: bool = False,
    ) -> None:
        now = time.time()
        row = cur.execute(
            "select state from breakers where scope = ? and key = ?", (scope, key)
        ).fetchone()
        if keep_open and row is not None and row[0] == OPEN:
            state = OPEN  # a notify never weakens an open breaker
        cur.execute(
            "insert into breakers values (?, ?, ?, ?, ?, ?) on conflict (scope, key) do update "
            "set state = excluded.state, reason = excluded.reason, alert_id = excluded.alert_id, "
            "updated = excluded.updated",
            (scope, key, state, reason, alert_id, now),
        )
        cur.execute(
            "insert into audit values (?, ?, ?, ?, ?, ?)", (now, scope, key, state, reason, source)
        )

    def close(
        self,
        key: str,
        *,
        scope: str = "session",
        trial: bool = False,
        reason: str = "re-enabled",
        source: str = "close",
    ) -> str:
        """Re-enable the breaker of a session (or, with ``scope="agent"``, an agent);
        half-open with ``trial``. ``source`` goes into the audit trail (who closed it).
        Returns the new state. A key no webhook ever opened (nor a close before) raises
        :class:`UnknownBreaker` and changes nothing: "closed" would read as success for a
        misspelt session while the real one stays open."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        state = HALF_OPEN if trial else CLOSED
        with self._lock:
            cur = self._db.cursor()
            cur.execute("begin immediate")
            try:
                held = cur.execute(
                    "select 1 from breakers where scope = ? and key = ?", (scope, key)
                ).fetchone()
                if held is None:
                    raise self._unknown(cur, scope, key)
                self._set(cur, scope, key, state, reason, None, source)
                cur.execute("commit")
            except BaseException:
                cur.execute("rollback")
                raise
        return state

    @staticmethod
    def _unknown(cur: sqlite3.Cursor, scope: str, key: str) -> UnknownBreaker:
        keys = [
            str(row[0])
            for row in cur.execute(
                "select key from breakers where scope = ? order by updated desc", (scope,)
            )
        ]
        return UnknownBreaker(scope, key, keys[:SHOW_KNOWN], closest(key, keys))

    def state(self, scope: str, key: str) -> tuple[str, str | None]:
        with self._lock:
            row = self._db.execute(
                "select state, reason from breakers where scope = ? and key = ?", (scope, key)
            ).fetchone()
        return (row[0], row[1]) if row else (CLOSED, None)

    def listing(self, key: str | None = None, scope: str = "session") -> dict[str, Any]:
        where, args = ("where key = ? and scope = ?", (key, scope)) if key else ("", ())
        with self._lock:
            rows = self._db.execute(
                f"select scope, key, state, reason, alert_id, updated from breakers {where}", args
            ).fetchall()
            audit = self._db.execute(
                f"select at, scope, key, state, reason, source from audit {where} order by at", args
            ).fetchall()
        return {
            "breakers": [
                dict(
                    zip(("scope", "key", "state", "reason", "alert_id", "updated"), r, strict=True)
                )
                for r in rows
            ],
            "audit": [
                dict(zip(("at", "scope", "key", "state", "reason", "source"), r, strict=True))
                for r in audit
            ],
        }

    def applied(self) -> int:
        with self._lock:
            return int(self._db.execute("select count(*) from seen").fetchone()[0])

    def reachable(self) -> bool:
        """Whether the state file is still there and answers a query (``/healthz``)."""
        if self.path != ":memory:" and not os.path.exists(self.path):
            return False  # deleted under us: what is written now is lost at the restart
        try:
            with self._lock:
                self._db.execute("select 1 from breakers limit 1").fetchone()
        except sqlite3.Error:
            return False
        return True

    def shared(self) -> bool:
        """Whether other users may read or write the state file (its mode has group or
        other bits), for a warning at start."""
        if self.path == ":memory:" or not os.path.exists(self.path):
            return False
        return bool(os.stat(self.path).st_mode & (stat.S_IRWXG | stat.S_IRWXO))
