"""Alerts and actions: every alert, filterable; the outbox's delivery state per endpoint,
shadow-mode actions marked as such; the breaker state per session; redeliver and re-enable
(the only writes the explorer makes, through the CLI's own functions)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import streamlit as st

from dashboards.context import Context
from dashboards.markdown import escape
from dashboards.store_view import alerts_table, deliveries_table, endpoint_states, sessions_table
from dashboards.views.nav import open_session
from models.errors import UserError
from trajwatch.actions.operations import enable, redeliver


def render(ctx: Context) -> None:
    st.title("Alerts and actions")
    store = ctx.store
    alerts = store.alerts(superseded=True)  # the audit trail: superseded ones marked
    outbox = store.outbox()
    deliveries = outbox.list()
    if not alerts and not deliveries:
        st.info(f"No alerts in the store (`{ctx.shown_url}`).")
        return
    table = alerts_table(alerts, deliveries)
    cols = st.columns([2, 2, 2, 3])
    detectors = cols[0].multiselect("Detector", sorted(set(table["detector"])), key="a_det")
    severities = cols[1].multiselect("Severity", sorted(set(table["severity"])), key="a_sev")
    actions = cols[2].multiselect("Action", sorted(set(table["action"])), key="a_act")
    search = cols[3].text_input("Session or reason contains", key="a_search")
    shown = table
    if detectors:
        shown = shown.filter(pl.col("detector").is_in(detectors))
    if severities:
        shown = shown.filter(pl.col("severity").is_in(severities))
    if actions:
        shown = shown.filter(pl.col("action").is_in(actions))
    if search:
        needle = search.lower()
        shown = shown.filter(
            pl.concat_str(["session_id", "reason"], separator=" ")
            .str.to_lowercase()
            .str.contains(needle, literal=True)
        )
    st.caption(f"{shown.height} of {table.height} alerts")
    st.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={"reason": st.column_config.TextColumn(width="large")},
        key="alerts_table",
    )
    if shown.height:
        pick, go = st.columns([4, 1])
        chosen = pick.selectbox(
            "Open an alert's session",
            shown["alert_id"].to_list(),
            format_func=lambda i: _label(shown, i),
            key="a_open",
        )
        if go.button("Open", key="a_open_button") and chosen:
            row = shown.filter(pl.col("alert_id") == chosen).row(0, named=True)
            open_session(row["session_id"], chosen)

    _breakers(ctx)
    _outbox(ctx)


def _label(table: pl.DataFrame, alert_id: str) -> str:
    row = table.filter(pl.col("alert_id") == alert_id).row(0, named=True)
    return f"[{row['severity']}] {row['detector']} · {row['session_id']} · step {row['onset_step']}"


def _breakers(ctx: Context) -> None:
    store = ctx.store
    deliveries = store.outbox().list()
    alerts = store.alerts()
    frame = sessions_table(store.session_activity(), alerts, deliveries)
    stopped = frame.filter(pl.col("breaker") != "-").select(
        "session_id", "agent", "state", "breaker"
    )
    st.subheader("Breaker state")
    if stopped.is_empty():
        st.caption("No stopping action (kill, rollback) was decided for any session.")
    else:
        not_sent = stopped.filter(pl.col("breaker").str.ends_with(" not sent")).height
        if not_sent and not deliveries:
            st.warning(
                f"The detectors decided a kill or rollback for {not_sent} sessions, but no "
                "webhook endpoint is configured: nothing was sent to a breaker and those "
                "agents were not stopped. Set TRAJWATCH_WEBHOOK_URL and "
                "TRAJWATCH_WEBHOOK_SECRET (or [webhooks.NAME]) for `trajwatch serve`."
            )
        elif not_sent:
            st.caption(
                f"{not_sent} sessions had a kill or rollback decided that was not sent: the "
                "action policy sent nothing for it, or no endpoint was configured when it "
                "was raised."
            )
        st.dataframe(stopped, hide_index=True, width="stretch", key="breakers_table")
    st.caption(
        "What the store knows: the stopping actions sent to the breaker. trajwatch's "
        "reference breaker keeps its own state (`trajwatch breaker`)."
    )


def _outbox(ctx: Context) -> None:
    outbox = ctx.store.outbox()
    table = deliveries_table(outbox.list())
    disabled = {e.name: e.reason for e in outbox.endpoints() if not e.enabled}
    st.subheader("Deliveries")
    done = st.session_state.pop("o_result", None)
    if done is not None:
        (st.success if done[0] == "ok" else st.error)(escape(done[1]))
    if table.is_empty():
        st.caption("The outbox is empty: no webhook endpoint is configured, or nothing fired.")
        return
    shadow = table.filter(pl.col("mode") == "shadow").height
    if shadow:
        st.caption(f"{shadow} actions in shadow mode: decided and recorded, never sent.")
    statuses = st.multiselect("Status", sorted(set(table["status"])), key="o_status")
    shown = table.filter(pl.col("status").is_in(statuses)) if statuses else table
    st.dataframe(
        shown.with_columns(
            pl.when(pl.col("mode") == "shadow")
            .then(pl.lit("shadow (not sent)"))
            .otherwise(pl.col("mode"))
            .alias("mode")
        ),
        hide_index=True,
        width="stretch",
        key="deliveries_table",
    )
    st.markdown("**Endpoints**")
    st.dataframe(
        endpoint_states(table, disabled), hide_index=True, width="stretch", key="endpoints"
    )

    resend = [
        i
        for i, s in zip(table["delivery_id"], table["status"], strict=True)
        if s not in ("shadow", "suppressed")
    ]
    left, right = st.columns(2)
    with left.form("redeliver"):
        ids = st.multiselect("Redeliver (same webhook-id)", resend, key="o_ids")
        dead = st.checkbox("every dead delivery", key="o_dead")
        if st.form_submit_button("Redeliver"):
            _write(
                lambda: (
                    f"{redeliver(ctx.store, ids, dead=dead)} deliveries due again; "
                    "a running dispatcher sends them"
                )
            )
    with right.form("enable"):
        name = st.selectbox("Re-enable endpoint", sorted(disabled) or ["-"], key="o_endpoint")
        if st.form_submit_button("Re-enable", disabled=not disabled):
            _write(
                lambda: (
                    f"endpoint {name} enabled; {enable(ctx.store, name)} held deliveries due again"
                )
            )


def _write(action: Callable[[], str]) -> None:
    try:
        st.session_state["o_result"] = ("ok", action())
    except UserError as error:
        st.session_state["o_result"] = ("error", str(error))
    st.rerun()  # the tables above show the new state
