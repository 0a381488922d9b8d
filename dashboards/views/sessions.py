"""Sessions: live and finished sessions with their figures, breaker state and alert
badges; filters and search; refreshes itself while a session is live."""

from __future__ import annotations

import polars as pl
import streamlit as st

from dashboards.context import Context
from dashboards.store_view import filter_sessions, sessions_table
from dashboards.views.nav import open_session

REFRESH_S = 5.0
"""How often the table reloads while a session is live."""


def render(ctx: Context) -> None:
    st.title("Sessions")
    frame = _table(ctx)
    if frame.is_empty():
        st.info(
            "No sessions in the store yet. Replay recordings into it (`trajwatch replay PATH "
            f"--db {ctx.shown_url}`) or point agents at `trajwatch serve`."
        )
        return
    live = frame.filter(frame["state"] == "live").height
    cols = st.columns([3, 2, 2, 2, 1])
    search = cols[0].text_input("Search", placeholder="session id, agent or goal", key="s_search")
    agents = cols[1].multiselect(
        "Agent", sorted({a for a in frame["agent"].to_list() if a}), key="s_agents"
    )
    states = cols[2].multiselect("State", sorted(set(frame["state"].to_list())), key="s_states")
    fired = sorted({d for row in frame["detectors"].to_list() for d in row})
    detectors = cols[3].multiselect("Detector fired", fired, key="s_detectors")
    alerted = cols[4].checkbox("Alerted only", key="s_alerted")
    st.session_state["_sessions_filters"] = (search, agents, states, detectors, alerted)
    _listing(ctx, live > 0)


@st.fragment(run_every=None)
def _static(ctx: Context) -> None:
    _show(ctx)


@st.fragment(run_every=REFRESH_S)
def _refreshing(ctx: Context) -> None:
    _show(ctx)


def _listing(ctx: Context, any_live: bool) -> None:
    if any_live:
        st.caption(f"Sessions are live: refreshing every {REFRESH_S:.0f} s.")
        _refreshing(ctx)
    else:
        _static(ctx)


def _table(ctx: Context) -> pl.DataFrame:
    store = ctx.store
    return sessions_table(store.session_activity(), store.alerts(), store.outbox().list())


def _show(ctx: Context) -> None:
    search, agents, states, detectors, alerted = st.session_state["_sessions_filters"]
    frame = filter_sessions(
        _table(ctx),
        search=search,
        agents=agents,
        states=states,
        detectors=detectors,
        alerted_only=alerted,
    )
    st.caption(f"{frame.height} sessions")
    st.dataframe(
        frame.select(  # what the engineer paged looks at first, first
            "session_id",
            "agent",
            "state",
            "breaker",
            "badges",
            "started",
            "duration_s",
            "steps",
            "tokens",
            "cost",
            "alerts",
            "critical",
            "warn",
            "goal",
        ),
        hide_index=True,
        width="stretch",
        column_config={
            "started": st.column_config.DatetimeColumn(
                "started (UTC)", format="YYYY-MM-DD HH:mm:ss"
            ),
            "duration_s": st.column_config.NumberColumn("duration (s)", format="%.1f"),
            "cost": st.column_config.NumberColumn("cost ($)", format="%.4f"),
            "badges": st.column_config.TextColumn("alerts by detector"),
            "goal": st.column_config.TextColumn("goal", width="large"),
        },
        key="sessions_table",
    )
    ids = frame["session_id"].to_list()
    if not ids:
        return
    pick, go = st.columns([4, 1])
    chosen = pick.selectbox("Open a session", ids, key="s_open")
    if go.button("Open", key="s_open_button", type="primary") and chosen:
        open_session(chosen)
