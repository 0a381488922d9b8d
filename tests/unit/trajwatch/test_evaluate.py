"""`trajwatch eval`: label formats, baselines and scores on real recordings."""

from __future__ import annotations

import dataclasses
import json
import lzma
from pathlib import Path

import pytest

from detectors.testing import Session
from models.records import Action, Alert, Severity
from tests.support.paths import ROOT
from trajwatch.analysis.evaluate import baseline_gemini, baseline_openlit
from trajwatch.cli.main import main

CORPUS = ROOT.parent / "shared" / "corpus"


def test_openlit_baseline_fires_on_the_third_identical_call() -> None:
    s = Session()
    steps = [s.start()]
    steps += s.tool("bash", {"command": "npm install"}, ok=False)
    steps += s.tool("read_file", {"path": "package.json"})
    steps += s.tool("bash", {"command": "npm install"}, ok=False)
    assert baseline_openlit(steps) is None
    third = s.tool("bash", {"command": "npm install"}, ok=False)
    assert baseline_openlit([*steps, *third]) == third[0].seq


def test_gemini_baseline_needs_five_consecutive_identical_calls() -> None:
    s = Session()
    steps = [s.start()]
    for _ in range(4):
        steps += s.tool("bash", {"command": "make"}, ok=False)
    steps += s.tool("bash", {"command": "ls"})
    for _ in range(4):
        steps += s.tool("bash", {"command": "make"}, ok=False)
    assert baseline_gemini(steps) is None
    fifth = s.tool("bash", {"command": "make"}, ok=False)
    assert baseline_gemini([*steps, *fifth]) == fifth[0].seq


def test_eval_on_the_committed_fixtures_reports_every_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded = ROOT / "fixtures" / "recorded"
    assert main(["eval", str(recorded), "--labels", str(recorded / "labels.csv"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sessions"] == result["labelled_sessions"] == 62
    rows = {(r["failure"], r["detector"]): r for r in result["scores"]}
    assert {f for f, _ in rows} == {
        "runaway_loop",
        "intent_drift",
        "compliance_decay",
        "egress_gaming",
    }
    openlit = rows[("runaway_loop", "baseline_openlit_repeat3")]
    assert openlit["positives"] == 10 and openlit["recall"] == 1.0  # every loop repeats ≥ 3 times
    assert openlit["false_alarm_rate"] > 0.5  # ...and so does most healthy work
    healthy = (recorded / "labels.csv").read_text().count(",none,")
    assert result["false_kills"]["healthy_sessions"] == healthy > 0
    assert result["false_kills"]["killed"] == 0  # no healthy fixture run may be stopped


@pytest.mark.skipif(not (CORPUS / "agentdojo").exists(), reason="needs ../shared/corpus")
def test_agentdojo_records_replay_with_tool_calls_and_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = CORPUS / "agentdojo" / "runs" / "agentdojo-claude-3-5-sonnet-20241022.jsonl.xz"
    lines = lzma.decompress(source.read_bytes()).splitlines()[:4]  # the header and three runs
    sample = tmp_path / "agentdojo-claude-3-5-sonnet-20241022.jsonl"
    sample.write_bytes(b"\n".join(lines))
    db = f"sqlite:///{tmp_path / 'ad.db'}"
    assert main(["replay", str(sample), "--db", db, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sessions"] == 3 and result["dead_letters"] == 0
    from models.store import Store

    with Store.open(db) as store:
        steps = store.steps("agentdojo:agentdojo-claude-3-5-sonnet-20241022:1")
    record = json.loads(lines[1])
    calls = [
        c for m in record["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    assert [s.call_id for s in steps if s.kind == "tool_call"] == [c["id"] for c in calls]
    assert steps[0].kind == "start" and steps[0].text == record["messages"][1]["content"]
    results = {s.call_id for s in steps if s.kind == "tool_result"}
    assert results == {c["id"] for c in calls}


def test_false_kills_count_healthy_sessions_stopped_by_any_detector(tmp_path: Path) -> None:
    """kill/rollback on a healthy session is a false kill; a warning there is not, nor is
    a kill on a session labelled with a failure."""
    from detectors.runaway_loop.detector import RunawayLoop
    from models.records import Action
    from models.store import Store
    from trajwatch.actions.policy import ActionPolicy
    from trajwatch.analysis.evaluate import Label, false_kills

    def loop(session_id: str, repeats: int) -> list:
        s = Session(session_id)
        steps = [s.start()]
        for _ in range(repeats):
            steps += s.tool("bash", {"command": "make"}, ok=False, error="make: *** [all] Error 2")
        detector = RunawayLoop()
        return [a for step in steps for a in detector.update(step)]

    killed_healthy, warned_healthy, killed_loop = loop("h1", 6), loop("h2", 2), loop("bad", 6)
    assert {a.action for a in killed_healthy} == {Action.NOTIFY, Action.KILL}
    assert {a.action for a in warned_healthy} == {Action.NOTIFY}
    labels = {
        "h1": Label("h1"),
        "h2": Label("h2"),
        "h3": Label("h3"),
        "bad": Label("bad", failures={"runaway_loop"}),
    }
    with Store.open(f"sqlite:///{tmp_path / 'k.db'}") as store:
        with store.unit() as unit:
            unit.add_alerts([*killed_healthy, *warned_healthy, *killed_loop])
        ungated = false_kills(store, labels, ActionPolicy(corroborate=False))
        disciplined = false_kills(store, labels)
        # a second, independent signal in the healthy session h1: now the kill fires
        with store.unit() as unit:
            unit.add_alerts([drift_warning("h1", after=killed_healthy[-1])])
        corroborated = false_kills(store, labels)
    assert (ungated.healthy, ungated.killed, ungated.by_detector) == (3, 1, (("runaway_loop", 1),))
    assert ungated.to_json()["rate"] == round(1 / 3, 4)
    # the default policy withholds a lone detector's kill: recommended, not fired
    assert (disciplined.killed, disciplined.recommended) == (0, 1)
    assert (corroborated.killed, corroborated.by_detector) == (1, (("intent_drift", 1),))


def drift_warning(session_id: str, *, after: Alert) -> Alert:
    """An intent_drift warning raised after ``after`` in its session."""
    return dataclasses.replace(
        after,
        alert_id=f"al_drift_{session_id}",
        detector="intent_drift",
        severity=Severity.WARN,
        action=Action.NOTIFY,
        ts=after.ts + 1,
        raised_seq=after.raised_seq + 1,
    )
