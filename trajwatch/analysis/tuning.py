"""Detector tuning on labelled recordings: the logic behind ``notebooks/tune_*.ipynb``.

The labelled sets are replayed once (:func:`load`, through
:func:`trajwatch.analysis.evaluate.load_runs`: the pipeline ``trajwatch eval`` runs); a sweep then
re-runs one detector over the stored steps for each parameter set and scores the alerts
with ``trajwatch eval``'s own scoring (:func:`trajwatch.analysis.evaluate.score_raised`), so a
row of a sweep is what ``trajwatch eval --config`` would report for those parameters.
A :class:`Rule` picks one row; :func:`write_tuned` writes the picked parameters into a
config file that ``trajwatch serve``/``replay``/``eval --config`` load.

Detectors share no state (each is its own object per session: the detector contract),
so re-running only the swept detector, beside the other detectors' alerts raised once,
gives what re-running the whole set would.
"""

from __future__ import annotations

import csv
import itertools
import re
import tomllib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from sklearn.metrics import average_precision_score, precision_recall_curve

from detectors.calibration import Calibration
from detectors.registry import DetectorSet
from models.records import Action
from trajwatch.analysis.evaluate import (
    DETECTOR_FOR,
    Raised,
    StoredRuns,
    combine,
    load_runs,
    raise_alerts,
    score_raised,
)
from trajwatch.config import detector_set, load_config, write_config
from trajwatch.settings import Settings

FAILURE_OF = {d: failure for failure, names in DETECTOR_FOR.items() for d in names}
"""detector → the labelled failure it is scored against."""


# -- the labelled sets -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelledSet:
    """Recordings and the labels file that describes them (``trajwatch eval``'s input)."""

    name: str
    paths: tuple[Path, ...]
    labels_file: Path


def fixture_set(
    folder: Path,
    *,
    failures: Collection[str] | None = None,
    per_scenario: int | None = None,
    scenarios: Collection[str] | None = None,
    name: str = "fixtures",
) -> LabelledSet:
    """The runs of a folder ``fixtures/generate`` wrote (its ``labels.csv``) whose failure is
    in ``failures`` (``"none"`` for the healthy runs; all when None) and whose scenario is
    in ``scenarios`` (all when None), at most ``per_scenario`` of each scenario. Each
    run's files are listed in the order a replay of the whole folder reads them, so a
    subset replays as the folder's runs do."""
    labels_file = folder / "labels.csv"
    with labels_file.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    taken: dict[str, int] = {}
    runs: set[str] = set()
    for row in rows:
        if failures is not None and row["failure"] not in failures:
            continue
        if scenarios is not None and row["scenario"] not in scenarios:
            continue
        if per_scenario is not None and taken.get(row["scenario"], 0) >= per_scenario:
            continue
        taken[row["scenario"]] = taken.get(row["scenario"], 0) + 1
        runs.add(row["run_id"])
    paths = tuple(p for p in sorted(folder.iterdir()) if p.name.split(".", 1)[0] in runs)
    return LabelledSet(name, paths, labels_file)


def file_set(
    folder: Path, *, scenarios: Collection[str] | None = None, name: str = "blind"
) -> LabelledSet:
    """The files of a folder whose ``labels.csv`` names each session's file in a ``files``
    column (``fixtures/blind/runtime_incidents.py``: several sessions to a file, so a run
    id is not a file name) holding a session of one of ``scenarios`` (all when None), in
    name order. A file is taken whole: its other sessions (a fleet's) come with it."""
    labels_file = folder / "labels.csv"
    with labels_file.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if rows and "files" not in rows[0]:
        raise ValueError(f"{labels_file} has no files column; use fixture_set for this folder")
    wanted = {r["files"] for r in rows if scenarios is None or r["scenario"] in scenarios}
    if scenarios is not None and (unknown := set(scenarios) - {r["scenario"] for r in rows}):
        raise ValueError(f"no session of {labels_file} is of scenario {sorted(unknown)[0]}")
    return LabelledSet(name, tuple(folder / f for f in sorted(wanted)), labels_file)


def corpus_sets(
    corpus: Path, *, trail_traces: int | None = None, agentdojo_files: int | None = None
) -> list[LabelledSet]:
    """The shared corpus' labelled sets that are present: TRAIL's GAIA traces (the first
    ``trail_traces`` by name) and AgentDojo's runs (the first ``agentdojo_files`` files;
    each holds a model's ~200 runs)."""
    sets = []
    trail = corpus / "trail"
    if (trail / "labels_index.csv").exists() and (trail / "traces" / "gaia").is_dir():
        traces = sorted((trail / "traces" / "gaia").iterdir())[:trail_traces]
        sets.append(LabelledSet("trail-gaia", tuple(traces), trail / "labels_index.csv"))
    dojo = corpus / "agentdojo"
    if (dojo / "labels_index.csv").exists() and (dojo / "runs").is_dir():
        files = sorted((dojo / "runs").iterdir())[:agentdojo_files]
        sets.append(LabelledSet("agentdojo", tuple(files), dojo / "labels_index.csv"))
    return [s for s in sets if s.paths]  # a limit of 0 leaves a set out


def load(sets: Iterable[LabelledSet], settings: Settings | None = None) -> StoredRuns:
    """Every set replayed once and combined (session ids are distinct across sets)."""
    return combine(
        load_runs(list(s.paths), labels_file=s.labels_file, settings=settings) for s in sets
    )


def describe(runs: StoredRuns) -> pl.DataFrame:
    """Sessions per labelled failure (``healthy``: none), with their steps."""
    rows = [
        {"failure": failure, "steps": len(runs.steps[session_id])}
        for session_id, label in runs.labels.items()
        for failure in (sorted(label.failures) or ["healthy"])
    ]
    return (
        pl.DataFrame(rows, schema={"failure": pl.String, "steps": pl.Int64})
        .group_by("failure")
        .agg(pl.len().alias("sessions"), pl.col("steps").sum())
        .sort("failure")
    )


# -- sweeping ---------------------------------------------------------------------------


def grid(
    keep: Callable[[dict[str, Any]], bool] | None = None, **axes: Sequence[Any]
) -> list[dict[str, Any]]:
    """Every combination of the axes' values, the first value of each axis first; with
    ``keep``, only the combinations it accepts (e.g. a critical level above the warning).

    >>> grid(warn_cycles=[3, 2], critical_cycles=[5])
    [{'warn_cycles': 3, 'critical_cycles': 5}, {'warn_cycles': 2, 'critical_cycles': 5}]
    >>> grid(lambda p: p["b"] >= p["a"], a=[1, 3], b=[2])
    [{'a': 1, 'b': 2}]
    """
    names = list(axes)
    points = [dict(zip(names, values, strict=True)) for values in itertools.product(*axes.values())]
    return [p for p in points if keep is None or keep(p)]


def with_parameters(
    config: Mapping[str, Any], detectors: str | Sequence[str], params: Mapping[str, Any]
) -> dict[str, Any]:
    """``config`` with ``params`` set on each of ``detectors`` (their other parameters
    kept)."""
    names = [detectors] if isinstance(detectors, str) else list(detectors)
    tables = {name: dict(values) for name, values in config.get("detectors", {}).items()}
    for name in names:
        tables[name] = {**tables.get(name, {}), **params}
    return {**config, "detectors": tables}


def sweep(
    runs: StoredRuns,
    detector: str,
    points: Iterable[Mapping[str, Any]],
    *,
    config: Mapping[str, Any] | None = None,
    also: Sequence[str] = (),
) -> pl.DataFrame:
    """One row per parameter set of ``detector`` (and of the detectors ``also``, which
    take the same parameters: ``policy_violation`` beside ``compliance_decay``), the rest
    of ``config`` unchanged: the parameters, then what ``trajwatch eval`` reports with
    them — precision, recall, F1, false-alarm rate on healthy sessions, median and p90
    detection delay (steps), and the set's false kills (healthy sessions any detector
    would kill or roll back) with this detector's share. ``point`` numbers the rows in
    the order given."""
    config = dict(config or {})
    failure = FAILURE_OF[detector]
    swept = [detector, *also]
    full = detector_set(config)
    others = DetectorSet([p for p in full.prototypes if p.name not in swept])
    base = raise_alerts(runs, others)
    rows = []
    for index, point in enumerate(points):
        tuned = _only(detector_set(with_parameters(config, swept, point)), swept)
        raised = raise_alerts(runs, tuned)
        merged = {s: [*base[s], *raised[s]] for s in runs.steps}
        evaluation = score_raised(Raised(runs, merged), full.names)
        found = [s for s in evaluation.scores if s.detector == detector]
        if not found:
            raise ValueError(f"no session of these runs is labelled {failure}; add some")
        row = found[0]
        kills = evaluation.kills
        rows.append(
            {
                "point": index,
                **dict(point),
                "precision": row.precision,
                "recall": row.recall,
                "f1": row.f1,
                "false_alarm_rate": row.false_alarm_rate,
                "median_delay": row.delay(0.5),
                "p90_delay": row.delay(0.9),
                "tp": row.tp,
                "fp": row.fp,
                "fn": row.fn,
                "false_kills": kills.killed,
                "false_kill_rate": kills.rate,
                "own_false_kills": dict(kills.by_detector).get(detector, 0),
                "healthy": kills.healthy,
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None)


def _only(detectors: DetectorSet, names: str | Sequence[str]) -> DetectorSet:
    wanted = [names] if isinstance(names, str) else list(names)
    chosen = [p for p in detectors.prototypes if p.name in wanted]
    if len(chosen) < len(wanted):
        missing = sorted(set(wanted) - {p.name for p in chosen})
        raise ValueError(f"detector {missing[0]} is disabled in the config; enable it to tune it")
    return DetectorSet(chosen)


@dataclass(frozen=True, slots=True)
class Rule:
    """How a row of a sweep is picked: the highest recall among the rows whose false
    kills are at most ``max_false_kill_rate`` of the healthy sessions (and, when set,
    whose false alarms — any alert of the detector on a healthy session — are at most
    ``max_false_alarm_rate``); ties go to the lowest median delay, then the highest
    precision, then the first row (put the current parameters first, so a sweep that
    changes nothing changes nothing)."""

    max_false_kill_rate: float = 0.01
    max_false_alarm_rate: float | None = None

    def __str__(self) -> str:
        alarms = (
            ""
            if self.max_false_alarm_rate is None
            else f" and false alarms <= {self.max_false_alarm_rate:.1%}"
        )
        return (
            f"highest recall with false kills <= {self.max_false_kill_rate:.0%} of healthy "
            f"sessions{alarms}; ties: lowest median delay, then highest precision, "
            "then grid order"
        )

    def pick(self, table: pl.DataFrame) -> dict[str, Any]:
        """The picked row. Raises ValueError when no row keeps within the bounds."""
        allowed = table.filter(pl.col("false_kill_rate") <= self.max_false_kill_rate)
        if self.max_false_alarm_rate is not None:
            allowed = allowed.filter(pl.col("false_alarm_rate") <= self.max_false_alarm_rate)
        if allowed.is_empty():
            kills = _least(table, "false_kill_rate")
            alarms = _least(table, "false_alarm_rate")
            raise ValueError(
                f"no parameter set keeps within the rule ({self}); the least false kills "
                f"are {kills:.1%}, the least false alarms {alarms:.1%}: widen the grid or "
                "relax the rule"
            )
        ranked = allowed.with_columns(
            pl.col("median_delay").fill_null(float("inf")).alias("_delay")
        ).sort(
            ["recall", "_delay", "precision", "point"], descending=[True, False, True, False]
        )
        return ranked.drop("_delay").row(0, named=True)


def _least(table: pl.DataFrame, column: str) -> float:
    return float(table[column].cast(pl.Float64).min() or 0.0)  # type: ignore[arg-type]


def parameters_of(row: Mapping[str, Any], points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The detector parameters of a sweep row (its ``point``'s)."""
    return dict(points[row["point"]])


# -- curves -------------------------------------------------------------------------------


def session_scores(
    runs: StoredRuns, detector: str, config: Mapping[str, Any] | None = None
) -> pl.DataFrame:
    """Per labelled session: whether it is labelled with ``detector``'s failure, the
    highest score of ``detector``'s alerts on it (0 when none), whether one of them
    would stop the agent, and the seq of the first."""
    failure = FAILURE_OF[detector]
    raised = raise_alerts(runs, _only(detector_set(dict(config or {})), detector))
    stops = {Action.KILL, Action.ROLLBACK}
    rows = []
    for session_id, label in runs.labels.items():
        alerts = raised[session_id]
        rows.append(
            {
                "session_id": session_id,
                "positive": failure in label.failures,
                "healthy": not label.failures,
                "score": max((a.score for a in alerts), default=0.0),
                "stops": any(a.action in stops for a in alerts),
                "first_raised": min((a.raised_seq for a in alerts), default=None),
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "session_id": pl.String,
            "positive": pl.Boolean,
            "healthy": pl.Boolean,
            "score": pl.Float64,
            "stops": pl.Boolean,
            "first_raised": pl.Int64,
        },
    )


def pr_curve(scores: pl.DataFrame) -> tuple[pl.DataFrame, float]:
    """scikit-learn's precision-recall curve of the per-session scores (thresholds on
    the alert score; a session with no alert scores 0), and the average precision."""
    y = scores["positive"].to_numpy().astype(int)
    s = scores["score"].to_numpy()
    if y.sum() == 0:
        raise ValueError("no positive session among these runs; add labelled failures")
    precision, recall, thresholds = precision_recall_curve(y, s)
    curve = pl.DataFrame(
        {
            "threshold": np.append(thresholds, np.nan),
            "precision": precision,
            "recall": recall,
        }
    )
    return curve, float(average_precision_score(y, s))


# -- calibration --------------------------------------------------------------------------


def uncalibrated(config: Mapping[str, Any], detector: str) -> dict[str, Any]:
    """``config`` without ``detector``'s score calibration (what a fit must start from)."""
    table = {k: v for k, v in config.get("calibration", {}).items() if k != detector}
    return {**config, "calibration": table}


def alert_scores(
    runs: StoredRuns, detector: str, config: Mapping[str, Any] | None = None
) -> pl.DataFrame:
    """Every alert ``detector`` raises on the labelled sessions (its raw score: any
    calibration of it in ``config`` left out), and whether the session is labelled with
    its failure: what a calibration is fitted on."""
    failure = FAILURE_OF[detector]
    plain = uncalibrated(dict(config or {}), detector)
    raised = raise_alerts(runs, _only(detector_set(plain), detector))
    rows = [
        {
            "session_id": a.session_id,
            "severity": str(a.severity),
            "score": a.score,
            "positive": failure in runs.labels[a.session_id].failures,
        }
        for alerts in raised.values()
        for a in alerts
    ]
    schema = {"session_id": pl.String, "severity": pl.String, "score": pl.Float64,
              "positive": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)


def calibrate(scores: pl.DataFrame, method: str = "isotonic") -> Calibration:
    """Fit raw score → P(the session has the failure) on :func:`alert_scores`' rows with
    scikit-learn: ``isotonic`` (:class:`~sklearn.isotonic.IsotonicRegression`, its
    thresholds are the knots) or ``platt`` (a logistic regression on the score, sampled
    at 21 points of [0, 1]). Raises ValueError when there is nothing to fit."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    if scores.is_empty():
        raise ValueError("the detector raised no alert on these runs; nothing to calibrate")
    x = scores["score"].to_numpy().astype(float)
    y = scores["positive"].to_numpy().astype(float)
    if method == "isotonic":
        fit = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(x, y)
        knots_x, knots_y = fit.X_thresholds_, fit.y_thresholds_
    elif method == "platt":
        if len(set(y)) < 2:
            raise ValueError("platt needs alerts on both labelled and unlabelled sessions")
        model = LogisticRegression().fit(x.reshape(-1, 1), y)
        knots_x = np.linspace(0.0, 1.0, 21)
        knots_y = model.predict_proba(knots_x.reshape(-1, 1))[:, 1]
    else:
        raise ValueError(f"method must be isotonic or platt, got {method!r}")
    keep = np.concatenate([[True], np.diff(knots_x) > 0])  # one knot per distinct score
    return Calibration(
        scores=tuple(round(float(v), 6) for v in knots_x[keep]),
        probabilities=tuple(
            round(float(v), 6) for v in np.maximum.accumulate(np.clip(knots_y[keep], 0, 1))
        ),
        method=method,
    )


def calibration_points(scores: pl.DataFrame, calibration: Calibration) -> pl.DataFrame:
    """Each distinct raw score, its calibrated probability and the share of its alerts
    that were on sessions labelled with the failure (for the calibration figure)."""
    return (
        scores.group_by("score")
        .agg(pl.col("positive").mean().alias("observed"), pl.len().alias("alerts"))
        .with_columns(
            pl.col("score")
            .map_elements(calibration.probability, return_dtype=pl.Float64)
            .alias("probability")
        )
        .sort("score")
    )


def write_calibration(
    path: Path,
    detector: str,
    calibration: Calibration,
    *,
    bands: Mapping[str, float] | None = None,
    base: Path | None = None,
) -> Path:
    """Put ``detector``'s calibration (and, when given, the severity ``bands``: ``warn``,
    ``critical``) into ``[calibration]`` of the config at ``path`` (read first when it
    exists, else started from ``base``), keeping what else is there."""
    source = path if path.exists() else base
    config = load_config(source) if source is not None else {}
    comments = _comments(path) if path.exists() else {}
    table = dict(config.get("calibration", {}))
    table[detector] = {
        "method": calibration.method,
        "scores": list(calibration.scores),
        "probabilities": list(calibration.probabilities),
    }
    if bands is not None:
        table.update({k: float(v) for k, v in bands.items()})
    return write_config(path, {**config, "calibration": table}, header=_HEADER, comments=comments)


# -- writing the config ---------------------------------------------------------------------


def write_tuned(
    path: Path,
    detector: str | Sequence[str],
    params: Mapping[str, Any],
    *,
    note: str,
    base: Path | None = None,
) -> Path:
    """Set ``params`` on ``detector`` (a name, or several sharing them) in the config at
    ``path`` — read first when it exists (so the tuning notebooks add up into one file),
    else started from ``base`` (e.g. ``trajwatch.toml``, for its policies) — each
    parameter commented with ``note`` (the rule and the figures that chose it); the
    comments already in the file are kept."""
    names = [detector] if isinstance(detector, str) else list(detector)
    source = path if path.exists() else base
    config = load_config(source) if source is not None else {}
    comments = _comments(path) if path.exists() else {}
    for name in names:
        table = comments.setdefault(f"detectors.{name}", {})
        for key in params:
            table[key] = " ".join(note.split())
    return write_config(
        path,
        with_parameters(config, names, params),
        header=_HEADER,
        comments=comments,
    )


_HEADER = (
    "trajwatch config written by the tuning notebooks (trajwatch/analysis/tuning.py).\n"
    "Load it with `trajwatch serve --config FILE` (or replay/eval --config)."
)
_TABLE = re.compile(r"^\[(?P<name>[A-Za-z0-9_.-]+)\]\s*$")
_COMMENTED = re.compile(r"^(?P<key>[A-Za-z0-9_-]+) = .*?  # (?P<note>[^\"]*)$")


def _comments(path: Path) -> dict[str, dict[str, str]]:
    """The ``key = value  # note`` comments of a file :func:`write_tuned` wrote, by table."""
    found: dict[str, dict[str, str]] = {}
    table = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := _TABLE.match(line):
            table = match["name"]
        elif (match := _COMMENTED.match(line)) and table:
            found.setdefault(table, {})[match["key"]] = match["note"]
    return found


def read_parameters(path: Path, detector: str) -> dict[str, Any]:
    """The parameters a config file sets on ``detector`` (as TOML reads them)."""
    with path.open("rb") as fh:
        return dict(tomllib.load(fh).get("detectors", {}).get(detector, {}))
