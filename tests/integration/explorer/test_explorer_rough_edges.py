"""The explorer as a new user meets it (issue 25, item 15): no "Deploy" button, the start
of a spans-only session drawn first, times in UTC rather than nanoseconds, a sub-goal graph
that fits its plot and says what its nodes are, and an ended session's state worded as the
agent's report."""

from __future__ import annotations

import doctest
import json

import pytest

from dashboards import charts, session_view
from dashboards.session_view import (
    graph_layout,
    step_details,
    steps_table,
    subgoals,
    time_positions,
)
from models.records import StepKind
from models.store import Store
from tests.support.explorer_app import app, no_exception
from tests.support.paths import ROOT
from trajwatch.cli.main import main
from trajwatch.cli.ui import command

SPANS_ONLY = ROOT / "fixtures" / "recorded" / "run-007-55e226.otlp.binpb"
"""A generated run recorded as spans only: its root span, the session's start, ends last."""


@pytest.fixture(scope="module")
def spans_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A store holding the spans-only recording; its URL and the session id."""
    url = f"sqlite:///{tmp_path_factory.mktemp('rough') / 'spans.db'}"
    assert main(["replay", str(SPANS_ONLY), "--db", url, "--json"]) == 0
    with Store.open(url) as store:
        (info,) = store.sessions()
    return url, info.session_id


def test_the_explorer_is_served_without_the_deploy_button() -> None:
    line = command(host="127.0.0.1", port=8501)
    assert line[line.index("--client.toolbarMode") + 1] == "viewer"


def test_the_start_of_a_spans_only_session_is_drawn_first(spans_store: tuple[str, str]) -> None:
    url, session = spans_store
    with Store.open(url) as store:
        steps = store.steps(session)
    table = steps_table(steps)
    start = table.filter(table["kind"] == "start").row(0, named=True)
    # its span ended (and arrived) last; the settled session stores it in its
    # event-time place: step 0, drawn first, nothing marked late
    assert start["seq"] == 0 and start["x"] == table["x"].min() == 0.0
    assert table["placed"].is_null().all()
    assert (table["x"] == table["seq"].cast(float)).all()
    spec = charts.timeline(table, table.clear(), table.clear()).to_dict()
    assert spec["layer"][0]["encoding"]["x"]["field"] == "x"


def test_step_times_are_shown_in_utc_not_nanoseconds(spans_store: tuple[str, str]) -> None:
    url, session = spans_store
    with Store.open(url) as store:
        steps = store.steps(session)
        (info,) = store.sessions([session])
    call = next(s for s in steps if s.kind == StepKind.TOOL_CALL and s.end_ts)
    shown = step_details(call, info.started_ts)
    assert shown["ts"].endswith("Z") and shown["ts"].startswith("20")
    assert shown["end_ts"].endswith("Z") and shown["took"].endswith(" s")
    assert "m " in shown["after_start"] or shown["after_start"].endswith("s")
    assert not any(isinstance(v, int) and v > 10**15 for v in shown.values())  # no raw ns
    json.dumps(shown)  # what st.json shows


def test_the_subgoal_graph_fits_its_plot_and_names_its_nodes(
    spans_store: tuple[str, str],
) -> None:
    url, session = spans_store
    with Store.open(url) as store:
        found = subgoals(store.steps(session))
    layout = graph_layout(found.graph)
    low, high = charts.GRAPH_DOMAIN
    for column in ("x", "y", "lx", "ly"):  # every node and label inside the plot
        assert low < layout[column].min() and layout[column].max() < high
    top = layout.row(0, named=True)  # the first cluster reached: at the top
    assert top["x"] == pytest.approx(0.0, abs=1e-9) and top["y"] == pytest.approx(1.0)
    assert all(" · " in label and " ×" in label for label in found.nodes["label"].to_list())
    spec = charts.subgoal_graph(found.nodes, found.edges, layout).to_dict()
    assert spec["width"] == "container"
    scales = [layer["encoding"]["x"].get("scale") for layer in spec["layer"]]
    assert all(scale and scale["domain"] == list(charts.GRAPH_DOMAIN) for scale in scales)


def test_an_ended_sessions_state_is_the_agents_report(
    monkeypatch: pytest.MonkeyPatch, spans_store: tuple[str, str]
) -> None:
    url, session = spans_store
    at = app(monkeypatch, url, page="session", session=session)
    no_exception(at)
    header = next(m.value for m in at.markdown if "**State:**" in m.value)
    assert "**State:** ended (" in header  # it read "**State:** success"
    assert any("A node is a run of related tool calls" in c.value for c in at.caption)


def test_the_session_view_doctests() -> None:
    assert doctest.testmod(session_view).failed == 0


def test_the_positions_of_late_steps() -> None:
    from models.records import Step

    def at(seq: int, ts: int) -> Step:
        return Step(step_id=str(seq), session_id="s", kind=StepKind.TOOL_CALL, ts=ts, seq=seq)

    assert time_positions([]) == []
    assert time_positions([at(0, 5), at(1, 5), at(2, 1)]) == [0.0, 1.0, -0.5]


def test_a_superseded_alert_is_listed_with_why_and_a_standing_one_without() -> None:
    from dashboards.store_view import alerts_table
    from ingest.pipeline.rejudge import SUPERSEDED, superseded
    from models.records import Alert, Severity

    def alert(n: int) -> Alert:
        return Alert(
            alert_id=f"al_{n}",
            session_id="s",
            detector="runaway_loop",
            severity=Severity.WARN,
            score=1.0,
            onset_seq=n,
            onset_step_id=f"s/{n}",
            evidence=(),
            reason="loop",
            ts=n,
        )

    table = alerts_table([alert(1), superseded(alert(2))], [])
    assert dict(zip(table["alert_id"], table["superseded"], strict=True)) == {
        "al_1": None,
        "al_2": SUPERSEDED,
    }
