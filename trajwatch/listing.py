"""``trajwatch alerts`` and ``trajwatch sessions``: what the store holds, for a person or a
script. The JSON shapes are stable: an alert is exactly as ``replay --json`` prints it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from models.records import Alert, Delivery, SessionInfo
from models.store import SessionActivity, Store

SEVERITIES = ("critical", "warn", "info")


def alerts(store: Store, *, session: str | None = None, since_ns: int | None = None) -> list[Alert]:
    """Stored alerts, of one session or all, raised at or after ``since_ns`` (event time),
    oldest first (the newest at the bottom of a terminal); alerts raised at the same time
    keep the store's order (session, onset, detector)."""
    found = store.alerts([session] if session else None)
    return sorted((a for a in found if since_ns is None or a.ts >= since_ns), key=_raised)


def sessions(store: Store) -> list[SessionActivity]:
    """Every stored session with its activity, oldest start first (a session whose start is
    not stored yet by its latest step); ties by session id."""
    return sorted(store.session_activity(), key=_started)


def _raised(a: Alert) -> int:
    return a.ts


def _started(a: SessionActivity) -> tuple[int, str]:
    return (a.info.started_ts or a.last_ts or 0, a.info.session_id)


def alerts_json(found: Sequence[Alert]) -> dict[str, Any]:
    return {"alerts": [a.to_json() for a in found]}


def alerts_text(found: Sequence[Alert]) -> str:
    if not found:
        return "no alerts"
    lines = [f"{len(found)} alerts"]
    lines.extend(f"  {alert_line(a)}" for a in found)
    return "\n".join(lines)


def alert_line(a: Alert) -> str:
    """One alert on one line (``trajwatch alerts``, and ``serve`` as alerts arrive)."""
    return (
        f"{_when(a.ts)}  [{a.severity}] {a.detector} session={a.session_id} "
        f"onset=step {a.onset_seq} score={a.score:.2f} action={a.action}: {a.reason}"
    )


STOPPED = {"kill": "killed", "rollback": "rolled back"}
"""A stopping action a breaker received, as a session's state."""


def stopped(deliveries: Iterable[Delivery]) -> dict[str, str]:
    """Session id → ``killed`` (a kill was delivered to a breaker) or ``rolled back`` (a
    rollback was, and no kill), from the outbox rows. Shadow-mode rows were never sent:
    they stop nothing.

    >>> from models.records import Action
    >>> def row(action, status, session):
    ...     return Delivery(delivery_id=f"{session}:{action}", alert_id="a", endpoint="x",
    ...                     action=action, status=status, session_id=session)
    >>> stopped([row(Action.ROLLBACK, "delivered", "s1"), row(Action.KILL, "delivered", "s1"),
    ...          row(Action.KILL, "dead", "s2"), row(Action.ROLLBACK, "delivered", "s3")])
    {'s1': 'killed', 's3': 'rolled back'}
    """
    found: dict[str, str] = {}
    for d in deliveries:
        action = str(d.action)
        if d.status != "delivered" or action not in STOPPED or d.session_id is None:
            continue
        if found.get(d.session_id) != "killed":
            found[d.session_id] = STOPPED[action]
    return found


def session_state(info: SessionInfo, stopped_as: str | None = None) -> str:
    """``killed`` or ``rolled back`` when a breaker received that action for the session
    (``stopped_as``, from :func:`stopped`): what the session ended as, whatever status it
    reported itself; else ``ended`` once its end is stored (with the status it reported:
    the agent's word, not a verdict), else ``live``. The CLI and the explorer both say it
    so."""
    if stopped_as is not None:
        return stopped_as
    if info.ended_ts is None:
        return "live"
    return f"ended ({info.end_status})" if info.end_status else "ended"


def sessions_json(
    activities: Sequence[SessionActivity], stops: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``{"sessions": [...]}``; ``stops`` is :func:`stopped` of the outbox (``state`` is
    then ``killed`` for a session a kill was delivered for; ``end_status`` keeps what
    the session reported)."""
    stops = stops or {}
    return {
        "sessions": [
            {
                "session_id": a.info.session_id,
                "agent": a.info.agent,
                "state": session_state(a.info, stops.get(a.info.session_id)),
                "end_status": a.info.end_status,
                "started_ts": a.info.started_ts,
                "last_ts": a.last_ts,
                "steps": a.steps,
                "tokens_in": a.tokens_in,
                "tokens_out": a.tokens_out,
                "cost": round(a.cost, 6),
                "alerts": dict(a.alerts),
                "goal": a.info.goal,
            }
            for a in activities
        ]
    }


def sessions_text(
    activities: Sequence[SessionActivity], stops: Mapping[str, str] | None = None
) -> str:
    if not activities:
        return "no sessions"
    stops = stops or {}
    header = f"{'session':<40} {'agent':<18} {'state':<16} {'steps':>6} {'tokens':>10}  alerts"
    lines = [header]
    for a in activities:
        badges = " ".join(f"{a.alerts[s]} {s}" for s in SEVERITIES if a.alerts.get(s))
        state = session_state(a.info, stops.get(a.info.session_id))
        lines.append(
            f"{a.info.session_id[:40]:<40} {(a.info.agent or '-')[:18]:<18} "
            f"{state[:16]:<16} {a.steps:>6} {a.tokens_in + a.tokens_out:>10}  "
            f"{badges or '-'}"
        )
    return "\n".join(lines)


def _when(ts: int) -> str:
    if ts <= 0:
        return "-" * 20
    moment = dt.datetime.fromtimestamp(ts / 1e9, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
