"""The explorer's Altair charts, built from the tables of :mod:`dashboards.session_view`.
Pure functions: a table in, a chart out (the pages only place them)."""

from __future__ import annotations

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


def _points(frame: pl.DataFrame) -> list[dict[str, object]]:
    """Rows for Vega-Lite, datetimes as ISO text (Altair's own conversion goes through
    pandas, which the explorer does not need)."""
    out = frame.with_columns(
        [
            pl.col(c).dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
            for c, t in frame.schema.items()
            if isinstance(t, pl.Datetime)
        ]
    )
    return out.to_dicts()


def timeline(steps: pl.DataFrame, evidence: pl.DataFrame, alerts: pl.DataFrame) -> alt.LayerChart:
    """Steps by kind over seq, tool calls coloured by action cluster; model-session
    boundaries (compactions) and checkpoints as rules; alert evidence ringed, onsets as
    red rules labelled with the detector."""
    data = steps.select(
        "seq",
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
    x = alt.X("seq:Q", title="step", scale=alt.Scale(nice=False))
    y = alt.Y("kind:N", sort=KINDS, title=None)
    base = alt.Chart(alt.Data(values=_points(data)))
    marks = base.mark_circle(size=45, opacity=0.85).encode(
        x=x,
        y=y,
        color=alt.Color("colour:N", title="action cluster", scale=alt.Scale(scheme="tableau20")),
        tooltip=["seq:Q", "kind:N", "tool:N", "status:N", "model_session:Q", "preview:N"],
    )
    layers: list[alt.Chart] = [marks]
    bounds = data.filter(pl.col("compaction").is_not_null())
    if bounds.height:
        rules = alt.Chart(alt.Data(values=_points(bounds))).encode(x="seq:Q")
        layers.append(
            rules.mark_rule(strokeDash=[6, 3], color="#1f77b4").encode(
                tooltip=["seq:Q", "compaction:N"]
            )
        )
        layers.append(
            rules.mark_text(align="left", dx=3, dy=-6, color="#1f77b4").encode(
                y=alt.value(0), text=alt.value("⟲ compaction")
            )
        )
    checkpoints = data.filter(pl.col("checkpoint").is_not_null())
    if checkpoints.height:
        layers.append(
            alt.Chart(alt.Data(values=_points(checkpoints)))
            .mark_point(shape="triangle-up", size=120, color="#2ca02c", filled=True)
            .encode(x="seq:Q", y=y, tooltip=["seq:Q", "checkpoint:N"])
        )
    if evidence.height:
        ev = evidence.join(steps.select("seq", "kind"), on="seq", how="inner")
        layers.append(
            alt.Chart(alt.Data(values=_points(ev)))
            .mark_point(size=220, strokeWidth=2, filled=False)
            .encode(
                x="seq:Q",
                y=y,
                color=alt.Color("severity:N", scale=SEVERITY_COLOURS, title="alert"),
                tooltip=["detector:N", "severity:N", "seq:Q", "onset:N"],
            )
        )
    if alerts.height:
        onsets = alt.Chart(
            alt.Data(values=_points(alerts.select("detector", "severity", "onset_step", "reason")))
        )
        layers.append(
            onsets.mark_rule(strokeWidth=2).encode(
                x="onset_step:Q",
                color=alt.Color("severity:N", scale=SEVERITY_COLOURS),
                tooltip=["detector:N", "severity:N", "onset_step:Q", "reason:N"],
            )
        )
        layers.append(
            onsets.mark_text(align="left", dx=3, dy=8, fontWeight="bold").encode(
                x="onset_step:Q",
                y=alt.value(0),
                text="detector:N",
                color=alt.Color("severity:N", scale=SEVERITY_COLOURS),
            )
        )
    return (
        alt.layer(*layers)
        .properties(width=WIDTH, height=300, title="Timeline")
        .interactive(bind_y=False)
    )


def cumulative(steps: pl.DataFrame) -> alt.HConcatChart:
    """Cumulative tokens and cost over the steps, one colour band per model session."""
    data = alt.Data(values=_points(steps.select("seq", "cum_tokens", "cum_cost", "model_session")))
    base = alt.Chart(data).encode(x=alt.X("seq:Q", title="step"))
    colour = alt.Color("model_session:O", title="model session")
    tokens = base.mark_line(interpolate="step-after").encode(
        y=alt.Y("cum_tokens:Q", title="tokens (cumulative)"),
        color=colour,
        tooltip=["seq:Q", "cum_tokens:Q", "model_session:O"],
    )
    cost = base.mark_line(interpolate="step-after").encode(
        y=alt.Y("cum_cost:Q", title="cost $ (cumulative)"),
        color=colour,
        tooltip=["seq:Q", "cum_cost:Q"],
    )
    return alt.hconcat(
        tokens.properties(width=420, height=200), cost.properties(width=420, height=200)
    )


def egress(steps: pl.DataFrame) -> alt.Chart | None:
    """Steps that reach a host, by host class (sink, other, allowed); None without any."""
    data = steps.filter(pl.col("egress_host").is_not_null()).select(
        "seq", "kind", "egress_host", "host_class", "preview"
    )
    if data.is_empty():
        return None
    return (
        alt.Chart(alt.Data(values=_points(data)))
        .mark_square(size=70)
        .encode(
            x=alt.X("seq:Q", title="step"),
            y=alt.Y("egress_host:N", title=None),
            color=alt.Color("host_class:N", scale=HOST_COLOURS, title="host class"),
            shape=alt.Shape("kind:N"),
            tooltip=["seq:Q", "egress_host:N", "host_class:N", "kind:N", "preview:N"],
        )
        .properties(width=WIDTH, height=alt.Step(18), title="Egress by host class")
    )


def scores(scores: pl.DataFrame, thresholds: pl.DataFrame) -> alt.LayerChart:
    """Each detector's score over the steps (its strongest finding so far), one line per
    detector, with the thresholds the detectors' parameters name as dashed rules."""
    lines = (
        alt.Chart(alt.Data(values=_points(scores)))
        .mark_line(interpolate="step-after", point=True)
        .encode(
            x=alt.X("seq:Q", title="step"),
            y=alt.Y("score:Q", scale=alt.Scale(domain=[0, 1.05]), title="score"),
            color=alt.Color("detector:N", title="detector"),
            tooltip=["detector:N", "seq:Q", "score:Q"],
        )
    )
    layers: list[alt.Chart] = [lines]
    if thresholds.height:
        layers.append(
            alt.Chart(alt.Data(values=_points(thresholds)))
            .mark_rule(strokeDash=[4, 4], color="#555")
            .encode(y="score:Q", tooltip=["detector:N", "level:N", "score:Q"])
        )
    return alt.layer(*layers).properties(
        width=WIDTH, height=220, title="Detector scores over the steps"
    )


def subgoal_graph(nodes: pl.DataFrame, edges: pl.DataFrame, layout: pl.DataFrame) -> alt.LayerChart:
    """The sub-goal graph: action clusters placed on a circle in the order first reached,
    sized by actions; moves between them as lines (wider: more moves). Zoom and pan."""
    placed = nodes.join(layout, on="cluster")
    ends = edges.join(layout.rename({"cluster": "source", "x": "x1", "y": "y1"}), on="source").join(
        layout.rename({"cluster": "target", "x": "x2", "y": "y2"}), on="target"
    )
    links = (
        alt.Chart(alt.Data(values=_points(ends)))
        .mark_rule(opacity=0.5, color="#888")
        .encode(
            x=alt.X("x1:Q", axis=None),
            y=alt.Y("y1:Q", axis=None),
            x2="x2:Q",
            y2="y2:Q",
            strokeWidth=alt.StrokeWidth("moves:Q", scale=alt.Scale(range=[1, 8]), legend=None),
            tooltip=["source:N", "target:N", "moves:Q"],
        )
    )
    dots = (
        alt.Chart(alt.Data(values=_points(placed)))
        .mark_circle(opacity=0.9)
        .encode(
            x="x:Q",
            y="y:Q",
            size=alt.Size("actions:Q", scale=alt.Scale(range=[80, 900]), legend=None),
            color=alt.Color("cluster:N", scale=alt.Scale(scheme="tableau20"), legend=None),
            tooltip=["cluster:N", "actions:Q", "new_paths:Q", "first_seq:Q", "last_seq:Q"],
        )
    )
    labels = (
        alt.Chart(alt.Data(values=_points(placed)))
        .mark_text(dy=-14)
        .encode(x="x:Q", y="y:Q", text="cluster:N")
    )
    return (
        alt.layer(links, dots, labels)
        .properties(width=WIDTH, height=360, title="Sub-goal graph (action clusters)")
        .interactive()
    )
