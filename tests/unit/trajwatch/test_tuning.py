"""Tuning on stored runs gives what `trajwatch eval` gives; the config writer round-trips;
the pick rule, the curves and the incident analysis do what they say."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import polars as pl
import pytest
from sklearn.metrics import precision_score, recall_score

from tests.support.paths import ROOT
from trajwatch.analysis import incident, tuning
from trajwatch.analysis.evaluate import (
    StoredRuns,
    combine,
    evaluate,
    evaluate_stored,
    raise_alerts,
)
from trajwatch.config import (
    config_toml,
    detector_set,
    load_config,
    load_policies,
    write_config,
)
from trajwatch.settings import Settings

RECORDED = ROOT / "fixtures" / "recorded"
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="module")
def small() -> tuning.LabelledSet:
    """One run of each of two scenarios of every failure, and of two healthy ones."""
    labels = pl.read_csv(RECORDED / "labels.csv")
    scenarios = labels.group_by("failure").agg(pl.col("scenario").unique().sort().head(2))
    chosen = {s for group in scenarios["scenario"] for s in group}
    return tuning.fixture_set(RECORDED, per_scenario=1, scenarios=chosen)


@pytest.fixture(scope="module")
def runs(small: tuning.LabelledSet) -> StoredRuns:
    return tuning.load([small])


def test_stored_runs_evaluate_exactly_as_trajwatch_eval(
    small: tuning.LabelledSet, runs: StoredRuns, tmp_path: Path
) -> None:
    config = load_config(ROOT / "trajwatch.toml")
    detectors = detector_set(config)
    db = f"sqlite:///{tmp_path / 'eval.db'}"
    replayed = evaluate(
        list(small.paths),
        labels_file=small.labels_file,
        settings=Settings(db_url=db),
        detectors=detectors,
    )
    assert evaluate_stored(runs, detectors).to_json() == replayed.to_json()
    assert replayed.table() == evaluate_stored(runs, detectors).table()
    # ...down to the alerts: the stored ones are the ones raised again over the steps
    from models.store import Store

    with Store.open(db) as store:
        stored = {a.alert_id: a for a in store.alerts(list(runs.labels))}
    again = {a.alert_id: a for alerts in raise_alerts(runs, detectors).values() for a in alerts}
    assert again == stored and stored


def test_a_subset_is_every_file_of_the_runs_chosen() -> None:
    failures = {"runaway_loop", "none"}
    subset = tuning.fixture_set(RECORDED, failures=failures, per_scenario=1)
    assert set(subset.paths) < set(RECORDED.iterdir())
    names = {p.name.split(".", 1)[0] for p in subset.paths}
    assert set(subset.paths) == {p for p in RECORDED.iterdir() if p.name.split(".", 1)[0] in names}
    assert list(subset.paths) == sorted(subset.paths)  # the order a replay of the folder reads
    labels = pl.read_csv(RECORDED / "labels.csv").filter(pl.col("run_id").is_in(list(names)))
    assert set(labels["failure"]) == failures
    assert labels.group_by("scenario").len()["len"].max() == 1


def test_a_file_set_takes_the_files_the_labels_name_whole(tmp_path: Path) -> None:
    """A labels file with a files column (several sessions to a file): a scenario's
    files, each whole, and only those; a scenario the labels lack is an error."""
    rows = [
        "run_id,session_id,scenario,failure,files",
        "a-0,s1,stall,stalled_run,fleet-a.events.jsonl",
        "a-1,s2,fleet_background,none,fleet-a.events.jsonl",
        "b-0,s3,quiet,none,fleet-b.otlp.jsonl",
    ]
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    for name in ("fleet-a.events.jsonl", "fleet-b.otlp.jsonl"):
        (tmp_path / name).write_text("")
    picked = tuning.file_set(tmp_path, scenarios={"stall"})
    assert picked.paths == (tmp_path / "fleet-a.events.jsonl",)
    assert picked.labels_file == tmp_path / "labels.csv"
    assert [p.name for p in tuning.file_set(tmp_path).paths] == [
        "fleet-a.events.jsonl",
        "fleet-b.otlp.jsonl",
    ]
    with pytest.raises(ValueError, match="scenario nope"):
        tuning.file_set(tmp_path, scenarios={"nope"})


@pytest.mark.skipif(not (CORPUS / "trail").exists(), reason="needs ../shared/corpus")
def test_the_corpus_sets_combine_with_the_fixtures(runs: StoredRuns) -> None:
    sets = tuning.corpus_sets(CORPUS, trail_traces=2, agentdojo_files=0)
    assert [s.name for s in sets] == ["trail-gaia"]
    trail = tuning.load(sets)
    both = combine([runs, trail])
    assert set(both.labels) == set(runs.labels) | set(trail.labels)
    assert both.sessions == runs.sessions + trail.sessions
    with pytest.raises(ValueError, match="in two of the labelled sets"):
        combine([runs, runs])


def test_a_sweep_row_is_what_eval_reports_with_those_parameters(runs: StoredRuns) -> None:
    config = load_config(ROOT / "trajwatch.toml")
    points = [{"warn_cycles": 3}, {"warn_cycles": 2}]
    table = tuning.sweep(runs, "runaway_loop", points, config=config)
    assert table["point"].to_list() == [0, 1]
    for row in table.iter_rows(named=True):
        tuned = tuning.with_parameters(config, "runaway_loop", {"warn_cycles": row["warn_cycles"]})
        evaluation = evaluate_stored(runs, detector_set(tuned))
        score = next(s for s in evaluation.scores if s.detector == "runaway_loop")
        assert (row["precision"], row["recall"], row["median_delay"]) == (
            score.precision,
            score.recall,
            score.delay(0.5),
        )
        assert row["false_kills"] == evaluation.kills.killed
        # and scikit-learn agrees with eval's own counting, session by session
        scores = tuning.session_scores(runs, "runaway_loop", tuned)
        y, fired = scores["positive"].to_list(), scores["first_raised"].is_not_null().to_list()
        assert precision_score(y, fired, zero_division=0) == pytest.approx(row["precision"])
        assert recall_score(y, fired) == pytest.approx(row["recall"])


def test_the_sweep_of_shared_parameters_sets_them_on_both_detectors(runs: StoredRuns) -> None:
    config = load_config(ROOT / "trajwatch.toml")
    table = tuning.sweep(
        runs, "compliance_decay", [{"min_rate_violations": 2}], config=config,
        also=["policy_violation"],
    )
    assert table.height == 1 and table["recall"][0] > 0


def _table(**columns: list[object]) -> pl.DataFrame:
    return pl.DataFrame(columns, strict=False)


def test_the_rule_takes_the_highest_recall_within_the_false_kill_bound() -> None:
    table = _table(
        point=[0, 1, 2, 3],
        recall=[0.8, 1.0, 0.9, 0.9],
        precision=[1.0, 1.0, 0.5, 0.9],
        median_delay=[3.0, 1.0, 2.0, 2.0],
        false_kill_rate=[0.0, 0.2, 0.0, 0.0],
        false_alarm_rate=[0.0, 0.0, 0.0, 0.0],
    )
    assert tuning.Rule(max_false_kill_rate=0.01).pick(table)["point"] == 3  # 1 kills too much
    assert tuning.Rule(max_false_kill_rate=0.25).pick(table)["point"] == 1
    with pytest.raises(ValueError, match=r"the least false kills are 20\.0%"):
        tuning.Rule(max_false_kill_rate=0.0).pick(table.filter(pl.col("point") == 1))
    alarms = table.with_columns(pl.Series("false_alarm_rate", [0.0, 0.0, 0.02, 0.05]))
    assert tuning.Rule(max_false_alarm_rate=0.03).pick(alarms)["point"] == 2
    assert tuning.Rule(max_false_alarm_rate=0.0).pick(alarms)["point"] == 0


def test_ties_go_to_the_shorter_delay_then_grid_order() -> None:
    table = _table(
        point=[0, 1, 2],
        recall=[1.0, 1.0, 1.0],
        precision=[1.0, 1.0, 1.0],
        median_delay=[None, 4.0, 4.0],
        false_kill_rate=[0.0, 0.0, 0.0],
        false_alarm_rate=[0.0, 0.0, 0.0],
    )
    assert tuning.Rule().pick(table)["point"] == 1  # no delay known sorts last


def test_config_toml_round_trips_through_the_loader(tmp_path: Path) -> None:
    config = {
        "detectors": {
            "runaway_loop": {"warn_cycles": 4, "burn_ratio": 2.5},
            "budget_overrun": {"enabled": False},
            "egress_gaming": {"sink_hosts": ["paste.example", 'we"ird\\host\n']},
        },
        "policies": {"default": "coding-default-v2", "agents": {"code wright": "strict"}},
        "actions": {
            "shadow": True,
            "retry": {"max_attempts": 3},
            "rules": [{"detector": "egress_gaming", "action": "kill"}, {"action": "notify"}],
        },
    }
    path = tmp_path / "c.toml"
    path.write_text(config_toml(config, header="line one\nline two"))
    loaded = load_config(path)
    assert {k: v for k, v in loaded.items() if not k.startswith("_")} == config
    assert path.read_text().startswith("# line one\n# line two\n")


def test_written_config_names_the_same_policies_from_another_folder(tmp_path: Path) -> None:
    base = load_config(ROOT / "trajwatch.toml")
    written = write_config(tmp_path / "deep" / "tuned.toml", base)
    again = load_config(written)
    assert load_policies(again) == load_policies(base) != {}
    assert detector_set(again).names == detector_set(base).names
    # within one tree the path stays relative
    (tmp_path / "a" / "pol").mkdir(parents=True)
    (tmp_path / "a" / "pol" / "p.toml").write_text('policy_id = "p"\nforbidden_tools = ["rm"]\n')
    (tmp_path / "a" / "trajwatch.toml").write_text('[policies]\npaths = ["pol"]\n')
    source = load_config(tmp_path / "a" / "trajwatch.toml")
    moved = write_config(tmp_path / "b" / "tuned.toml", source)
    assert 'paths = ["../a/pol"]' in moved.read_text()
    assert set(load_policies(load_config(moved))) == {"p"}


def test_write_tuned_adds_up_and_keeps_each_parameters_source(tmp_path: Path) -> None:
    out = tmp_path / "tuned.toml"
    tuning.write_tuned(out, "runaway_loop", {"warn_cycles": 4}, note="loops: recall 1.0",
                       base=ROOT / "trajwatch.toml")
    tuning.write_tuned(out, ["compliance_decay", "policy_violation"], {"alpha": 0.05},
                       note="compliance: recall 0.9")
    text = out.read_text()
    assert "warn_cycles = 4  # loops: recall 1.0" in text
    assert text.count("alpha = 0.05  # compliance: recall 0.9") == 2
    assert tuning.read_parameters(out, "runaway_loop") == {"warn_cycles": 4}
    loaded = load_config(out)
    assert load_policies(loaded) == load_policies(load_config(ROOT / "trajwatch.toml"))
    names = {p.name: p for p in detector_set(loaded).prototypes}
    assert names["runaway_loop"].get_params()["warn_cycles"] == 4
    assert names["policy_violation"].get_params()["alpha"] == 0.05


def test_pr_curve_is_scikit_learns_over_session_scores() -> None:
    scores = pl.DataFrame(
        {"positive": [True, True, False, False], "score": [1.0, 0.5, 0.5, 0.0]}
    )
    curve, ap = tuning.pr_curve(scores)
    assert curve["recall"].to_list()[0] == 1.0 and curve["recall"].to_list()[-1] == 0.0
    assert ap == pytest.approx(0.5 * 1.0 + 0.5 * (2 / 3))
    with pytest.raises(ValueError, match="no positive session"):
        tuning.pr_curve(scores.with_columns(pl.lit(False).alias("positive")))


# -- incidents ---------------------------------------------------------------------------


BUNDLE = RECORDED / "run-017-3642d1"


def test_an_incident_walk_raises_what_the_replay_stored(tmp_path: Path) -> None:
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    case = incident.load_incident([BUNDLE], detectors=detectors)
    assert case.alerts and incident.matches_replay(case)
    steps = incident.step_table(case)
    fired = steps.filter(pl.col("alerts") != "")
    assert fired["seq"].to_list() == sorted({a.raised_seq for a in case.alerts})
    burn = incident.token_burn(case)
    assert burn["tokens_total"][-1] == sum(
        (s.tokens_in or 0) + (s.tokens_out or 0) for s in case.steps
    )
    graph = incident.subgoal_graph(case)
    clusters = {s.detail.get("cluster") for s in case.steps if s.kind == "tool_call"}
    assert set(graph.nodes) <= clusters and graph.number_of_nodes() >= 1
    report = incident.report_markdown(case, tmp_path / "r" / "report.md",
                                      figures={"burn": tmp_path / "burn.png"})
    text = report.read_text()
    for alert in case.alerts:
        assert alert.reason[:60] in text
    assert "](../burn.png)" in text


def test_a_zipped_bundle_with_its_exported_alerts(tmp_path: Path) -> None:
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    folder = incident.load_incident([BUNDLE], detectors=detectors)
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for file in sorted(BUNDLE.iterdir()):
            out.write(file, f"export/{file.name}")
        out.writestr("export/alerts.json", json.dumps([a.to_json() for a in folder.stored]))
        out.writestr("../evil/session.jsonl", "{}")  # no path in the archive is followed
    zipped = incident.load_incident([archive], detectors=detectors)
    assert zipped.session_id == folder.session_id
    assert sorted(zipped.exported) == sorted(a.alert_id for a in folder.alerts)
    assert not (tmp_path.parent / "evil").exists()


def test_an_unknown_session_is_one_actionable_line() -> None:
    from models.errors import InputError

    detectors = detector_set({})
    with pytest.raises(InputError, match=r"is not in .*; it holds"):
        incident.load_incident([BUNDLE], detectors=detectors, session_id="nope")


# -- calibration in the service ------------------------------------------------------------


def _replay_alerts(paths: list[Path], config: Path, db: str, capsys: pytest.CaptureFixture[str]
                   ) -> list[dict[str, object]]:
    from trajwatch.cli.main import main

    assert main(["replay", *map(str, paths), "--db", db, "--config", str(config), "--json"]) == 0
    return [a for a in json.loads(capsys.readouterr().out)["alerts"]
            if a["detector"] == "runaway_loop"]


def test_replay_reports_calibrated_scores_and_banded_severities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from detectors.calibration import Calibration

    loops = tuning.fixture_set(RECORDED, failures={"runaway_loop"}, per_scenario=1)
    paths = list(loops.paths)[:6]  # two runs
    base = ROOT / "trajwatch.toml"
    plain = _replay_alerts(paths, base, f"sqlite:///{tmp_path / 'a.db'}", capsys)
    fitted = Calibration(scores=(0.0, 1.0), probabilities=(0.1, 0.6))
    config = tmp_path / "calibrated.toml"
    tuning.write_calibration(config, "runaway_loop", fitted, bands={"warn": 0.3, "critical": 0.9},
                             base=base)
    calibrated = _replay_alerts(paths, config, f"sqlite:///{tmp_path / 'b.db'}", capsys)
    assert plain and any(a["action"] == "kill" for a in plain)

    def banded(p: float) -> str:
        return "critical" if p >= 0.9 else "warn" if p >= 0.3 else "info"

    # each finding once per (onset, new severity): the first alert raised keeps it
    expected: dict[tuple[object, object, str], tuple[float, str]] = {}
    for a in sorted(plain, key=lambda a: int(a["raised_at_step"])):  # type: ignore[call-overload]
        p = fitted.probability(float(a["score"]))  # type: ignore[arg-type]
        expected.setdefault((a["session_id"], a["onset_step"], banded(p)), (p, "notify"))
    assert {(a["session_id"], a["onset_step"], a["severity"]): (a["score"], a["action"])
            for a in calibrated} == expected
    assert all("calibrated p=" in str(a["reason"]) for a in calibrated)


def test_a_calibrated_detector_keeps_the_detector_contract() -> None:
    from detectors.calibration import Bands, Calibration, calibrated
    from detectors.runaway_loop.detector import RunawayLoop
    from detectors.testing import Session

    s = Session()
    steps = [s.start()]
    for _ in range(8):
        steps += s.tool("bash", {"command": "make"}, ok=False, error="make: *** Error 2")
    prototype = calibrated(RunawayLoop(), Calibration((0.0, 1.0), (0.0, 1.0)), Bands())
    assert prototype.name == "runaway_loop"
    one, two = prototype.clone(), prototype.clone()
    head = [a for step in steps[:6] for a in one.update(step)]
    two.load_state_dict(one.state_dict())
    rest = [[a for step in steps[6:] for a in d.update(step)] for d in (one, two)]
    assert rest[0] == rest[1]
    assert head and rest[0]
    fresh = prototype.clone()
    assert [a for step in steps for a in fresh.update(step)] == head + rest[0]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"runaway_loop": {"scores": [0.0, 1.0], "probabilities": [0.5]}}, "same length"),
        ({"runaway_loop": {"scores": [1.0, 0.0], "probabilities": [0.1, 0.2]}}, "increasing"),
        ({"nope": {"scores": [0.0], "probabilities": [0.1]}}, "unknown detector"),
        ({"warn": 0.95, "critical": 0.9}, "warn <= critical"),
    ],
)
def test_a_wrong_calibration_is_one_config_error(table: dict, message: str) -> None:
    from models.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        detector_set({"calibration": table, "_path": "t.toml"})


def test_calibration_fits_are_monotone_probabilities(runs: StoredRuns) -> None:
    config = load_config(ROOT / "trajwatch.toml")
    raw = tuning.alert_scores(runs, "runaway_loop", config)
    assert raw.height > 0
    for method in ("isotonic", "platt"):
        mixed = raw.vstack(raw.with_columns(pl.lit(False).alias("positive")).head(2))
        fit = tuning.calibrate(mixed, method)
        ps = [fit.probability(x / 10) for x in range(11)]
        assert ps == sorted(ps) and all(0.0 <= p <= 1.0 for p in ps)
    # isotonic: each distinct score maps to the share of positives at or around it
    fit = tuning.calibrate(raw, "isotonic")
    assert all(fit.probability(s) == 1.0 for s in raw["score"])  # fixtures' alerts are all true
