"""Incident analysis: one recorded session replayed step by step through the detectors
(the logic behind ``notebooks/incident_analysis.ipynb``).

:func:`load_incident` replays a recording — anything ``trajwatch replay`` reads, or a
debug bundle the explorer exported (a folder, or a ``.zip`` of one, holding
``session.jsonl``/``trace.json``/``tool_calls.csv`` and maybe ``alerts.json``) — into a
store with the config's detectors, then walks the stored steps through fresh detectors
(:func:`trajwatch.analysis.evaluate.detect`'s rule) so each alert is tied to the step that raised
it. Everything shown is read from the store, so it derives from redacted text. The
tables are polars frames; :func:`report_markdown` writes the short incident report.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import networkx as nx
import polars as pl

from detectors.registry import DetectorSet
from features.session.trajectory import TrajectoryFeatures
from features.text.clip import analysed_step
from ingest.sources.files import BUNDLE_FILES
from models.errors import InputError
from models.records import Alert, Step, StepKind
from models.store import Store
from trajwatch.analysis.evaluate import detect_steps
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

EXPORTED_ALERTS = "alerts.json"
"""The alerts a debug bundle carries: what the service raised when it was exported."""


@dataclass(frozen=True, slots=True)
class Incident:
    """One session of a recording: its stored steps, the alerts each step raised when
    walked through the detectors, and the alerts the replay stored."""

    session_id: str
    steps: list[Step]
    raised: dict[int, list[Alert]]
    """seq → the alerts raised on that step."""
    stored: list[Alert]
    exported: list[str]
    """Alert ids in the bundle's ``alerts.json`` (empty without one)."""
    sessions: list[str]
    """Every session the recording holds."""

    @property
    def alerts(self) -> list[Alert]:
        """The walked alerts in the order they were raised."""
        return [a for seq in sorted(self.raised) for a in self.raised[seq]]


def unpack(path: Path, into: Path) -> Path:
    """``path`` itself, or for a ``.zip`` its bundle files extracted into ``into`` by
    base name (an entry with an absolute path or ``..`` is skipped: nothing is written
    outside ``into``). Raises InputError for a zip with no bundle file, or two entries
    of the same name."""
    if path.suffix != ".zip":
        return path
    wanted = {*BUNDLE_FILES, *(f"{n}.gz" for n in BUNDLE_FILES), EXPORTED_ALERTS}
    found: set[str] = set()
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            inner = PurePosixPath(info.filename)
            name = inner.name
            if info.is_dir() or name not in wanted or inner.is_absolute() or ".." in inner.parts:
                continue
            if name in found:
                raise InputError(f"{path} holds two {name}; export one session per bundle")
            found.add(name)
            (into / name).write_bytes(archive.read(info))
    if not found:
        raise InputError(
            f"{path} holds none of {', '.join(BUNDLE_FILES)}; pass a debug bundle or a recording"
        )
    return into


def exported_alert_ids(folder: Path) -> list[str]:
    """The alert ids of a bundle's ``alerts.json`` (a list of alerts, or an object with
    an ``alerts`` list; each alert's ``id`` or ``alert_id``); none when there is none."""
    path = folder / EXPORTED_ALERTS
    if not folder.is_dir() or not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    items = data.get("alerts", []) if isinstance(data, dict) else data
    return [
        str(item.get("id") or item.get("alert_id"))
        for item in items
        if isinstance(item, dict) and (item.get("id") or item.get("alert_id"))
    ]


def load_incident(
    paths: Sequence[Path],
    *,
    detectors: DetectorSet,
    session_id: str | None = None,
    settings: Settings | None = None,
) -> Incident:
    """Replay ``paths`` (a recording's files, a bundle folder or ``.zip``: what
    ``trajwatch replay`` reads) with ``detectors`` (into a temporary SQLite store unless
    ``settings.db_url`` names one) and walk ``session_id`` — by default the session
    with the most alerts, else the longest — step by step. Raises InputError for a
    recording with no session, or without ``session_id``."""
    settings = settings or Settings()
    with tempfile.TemporaryDirectory(prefix="trajwatch-incident-") as tmp:
        sources = []
        for index, path in enumerate(paths):
            folder = Path(tmp) / f"bundle-{index}"
            folder.mkdir()
            sources.append(unpack(path, folder))
        if settings.db_url == Settings().db_url:
            fields = {n: getattr(settings, n) for n in settings.__dataclass_fields__}
            settings = Settings(**{**fields, "db_url": f"sqlite:///{tmp}/incident.db"})
        summary = replay(sources, settings=settings, detectors=detectors)
        shown = ", ".join(str(p) for p in paths)
        if not summary.sessions:
            raise InputError(f"{shown} holds no session; pass a recording `trajwatch replay` reads")
        with Store.open(settings.db_url) as store:
            chosen = session_id or _most_alerted(store, summary.sessions)
            if chosen not in summary.sessions:
                raise InputError(
                    f"session {chosen!r} is not in {shown}; it holds "
                    + ", ".join(repr(s) for s in summary.sessions[:5])
                )
            steps = store.steps(chosen)
            stored = store.alerts([chosen])
        exported = [a for source in sources for a in exported_alert_ids(source)]
    return Incident(
        session_id=chosen,
        steps=steps,
        raised=walk(steps, detectors),
        stored=stored,
        exported=exported,
        sessions=list(summary.sessions),
    )


def _most_alerted(store: Store, sessions: Sequence[str]) -> str:
    counts = {s: 0 for s in sessions}
    for alert in store.alerts(list(sessions)):
        counts[alert.session_id] += 1
    sizes = {s: store.step_count([s]) for s in sessions}
    return max(sessions, key=lambda s: (counts[s], sizes[s], s))


def walk(steps: Sequence[Step], detectors: DetectorSet) -> dict[int, list[Alert]]:
    """seq → the alerts fresh ``detectors`` raise on that step, walking ``steps`` in
    order as the pipeline does (:func:`trajwatch.analysis.evaluate.detect_steps`)."""
    return {step.seq: alerts for step, alerts in detect_steps(steps, detectors) if alerts}


def _short(text: str | None, limit: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _what(step: Step, limit: int = 80) -> str:
    """What a step did or said, short: its action, text, error, result or address."""
    return _short(
        step.action or step.text or step.error or step.result or step.egress_url or step.arguments,
        limit,
    )


def step_table(incident: Incident) -> pl.DataFrame:
    """One row per step: seq, kind, tool, what it did (short), its tokens and the
    cumulative burn, failure, the step features (cluster, progress) and the alerts it
    raised (``detector:severity``)."""
    rows = []
    burn = 0
    for step in incident.steps:
        tokens = (step.tokens_in or 0) + (step.tokens_out or 0)
        burn += tokens
        rows.append(
            {
                "seq": step.seq,
                "kind": str(step.kind),
                "tool": step.tool,
                "what": _what(step),
                "tokens": tokens,
                "tokens_total": burn,
                "failed": step.status == "error" or bool(step.error),
                "cluster": step.detail.get("cluster"),
                "progress": step.detail.get("progress"),
                "alerts": ", ".join(
                    f"{a.detector}:{a.severity}" for a in incident.raised.get(step.seq, [])
                ),
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None)


def alert_table(incident: Incident) -> pl.DataFrame:
    """Each walked alert: where it began and was raised, what it recommends and why."""
    return pl.DataFrame(
        [
            {
                "detector": a.detector,
                "severity": str(a.severity),
                "action": str(a.action),
                "score": a.score,
                "onset_seq": a.onset_seq,
                "raised_seq": a.raised_seq,
                "evidence": ", ".join(str(e.get("seq")) for e in a.evidence),
                "reason": a.reason,
            }
            for a in incident.alerts
        ],
        schema={
            "detector": pl.String,
            "severity": pl.String,
            "action": pl.String,
            "score": pl.Float64,
            "onset_seq": pl.Int64,
            "raised_seq": pl.Int64,
            "evidence": pl.String,
            "reason": pl.String,
        },
    )


def token_burn(incident: Incident) -> pl.DataFrame:
    """Model calls' tokens (in, out) and cost by seq, with running totals."""
    calls = [s for s in incident.steps if s.kind == StepKind.MODEL_CALL]
    frame = pl.DataFrame(
        {
            "seq": [s.seq for s in calls],
            "tokens_in": [s.tokens_in or 0 for s in calls],
            "tokens_out": [s.tokens_out or 0 for s in calls],
            "cost_usd": [s.cost or 0.0 for s in calls],
        },
        schema={
            "seq": pl.Int64,
            "tokens_in": pl.Int64,
            "tokens_out": pl.Int64,
            "cost_usd": pl.Float64,
        },
    )
    return frame.with_columns(
        (pl.col("tokens_in") + pl.col("tokens_out")).cum_sum().alias("tokens_total"),
        pl.col("cost_usd").cum_sum().alias("cost_total"),
    )


def subgoal_graph(incident: Incident) -> nx.DiGraph:
    """The session's sub-goal graph (``features.session.subgoals``) as the pipeline built it:
    its tool calls observed again, in order, by fresh trajectory features."""
    features = TrajectoryFeatures()
    for step in incident.steps:
        features.observe(analysed_step(step))
    return features.subgoals.graph


def matches_replay(incident: Incident) -> bool:
    """Whether the walk raised exactly the alerts the replay stored (ids)."""
    return {a.alert_id for a in incident.alerts} == {a.alert_id for a in incident.stored}


def report_markdown(
    incident: Incident,
    path: Path,
    *,
    figures: Mapping[str, Path] | None = None,
    source: str = "",
    around: int = 2,
) -> Path:
    """Write the short incident report to ``path``: the session and its size, each
    alert (where it began, where it was raised, what it recommends, why) with the
    steps around its onset, the token burn and the figures (linked relative to the
    report's folder). Returns ``path``."""
    steps = {s.seq: s for s in incident.steps}
    burn = token_burn(incident)
    total = int(burn["tokens_total"][-1]) if burn.height else 0
    cost = float(burn["cost_total"][-1]) if burn.height else 0.0
    lines = [
        f"# Incident report: session `{incident.session_id}`",
        "",
        *([f"- recording: `{source}`"] if source else []),
        f"- steps: {len(incident.steps)}; model calls: {burn.height}; "
        f"tokens: {total:,}; cost: ${cost:.2f}",
        f"- alerts: {len(incident.alerts)}"
        + ("" if matches_replay(incident) else " (the step-by-step walk differs from the replay)"),
    ]
    if incident.exported:
        same = set(incident.exported) == {a.alert_id for a in incident.alerts}
        lines.append(
            f"- the bundle's alerts.json: {len(incident.exported)} alerts, "
            + ("the same as replayed" if same else "NOT the same as replayed")
        )
    lines += ["", "## Alerts", ""]
    if not incident.alerts:
        lines.append("No detector fired.")
    for alert in incident.alerts:
        lines += [
            f"### {alert.detector} — {alert.severity}, recommends {alert.action}",
            "",
            f"Began at step {alert.onset_seq}, raised at step {alert.raised_seq} "
            f"(score {alert.score:.2f}).",
            "",
            f"> {_short(alert.reason, 600)}",
            "",
            "| seq | kind | tool | what |",
            "|---|---|---|---|",
        ]
        for seq in range(alert.onset_seq - around, alert.onset_seq + around + 1):
            if seq in steps:
                step = steps[seq]
                what = _what(step, 70).replace("|", "\\|")
                lines.append(f"| {seq} | {step.kind} | {step.tool or ''} | {what} |")
        lines.append("")
    if figures:
        lines += ["## Figures", ""]
        for title, figure in figures.items():
            link = Path(_relative(figure, path.parent)).as_posix()
            lines += [f"![{title}]({link})", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def _relative(target: Path, folder: Path) -> str:
    return os.path.relpath(target.resolve(), folder.resolve())


def summary(incident: Incident) -> dict[str, Any]:
    """The incident's figures in one mapping (shown by the notebook, checked by tests)."""
    return {
        "session_id": incident.session_id,
        "sessions_in_recording": len(incident.sessions),
        "steps": len(incident.steps),
        "alerts": len(incident.alerts),
        "detectors_fired": sorted({a.detector for a in incident.alerts}),
        "walk_matches_replay": matches_replay(incident),
    }
