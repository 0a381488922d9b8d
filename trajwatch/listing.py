"""``trajwatch alerts`` and ``trajwatch sessions``: what the store holds, for a person or a
script. The JSON shapes are stable: an alert is exactly as ``replay --json`` prints it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from models.records import Alert
from models.store import SessionActivity, Store

SEVERITIES = ("critical", "warn", "info")


def alerts(store: Store, *, session: str | None = None, since_ns: int | None = None) -> list[Alert]:
    """Stored alerts, of one session or all, raised at or after ``since_ns`` (event time),
    in the store's order (session, onset, detector)."""
    found = store.alerts([session] if session else None)
    return [a for a in found if since_ns is None or a.ts >= since_ns]


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


def session_state(activity: SessionActivity) -> str:
    """``ended`` once the session's end is stored (with its status), else ``live``."""
    info = activity.info
    if info.ended_ts is None:
        return "live"
    return f"ended ({info.end_status})" if info.end_status else "ended"


def sessions_json(activities: Sequence[SessionActivity]) -> dict[str, Any]:
    return {
        "sessions": [
            {
                "session_id": a.info.session_id,
                "agent": a.info.agent,
                "state": session_state(a),
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


def sessions_text(activities: Sequence[SessionActivity]) -> str:
    if not activities:
        return "no sessions"
    header = f"{'session':<40} {'agent':<18} {'state':<16} {'steps':>6} {'tokens':>10}  alerts"
    lines = [header]
    for a in activities:
        badges = " ".join(f"{a.alerts[s]} {s}" for s in SEVERITIES if a.alerts.get(s))
        lines.append(
            f"{a.info.session_id[:40]:<40} {(a.info.agent or '-')[:18]:<18} "
            f"{session_state(a)[:16]:<16} {a.steps:>6} {a.tokens_in + a.tokens_out:>10}  "
            f"{badges or '-'}"
        )
    return "\n".join(lines)


def _when(ts: int) -> str:
    if ts <= 0:
        return "-" * 20
    moment = dt.datetime.fromtimestamp(ts / 1e9, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
