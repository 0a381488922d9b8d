"""The banner on every page while a kill or rollback did not reach its breaker: the
agent it was meant to stop is still running, and nothing else on screen would say so
unless someone opened the Alerts page."""

from __future__ import annotations

import streamlit as st

from dashboards.context import Context
from dashboards.markdown import escape
from dashboards.store_view import undelivered_stops
from trajwatch.listing import stopped

SHOWN = 5
"""Sessions named in the banner; the rest are counted."""


def render(ctx: Context) -> None:
    """A red ``st.error`` naming each session whose kill or rollback is dead or held,
    with the reason; nothing when there is none."""
    outbox = ctx.store.outbox()
    rows = [*outbox.list("dead"), *outbox.list("disabled")]
    if not rows:
        return
    disabled = {e.name: e.reason for e in outbox.endpoints() if not e.enabled}
    failed = undelivered_stops(rows, disabled)
    if not failed:
        return
    stops = stopped(outbox.list("delivered"))
    running = sorted({f.session_id for f in failed if f.session_id not in stops})
    lines = [
        f"**{_count(len(failed), 'stopping action')} not delivered"
        + (f": {_count(len(running), 'agent')} not stopped.**" if running else ".**")
        + " Fix the endpoint, then redeliver (Alerts and actions, or `trajwatch deliveries "
        "redeliver`)."
    ]
    for f in failed[:SHOWN]:
        fate = (
            f" (another endpoint received a {stops[f.session_id].split()[0]})"
            if f.session_id in stops
            else ""
        )
        lines.append(
            f"- **{f.action}** of session {escape(f.session_id)} to {escape(f.endpoint)}: "
            f"{escape(f.reason)}{fate}"
        )
    if len(failed) > SHOWN:
        lines.append(f"- … and {len(failed) - SHOWN} more")
    st.error("\n".join(lines), icon=":material/report:")


def _count(n: int, what: str) -> str:
    """``1 agent was``, ``2 agents were``."""
    return f"{n} {what} was" if n == 1 else f"{n} {what}s were"
