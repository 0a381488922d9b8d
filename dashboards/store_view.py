"""What the explorer reads from the store, as polars tables: no Streamlit here.

The explorer opens the store read-only (:func:`open_store`: never migrates, refuses a
schema it does not know) and computes every table a page shows in this module or in
:mod:`dashboards.session_view`, so the pages only lay them out and the tests check the
figures without a browser.

Every text shown comes from the store, which holds redacted text only (steps, alerts and
outbox payloads are redacted before they are stored).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from alembic.script import ScriptDirectory

from models.errors import UserError
from models.migrations import alembic_config, current_revision
from models.open_errors import shown, sqlite_file
from models.records import Alert, Delivery
from models.store import SessionActivity, Store
from trajwatch.listing import session_state, stopped

SEVERITY_ORDER = ("critical", "warn", "info")
STOPPING = ("kill", "rollback")
"""Actions that stop or rewind the agent: what a circuit breaker acts on."""


class StoreUnavailable(UserError):
    """The store cannot be shown: missing, empty (no schema) or of an unknown schema."""


def known_revisions() -> tuple[set[str], str]:
    """Every migration revision this code has, and the newest (the head)."""
    scripts = ScriptDirectory.from_config(alembic_config())
    revisions = {rev.revision for rev in scripts.walk_revisions()}
    return revisions, scripts.get_current_head() or ""


def open_store(url: str) -> Store:
    """The store at ``url``, opened for reading: no migration is run.

    Raises :class:`StoreUnavailable` (one actionable line) when a SQLite file does not
    exist, when the database has no trajwatch schema (an empty database), or when its
    schema revision is one this code does not know (a newer trajwatch migrated it) or
    is older than this code's; :class:`~models.errors.StoreOpenError` when the URL cannot
    be opened at all."""
    path = sqlite_file(url)
    if path is not None and not Path(path).exists():
        raise StoreUnavailable(
            f"there is no store at {path}; replay recordings into it (trajwatch replay PATH "
            f"--db {shown(url)}) or start trajwatch serve on it, then reload"
        )
    store = Store.open(url, migrate=False)
    try:
        revision = current_revision(store.engine)
        known, head = known_revisions()
        if revision is None:
            raise StoreUnavailable(
                f"the database at {shown(url)} is empty (no trajwatch schema); replay "
                "recordings into it or start trajwatch serve on it, then reload"
            )
        if revision not in known:
            raise StoreUnavailable(
                f"the store at {shown(url)} has schema revision {revision}, newer than this "
                f"trajwatch knows (its newest is {head}); upgrade trajwatch to explore it"
            )
        if revision != head:
            raise StoreUnavailable(
                f"the store at {shown(url)} has the older schema revision {revision}; "
                f"upgrade it with `trajwatch migrate --db {shown(url)}` (the explorer "
                "never writes the schema)"
            )
    except BaseException:
        store.close()
        raise
    return store


def when(ns: int | None) -> dt.datetime | None:
    """An event time (ns) as an aware UTC datetime; None for none."""
    if not ns:
        return None
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC)


def breaker_state(deliveries: Sequence[Delivery], alerts: Sequence[Alert] = ()) -> str:
    """What the circuit breaker was told about one session, from its outbox rows: the
    strongest stopping action sent (``kill sent``), queued (``kill pending``), failed
    (``kill dead``), held (``kill held``: the endpoint is disabled), or only recorded in
    shadow mode (``kill (shadow)``); ``kill not sent`` when one of its ``alerts``
    recommends a stopping action but the outbox has none for the session (no webhook
    endpoint was configured, or the action policy sent nothing); ``-`` when no stopping
    action was decided.

    trajwatch's reference breaker keeps its own state (its SQLite file); this is what the
    store can tell: which stopping actions went out."""
    stopping = [d for d in deliveries if str(d.action) in STOPPING and d.status != "suppressed"]
    if not stopping:
        recommended = [a for a in alerts if str(a.action) in STOPPING]
        if not recommended:
            return "-"
        worst = "kill" if any(str(a.action) == "kill" for a in recommended) else "rollback"
        return f"{worst} not sent"
    for status, label in (
        ("delivered", "sent"),
        ("pending", "pending"),
        ("dead", "dead"),
        ("disabled", "held"),
    ):
        found = [d for d in stopping if d.status == status]
        if found:
            return f"{_strongest(found)} {label}"
    return f"{_strongest(stopping)} (shadow)"


@dataclass(frozen=True, slots=True)
class Undelivered:
    """A stopping action that did not reach its breaker: the agent was not stopped."""

    session_id: str
    action: str
    endpoint: str
    status: str
    """``dead`` (refused by the SSRF guard, or every attempt failed) or ``disabled`` (held:
    the endpoint answered 410)."""
    reason: str


def undelivered_stops(
    deliveries: Sequence[Delivery], disabled: Mapping[str, str | None]
) -> list[Undelivered]:
    """The kills and rollbacks that are dead or held (newest first, as the outbox lists
    them); ``disabled`` maps a disabled endpoint to why, the reason of its held rows."""
    found = []
    for d in deliveries:
        if str(d.action) not in STOPPING or d.status not in ("dead", "disabled"):
            continue
        if d.status == "disabled":
            why = disabled.get(d.endpoint) or d.last_error or "no reason recorded"
            reason = f"held: endpoint {d.endpoint} is disabled ({why})"
        else:
            reason = d.last_error or "no reason recorded"
        found.append(Undelivered(d.session_id or "-", str(d.action), d.endpoint, d.status, reason))
    return found


def _strongest(deliveries: Sequence[Delivery]) -> str:
    return "kill" if any(str(d.action) == "kill" for d in deliveries) else "rollback"


def badges(alerts: Sequence[Alert]) -> str:
    """``detector: n severity, …`` for one session's alerts, the most severe first.

    >>> from models.records import Severity
    >>> a = Alert(alert_id="a", session_id="s", detector="runaway_loop", severity=Severity.WARN,
    ...           score=0.5, onset_seq=1, onset_step_id="s#1", evidence=(), reason="r")
    >>> badges([a, a.__class__(**{**{f: getattr(a, f) for f in a.__slots__},
    ...                          "severity": Severity.CRITICAL})])
    'runaway_loop: 1 critical, 1 warn'
    """
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in alerts:
        counts[a.detector][str(a.severity)] += 1

    def rank(detector: str) -> tuple[int, str]:
        worst = min(SEVERITY_ORDER.index(s) for s in counts[detector])
        return worst, detector

    return "; ".join(
        f"{detector}: "
        + ", ".join(f"{counts[detector][s]} {s}" for s in SEVERITY_ORDER if counts[detector].get(s))
        for detector in sorted(counts, key=rank)
    )


SESSION_COLUMNS = pl.Schema(
    {
        "session_id": pl.Utf8(),
        "agent": pl.Utf8(),
        "state": pl.Utf8(),
        "started": pl.Datetime("us", "UTC"),
        "duration_s": pl.Float64(),
        "steps": pl.Int64(),
        "tokens": pl.Int64(),
        "cost": pl.Float64(),
        "breaker": pl.Utf8(),
        "alerts": pl.Int64(),
        "critical": pl.Int64(),
        "warn": pl.Int64(),
        "badges": pl.Utf8(),
        "detectors": pl.List(pl.Utf8()),
        "goal": pl.Utf8(),
    }
)


def sessions_table(
    activity: Sequence[SessionActivity],
    alerts: Sequence[Alert],
    deliveries: Sequence[Delivery],
) -> pl.DataFrame:
    """One row per session, newest start first: agent, state (``live`` until its end is
    stored; ``killed`` once a breaker received a kill: :func:`session_state`), start,
    duration (event time), steps, tokens, cost, breaker state, alert counts and badges,
    the detectors that fired, the goal."""
    by_session: dict[str, list[Alert]] = defaultdict(list)
    for a in alerts:
        by_session[a.session_id].append(a)
    outbox: dict[str, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        outbox[d.session_id or ""].append(d)
    stops = stopped(deliveries)
    rows = []
    for act in activity:
        info = act.info
        own = by_session.get(info.session_id, [])
        end = info.ended_ts or act.last_ts
        started = info.started_ts
        rows.append(
            {
                "session_id": info.session_id,
                "agent": info.agent,
                "state": session_state(info, stops.get(info.session_id)),
                "started": when(started),
                "duration_s": (end - started) / 1e9 if end and started else None,
                "steps": act.steps,
                "tokens": act.tokens_in + act.tokens_out,
                "cost": round(act.cost, 6),
                "breaker": breaker_state(outbox.get(info.session_id, []), own),
                "alerts": len(own),
                "critical": sum(str(x.severity) == "critical" for x in own),
                "warn": sum(str(x.severity) == "warn" for x in own),
                "badges": badges(own),
                "detectors": sorted({x.detector for x in own}),
                "goal": info.goal,
            }
        )
    frame = pl.DataFrame(rows, schema=SESSION_COLUMNS)
    return frame.sort("started", descending=True, nulls_last=True)


def filter_sessions(
    frame: pl.DataFrame,
    *,
    search: str = "",
    agents: Sequence[str] = (),
    states: Sequence[str] = (),
    detectors: Sequence[str] = (),
    alerted_only: bool = False,
) -> pl.DataFrame:
    """The rows matching every filter given: ``search`` (case-insensitive, in the session
    id, agent or goal), ``agents``, ``states`` (``live``/an end status), ``detectors``
    (any of them fired), ``alerted_only``."""
    out = frame
    if search:
        needle = search.lower()
        out = out.filter(
            pl.concat_str(
                [pl.col("session_id"), pl.col("agent").fill_null(""), pl.col("goal").fill_null("")],
                separator=" ",
            )
            .str.to_lowercase()
            .str.contains(needle, literal=True)
        )
    if agents:
        out = out.filter(pl.col("agent").is_in(list(agents)))
    if states:
        out = out.filter(pl.col("state").is_in(list(states)))
    if detectors:
        out = out.filter(
            pl.col("detectors").list.eval(pl.element().is_in(list(detectors))).list.any()
        )
    if alerted_only:
        out = out.filter(pl.col("alerts") > 0)
    return out


ALERT_COLUMNS = pl.Schema(
    {
        "alert_id": pl.Utf8(),
        "session_id": pl.Utf8(),
        "detector": pl.Utf8(),
        "severity": pl.Utf8(),
        "score": pl.Float64(),
        "onset_step": pl.Int64(),
        "raised_at_step": pl.Int64(),
        "action": pl.Utf8(),
        "raised": pl.Datetime("us", "UTC"),
        "reason": pl.Utf8(),
        "deliveries": pl.Utf8(),
        "superseded": pl.Utf8(),
    }
)


def alerts_table(alerts: Sequence[Alert], deliveries: Sequence[Delivery]) -> pl.DataFrame:
    """One row per alert, newest first, with its deliveries summed up per endpoint
    (``ops: kill delivered``, ``ops: kill shadow``) and, for an alert its session's
    judgement in event-time order no longer raises, why it is superseded."""
    per_alert: dict[str, list[str]] = defaultdict(list)
    for d in deliveries:
        per_alert[d.alert_id].append(f"{d.endpoint}: {d.action} {d.status}")
    rows = [
        {
            "alert_id": a.alert_id,
            "session_id": a.session_id,
            "detector": a.detector,
            "severity": str(a.severity),
            "score": a.score,
            "onset_step": a.onset_seq,
            "raised_at_step": a.raised_seq,
            "action": str(a.action),
            "raised": when(a.ts),
            "reason": a.reason,
            "deliveries": "; ".join(sorted(per_alert.get(a.alert_id, []))) or "-",
            "superseded": a.superseded,
        }
        for a in alerts
    ]
    return pl.DataFrame(rows, schema=ALERT_COLUMNS).sort("raised", descending=True, nulls_last=True)


DELIVERY_COLUMNS = pl.Schema(
    {
        "delivery_id": pl.Utf8(),
        "alert_id": pl.Utf8(),
        "session_id": pl.Utf8(),
        "endpoint": pl.Utf8(),
        "action": pl.Utf8(),
        "mode": pl.Utf8(),
        "status": pl.Utf8(),
        "attempts": pl.Int64(),
        "last_status_code": pl.Int64(),
        "last_error": pl.Utf8(),
        "decision": pl.Utf8(),
        "updated": pl.Datetime("us", "UTC"),
    }
)


def deliveries_table(deliveries: Sequence[Delivery]) -> pl.DataFrame:
    """The outbox, newest first: delivery state per alert and endpoint; a shadow-mode
    row's ``mode`` is ``shadow`` (recorded, never sent)."""
    rows = [
        {
            "delivery_id": d.delivery_id,
            "alert_id": d.alert_id,
            "session_id": d.session_id,
            "endpoint": d.endpoint,
            "action": str(d.action),
            "mode": d.mode,
            "status": d.status,
            "attempts": d.attempts,
            "last_status_code": d.last_status_code,
            "last_error": d.last_error,
            "decision": d.decision,
            "updated": when(d.updated),
        }
        for d in deliveries
    ]
    return pl.DataFrame(rows, schema=DELIVERY_COLUMNS)


def endpoint_states(deliveries: pl.DataFrame, disabled: dict[str, str | None]) -> pl.DataFrame:
    """Per endpoint: enabled or disabled (and why), and its rows by status."""
    counts = (
        deliveries.group_by("endpoint", "status")
        .len()
        .pivot("status", index="endpoint", values="len")
        if deliveries.height
        else pl.DataFrame({"endpoint": []}, schema={"endpoint": pl.Utf8()})
    )
    names = sorted(set(counts["endpoint"].to_list()) | set(disabled))
    base = pl.DataFrame(
        {
            "endpoint": names,
            "enabled": [n not in disabled for n in names],
            "why disabled": [disabled.get(n) for n in names],
        },
        schema={"endpoint": pl.Utf8(), "enabled": pl.Boolean(), "why disabled": pl.Utf8()},
    )
    return base.join(counts, on="endpoint", how="left").fill_null(0)
