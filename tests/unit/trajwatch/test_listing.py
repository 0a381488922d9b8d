"""``trajwatch alerts`` and ``trajwatch sessions`` on a real store (both dialects)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from models.errors import ConfigError
from tests.support.paths import ROOT
from trajwatch.cli.main import main
from trajwatch.cli.times import parse_since

RUNS = [
    ROOT / "fixtures" / "recorded" / "run-002-8e3cb0.events.jsonl.gz",
    ROOT / "fixtures" / "recorded" / "run-007-55e226.otlp.binpb",
]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_alerts_and_sessions_list_what_replay_stored(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    replayed = _json(capsys, "replay", *map(str, RUNS), "--db", db_url, "--json")
    assert replayed["alerts"], "the two loop runs raise alerts"

    listed = _json(capsys, "alerts", "--db", db_url, "--json")
    replayed_by_id = {a["id"]: a for a in replayed["alerts"]}
    assert len(listed["alerts"]) == len(replayed_by_id)  # the same alerts, the same shape
    assert all(a == replayed_by_id[a["id"]] for a in listed["alerts"])  # (oldest first)

    one = replayed["alerts"][0]["session_id"]
    only = _json(capsys, "alerts", "--db", db_url, "--session", one, "--json")["alerts"]
    assert only and {a["session_id"] for a in only} == {one}

    sessions = _json(capsys, "sessions", "--db", db_url, "--json")["sessions"]
    assert sum(s["steps"] for s in sessions) == replayed["steps"]
    for s in sessions:
        mine = [a for a in replayed["alerts"] if a["session_id"] == s["session_id"]]
        by_severity: dict[str, int] = {}
        for a in mine:
            by_severity[a["severity"]] = by_severity.get(a["severity"], 0) + 1
        assert s["alerts"] == by_severity
        assert s["state"].startswith("ended") and s["tokens_in"] > 0


def test_alerts_since_keeps_those_raised_from_that_time_on(
    db_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    main(["replay", *map(str, RUNS), "--db", db_url, "--json"])
    capsys.readouterr()
    everything = _json(capsys, "alerts", "--db", db_url, "--json")["alerts"]
    # the fixture runs happened months apart: a time between them splits the list
    assert len(everything) == 4
    later = _json(capsys, "alerts", "--db", db_url, "--since", "2026-07-01", "--json")["alerts"]
    assert 0 < len(later) < len(everything)
    assert {a["session_id"] for a in later} == {"conv-b200bc5dc10052c7d055"}


def test_listing_a_store_that_does_not_exist_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"sqlite:///{tmp_path / 'nope.db'}"
    assert main(["alerts", "--db", missing]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no store at" in err
    assert not (tmp_path / "nope.db").exists()


def test_since_reads_iso_times_and_spans_back_from_now() -> None:
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
    second = 1_000_000_000
    assert parse_since("6h", now=now) == int(now.timestamp() - 6 * 3600) * second
    assert parse_since("2d", now=now) == int(now.timestamp() - 2 * 86400) * second
    assert parse_since("2026-12-01T11:00Z", now=now) == int(now.timestamp() - 3600) * second
    assert parse_since("2026-12-01", now=now) == int(now.timestamp() - 12 * 3600) * second
    with pytest.raises(ConfigError, match="no time"):
        parse_since("last tuesday", now=now)


def test_a_session_whose_kill_was_delivered_is_killed_whatever_it_reported(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to say ``ended (success)``: the agent's own word, after trajwatch stopped it."""
    from models.records import Action
    from models.store import Store
    from trajwatch.actions.backtest import decide
    from trajwatch.actions.policy import ActionPolicy
    from trajwatch.actions.sink import outbox_rows

    exfil = ROOT / "fixtures" / "recorded" / "run-008-7aaac6.events.jsonl"  # ends "success"
    _json(capsys, "replay", *map(str, RUNS), str(exfil), "--db", db_url, "--json")
    with Store.open(db_url) as store:
        alerts = store.alerts()
        exfil_session = "conv-13d6398181a82f719c2e"
        kill = next(a for a in alerts if a.action == Action.KILL and a.session_id == exfil_session)
        others = {a.session_id for a in alerts} - {kill.session_id}
        with store.unit() as unit:
            # every stop as recommended: the state follows what was delivered
            ungated = ActionPolicy(corroborate=False)
            unit.add_deliveries(outbox_rows(decide(store, ungated, alerts), ["ops"], None))
        store.outbox().record(f"{kill.alert_id}:ops:kill", status="delivered", now=1)
    sessions = {
        s["session_id"]: s for s in _json(capsys, "sessions", "--db", db_url, "--json")["sessions"]
    }
    assert sessions[kill.session_id]["state"] == "killed"
    assert sessions[kill.session_id]["end_status"] == "success"
    assert all(sessions[s]["state"].startswith("ended") for s in others)  # nothing delivered
    assert main(["sessions", "--db", db_url]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(kill.session_id))
    assert " killed " in line


def test_alerts_list_oldest_first_and_sessions_by_start(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25, item 13: they listed in the store's order (session id, onset, detector):
    a warn after the critical it led to, a September session before a May one."""
    main(["replay", *map(str, RUNS), "--db", db_url, "--json"])
    capsys.readouterr()
    assert main(["alerts", "--db", db_url]) == 0
    times = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert len(times) == 4 and times == sorted(times)
    sessions = _json(capsys, "sessions", "--db", db_url, "--json")["sessions"]
    starts = [s["started_ts"] for s in sessions]
    assert len(starts) == 2 and starts == sorted(starts)
