"""One session, as the session page shows it: polars tables computed from its stored steps.

- :func:`steps_table`: every step with its kind, tool, action cluster, cumulative tokens
  and cost, model session, the egress host and its class, and short redacted previews;
- :func:`score_lines`: each detector's score over the steps;
- :func:`replay_detectors`: the stored steps fed, in order, through fresh clones of the
  configured detectors — the same objects and the same per-step view
  (:func:`features.text.analysed_step`) the pipeline uses, no second implementation — to
  check that today's config raises the stored alerts (same ids);
- :func:`subgoals`: the sub-goal graph and action clusters, rebuilt by the pipeline's own
  :class:`features.trajectory.TrajectoryFeatures` over the session's tool calls.

Detectors report a score only with an alert: the score a detector "has" at a step is the
score of its strongest finding so far (0 before the first), which the stored alerts give
exactly (a replay raises the same alerts: :func:`replay_detectors`, and the tests, check
it). A threshold is drawn where a detector's parameters name one (``budget_overrun``:
``warn_fraction`` and 1.0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import polars as pl

from detectors.egress_hosts import DEFAULT_ALLOWED_HOSTS, DEFAULT_SINK_HOSTS
from detectors.registry import DetectorSet
from features.hosts import host_in
from features.text import analysed_step
from features.trajectory import TrajectoryFeatures
from models.records import Alert, Step, StepKind

PREVIEW_CHARS = 160
"""Characters of an argument, result or text shown in the step table (the whole field is
in the step details)."""

STEP_COLUMNS = pl.Schema(
    {
        "seq": pl.Int64(),
        "ts": pl.Datetime("us", "UTC"),
        "kind": pl.Utf8(),
        "tool": pl.Utf8(),
        "cluster": pl.Int64(),
        "progress": pl.Float64(),
        "status": pl.Utf8(),
        "tokens": pl.Int64(),
        "cost": pl.Float64(),
        "model_session": pl.Int64(),
        "egress_host": pl.Utf8(),
        "host_class": pl.Utf8(),
        "checkpoint": pl.Utf8(),
        "compaction": pl.Utf8(),
        "preview": pl.Utf8(),
        "step_id": pl.Utf8(),
        "source_ref": pl.Utf8(),
    }
)


def host_class(host: str | None) -> str | None:
    """``allowed`` (a registry, docs, code host or search engine of the egress detector's
    default list), ``sink`` (a paste bin, file drop, request catcher or tunnel), else
    ``other``; None without a host."""
    if not host:
        return None
    host = host.lower()
    if host_in(host, DEFAULT_SINK_HOSTS):
        return "sink"
    if host_in(host, DEFAULT_ALLOWED_HOSTS):
        return "allowed"
    return "other"


def _egress_host(step: Step) -> str | None:
    if step.egress_host:
        return step.egress_host
    targets = step.detail.get("egress") if step.kind == StepKind.TOOL_CALL else None
    if isinstance(targets, list) and targets and isinstance(targets[0], Mapping):
        host = targets[0].get("host")
        return str(host) if host else None
    return None


def _preview(step: Step) -> str:
    text = step.arguments or step.error or step.result or step.text or step.egress_url or ""
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _compaction(step: Step) -> str | None:
    if step.kind != StepKind.COMPACTION:
        return None
    before, after = step.detail.get("tokens_before"), step.detail.get("tokens_after")
    how = "inferred" if step.detail.get("inferred") else "explicit"
    return f"{how} {before or '?'}→{after or '?'} tokens"


def steps_table(steps: Sequence[Step]) -> pl.DataFrame:
    """One row per step in seq order, plus ``cum_tokens`` and ``cum_cost`` (running sums
    of tokens in+out and of cost)."""
    rows: list[dict[str, Any]] = []
    for s in steps:
        host = _egress_host(s)
        cluster = s.detail.get("cluster")
        progress = s.detail.get("progress")
        rows.append(
            {
                "seq": s.seq,
                "ts": s.ts // 1000,
                "kind": str(s.kind),
                "tool": s.tool,
                "cluster": cluster if isinstance(cluster, int) else None,
                "progress": float(progress) if isinstance(progress, int | float) else None,
                "status": s.status,
                "tokens": (s.tokens_in or 0) + (s.tokens_out or 0),
                "cost": s.cost or 0.0,
                "model_session": s.model_session,
                "egress_host": host,
                "host_class": host_class(host),
                "checkpoint": str(s.detail.get("checkpoint_id"))
                if s.kind == StepKind.CHECKPOINT
                else None,
                "compaction": _compaction(s),
                "preview": _preview(s),
                "step_id": s.step_id,
                "source_ref": s.source_ref,
            }
        )
    frame = pl.DataFrame(
        rows, schema={**STEP_COLUMNS, "ts": pl.Int64()}, orient="row" if not rows else None
    )
    return frame.with_columns(
        pl.from_epoch(pl.col("ts"), time_unit="us").dt.replace_time_zone("UTC").alias("ts"),
        pl.col("tokens").cum_sum().alias("cum_tokens"),
        pl.col("cost").cum_sum().alias("cum_cost"),
    )


def evidence_table(alerts: Sequence[Alert]) -> pl.DataFrame:
    """One row per (alert, evidence step): what to highlight on the timeline."""
    rows = [
        {
            "alert_id": a.alert_id,
            "detector": a.detector,
            "severity": str(a.severity),
            "seq": int(ref.get("seq", -1)),
            "step_id": str(ref.get("step_id", "")),
            "onset": int(ref.get("seq", -1)) == a.onset_seq,
        }
        for a in alerts
        for ref in a.evidence
    ]
    return pl.DataFrame(
        rows,
        schema={
            "alert_id": pl.Utf8(),
            "detector": pl.Utf8(),
            "severity": pl.Utf8(),
            "seq": pl.Int64(),
            "step_id": pl.Utf8(),
            "onset": pl.Boolean(),
        },
    )


def score_lines(
    alerts: Sequence[Alert], detectors: Sequence[str], first: int, last: int
) -> pl.DataFrame:
    """``detector, seq, score``: each of ``detectors``' score over the steps ``first`` to
    ``last`` — the score of its strongest alert raised so far (0 before the first), at the
    steps where it changes and at both ends."""
    names = sorted({*detectors, *(a.detector for a in alerts)})
    points = [(name, first, 0.0) for name in names]
    points += [(a.detector, a.raised_seq, a.score) for a in alerts]
    best = {
        name: max((a.score for a in alerts if a.detector == name), default=0.0) for name in names
    }
    points += [(name, last, best[name]) for name in names]
    return (
        pl.DataFrame(
            points,
            schema={"detector": pl.Utf8(), "seq": pl.Int64(), "score": pl.Float64()},
            orient="row",
        )
        .group_by("detector", "seq")
        .agg(pl.col("score").max())
        .sort("detector", "seq")
        .with_columns(pl.col("score").cum_max().over("detector"))
    )


def thresholds(detectors: DetectorSet) -> pl.DataFrame:
    """``detector, level, score``: the thresholds the detectors' parameters name."""
    return _thresholds(detectors.prototypes)


@dataclass(frozen=True, slots=True)
class DetectorReplay:
    """What the configured detectors raise on a session's stored steps, replayed now."""

    alerts: list[Alert]
    """The alerts the replay raised, in the order raised."""
    failures: list[str]
    """``detector at step N: error`` for each detector that raised (the pipeline skips it)."""


def replay_detectors(steps: Sequence[Step], detectors: DetectorSet) -> DetectorReplay:
    """Feed ``steps`` (one session, seq order) through fresh clones of ``detectors``, as the
    pipeline feeds them (:func:`features.text.analysed_step`, a failing detector skipped)."""
    session = detectors.for_session()
    raised: list[Alert] = []
    failures: list[str] = []
    for step in steps:
        view = analysed_step(step)
        for detector in session:
            try:
                raised.extend(detector.update(view))
            except Exception as error:  # the pipeline dead-letters a detector's failure
                failures.append(f"{detector.name} at step {step.seq}: {type(error).__name__}")
    return DetectorReplay(raised, failures)


def _thresholds(session: Sequence[Any]) -> pl.DataFrame:
    rows = []
    for detector in session:
        params = detector.get_params()
        if "warn_fraction" in params:
            rows.append((detector.name, "warn", float(params["warn_fraction"])))
            rows.append((detector.name, "critical", 1.0))
    return pl.DataFrame(
        rows,
        schema={"detector": pl.Utf8(), "level": pl.Utf8(), "score": pl.Float64()},
        orient="row",
    )


def compare_alerts(stored: Sequence[Alert], other: Sequence[Alert]) -> pl.DataFrame:
    """Alerts matched by id: ``in`` is ``both``, ``stored only`` or ``replay only``."""
    mine = {a.alert_id: a for a in stored}
    theirs = {a.alert_id: a for a in other}
    rows = []
    for alert_id in sorted(mine.keys() | theirs.keys()):
        a = mine.get(alert_id) or theirs[alert_id]
        where = (
            "both"
            if alert_id in mine and alert_id in theirs
            else ("stored only" if alert_id in mine else "replay only")
        )
        rows.append(
            {
                "alert_id": alert_id,
                "in": where,
                "session_id": a.session_id,
                "detector": a.detector,
                "severity": str(a.severity),
                "onset_step": a.onset_seq,
                "reason": a.reason,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "alert_id": pl.Utf8(),
            "in": pl.Utf8(),
            "session_id": pl.Utf8(),
            "detector": pl.Utf8(),
            "severity": pl.Utf8(),
            "onset_step": pl.Int64(),
            "reason": pl.Utf8(),
        },
    )


@dataclass(frozen=True, slots=True)
class Subgoals:
    graph: nx.DiGraph
    """Nodes are action clusters (``first_seq``, ``last_seq``, ``actions``, ``paths``),
    edges the moves between them (``weight``)."""
    clusters: pl.DataFrame
    """``cluster, calls, first_seq, last_seq, tools``: each action cluster's tool calls."""
    nodes: pl.DataFrame
    edges: pl.DataFrame


def subgoals(steps: Sequence[Step]) -> Subgoals:
    """The sub-goal graph and action clusters of the session, as the pipeline's own
    trajectory features build them over its tool calls."""
    features = TrajectoryFeatures()
    calls: list[tuple[int, int, str]] = []
    for step in steps:
        if step.kind != StepKind.TOOL_CALL:
            continue
        got = features.observe(analysed_step(step), seq=step.seq)
        calls.append((int(got.get("cluster", -1)), step.seq, step.tool or "?"))
    graph = features.subgoals.graph
    clusters = (
        pl.DataFrame(
            calls,
            schema={"cluster": pl.Int64(), "seq": pl.Int64(), "tool": pl.Utf8()},
            orient="row",
        )
        .group_by("cluster")
        .agg(
            pl.len().alias("calls"),
            pl.col("seq").min().alias("first_seq"),
            pl.col("seq").max().alias("last_seq"),
            pl.col("tool").unique().sort().str.join(", ").alias("tools"),
        )
        .sort("first_seq")
    )
    nodes = pl.DataFrame(
        [
            {
                "cluster": int(n),
                "first_seq": int(d.get("first_seq", 0)),
                "last_seq": int(d.get("last_seq", 0)),
                "actions": int(d.get("actions", 0)),
                "new_paths": int(d.get("paths", 0)),
            }
            for n, d in graph.nodes(data=True)
        ],
        schema={
            "cluster": pl.Int64(),
            "first_seq": pl.Int64(),
            "last_seq": pl.Int64(),
            "actions": pl.Int64(),
            "new_paths": pl.Int64(),
        },
    )
    edges = pl.DataFrame(
        [
            {"source": int(a), "target": int(b), "moves": int(d["weight"])}
            for a, b, d in graph.edges(data=True)
        ],
        schema={"source": pl.Int64(), "target": pl.Int64(), "moves": pl.Int64()},
    )
    return Subgoals(graph, clusters, nodes, edges)


def graph_layout(graph: nx.DiGraph) -> pl.DataFrame:
    """``cluster, x, y`` of a deterministic layout of the sub-goal graph (the nodes in
    the order first reached, on a circle: a loop shows as edges going back)."""
    import math

    order = sorted(graph.nodes, key=lambda n: (graph.nodes[n].get("first_seq", 0), n))
    count = max(len(order), 1)
    return pl.DataFrame(
        [
            {
                "cluster": int(n),
                "x": math.cos(2 * math.pi * i / count),
                "y": math.sin(2 * math.pi * i / count),
            }
            for i, n in enumerate(order)
        ],
        schema={"cluster": pl.Int64(), "x": pl.Float64(), "y": pl.Float64()},
    )
