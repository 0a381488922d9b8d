"""The explorer's Altair charts, built from the tables of :mod:`dashboards.session_view`.
Pure functions: a table in, a chart out (the pages only place them).

Charts take the polars tables as they are: Streamlit sends each as an Arrow dataset beside
the spec. With the rows inlined in the spec (``alt.Data(values=...)``), which Altair
validates row by row, the session page of a 5,000-step session took 12 s to render; with
the tables, 1.1 s (``benchmarks/bench_explorer.py``, the same loaded machine).
"""

from __future__ import annotations

from typing import Literal

import altair as alt
import polars as pl

KINDS = [
    "start",
    "model_call",
    "tool_call",
    "tool_result",
    "egress",
    "approval",
    "checkpoint",
    "compaction",
    "error",
    "end",
]
SEVERITY_COLOURS = alt.Scale(
    domain=["critical", "warn", "info"], range=["#d62728", "#ff7f0e", "#7f7f7f"]
)
HOST_COLOURS = alt.Scale(
    domain=["sink", "other", "allowed"], range=["#d62728", "#9467bd", "#2ca02c"]
)
WIDTH = "container"
TIMELINE_HEIGHT = 300
LABEL_LINES = 4
"""Lines the timeline's alert labels are spread over, from the top."""


def _tips(*fields: str) -> list[alt.Tooltip]:
    """Tooltip channels for ``fields`` (shorthands). Channels are passed as objects, never
    as strings or ``alt.value``: Altair 6 turns each of those into its class through
    ``from_dict``, which hashes every schema class first (~3 ms a channel, ~0.15 s of the
    session page's render)."""
    return [alt.Tooltip(field) for field in fields]


def timeline(steps: pl.DataFrame, evidence: pl.DataFrame, alerts: pl.DataFrame) -> alt.LayerChart:
    """Steps by kind over seq, tool calls coloured by action cluster; model-session
    boundaries (compactions) and checkpoints as rules; alert evidence ringed, onsets as
    red rules labelled with the detector (stacked, so close onsets stay readable). Each
    step is drawn at its ``x`` (its seq; a step that arrived late where its time puts it,
    the tooltip saying where it was stored); the tooltip shows its time (UTC)."""
    data = steps.select(
        "seq",
        "x",
        "ts",
        "placed",
        "kind",
        "tool",
        "cluster",
        "status",
        "model_session",
        "preview",
        "step_id",
        "checkpoint",
        "compaction",
    ).with_columns(
        pl.when(pl.col("cluster").is_not_null())
        .then(pl.concat_str([pl.lit("cluster "), pl.col("cluster").cast(pl.Utf8)]))
        .otherwise(pl.lit("not a tool call"))
        .alias("colour")
    )
    # padded: the first and the last dot (a late start is drawn at -0.5) are not cut
    x = alt.X("x:Q", title="step", scale=alt.Scale(nice=False, padding=12))
    y = alt.Y("kind:N", sort=KINDS, title=None)
    base = alt.Chart(data)
    marks = base.mark_circle(size=45, opacity=0.85).encode(
        x=x,
        y=y,
        color=alt.Color("colour:N", title="action cluster", scale=_cluster_scale(data)),
        tooltip=[
            *_tips("seq:Q", "kind:N", "tool:N", "status:N"),
            alt.Tooltip("ts:T", title="time (UTC)", format="%Y-%m-%d %H:%M:%S"),
            *_tips("model_session:Q", "placed:N", "preview:N"),
        ],
    )
    layers: list[alt.Chart] = [marks]
    bounds = data.filter(pl.col("compaction").is_not_null())
    if bounds.height:
        rules = alt.Chart(bounds).encode(x=alt.X("x:Q"))
        layers.append(
            rules.mark_rule(strokeDash=[6, 3], color="#1f77b4").encode(
                tooltip=_tips("seq:Q", "compaction:N")
            )
        )
        layers.append(
            rules.mark_text(align="left", dx=3, dy=-4, color="#1f77b4", fontSize=10).encode(
                y=alt.YValue(TIMELINE_HEIGHT), text=alt.TextValue("compaction")
            )
        )
    checkpoints = data.filter(pl.col("checkpoint").is_not_null())
    if checkpoints.height:
        layers.append(
            alt.Chart(checkpoints)
            .mark_point(shape="triangle-up", size=120, color="#2ca02c", filled=True)
            .encode(x=alt.X("x:Q"), y=y, tooltip=_tips("seq:Q", "checkpoint:N"))
        )
    if evidence.height:
        ev = evidence.join(steps.select("seq", "x", "kind"), on="seq", how="inner")
        layers.append(
            alt.Chart(ev)
            .mark_point(size=220, strokeWidth=2, filled=False)
            .encode(
                x=alt.X("x:Q"),
                y=y,
                color=alt.Color("severity:N", scale=SEVERITY_COLOURS, title="alert"),
                tooltip=_tips("detector:N", "severity:N", "seq:Q", "onset:N"),
            )
        )
    if alerts.height:
        at = steps.select(pl.col("seq").alias("onset_step"), pl.col("x").alias("onset_x"))
        alerts = alerts.join(at, on="onset_step", how="left").with_columns(
            pl.col("onset_x").fill_null(pl.col("onset_step").cast(pl.Float64))
        )
        onsets = alt.Chart(alerts.select("detector", "severity", "onset_step", "onset_x", "reason"))
        layers.append(
            onsets.mark_rule(strokeWidth=2).encode(
                x=alt.X("onset_x:Q"),
                color=alt.Color("severity:N", scale=SEVERITY_COLOURS, legend=None),
                tooltip=_tips("detector:N", "severity:N", "onset_step:Q", "reason:N"),
            )
        )
        # labels right of their rule, or left of it in the last third (kept inside); one
        # line each from the top, in onset order, so onsets a few steps apart do not overlap
        last = int(steps.select(pl.col("seq").max()).item() or 0)
        labelled = (
            alerts.select("detector", "severity", "onset_step", "onset_x")
            .unique()
            .sort("onset_x", "detector")
            .with_row_index("line")
            .with_columns((8 + 13 * (pl.col("line") % LABEL_LINES)).alias("dy"))
        )
        sides: tuple[tuple[Literal["left", "right"], pl.DataFrame], ...] = (
            ("left", labelled.filter(pl.col("onset_step") < last * 2 / 3)),
            ("right", labelled.filter(pl.col("onset_step") >= last * 2 / 3)),
        )
        for side, rows in sides:
            for dy, line in rows.group_by("dy", maintain_order=True):
                layers.append(
                    alt.Chart(line)
                    .mark_text(
                        align=side, dx=3 if side == "left" else -3, dy=int(dy[0]), fontWeight="bold"
                    )
                    .encode(
                        x=alt.X("onset_x:Q"),
                        y=alt.YValue(0),
                        text=alt.Text("detector:N"),
                        color=alt.Color("severity:N", scale=SEVERITY_COLOURS, legend=None),
                    )
                )
    # the clusters' colours and the alerts' severities are two scales, with two legends
    return (
        alt.layer(*layers)
        .resolve_scale(color="independent")
        .properties(width=WIDTH, height=TIMELINE_HEIGHT, title="Timeline")
        .interactive(bind_y=False)
    )


CLUSTER_PALETTE = (
    "#1f77b4",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#ff7f0e",
    "#aec7e8",
    "#98df8a",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#9edae5",
    "#dbdb8d",
    "#ffbb78",
)
"""Action clusters' colours (no red: red is for alerts)."""


def _cluster_scale(data: pl.DataFrame) -> alt.Scale:
    """Grey for steps that are not tool calls, a palette colour per cluster."""
    clusters = sorted(
        {c for c in data["cluster"].to_list() if c is not None}, key=lambda c: (c < 0, c)
    )
    domain = ["not a tool call", *(f"cluster {c}" for c in clusters)]
    colours = [
        "#c7c7c7",
        *(CLUSTER_PALETTE[i % len(CLUSTER_PALETTE)] for i in range(len(clusters))),
    ]
    return alt.Scale(domain=domain, range=colours)


def cumulative(steps: pl.DataFrame) -> alt.HConcatChart:
    """Cumulative tokens and cost over the steps, one colour band per model session."""
    data = steps.select("seq", "cum_tokens", "cum_cost", "model_session")
    base = alt.Chart(data).encode(x=alt.X("seq:Q", title="step"))
    colour = alt.Color("model_session:O", title="model session")
    tokens = base.mark_line(interpolate="step-after").encode(
        y=alt.Y("cum_tokens:Q", title="tokens (cumulative)"),
        color=colour,
        tooltip=_tips("seq:Q", "cum_tokens:Q", "model_session:O"),
    )
    cost = base.mark_line(interpolate="step-after").encode(
        y=alt.Y("cum_cost:Q", title="cost $ (cumulative)"),
        color=colour,
        tooltip=_tips("seq:Q", "cum_cost:Q"),
    )
    return alt.hconcat(
        tokens.properties(width=330, height=180), cost.properties(width=330, height=180)
    )


def egress(steps: pl.DataFrame) -> alt.Chart | None:
    """Steps that reach a host, by host class (sink, other, allowed); None without any."""
    data = steps.filter(pl.col("egress_host").is_not_null()).select(
        "seq", "kind", "egress_host", "host_class", "preview"
    )
    if data.is_empty():
        return None
    span = [
        int(steps.select(pl.col("seq").min()).item() or 0),
        int(steps.select(pl.col("seq").max()).item() or 1),
    ]
    return (
        alt.Chart(data)
        .mark_square(size=70)
        .encode(
            x=alt.X("seq:Q", title="step", scale=alt.Scale(domain=span, nice=False)),
            y=alt.Y("egress_host:N", title=None),
            color=alt.Color("host_class:N", scale=HOST_COLOURS, title="host class"),
            shape=alt.Shape("kind:N"),
            tooltip=_tips("seq:Q", "egress_host:N", "host_class:N", "kind:N", "preview:N"),
        )
        .properties(width=WIDTH, height=alt.Step(18), title="Egress by host class")
    )


SCORES_WIDTH = 820
"""Pixels of each detector's row: a faceted chart cannot take its container's width."""


def scores(scores: pl.DataFrame, thresholds: pl.DataFrame, marks: pl.DataFrame) -> alt.FacetChart:
    """Each detector's score over the steps (held from one row to the next), one row per
    detector on a shared step axis, its thresholds as dashed lines coloured by severity,
    and the alerts it raised as points on its line.

    One table and three layers faceted by detector, not a chart per detector: Altair
    validates a spec layer by layer, and 8 detectors × 3 layers cost ~0.3 s of the
    session page's render (``benchmarks/bench_explorer.py``); the facet, a third of it."""
    frame = pl.concat(
        [
            scores.with_columns(
                pl.lit("score").alias("series"), pl.lit(None, pl.Utf8).alias("severity")
            ),
            thresholds.select(
                "detector",
                "seq",
                "score",
                pl.lit("threshold").alias("series"),
                pl.col("level").alias("severity"),
            ),
            marks.with_columns(pl.lit("alert").alias("series")).select(
                "detector", "seq", "score", "series", "severity"
            ),
        ],
        how="diagonal_relaxed",
    )
    last = int(frame.select(pl.col("seq").max()).item() or 0) if frame.height else 0
    x = alt.X("seq:Q", title="step", scale=alt.Scale(domain=[0, max(last, 1)], nice=False))
    y = alt.Y("score:Q", title=None, axis=alt.Axis(tickCount=3))
    series = alt.datum.series
    line = (
        alt.Chart()
        .mark_line(interpolate="step-after", color="#1f77b4")
        .encode(x=x, y=y, tooltip=_tips("detector:N", "seq:Q", "score:Q"))
        .transform_filter(series == "score")
    )
    lines = (
        alt.Chart()
        .mark_line(interpolate="step-after", strokeDash=[4, 4], strokeWidth=1)
        .encode(
            x=x,
            y=y,
            color=alt.Color("severity:N", scale=SEVERITY_COLOURS, title="threshold / alert"),
            detail=alt.Detail("severity:N"),
            tooltip=_tips("severity:N", "seq:Q", "score:Q"),
        )
        .transform_filter(series == "threshold")
    )
    points = (
        alt.Chart()
        .mark_point(size=60, filled=True)
        .encode(
            x=x,
            y=y,
            color=alt.Color("severity:N", scale=SEVERITY_COLOURS),
            tooltip=_tips("detector:N", "severity:N", "seq:Q", "score:Q"),
        )
        .transform_filter(series == "alert")
    )
    return (
        alt.layer(line, lines, points, data=frame)
        .properties(width=SCORES_WIDTH, height=55)
        .facet(
            row=alt.Row(
                "detector:N",
                title=None,
                header=alt.Header(labelOrient="top", labelAnchor="start", labelPadding=2),
            ),
            spacing=6,
        )
        .resolve_scale(y="independent")
        .properties(title="Detector scores over the steps")
    )


GRAPH_HEIGHT = 440
GRAPH_DOMAIN = [-1.45, 1.45]
"""The sub-goal graph's nodes sit on the unit circle, their labels at radius 1.22: the
domain leaves room for both (a node on the edge of the plot was cut in half)."""


def subgoal_graph(
    nodes: pl.DataFrame, edges: pl.DataFrame, layout: pl.DataFrame
) -> alt.LayerChart:
    """The sub-goal graph: action clusters placed on a circle in the order first reached
    (clockwise from the top), sized by actions, each labelled outside the circle with its
    tools and count; moves between them as lines (wider: more moves). The plot keeps its
    aspect and fills the page's width; zoom and pan."""
    placed = nodes.join(layout, on="cluster")
    at = layout.select("cluster", "x", "y")
    ends = edges.join(at.rename({"cluster": "source", "x": "x1", "y": "y1"}), on="source").join(
        at.rename({"cluster": "target", "x": "x2", "y": "y2"}), on="target"
    )
    x_scale = alt.Scale(domain=GRAPH_DOMAIN, nice=False, zero=False)
    y_scale = alt.Scale(domain=GRAPH_DOMAIN, nice=False, zero=False)
    links = (
        alt.Chart(ends)
        .mark_rule(opacity=0.45, color="#888")
        .encode(
            x=alt.X("x1:Q", axis=None, scale=x_scale),
            y=alt.Y("y1:Q", axis=None, scale=y_scale),
            x2=alt.X2("x2:Q"),
            y2=alt.Y2("y2:Q"),
            strokeWidth=alt.StrokeWidth("moves:Q", scale=alt.Scale(range=[1, 8]), legend=None),
            tooltip=_tips("source:N", "target:N", "moves:Q"),
        )
    )
    dots = (
        alt.Chart(placed)
        .mark_circle(opacity=0.9, stroke="white", strokeWidth=1)
        .encode(
            x=alt.X("x:Q", axis=None, scale=x_scale),
            y=alt.Y("y:Q", axis=None, scale=y_scale),
            size=alt.Size("actions:Q", scale=alt.Scale(range=[120, 1400]), legend=None),
            color=alt.Color("cluster:N", scale=alt.Scale(scheme="tableau20"), legend=None),
            tooltip=_tips(
                "cluster:N", "tools:N", "actions:Q", "new_paths:Q", "first_seq:Q", "last_seq:Q"
            ),
        )
    )
    labels = (
        alt.Chart(placed)
        .mark_text(fontSize=12, fontWeight="bold")
        .encode(
            x=alt.X("lx:Q", axis=None, scale=x_scale),
            y=alt.Y("ly:Q", axis=None, scale=y_scale),
            text=alt.Text("label:N"),
        )
    )
    return (
        alt.layer(links, dots, labels)
        .properties(
            width=WIDTH, height=GRAPH_HEIGHT, title="Sub-goal graph (action clusters)"
        )
        .configure_view(stroke=None)
        .interactive()
    )


