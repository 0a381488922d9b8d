"""One session, as the session page shows it: polars tables computed from its stored steps.

- :func:`steps_table`: every step with its kind, tool, action cluster, cumulative tokens
  and cost, model session, the egress host and its class, and short redacted previews;
- :func:`stored_series`: each detector's ``score`` and ``thresholds`` after every step
  (the detector contract, :mod:`detectors.base`) as the pipeline computed them when it
  judged the steps: stored with its analysis checkpoints (:mod:`detectors.score_series`),
  and for a live session's steps past its last checkpoint, rolled forward from that
  checkpoint now (:func:`ingest.pipeline.session_state.roll_forward`, the pipeline's own restore);
- :func:`replay_detectors`: the stored steps fed, in order, through fresh clones of the
  configured detectors — the same objects and the same per-step view
  (:func:`features.text.clip.analysed_step`) the pipeline uses, no second implementation —
  recording the same scores and the alerts raised, which the page compares with the
  stored ones (same ids: today's config raises what the store holds). The page draws a
  replay's scores only for a session without stored scores (stored before they were);
- :func:`score_lines` / :func:`threshold_lines`: those scores and lines, one row where a
  value changes (drawn as steps, so nothing is lost), and :func:`alert_marks`, where on
  them each stored alert was raised;
- :func:`subgoals`: the sub-goal graph and action clusters, rebuilt by the pipeline's own
  :class:`features.session.trajectory.TrajectoryFeatures` over the session's tool calls.

Both ways give the same rows for the same config (a test checks it on the fixture
incidents); the stored ones cost a read instead of ~0.1 ms a step.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import polars as pl

from detectors.egress_gaming.hosts import DEFAULT_ALLOWED_HOSTS, DEFAULT_SINK_HOSTS
from detectors.registry import DetectorSet
from detectors.score_series import ScoreChunk, ScoreRecorder, decode_chunk
from features.calls.step_features import analysed_view
from features.session.trajectory import TrajectoryFeatures
from features.text.clip import analysed_step
from features.text.hosts import host_in
from ingest.pipeline.session_state import load_state, roll_forward
from models.records import Alert, Step, StepKind, step_to_json

LABEL_TOOLS_CHARS = 28
"""Characters of a cluster's tools in its label on the sub-goal graph (all in its tooltip)."""
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
        "x": pl.Float64(),
        "placed": pl.Utf8(),
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


def time_positions(steps: Sequence[Step]) -> list[float]:
    """Where each step (in seq order) is drawn on the timeline: at its seq, but a step that
    arrived late (older than a step placed before it) where its time puts it, half a step
    before the first earlier-placed step that is not older. A plain OTLP deployment's
    root span, which ends last, is the session's start: it is stored near the run's end
    and drawn first.

    >>> def at(seq, ts):
    ...     return Step(step_id=str(seq), session_id="s", kind=StepKind.TOOL_CALL, ts=ts, seq=seq)
    >>> time_positions([at(0, 10), at(1, 20), at(2, 30), at(3, 5), at(4, 25), at(5, 40)])
    [0.0, 1.0, 2.0, -0.5, 1.5, 5.0]
    """
    in_order_ts: list[int] = []
    in_order_seq: list[int] = []
    out: list[float] = []
    for step in steps:
        if not in_order_ts or step.ts >= in_order_ts[-1]:
            in_order_ts.append(step.ts)
            in_order_seq.append(step.seq)
            out.append(float(step.seq))
        else:
            after = in_order_seq[bisect.bisect_right(in_order_ts, step.ts)]
            out.append(after - 0.5)
    return out


def step_details(step: Step, start_ns: int | None) -> dict[str, Any]:
    """The step's fields as the details panel shows them: its times in UTC (ISO 8601, to
    the microsecond) rather than nanoseconds, how long after ``start_ns`` (the session's
    start) it happened and how long it took; the rest as stored (:func:`step_to_json`).

    >>> step = Step(step_id="s/1", session_id="s", kind=StepKind.TOOL_CALL,
    ...             ts=1_796_594_230_028_903_200, end_ts=1_796_594_230_303_833_000)
    >>> shown = step_details(step, 1_796_594_000_000_000_000)
    >>> shown["ts"], shown["after_start"], shown["took"]
    ('2026-12-06T21:57:10.028903Z', '3m 50.0s', '0.275 s')
    """
    shown: dict[str, Any] = {}
    for key, value in step_to_json(step).items():
        if key == "ts":
            shown["ts"] = _utc(step.ts)
            if start_ns is not None:
                shown["after_start"] = _span(step.ts - start_ns)
        elif key == "end_ts":
            shown["end_ts"] = None if step.end_ts is None else _utc(step.end_ts)
            if step.end_ts is not None:
                shown["took"] = f"{(step.end_ts - step.ts) / 1e9:.3f} s"
        else:
            shown[key] = value
    return shown


def _utc(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{rest // 1000:06d}Z"


def _span(ns: int) -> str:
    sign, ns = ("-" if ns < 0 else ""), abs(ns)
    minutes, seconds = divmod(ns / 1e9, 60)
    hours, minutes = divmod(int(minutes), 60)
    if hours:
        return f"{sign}{hours}h {minutes}m {seconds:.0f}s"
    return f"{sign}{minutes}m {seconds:.1f}s" if minutes else f"{sign}{seconds:.1f}s"


def steps_table(steps: Sequence[Step]) -> pl.DataFrame:
    """One row per step in seq order, plus ``cum_tokens`` and ``cum_cost`` (running sums
    of tokens in+out and of cost); ``x`` is where the timeline draws it
    (:func:`time_positions`) and ``placed`` says so for a step drawn away from its seq."""
    rows: list[dict[str, Any]] = []
    positions = time_positions(steps)
    for s, x in zip(steps, positions, strict=True):
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
                "x": x,
                "placed": None if x == s.seq else f"stored as step {s.seq}: it arrived late",
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


def own_evidence(alert: Alert) -> list[Mapping[str, Any]]:
    """The evidence references of ``alert`` that are steps of its own session (a
    cross-session alert also names another session's steps: :func:`peer_sessions`)."""
    return [r for r in alert.evidence if r.get("session_id", alert.session_id) == alert.session_id]


def evidence_table(alerts: Sequence[Alert]) -> pl.DataFrame:
    """One row per (alert, evidence step of its own session): what to highlight on the
    timeline."""
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
        for ref in own_evidence(a)
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


def peer_sessions(alerts: Sequence[Alert]) -> list[str]:
    """The other sessions the alerts' evidence names (a cross-run alert such as
    ``workspace_conflict``: the runs sharing a workspace), sorted.

    >>> from models.records import Severity
    >>> a = Alert(alert_id="x", session_id="a", detector="workspace_conflict",
    ...           severity=Severity.WARN, score=0.6, onset_seq=3, onset_step_id="a#3",
    ...           evidence=({"seq": 3, "step_id": "a#3", "session_id": "a"},
    ...                     {"seq": 7, "step_id": "b#7", "session_id": "b"}), reason="r")
    >>> peer_sessions([a])
    ['b']
    """
    return sorted(
        {
            str(ref["session_id"])
            for a in alerts
            for ref in a.evidence
            if isinstance(ref.get("session_id"), str) and ref["session_id"] != a.session_id
        }
    )


def side_by_side(
    steps: Mapping[str, Sequence[Step]], alerts: Sequence[Alert], *, around_s: int = 600
) -> pl.DataFrame:
    """The tool calls of several sessions of one workspace in one event-time order, a
    column per session (its call's tool and a preview in that session's column, empty in
    the others), ``evidence`` set on a call some alert of ``alerts`` names. Only the calls
    within ``around_s`` seconds of the first and last evidence step: the stretch where
    the runs met."""
    named = {str(r.get("step_id")) for a in alerts for r in a.evidence}
    calls = [s for sid in steps for s in steps[sid] if s.kind == StepKind.TOOL_CALL]
    hits = [s.ts for s in calls if s.step_id in named]
    if hits:
        lo, hi = min(hits) - around_s * 10**9, max(hits) + around_s * 10**9
        calls = [s for s in calls if lo <= s.ts <= hi]
    calls.sort(key=lambda s: (s.ts, s.session_id, s.seq))
    names = list(steps)
    rows = [
        {
            "time (UTC)": s.ts // 1000,
            "evidence": s.step_id in named,
            **{
                sid: f"{s.seq}: {s.tool or ''} {_preview(s)}"[:PREVIEW_CHARS]
                if sid == s.session_id
                else None
                for sid in names
            },
        }
        for s in calls
    ]
    schema = {"time (UTC)": pl.Int64(), "evidence": pl.Boolean(), **{n: pl.Utf8() for n in names}}
    return pl.DataFrame(rows, schema=schema).with_columns(
        pl.from_epoch(pl.col("time (UTC)"), time_unit="us").dt.replace_time_zone("UTC")
    )


@dataclass(frozen=True, slots=True)
class DetectorReplay:
    """What the configured detectors report on a session's stored steps, replayed now."""

    alerts: list[Alert]
    """The alerts the replay raised, in the order raised."""
    failures: list[str]
    """``detector at step N: error`` for each detector that raised (the pipeline skips it)."""
    scores: pl.DataFrame
    """``detector, seq, score``: each detector's score after the step ``seq``, a row where
    it changes (and at the first and last step)."""
    thresholds: pl.DataFrame
    """``detector, level, seq, score``: each detector's line for ``level`` (a severity)
    from step ``seq`` on, a row where it changes (and at the first and last step)."""


SCORE_SCHEMA = pl.Schema({"detector": pl.Utf8(), "seq": pl.Int64(), "score": pl.Float64()})
LINE_SCHEMA = pl.Schema(
    {"detector": pl.Utf8(), "level": pl.Utf8(), "seq": pl.Int64(), "score": pl.Float64()}
)


def replay_detectors(steps: Sequence[Step], detectors: DetectorSet) -> DetectorReplay:
    """Feed ``steps`` (one session, seq order) through fresh clones of ``detectors``, as the
    pipeline feeds them (:func:`features.calls.step_features.analysed_view`, a failing detector
    skipped), recording each one's score and thresholds where they change."""
    session = detectors.for_session()
    raised: list[Alert] = []
    failures: list[str] = []
    scores: list[tuple[str, int, float]] = []
    lines: list[tuple[str, str, int, float]] = []
    last_score: dict[str, float] = {}
    last_lines: dict[str, Mapping[str, float]] = {}
    final = steps[-1].seq if steps else 0
    for step in steps:
        view = analysed_view(step)
        for detector in session:
            name = detector.name
            try:
                raised.extend(detector.update(view))
                score, marks = detector.score, detector.thresholds
            except Exception as error:  # the pipeline dead-letters a detector's failure
                failures.append(f"{name} at step {step.seq}: {type(error).__name__}")
                continue
            if last_score.get(name) != score or step.seq == final:
                last_score[name] = score
                scores.append((name, step.seq, float(score)))
            if last_lines.get(name) != marks or step.seq == final:
                last_lines[name] = dict(marks)
                lines += [(name, level, step.seq, float(v)) for level, v in marks.items()]
    return DetectorReplay(
        raised,
        failures,
        pl.DataFrame(scores, schema=SCORE_SCHEMA, orient="row"),
        pl.DataFrame(lines, schema=LINE_SCHEMA, orient="row"),
    )


@dataclass(frozen=True, slots=True)
class StoredSeries:
    """Each detector's score and thresholds over a session's steps as the pipeline
    computed them (:func:`stored_series`); the same rows as :class:`DetectorReplay`'s."""

    scores: pl.DataFrame
    """As :attr:`DetectorReplay.scores`."""
    thresholds: pl.DataFrame
    """As :attr:`DetectorReplay.thresholds`."""
    rolled: int
    """Steps past the last stored chunk, rolled forward from the checkpoint now (a live
    session's since its last checkpoint); 0 when every score was stored."""


def stored_series(
    chunks: Sequence[bytes],
    steps: Sequence[Step],
    detectors: DetectorSet,
    state: bytes | None,
) -> StoredSeries | None:
    """The scores of ``steps`` (one session, seq order) from its stored score ``chunks``
    (:meth:`models.store.Store.score_chunks`' data, by start), the steps past them rolled
    forward from the session's stored ``state`` (its checkpoint there) through
    ``detectors`` (the configured set).

    None — replay instead — when they do not cover the session: no chunks (a session
    stored before they were), a gap, a chunk of another format or of other detectors
    than the configured ones (a config changed since), or steps past the chunks without
    a checkpoint where they end."""
    if not steps:
        return None
    names = detectors.names
    decoded: list[ScoreChunk] = []
    end = 0
    for data in chunks:
        chunk = decode_chunk(data)
        if chunk is None or chunk.start != end or list(chunk.scores) != names:
            return None
        decoded.append(chunk)
        end = chunk.end
    if not decoded:
        return None
    tail = [step for step in steps if step.seq >= end]
    if tail:
        if [s.seq for s in tail] != list(range(end, end + len(tail))):
            return None
        restored = load_state(state) if state is not None else None
        if restored is None or restored.upto != end:
            return None
        session = detectors.for_session()
        if any(d.name not in restored.detectors for d in session):
            return None
        for detector in session:  # just unpickled: its own
            detector.load_state_dict(restored.detectors[detector.name], owned=True)
        recorder = ScoreRecorder(session, start=end)
        roll_forward(tail, restored.features, session, recorder)
        rolled = recorder.take(upto=end + len(tail))
        if rolled is not None:
            decoded.append(rolled)
    final = steps[-1].seq
    return StoredSeries(_score_rows(decoded, final), _line_rows(decoded, final, names), len(tail))


def _score_rows(chunks: Sequence[ScoreChunk], final: int) -> pl.DataFrame:
    """:attr:`DetectorReplay.scores` from per-step scores: a row where a detector's score
    differs from its last (a step where it raised has none), and at the final step."""
    frames = [
        pl.DataFrame(
            {
                "detector": pl.Series([name], dtype=pl.Utf8()).new_from_index(
                    0, chunk.end - chunk.start
                ),
                "seq": np.arange(chunk.start, chunk.end, dtype=np.int64),
                "score": np.frombuffer(values, dtype=np.float64),
            }
        )
        for chunk in chunks
        for name, values in chunk.scores.items()
    ]
    every = (
        pl.concat(frames)
        .filter((pl.col("seq") <= final) & pl.col("score").is_not_nan())
        .sort("detector", "seq", maintain_order=True)
    )
    before = pl.col("score").shift(1).over("detector")
    return (
        every.filter(before.is_null() | (pl.col("score") != before) | (pl.col("seq") == final))
        .select(pl.col("detector"), pl.col("seq"), pl.col("score"))
        .cast(SCORE_SCHEMA)
    )


def _line_rows(chunks: Sequence[ScoreChunk], final: int, names: Sequence[str]) -> pl.DataFrame:
    """:attr:`DetectorReplay.thresholds` from the lines each chunk recorded where they
    changed: a row per level where a detector's lines differ from its last, and at the
    final step (unless it raised there)."""
    rows: list[tuple[str, str, int, float]] = []
    for name in names:
        last: Mapping[str, float] | None = None
        at_final = False
        for chunk in chunks:
            for seq, marks in chunk.lines[name]:
                if seq > final or marks == last:
                    continue
                last, at_final = marks, seq == final
                rows += [(name, level, seq, float(v)) for level, v in marks.items()]
        scored_at_final = any(
            chunk.start <= final < chunk.end
            and not np.isnan(chunk.scores[name][final - chunk.start])
            for chunk in chunks
        )
        if last is not None and scored_at_final and not at_final:
            rows += [(name, level, final, float(v)) for level, v in last.items()]
    return pl.DataFrame(rows, schema=LINE_SCHEMA, orient="row")


def score_lines(replayed: DetectorReplay | StoredSeries) -> pl.DataFrame:
    """``detector, seq, score``: each detector's score over the steps, a row where it
    changes (hold each value until the next row)."""
    return replayed.scores.sort("detector", "seq")


def threshold_lines(replayed: DetectorReplay | StoredSeries) -> pl.DataFrame:
    """``detector, level, seq, score``: each detector's thresholds over the steps, a row
    where one changes (most detectors' never do)."""
    return replayed.thresholds.sort("detector", "level", "seq")


def score_at(lines: pl.DataFrame, detector: str, seq: int) -> float:
    """The score a line of :func:`score_lines` gives ``detector`` after step ``seq``."""
    held = lines.filter((pl.col("detector") == detector) & (pl.col("seq") <= seq))
    return float(held["score"][-1]) if held.height else 0.0


def alert_marks(lines: pl.DataFrame, alerts: Sequence[Alert]) -> pl.DataFrame:
    """``detector, seq, score, severity``: each alert where it was raised, on its
    detector's score line."""
    rows = [
        (a.detector, a.raised_seq, score_at(lines, a.detector, a.raised_seq), str(a.severity))
        for a in alerts
    ]
    return pl.DataFrame(rows, schema={**SCORE_SCHEMA, "severity": pl.Utf8()}, orient="row")


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
    tools = clusters.select("cluster", "tools")
    nodes = nodes.join(tools, on="cluster", how="left").with_columns(
        pl.format(
            "{} · {} ×{}",
            pl.col("cluster"),
            pl.col("tools").fill_null("?").str.slice(0, LABEL_TOOLS_CHARS),
            pl.col("actions"),
        ).alias("label")
    )
    return Subgoals(graph, clusters, nodes, edges)


LABEL_RADIUS = 1.22
"""Where a node's label sits, outside the unit circle the nodes are on."""


def graph_layout(graph: nx.DiGraph) -> pl.DataFrame:
    """``cluster, x, y, lx, ly`` of a deterministic layout of the sub-goal graph: the nodes
    in the order first reached, clockwise on the unit circle from the top (a loop shows as
    edges going back), each label (``lx, ly``) outside the circle beside its node."""
    import math

    order = sorted(graph.nodes, key=lambda n: (graph.nodes[n].get("first_seq", 0), n))
    count = max(len(order), 1)
    rows = []
    for i, n in enumerate(order):
        angle = math.pi / 2 - 2 * math.pi * i / count
        x, y = math.cos(angle), math.sin(angle)
        rows.append(
            {"cluster": int(n), "x": x, "y": y, "lx": LABEL_RADIUS * x, "ly": LABEL_RADIUS * y}
        )
    return pl.DataFrame(
        rows,
        schema={
            "cluster": pl.Int64(),
            "x": pl.Float64(),
            "y": pl.Float64(),
            "lx": pl.Float64(),
            "ly": pl.Float64(),
        },
    )
