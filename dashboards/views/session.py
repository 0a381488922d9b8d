"""Session view: what one agent did and why it was stopped — timeline, cumulative tokens
and cost, compactions and checkpoints, egress by host class, each detector's score over
the steps with its thresholds, alerts with their evidence, step details, the sub-goal
graph, and the debug bundle. While the session is live the view refreshes itself, as the
Sessions page does."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

import polars as pl
import streamlit as st

from dashboards import charts
from dashboards.bundle import bundle_zip, folder_name
from dashboards.context import Context
from dashboards.markdown import escape
from dashboards.session_view import (
    DetectorReplay,
    StoredSeries,
    Subgoals,
    alert_marks,
    evidence_table,
    graph_layout,
    own_evidence,
    peer_sessions,
    replay_detectors,
    score_lines,
    side_by_side,
    step_details,
    steps_table,
    stored_series,
    subgoals,
    threshold_lines,
)
from dashboards.store_view import alerts_table, breaker_state
from models.records import Alert, Step
from trajwatch.listing import session_state, stopped

REFRESH_S = 5.0
"""How often the view reloads while its session is live (the Sessions page's period)."""


@st.cache_data(show_spinner="Replaying the detectors over the stored steps…", max_entries=32)
def _replayed(
    url: str,
    session_id: str,
    last_step: str,
    count: int,
    config: str,
    _steps: Sequence[Step],
    _ctx: Context,
) -> DetectorReplay:
    """Cached by session and its last stored step: a live session's new steps replay again."""
    return replay_detectors(_steps, _ctx.detectors)


@st.cache_data(show_spinner=False, max_entries=32)
def _stored(
    url: str,
    session_id: str,
    last_step: str,
    count: int,
    config: str,
    _steps: Sequence[Step],
    _ctx: Context,
) -> StoredSeries | None:
    """The scores the pipeline stored (None: replay), cached as :func:`_replayed`."""
    chunks = [data for _, _, data in _ctx.store.score_chunks(session_id)]
    cursor = _ctx.store.session_cursor(session_id)
    state = cursor.state if cursor is not None else None
    return stored_series(chunks, _steps, _ctx.detectors, state)


@st.cache_data(show_spinner=False, max_entries=32)
def _subgoals_of(
    url: str, session_id: str, last_step: str, count: int, _steps: Sequence[Step]
) -> Subgoals:
    """Cached as :func:`_replayed`: the page's widgets rerun it, a live session's new
    steps rebuild it."""
    return subgoals(_steps)


def render(ctx: Context) -> None:
    store = ctx.store
    infos = store.sessions()
    if not infos:
        st.title("Session")
        st.info(f"No sessions in the store yet (`{ctx.shown_url}`).")
        return
    ids = [i.session_id for i in infos]
    wanted = st.query_params.get("session")
    if wanted and wanted not in ids:
        st.warning(f"There is no session {escape(wanted)} in the store; showing another.")
    index = ids.index(wanted) if wanted in ids else 0
    session_id = st.selectbox("Session", ids, index=index, key=f"pick_{wanted}")
    if session_id != wanted:
        st.query_params["session"] = session_id
        if "alert" in st.query_params:  # it named an alert of the session left
            del st.query_params["alert"]
    info = next(i for i in infos if i.session_id == session_id)
    if info.ended_ts is None:
        st.caption(f"This session is live: refreshing every {REFRESH_S:.0f} s.")
        _refreshing(ctx, session_id)
    else:
        _static(ctx, session_id)


@st.fragment(run_every=None)
def _static(ctx: Context, session_id: str) -> None:
    _show(ctx, session_id)


@st.fragment(run_every=REFRESH_S)
def _refreshing(ctx: Context, session_id: str) -> None:
    if not _show(ctx, session_id):
        st.rerun()  # it ended: the whole page again, which stops the timer


def _show(ctx: Context, session_id: str) -> bool:
    """The session's view, read afresh from the store; whether it is still live."""
    store = ctx.store
    info = next((i for i in store.sessions() if i.session_id == session_id), None)
    if info is None:
        st.warning(f"The session {escape(session_id)} is no longer in the store.")
        return False
    steps = store.steps(session_id)
    alerts = store.alerts([session_id])
    deliveries = [d for d in store.outbox().list() if d.session_id == session_id]
    table = steps_table(steps)

    # the session id, goal and agent name are the agent's own words: text, never Markdown
    st.title(f"Session {escape(session_id)}")
    if info.goal:
        st.markdown(f"**Goal:** {escape(info.goal)}")
    live = info.ended_ts is None
    state = session_state(info, stopped(deliveries).get(session_id))
    st.markdown(
        f"**Agent:** {escape(info.agent or '-')} · **State:** {state} · "
        f"**Breaker:** {breaker_state(deliveries, alerts)}"
    )
    m = st.columns(4)
    m[0].metric("Steps", len(steps))
    m[1].metric("Tokens", f"{int(table['tokens'].sum()):,}" if len(steps) else 0)
    m[2].metric("Cost", f"${float(table['cost'].sum()):.4f}" if len(steps) else "$0")
    m[3].metric(
        "Model sessions",
        (int(table.select(pl.col("model_session").max()).item()) + 1) if len(steps) else 0,
    )
    if not steps:
        st.info("This session has no stored steps yet.")
        return live

    st.download_button(
        "⬇ Download debug bundle (.zip)",
        data=lambda: bundle_zip(session_id, steps, alerts),  # built when clicked
        file_name=f"{folder_name(session_id)}.zip",
        mime="application/zip",
        help="session.jsonl, trace.json, tool_calls.csv, alerts.json — unzip and "
        "`trajwatch replay` the folder",
        key="bundle",
    )

    focus = st.query_params.get("alert")
    evidence = evidence_table(alerts)
    alert_rows = alerts_table(alerts, deliveries)
    st.altair_chart(charts.timeline(table, evidence, alert_rows), width="stretch")
    _alerts(alerts, focus)
    _workspace(ctx, session_id, alerts)
    st.altair_chart(charts.cumulative(table))
    egress = charts.egress(table)
    if egress is not None:
        st.altair_chart(egress, width="stretch")

    key = (ctx.settings.db_url, session_id, steps[-1].step_id, len(steps), str(ctx.config_path))
    stored = _stored(*key, steps, ctx)
    series: DetectorReplay | StoredSeries
    if stored is None:
        series = _replayed(*key, steps, ctx)
        how = (
            "replayed now through the configured detectors (the pipeline's own code: this "
            "session was stored without its scores, or with another detector set)"
        )
    elif stored.rolled:
        series = stored
        how = (
            "as the pipeline computed it when it judged the step (stored with its "
            f"checkpoints; the last {stored.rolled} steps, past the last checkpoint, "
            "rolled forward from it now)"
        )
    else:
        series = stored
        how = "as the pipeline computed it when it judged the step (stored with its checkpoints)"
    lines = score_lines(series)
    st.altair_chart(
        charts.scores(lines, threshold_lines(series), alert_marks(lines, alerts)),
        width="stretch",
    )
    st.caption(
        f"Each detector's score after every step, {how}; dashed: the thresholds where "
        "its alerts fire, by severity; points: the stored alerts, where they were raised."
    )
    if st.toggle(
        "Check the config: do the detectors replayed over these steps raise the stored alerts?",
        key="d_replay",
    ):
        _replay_note(alerts, _replayed(*key, steps, ctx))

    _details(session_id, steps, table, alerts, focus, info.started_ts)
    _subgoals(_subgoals_of(*key[:4], steps))
    return live


def _alerts(alerts: Sequence[Alert], focus: str | None) -> None:
    st.subheader(f"Alerts ({len(alerts)})")
    if not alerts:
        st.caption("No detector raised an alert on this session.")
        return
    for a in alerts:
        colour = {"critical": "red", "warn": "orange"}.get(str(a.severity), "gray")
        refs = ", ".join(
            f"step {e.get('seq')} ({escape(e.get('source_ref'))})"
            + (f" of session {escape(e['session_id'])}" if e not in own_evidence(a) else "")
            for e in a.evidence
        )
        box = st.container(border=True)
        head = (
            f":{colour}[**● {str(a.severity).upper()}**] **{a.detector}** · score {a.score:.2f}"
            f" · action **{a.action}**"
        )
        if a.alert_id == focus:
            head = ":blue-background[▶ the alert the link names]  " + head
        box.markdown(head)
        box.markdown(escape(a.reason))
        box.caption(
            f"onset: step {a.onset_seq} · raised at step {a.raised_seq} · evidence: {refs}"
            + (f" · rollback to checkpoint {escape(a.checkpoint_id)}" if a.checkpoint_id else "")
            + f" · id {a.alert_id}"
        )


def _workspace(ctx: Context, session_id: str, alerts: Sequence[Alert]) -> None:
    """The sessions a cross-run alert names, side by side with this one: where each works
    and their tool calls in one time order around the evidence."""
    peers = peer_sessions(alerts)
    if not peers:
        return
    names = [session_id, *peers]
    infos = {i.session_id: i for i in ctx.store.sessions(names)}
    st.subheader(f"Workspace: this session and {len(peers)} other run(s) side by side")
    columns = st.columns(len(names))
    for column, sid in zip(columns, names, strict=True):
        info = infos.get(sid)
        column.markdown(f"**{'this session' if sid == session_id else 'session'}** `{escape(sid)}`")
        if info is not None:
            place = " · ".join(
                escape(v) for v in (info.agent, info.host, info.workspace, info.branch) if v
            )
            column.caption(place or "no workspace facts")
        if sid != session_id:
            column.link_button("Open", f"?page=session&session={quote(sid)}")
    steps = {sid: ctx.store.steps(sid) for sid in names}
    related = [*alerts, *ctx.store.alerts(peers)]
    st.dataframe(
        side_by_side(steps, related), hide_index=True, width="stretch", key="workspace_table"
    )
    st.caption(
        "Each run's tool calls in one event-time order, ten minutes either side of the "
        "evidence; evidence: a call a cross-run alert names."
    )


def _replay_note(alerts: Sequence[Alert], replayed: DetectorReplay) -> None:
    stored = {a.alert_id for a in alerts}
    again = {a.alert_id for a in replayed.alerts}
    if stored == again:
        st.success(
            f"Replayed through the configured detectors (the pipeline's own code), the "
            f"stored steps raise exactly the stored alerts ({len(stored)}, same ids)."
        )
    else:
        st.warning(
            f"Replayed with this config, the detectors raise {len(again - stored)} alerts the "
            f"store does not have and not {len(stored - again)} it has: the config differs "
            "from the one the alerts were raised with."
        )
    for failure in replayed.failures[:5]:
        st.caption(f"detector failed: {escape(failure)}")


def _details(
    session_id: str,
    steps: Sequence[Step],
    table: pl.DataFrame,
    alerts: Sequence[Alert],
    focus: str | None,
    started_ts: int | None,
) -> None:
    st.subheader("Steps")
    kinds = st.multiselect("Kinds", sorted(set(table["kind"].to_list())), key="d_kinds")
    shown = table.filter(pl.col("kind").is_in(kinds)) if kinds else table
    evidence = {int(e.get("seq", -1)) for a in alerts for e in own_evidence(a)}
    st.dataframe(
        shown.with_columns(pl.col("seq").is_in(list(evidence)).alias("evidence")).select(
            "seq",
            "evidence",
            pl.col("ts").alias("time (UTC)"),
            "kind",
            "tool",
            "cluster",
            "status",
            "tokens",
            "cum_tokens",
            "cum_cost",
            "model_session",
            "egress_host",
            "host_class",
            "preview",
        ),
        hide_index=True,
        width="stretch",
        height=320,
        key="steps_table",
    )
    default = next((a.onset_seq for a in alerts if a.alert_id == focus), None)
    if default is None:
        default = alerts[0].onset_seq if alerts else 0
    seq = st.number_input(
        "Step details (seq)",
        min_value=0,
        max_value=len(steps) - 1,
        value=min(max(default, 0), len(steps) - 1),
        step=1,
        key=f"d_seq:{session_id}:{focus}",
    )
    step = steps[int(seq)]
    if int(seq) in evidence:
        st.markdown(":red[**This step is evidence of an alert.**]")
    start = started_ts if started_ts is not None else min(s.ts for s in steps)
    st.json(step_details(step, start), expanded=True)


def _subgoals(found: Subgoals) -> None:
    st.subheader("Sub-goals and action clusters")
    if found.nodes.is_empty():
        st.caption("No tool calls: no action clusters.")
        return
    # the graph gets the page's width (in a column it was wider than the column, and cut)
    st.altair_chart(
        charts.subgoal_graph(found.nodes, found.edges, graph_layout(found.graph)), width="stretch"
    )
    st.caption(
        "A node is a run of related tool calls (the same action cluster, or the paths the run "
        "already touched), named by the cluster it started in; ×N counts its calls. A line is a "
        "move from one run to the next (wider: more moves); coming back to a node is a revisit."
    )
    st.dataframe(found.clusters, hide_index=True, width="stretch", key="clusters_table")
