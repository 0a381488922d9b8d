"""The notebooks' figures (matplotlib, the ``notebooks`` extra), each saved as a PNG
that the notebook shows and the incident report links.

Figures are built on :class:`matplotlib.figure.Figure` directly — no pyplot, no global
state, no display backend — so they render the same in a kernel, a test or a script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from models.records import Alert

_SEVERITY_COLOURS = {"info": "tab:blue", "warn": "tab:orange", "critical": "tab:red"}


def save(figure: Figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` (PNG) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    return path


def sweep_figure(
    table: pl.DataFrame,
    x: str,
    *,
    series: str | None = None,
    picked: Mapping[str, Any] | None = None,
    title: str = "",
) -> Figure:
    """Three panels of a sweep (:func:`trajwatch.analysis.tuning.sweep`): precision against recall
    for every parameter set (the picked one ringed), detection delay (median and p90)
    against ``x``, and the false-kill and false-alarm rates against ``x``; with
    ``series``, one line per value of that parameter."""
    figure = Figure(figsize=(13, 3.8))
    pr, delay, kills = figure.subplots(1, 3)
    groups: Sequence[tuple[Any, pl.DataFrame]] = (
        [(key[0], part.sort(x)) for key, part in table.group_by([series], maintain_order=True)]
        if series
        else [(None, table.sort(x))]
    )
    for value, part in groups:
        label = f"{series}={value}" if series else None
        pr.scatter(part["recall"], part["precision"], label=label, alpha=0.7)
        delay.plot(part[x], part["median_delay"], marker="o", label=label)
        delay.plot(part[x], part["p90_delay"], marker="x", linestyle=":", color="grey")
        kills.plot(part[x], part["false_kill_rate"], marker="o", label=label)
        kills.plot(part[x], part["false_alarm_rate"], marker=".", linestyle=":", color="grey")
    if picked is not None:
        pr.scatter([picked["recall"]], [picked["precision"]], s=220, facecolors="none",
                   edgecolors="black", label="picked")
        delay.axvline(picked[x], color="black", linewidth=0.8)
        kills.axvline(picked[x], color="black", linewidth=0.8)
    pr.set(xlabel="recall", ylabel="precision", xlim=(-0.05, 1.05), ylim=(-0.05, 1.05),
           title="precision / recall per parameter set")
    delay.set(xlabel=x, ylabel="steps from onset to first alert",
              title="detection delay (median; p90 dotted)")
    kills.set(xlabel=x, ylabel="share of healthy sessions",
              title="false kills (false alarms dotted)")
    for axes in (pr, delay, kills):
        if series or picked is not None:
            axes.legend(fontsize="small")
        axes.grid(alpha=0.3)
    if title:
        figure.suptitle(title)
    return figure


def pr_curve_figure(curve: pl.DataFrame, average_precision: float, *, title: str = "") -> Figure:
    """The precision-recall curve over alert-score thresholds (``tuning.pr_curve``)."""
    figure = Figure(figsize=(4.5, 3.8))
    axes = figure.subplots()
    axes.step(curve["recall"], curve["precision"], where="post")
    axes.set(xlabel="recall", ylabel="precision", xlim=(-0.05, 1.05), ylim=(-0.05, 1.05),
             title=title or f"precision-recall over alert scores (AP {average_precision:.2f})")
    axes.grid(alpha=0.3)
    return figure


def calibration_figure(points: pl.DataFrame, *, title: str = "") -> Figure:
    """Raw alert score against calibrated probability, and the observed share of alerts
    on labelled sessions at each score (:func:`trajwatch.analysis.tuning.calibration_points`)."""
    figure = Figure(figsize=(4.5, 3.8))
    axes = figure.subplots()
    ordered = points.sort("score")
    axes.plot(ordered["score"], ordered["probability"], marker="o", label="calibrated")
    sizes = 10 + 20 * np.sqrt(ordered["alerts"].to_numpy())
    axes.scatter(ordered["score"], ordered["observed"], s=sizes, color="grey", alpha=0.6,
                 label="observed (size: alerts)")
    axes.plot([0, 1], [0, 1], linestyle=":", color="grey")
    axes.set(xlabel="raw score", ylabel="P(labelled failure)", xlim=(-0.05, 1.05),
             ylim=(-0.05, 1.05), title=title or "score calibration")
    axes.legend(fontsize="small")
    axes.grid(alpha=0.3)
    return figure


def burn_figure(burn: pl.DataFrame, alerts: Sequence[Alert], *, title: str = "") -> Figure:
    """Cumulative tokens by step (:func:`trajwatch.analysis.incident.token_burn`), each alert's
    onset (dotted) and raising step (solid) marked in its severity's colour."""
    figure = Figure(figsize=(9, 3.5))
    axes = figure.subplots()
    axes.plot(burn["seq"], burn["tokens_total"], marker=".", color="tab:purple")
    for alert in alerts:
        colour = _SEVERITY_COLOURS.get(str(alert.severity), "black")
        axes.axvline(alert.onset_seq, color=colour, linestyle=":", linewidth=1)
        axes.axvline(alert.raised_seq, color=colour, linewidth=1.2)
        axes.annotate(f"{alert.detector} ({alert.severity})", (alert.raised_seq, 0),
                      rotation=90, fontsize="x-small", va="bottom", ha="right")
    axes.set(xlabel="step (seq)", ylabel="tokens so far",
             title=title or "token burn (alert onset dotted, raised solid)")
    axes.grid(alpha=0.3)
    return figure


def subgoal_figure(graph: nx.DiGraph, *, title: str = "") -> Figure:
    """The sub-goal graph: a node per action cluster (size: its actions), an edge per
    move between segments (width: how often); labels give the cluster and its first
    step."""
    figure = Figure(figsize=(6, 4.5))
    axes = figure.subplots()
    axes.set_axis_off()
    if graph.number_of_nodes():
        layout = nx.spring_layout(graph, seed=7)
        sizes = [120 + 60 * graph.nodes[n].get("actions", 1) for n in graph.nodes]
        widths = [0.5 + graph.edges[e].get("weight", 1) for e in graph.edges]
        nx.draw_networkx(
            graph,
            pos=layout,
            ax=axes,
            node_size=sizes,
            width=widths,
            labels={n: f"{n}\n@{graph.nodes[n].get('first_seq', '?')}" for n in graph.nodes},
            font_size=7,
            node_color="tab:cyan",
            arrows=True,
        )
    axes.set_title(title or "sub-goal graph (cluster @ first step)")
    return figure
