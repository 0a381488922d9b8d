"""The explorer shows a workspace's sessions side by side when a cross-run alert
(``workspace_conflict``) names them (issue 29), under Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboards.markdown import escape
from models.store import Store
from tests.support.explorer_app import app, no_exception
from tests.support.workspace_fleet import close, feed, pipeline, session


@pytest.fixture
def fleet(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    with Store.open(url) as store:
        p = pipeline(store)
        feed(
            p,
            session("run-a", 0, [(10, "src/refunds.py"), (50, "src/x.py")], end=60)
            + session("run-b", 20, [(30, "src/refunds.py")], end=70)
            + session("run-c", 0, [(15, "src/other.py")], branch="feature/y", end=80),
        )
        close(p)
    return url


def test_a_cross_run_alert_shows_the_other_run_side_by_side(
    monkeypatch: pytest.MonkeyPatch, fleet: str
) -> None:
    at = app(monkeypatch, fleet, session="run-a")
    no_exception(at)
    assert any("1 other run(s) side by side" in s.value for s in at.subheader)
    shown = "\n".join(m.value for m in at.markdown)
    assert f"`{escape('run-b')}`" in shown
    table = next(
        d.value
        for d in at.dataframe
        if "evidence" in d.value.columns and "run-b" in d.value.columns
    )
    assert {"run-a", "run-b"} <= set(table.columns) and "run-c" not in table.columns
    evidence = table[table["evidence"]].reset_index(drop=True)  # a pandas frame here
    # the conflicting edits of both runs, in time order: a's at 10 s, then b's at 30 s
    assert len(evidence) == 2
    assert "refunds.py" in evidence["run-a"][0] and evidence["run-b"].isna()[0]
    assert "refunds.py" in evidence["run-b"][1] and evidence["run-a"].isna()[1]
    captions = "\n".join(c.value for c in at.caption)
    assert f"of session {escape('run-b')}" in captions  # the other run's step, named so


def test_a_session_no_cross_run_alert_names_shows_no_workspace_view(
    monkeypatch: pytest.MonkeyPatch, fleet: str
) -> None:
    at = app(monkeypatch, fleet, session="run-c")
    no_exception(at)
    assert not any("side by side" in s.value for s in at.subheader)
