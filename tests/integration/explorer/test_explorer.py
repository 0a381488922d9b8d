"""The explorer's pages (dashboards/) under Streamlit's AppTest, on a store seeded by
replaying fixture incidents: what an on-call engineer must see appears, the widgets work,
and a store the explorer cannot show gives one clear message, not an exception."""

from __future__ import annotations

import io
import json
import sqlite3
import zipfile
from itertools import pairwise
from pathlib import Path

import polars as pl
import pytest
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from dashboards.bundle import bundle_zip
from dashboards.markdown import escape
from models.errors import UserError
from models.records import Action, Severity
from models.store import Store
from tests.support.explorer_app import app, no_exception
from tests.support.explorer_seed import CONFIG, RECORDED, RUNS, Seeded, copy, recording
from trajwatch.cli.main import main

TABLES = {
    "sessions_table": {"badges", "breaker"},
    "steps_table": {"evidence", "cum_tokens"},
    "clusters_table": {"tools", "calls"},
    "alerts_table": {"reason", "deliveries"},
    "deliveries_table": {"delivery_id", "attempts"},
    "endpoints": {"why disabled"},
    "breakers_table": {"breaker", "state"},
    "r_compare": {"in", "alert_id"},
}
"""Each table the tests read, by columns only it has (AppTest does not expose keys)."""


def table(at: AppTest, key: str):  # type: ignore[no-untyped-def]
    wanted = TABLES[key]
    found = [
        d.value
        for d in at.dataframe
        if wanted <= set(d.value.columns)
        and not (key == "breakers_table" and "badges" in d.value.columns)
    ]
    assert found, f"no table {key} among {[list(d.value.columns) for d in at.dataframe]}"
    return found[0]


def chart_rows(spec: object) -> list[dict]:  # type: ignore[type-arg]
    """Every data row inlined anywhere in a Vega-Lite spec (its layers, its datasets)."""
    if isinstance(spec, dict):
        own = spec.get("values") if isinstance(spec.get("values"), list) else []
        return [r for r in own if isinstance(r, dict)] + [
            r for k, v in spec.items() if k != "values" for r in chart_rows(v)
        ]
    if isinstance(spec, list):
        return [r for item in spec for r in chart_rows(item)]
    return []


def element_rows(chart: object) -> list[dict]:  # type: ignore[type-arg]
    """The rows of a chart element: inlined in its spec, or sent beside it as Arrow."""
    import pyarrow as pa

    proto = chart.proto  # type: ignore[attr-defined]
    rows = chart_rows(json.loads(proto.spec))
    arrows = [proto.data.data, *(d.data.data for d in proto.datasets)]
    for data in arrows:
        if data:
            rows += pa.ipc.open_stream(data).read_all().to_pylist()
    return rows


def store_steps(seeded: Seeded, session: str) -> list:  # type: ignore[type-arg]
    with Store.open(seeded.url, migrate=False) as store:
        return store.steps(session)


def sessions_shown(at: AppTest) -> dict[str, dict]:  # type: ignore[type-arg]
    frame = table(at, "sessions_table")
    return {row["session_id"]: row for row in frame.to_dict("records")}


# -- sessions ------------------------------------------------------------------------


def test_sessions_page_lists_every_session_with_its_state(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    at = app(monkeypatch, explorer_store.url)
    no_exception(at)
    rows = sessions_shown(at)
    s = explorer_store.sessions
    assert set(rows) == set(s.values())
    loop, exfil, healthy, live = (
        rows[s["loop"]],
        rows[s["exfil"]],
        rows[s["healthy"]],
        rows[s["live"]],
    )
    assert loop["agent"] == "patchpilot" and loop["breaker"] == "kill sent"
    assert "runaway_loop" in loop["badges"] and loop["critical"] == 1 and loop["warn"] == 1
    assert exfil["breaker"] == "kill (shadow)" and "egress_gaming" in exfil["badges"]
    assert healthy["alerts"] == 0 and healthy["breaker"] == "-"
    assert live["state"] == "live" and loop["state"] != "live"
    with Store.open(explorer_store.url, migrate=False) as store:
        activity = {a.info.session_id: a for a in store.session_activity()}
    assert loop["steps"] == activity[s["loop"]].steps > 20
    assert loop["tokens"] == activity[s["loop"]].tokens_in + activity[s["loop"]].tokens_out
    # a session is live: the listing says it refreshes itself
    assert any("refreshing every" in c.value for c in at.caption)


def test_sessions_filters_and_search(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    at = app(monkeypatch, explorer_store.url)
    at.text_input(key="s_search").input("PATCHPILOT").run()
    no_exception(at)
    assert {r["agent"] for r in sessions_shown(at).values()} == {"patchpilot"}
    at.text_input(key="s_search").input("").run()
    at.multiselect(key="s_detectors").select("egress_gaming").run()
    assert set(sessions_shown(at)) == {explorer_store.sessions["exfil"]}
    at.multiselect(key="s_detectors").unselect("egress_gaming").run()
    at.checkbox(key="s_alerted").check().run()
    alerted = {a.session_id for a in explorer_store.alerts}
    assert set(sessions_shown(at)) == alerted


def test_open_goes_to_the_session_page(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    at = app(monkeypatch, explorer_store.url)
    target = explorer_store.sessions["decay"]
    at.selectbox(key="s_open").select(target).run()
    at.button(key="s_open_button").click().run()
    no_exception(at)
    assert at.title[0].value == f"Session {escape(target)}"
    assert at.query_params["session"] == target


# -- session view --------------------------------------------------------------------


def test_session_page_shows_the_incident_and_why_it_was_stopped(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    session = explorer_store.sessions["loop"]
    mine = [a for a in explorer_store.alerts if a.session_id == session]
    kill = next(a for a in mine if a.severity == Severity.CRITICAL)
    at = app(monkeypatch, explorer_store.url, session=session, alert=kill.alert_id)
    no_exception(at)
    assert at.title[0].value == f"Session {escape(session)}"
    text_shown = "\n".join(m.value for m in at.markdown)
    assert f"▶ the alert the link names]  :red[**● CRITICAL**] **{kill.detector}**" in text_shown
    for alert in mine:
        assert escape(alert.reason) in text_shown
        caption = next(c.value for c in at.caption if alert.alert_id in c.value)
        assert f"onset: step {alert.onset_seq}" in caption
        for ref in alert.evidence:
            assert f"step {ref['seq']} ({escape(ref['source_ref'])})" in caption
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steps"] == str(len(store_steps(explorer_store, session)))
    assert "**Agent:** patchpilot" in text_shown and "**Breaker:** kill sent" in text_shown
    # timeline, cumulative tokens/cost, egress, detector scores, sub-goal graph
    charts = at.get("vega_lite_chart")
    assert len(charts) >= 4
    specs = [json.loads(c.proto.spec) for c in charts]
    assert any(s.get("title") == "Timeline" for s in specs)
    scores = next(
        c
        for c in charts
        if json.loads(c.proto.spec).get("title") == "Detector scores over the steps"
    )
    # the lines drawn are the detectors' own scores, replayed over the stored steps, with
    # every detector's thresholds and the stored alerts on them
    from dashboards.session_view import replay_detectors, score_lines, threshold_lines
    from tests.support.explorer_seed import detectors

    replayed = replay_detectors(store_steps(explorer_store, session), detectors())
    rows = element_rows(scores)
    drawn = {(r["detector"], r["seq"], r["score"]) for r in rows if r["series"] == "score"}
    assert drawn == set(score_lines(replayed).iter_rows())
    levels = {
        (r["detector"], r["severity"], r["seq"], r["score"])
        for r in rows
        if r["series"] == "threshold"
    }
    assert levels == set(threshold_lines(replayed).iter_rows())
    assert {(r["detector"], r["seq"], r["severity"]) for r in rows if r["series"] == "alert"} == {
        (a.detector, a.raised_seq, str(a.severity)) for a in mine
    }
    # the detectors replayed over the stored steps raise exactly the stored alerts
    at.toggle(key="d_replay").set_value(True).run()
    assert f"raise exactly the stored alerts ({len(mine)}, same ids)" in at.success[0].value
    # step details open at the onset of the alert the link named, and flag it as evidence
    seq_key = f"d_seq:{session}:{kill.alert_id}"
    assert at.number_input(key=seq_key).value == kill.onset_seq
    shown = json.loads(at.json[0].proto.body)
    assert shown["step_id"] == kill.onset_step_id and shown["seq"] == kill.onset_seq
    assert any("evidence of an alert" in m.value for m in at.markdown)
    at.number_input(key=seq_key).set_value(0).run()
    assert json.loads(at.json[0].proto.body)["kind"] == "start"
    steps = table(at, "steps_table")
    evidence = {int(r["seq"]) for a in mine for r in a.evidence}
    assert set(steps.loc[steps["evidence"], "seq"]) == evidence
    at.multiselect(key="d_kinds").select("tool_call").run()
    assert set(table(at, "steps_table")["kind"]) == {"tool_call"}
    assert not table(at, "clusters_table").empty


def test_a_live_sessions_view_refreshes_itself_until_it_ends(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded, tmp_path: Path
) -> None:
    from tests.support.explorer_seed import LIVE_RUN, detectors
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    url = copy(explorer_store, tmp_path)
    live = explorer_store.sessions["live"]
    at = app(monkeypatch, url, session=live)
    no_exception(at)
    assert any("This session is live: refreshing every 5 s" in c.value for c in at.caption)
    assert "**State:** live" in "\n".join(m.value for m in at.markdown)
    before = int(next(m.value for m in at.metric if m.label == "Steps"))
    # the rest of its log arrives (the pipeline keeps the steps it has): the session ends
    replay(
        [RECORDED / f"{LIVE_RUN}.events.jsonl.gz"],
        settings=Settings(db_url=url),
        detectors=detectors(),
    )
    with Store.open(url, migrate=False) as store:
        after = len(store.steps(live))
    assert after > before
    at.run()
    no_exception(at)
    assert int(next(m.value for m in at.metric if m.label == "Steps")) == after
    assert "**State:** live" not in "\n".join(m.value for m in at.markdown)
    assert not any("refreshing every" in c.value for c in at.caption)
    # a finished session's view does not refresh
    at = app(monkeypatch, url, session=explorer_store.sessions["loop"])
    assert not any("refreshing every" in c.value for c in at.caption)


def test_session_page_marks_compactions_and_egress(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    at = app(monkeypatch, explorer_store.url, session=explorer_store.sessions["exfil"])
    no_exception(at)
    egress = next(
        c
        for c in at.get("vega_lite_chart")
        if json.loads(c.proto.spec).get("title") == "Egress by host class"
    )
    classes = {row["host_class"] for row in element_rows(egress)}
    assert "sink" in classes  # the paste-sink upload
    at = app(monkeypatch, explorer_store.url, session=explorer_store.sessions["healthy"])
    no_exception(at)
    timeline = next(
        c for c in at.get("vega_lite_chart") if json.loads(c.proto.spec).get("title") == "Timeline"
    )
    assert any(str(row.get("compaction")).startswith("inferred") for row in element_rows(timeline))
    assert int(next(m.value for m in at.metric if m.label == "Model sessions")) >= 2


def test_debug_bundle_replays_to_the_same_alerts(
    monkeypatch: pytest.MonkeyPatch,
    explorer_store: Seeded,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session = explorer_store.sessions["exfil"]
    at = app(monkeypatch, explorer_store.url, session=session)
    assert at.get("download_button")  # the page offers it
    with Store.open(explorer_store.url, migrate=False) as store:
        steps, alerts = store.steps(session), store.alerts([session])
    data = bundle_zip(session, steps, alerts)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = sorted(Path(n).name for n in archive.namelist())
        archive.extractall(tmp_path)
    assert names == ["alerts.json", "session.jsonl", "tool_calls.csv", "trace.json"]
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    url = f"sqlite:///{tmp_path / 'again.db'}"
    capsys.readouterr()
    assert main(["replay", str(folder), "--db", url, "--json", "--config", str(CONFIG)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dead_letters"] == 0 and out["sessions"] == 1 and out["steps"] == len(steps)
    assert sorted(a["id"] for a in out["alerts"]) == sorted(a.alert_id for a in alerts)
    assert json.loads((folder / "alerts.json").read_text())["alerts"] == [
        a.to_json() for a in alerts
    ]
    with Store.open(url, migrate=False) as store:
        again = store.steps(session)
    assert [(s.step_id, s.seq, s.kind, s.model_session) for s in again] == [
        (s.step_id, s.seq, s.kind, s.model_session) for s in steps
    ]


def test_score_lines_are_the_detectors_scores_step_by_step(explorer_store: Seeded) -> None:
    from dashboards.session_view import replay_detectors, score_at, score_lines, threshold_lines
    from features.text.clip import analysed_step
    from tests.support.explorer_seed import detectors

    detector_set = detectors()
    with Store.open(explorer_store.url, migrate=False) as store:
        for name, session in explorer_store.sessions.items():
            steps, stored = store.steps(session), store.alerts([session])
            replayed = replay_detectors(steps, detector_set)
            assert replayed.failures == []
            assert sorted(a.alert_id for a in replayed.alerts) == sorted(a.alert_id for a in stored)
            lines, marks = score_lines(replayed), threshold_lines(replayed)
            assert set(lines["detector"]) == set(detector_set.names)
            # held from row to row, the line is what each detector object reports after
            # every step, fed the steps one by one; its thresholds likewise
            for detector in detector_set.for_session():
                own = marks.filter(pl.col("detector") == detector.name)
                for step in steps:
                    detector.update(analysed_step(step))
                    assert score_at(lines, detector.name, step.seq) == detector.score, (
                        name,
                        step.seq,
                    )
                    for level, value in detector.thresholds.items():
                        held = own.filter((pl.col("level") == level) & (pl.col("seq") <= step.seq))
                        assert held["score"][-1] == value
                scores = lines.filter(pl.col("detector") == detector.name)["score"].to_list()
                assert all(a != b for a, b in pairwise(scores[:-1]))  # rows where it changes
            for alert in stored:  # raised where the line reaches its severity's threshold
                at = score_at(lines, alert.detector, alert.raised_seq)
                line = marks.filter(
                    (pl.col("detector") == alert.detector)
                    & (pl.col("level") == str(alert.severity))
                    & (pl.col("seq") <= alert.raised_seq)
                )["score"][-1]
                assert at >= line and at >= alert.score - 1e-4, alert
            if name == "loop":  # a real score, not the alerts': the loop builds up first
                first = min(a.raised_seq for a in stored if a.detector == "runaway_loop")
                before = lines.filter(
                    (pl.col("detector") == "runaway_loop") & (pl.col("seq") < first)
                )["score"]
                assert any(0 < v < 0.5 for v in before)


# -- alerts and actions ------------------------------------------------------------------


def test_alerts_page_lists_alerts_deliveries_and_shadow_actions(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    at = app(monkeypatch, explorer_store.url, page="alerts")
    no_exception(at)
    alerts = table(at, "alerts_table")
    assert set(alerts["alert_id"]) == {a.alert_id for a in explorer_store.alerts}
    at.multiselect(key="a_det").select("runaway_loop").run()
    assert set(table(at, "alerts_table")["detector"]) == {"runaway_loop"}
    deliveries = table(at, "deliveries_table")
    exfil = deliveries[deliveries["session_id"] == explorer_store.sessions["exfil"]]
    assert set(exfil["mode"]) == {"shadow (not sent)"} and set(exfil["status"]) == {"shadow"}
    assert any("shadow mode" in c.value for c in at.caption)
    endpoints = table(at, "endpoints").set_index("endpoint")
    assert not endpoints.loc["pager", "enabled"] and endpoints.loc["ops", "enabled"]
    assert "410" in endpoints.loc["pager", "why disabled"]
    breakers = table(at, "breakers_table").set_index("session_id")
    assert breakers.loc[explorer_store.sessions["loop"], "breaker"] == "kill sent"
    # shadow deliveries never fired: they are not offered for redelivery
    offered = at.multiselect(key="o_ids").options
    assert offered and not any(i in offered for i in exfil["delivery_id"])


def test_redeliver_and_reenable_write_through_the_cli_functions(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded, tmp_path: Path
) -> None:
    url = copy(explorer_store, tmp_path)
    at = app(monkeypatch, url, page="alerts")
    with Store.open(url, migrate=False) as store:
        dead = [d.delivery_id for d in store.outbox().list("dead")]
        held = len(store.outbox().list("disabled"))
    assert len(dead) == 1 and held > 0
    # a form: its widgets' values go in with its submit button
    at.button[[b.label for b in at.button].index("Redeliver")].click().run()
    # the CLI's own check (the first error is the banner: kills held by a disabled endpoint)
    assert "give delivery ids to resend" in at.error[-1].value
    at.multiselect(key="o_ids").select(dead[0])
    at.button[[b.label for b in at.button].index("Redeliver")].click().run()
    no_exception(at)
    assert "1 deliveries due again" in at.success[0].value
    at.selectbox(key="o_endpoint").select("pager")
    at.button[[b.label for b in at.button].index("Re-enable")].click().run()
    assert f"{held} held deliveries due again" in at.success[0].value
    with Store.open(url, migrate=False) as store:
        outbox = store.outbox()
        assert outbox.get(dead[0]).status == "pending"  # type: ignore[union-attr]
        assert not outbox.list("disabled") and all(e.enabled for e in outbox.endpoints())
    with Store.open(explorer_store.url, migrate=False) as store:  # the shared store is untouched
        assert len(store.outbox().list("dead")) == 1


def test_open_an_alerts_session(monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded) -> None:
    at = app(monkeypatch, explorer_store.url, page="alerts")
    alert = next(a for a in explorer_store.alerts if a.action == Action.ROLLBACK)
    at.selectbox(key="a_open").select(alert.alert_id).run()
    at.button(key="a_open_button").click().run()
    no_exception(at)
    assert at.title[0].value == f"Session {escape(alert.session_id)}"
    assert at.query_params["alert"] == alert.alert_id


# -- replay ------------------------------------------------------------------------------


def test_replay_page_compares_with_the_live_store_and_a_previous_replay(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    at = app(monkeypatch, explorer_store.url, page="replay")
    files = recording(RUNS["loop"])
    at.text_input(key="r_path").input(str(files[0])).run()
    at.button(key="r_run").click().run()
    no_exception(at)
    expected = [a for a in explorer_store.alerts if a.session_id == explorer_store.sessions["loop"]]
    assert at.success[0].value == f"The same {len(expected)} alerts, by id, as the live store."
    assert set(table(at, "r_compare")["alert_id"]) == {a.alert_id for a in expected}
    # a second replay of the whole recording: compared with the first
    at.text_input(key="r_path").input(str(RECORDED / RUNS["exfil"]) + ".events.jsonl").run()
    at.button(key="r_run").click().run()
    no_exception(at)
    assert len(at.selectbox(key="r_pick").options) == 2
    at.selectbox(key="r_against").select_index(1).run()
    compared = table(at, "r_compare")
    exfil = [a for a in explorer_store.alerts if a.session_id == explorer_store.sessions["exfil"]]
    first = f"#1 {files[0].name} only"
    assert sorted(compared["in"]) == sorted(
        ["this replay only"] * len(exfil) + [first] * len(expected)
    )
    assert "0 alerts in both" in at.warning[0].value
    at.text_input(key="r_path").input(str(RECORDED / "no-such-run.jsonl")).run()
    at.button(key="r_run").click().run()
    assert "no such file or folder" in at.error[-1].value


# -- stores the explorer cannot show -----------------------------------------------------


def test_missing_and_empty_databases_give_one_clear_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    at = app(monkeypatch, f"sqlite:///{tmp_path / 'nothing.db'}")
    no_exception(at)
    assert "there is no store at" in at.error[0].value and "trajwatch replay" in at.error[0].value
    sqlite3.connect(tmp_path / "empty.db").close()
    at = app(monkeypatch, f"sqlite:///{tmp_path / 'empty.db'}")
    no_exception(at)
    assert "is empty (no trajwatch schema)" in at.error[0].value
    Store.open(f"sqlite:///{tmp_path / 'fresh.db'}").close()  # a schema, no sessions
    for page in ("sessions", "session", "alerts"):
        at = app(monkeypatch, f"sqlite:///{tmp_path / 'fresh.db'}", page=page)
        no_exception(at)
        assert "No sessions" in at.info[0].value or "No alerts" in at.info[0].value


def test_a_newer_schema_gives_one_clear_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'newer.db'}"
    with Store.open(url) as store, store.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
    at = app(monkeypatch, url)
    no_exception(at)
    assert "0099_from_the_future, newer than this trajwatch knows" in at.error[0].value


@pytest.mark.postgres
def test_the_pages_read_postgresql(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.support.explorer_seed import detectors
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    url = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    pytest.importorskip("psycopg")
    # a schema of its own, as the db_url fixture makes one
    from sqlalchemy import create_engine

    schema = f"explorer_{tmp_path.name[-8:].replace('-', '_')}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    scoped = f"{url}?options=-csearch_path%3D{schema}"
    try:
        replay(recording(RUNS["loop"]), settings=Settings(db_url=scoped), detectors=detectors())
        at = app(monkeypatch, scoped)
        no_exception(at)
        assert len(sessions_shown(at)) == 1
        session = next(iter(sessions_shown(at)))
        at = app(monkeypatch, scoped, session=session)
        no_exception(at)
        at.toggle(key="d_replay").set_value(True).run()
        assert "raise exactly the stored alerts" in at.success[0].value
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def test_trajwatch_ui_refuses_a_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ui", "--db", f"sqlite:///{tmp_path / 'typo.db'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "there is no store at" in err[0]


def test_the_explorer_modules_doctests() -> None:
    import doctest

    from dashboards import markdown, store_view

    assert doctest.testmod(store_view).failed == 0
    assert doctest.testmod(markdown).failed == 0


def test_an_uploaded_bundle_zip_or_files_replay(explorer_store: Seeded, tmp_path: Path) -> None:
    """What the replay page does with uploads (AppTest cannot drive a file uploader): a
    bundle .zip is unpacked into its folder, loose files into one recording folder."""
    from streamlit.proto.Common_pb2 import FileURLs
    from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

    from dashboards.views.replay import _inputs
    from tests.support.explorer_seed import detectors
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    def upload(name: str, data: bytes) -> UploadedFile:
        return UploadedFile(
            UploadedFileRec(name, name, "application/octet-stream", data), FileURLs()
        )

    session = explorer_store.sessions["loop"]
    with Store.open(explorer_store.url, migrate=False) as store:
        zipped = bundle_zip(session, store.steps(session), store.alerts([session]))
        stored = {a.alert_id for a in store.alerts([session])}
    for uploads in (
        [upload("bundle.zip", zipped)],
        [upload(p.name, p.read_bytes()) for p in recording(RUNS["loop"])],
    ):
        paths = _inputs("", uploads)
        summary = replay(
            paths, settings=Settings(db_url=f"sqlite:///{tmp_path / 'u.db'}"), detectors=detectors()
        )
        assert {a.alert_id for a in summary.alerts} == stored
        (tmp_path / "u.db").unlink()
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../outside.txt", "x")
    with pytest.raises(UserError, match="outside its folder"):
        _inputs("", [upload("evil.zip", evil.getvalue())])


def test_a_store_lost_mid_run_is_one_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'lost.db'}"
    with Store.open(url) as store, store.engine.begin() as connection:
        connection.execute(text("DROP TABLE steps"))  # opens fine, fails when read
    at = app(monkeypatch, url)
    no_exception(at)
    assert at.error[0].value.startswith("trajwatch explorer: the store failed: ")
    assert "no such table: steps" in at.error[0].value


def test_choosing_another_session_on_the_session_page(
    monkeypatch: pytest.MonkeyPatch, explorer_store: Seeded
) -> None:
    loop, decay = explorer_store.sessions["loop"], explorer_store.sessions["decay"]
    kill = next(a for a in explorer_store.alerts if a.session_id == loop)
    at = app(monkeypatch, explorer_store.url, session=loop, alert=kill.alert_id)
    at.number_input(key=f"d_seq:{loop}:{kill.alert_id}").set_value(70).run()
    at.selectbox(key=f"pick_{loop}").select(decay).run()
    no_exception(at)
    assert at.title[0].value == f"Session {escape(decay)}"
    assert "alert" not in at.query_params  # it named an alert of the session left
