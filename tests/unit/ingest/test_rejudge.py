"""A session with a step later than the window is judged again in event-time order when
it settles (issue 27, deliverable 2): its steps take their event-time places, an alert only
arrival order raised is superseded (kept), an alert only event order raises is new."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

from detectors.base import Detector, make_alert
from detectors.registry import DetectorSet
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.rejudge import SUPERSEDED
from models.records import Alert, Severity, Step, StepKind
from models.store import Store
from tests.unit.ingest.test_pipeline import coding_session
from trajwatch.service.replay import replay
from trajwatch.settings import Settings


class OrderProbe(Detector):
    """Fires on what only an order shows: a result whose call was not seen before it, and
    a tool call right after a model call."""

    name = "order_probe"

    def _reset(self) -> None:
        self.calls: set[str] = set()
        self.previous: StepKind | None = None

    def __init__(self) -> None:
        self._reset()

    def update(self, step: Step) -> list[Alert]:
        alerts = []
        if step.kind == StepKind.TOOL_RESULT and step.call_id not in self.calls:
            alerts.append(self._alert(step, "a result before its call"))
        if step.kind == StepKind.TOOL_CALL:
            self.calls.add(step.call_id or "")
            if self.previous == StepKind.MODEL_CALL:
                alerts.append(self._alert(step, "a call right after a model call"))
        self.previous = step.kind
        return alerts

    def _alert(self, step: Step, reason: str) -> Alert:
        return make_alert(
            self.name,
            onset=step,
            raised=step,
            evidence=[step],
            score=1.0,
            severity=Severity.WARN,
            reason=reason,
        )


def run(store: Store, events: list[dict[str, Any]], *, session: str, commit_each: bool) -> Pipeline:
    pipeline = Pipeline(
        store, settings=Settings(lateness_ms=0), detectors=DetectorSet([OrderProbe()])
    )
    for i, e in enumerate(events):
        data = json.dumps({**e, "session_id": session}).encode()
        pipeline.feed_event(data, source="test", location=f"l{i}", partition="p")
        if commit_each:
            pipeline.commit()
    pipeline.close()
    return pipeline


def shape(store: Store, session: str) -> list[tuple[object, ...]]:
    return [
        (s.seq, s.kind, s.call_id, s.ts, s.step_id.removeprefix(session), s.detail.get("late"))
        for s in store.steps(session)
    ]


def findings(alerts: list[Alert], session: str) -> list[tuple[str, str, str]]:
    return sorted((a.detector, a.onset_step_id.removeprefix(session), a.reason) for a in alerts)


@pytest.fixture
def late_tool_call() -> list[dict[str, Any]]:
    events = coding_session()
    late = events.pop(5)  # the second tool call arrives after the session's end
    assert late["type"] == "tool_call"
    return [*events, late]


def test_in_order_delivery_is_judged_once(store: Store) -> None:
    pipeline = run(store, coding_session(), session="in-order", commit_each=True)
    assert pipeline.stats.rejudged == 0
    assert not any(late for *_, late in shape(store, "in-order"))


@pytest.mark.parametrize("commit_each", [True, False], ids=["commit-each", "one-commit"])
def test_a_late_step_is_placed_and_judged_in_event_time_order_once_settled(
    store: Store, late_tool_call: list[dict[str, Any]], commit_each: bool
) -> None:
    run(store, coding_session(), session="in-order", commit_each=commit_each)
    pipeline = run(store, late_tool_call, session="late", commit_each=commit_each)
    assert pipeline.stats.rejudged == 1
    assert shape(store, "late") == shape(store, "in-order")
    standing = store.alerts(["late"])
    assert findings(standing, "late") == findings(store.alerts(["in-order"]), "in-order")
    assert len(standing) == 6  # each call after its model call: the late one's too


def test_what_only_arrival_order_raised_is_superseded_and_kept(
    store: Store, late_tool_call: list[dict[str, Any]]
) -> None:
    run(store, late_tool_call, session="late", commit_each=True)
    everything = store.alerts(["late"], superseded=True)
    (gone,) = [a for a in everything if a.superseded]
    assert gone.reason == "a result before its call" and gone.superseded == SUPERSEDED
    assert gone.onset_step_id == "late/tool_result/c1"
    assert gone not in store.alerts(["late"])


def test_an_alert_only_event_order_raises_is_new_and_returned_for_delivery(
    store: Store, late_tool_call: list[dict[str, Any]]
) -> None:
    pipeline = Pipeline(
        store, settings=Settings(lateness_ms=0), detectors=DetectorSet([OrderProbe()])
    )
    delivered: list[Alert] = []
    for i, e in enumerate(late_tool_call):
        data = json.dumps({**e, "session_id": "late"}).encode()
        pipeline.feed_event(data, source="test", location=f"l{i}", partition="p")
        delivered += pipeline.commit()
    delivered += pipeline.close()
    late_call = [a for a in delivered if a.onset_step_id == "late/tool_call/c1"]
    assert [a.reason for a in late_call] == ["a call right after a model call"]
    assert len({a.alert_id for a in delivered}) == len(delivered)  # each delivered once


def test_an_unsettled_session_settles_after_a_restart(
    store: Store, late_tool_call: list[dict[str, Any]]
) -> None:
    run(store, coding_session(), session="in-order", commit_each=True)
    *before_end, end, late = late_tool_call
    assert end["type"] == "session_end"
    first = Pipeline(store, settings=Settings(lateness_ms=0), detectors=DetectorSet([OrderProbe()]))
    for i, e in enumerate([*before_end, late]):  # the late call, then the worker stops
        data = json.dumps({**e, "session_id": "late"}).encode()
        first.feed_event(data, source="test", location=f"l{i}", partition="p")
        first.commit()
    assert first.stats.rejudged == 0  # not ended, not idle: provisional
    second = Pipeline(
        store, settings=Settings(lateness_ms=0), detectors=DetectorSet([OrderProbe()])
    )
    second.feed_event(
        json.dumps({**end, "session_id": "late"}).encode(), source="t", location="e", partition="p"
    )
    second.commit()
    assert second.stats.rejudged == 1
    assert shape(store, "late") == shape(store, "in-order")


def test_an_unsettled_session_idle_past_the_setting_settles(
    store: Store, late_tool_call: list[dict[str, Any]]
) -> None:
    *before_end, _, late = late_tool_call
    pipeline = Pipeline(
        store,
        settings=Settings(lateness_ms=0, settle_idle_ms=60_000),
        detectors=DetectorSet([OrderProbe()]),
    )
    for i, e in enumerate([*before_end, late]):
        data = json.dumps({**e, "session_id": "late"}).encode()
        pipeline.feed_event(data, source="test", location=f"l{i}", partition="p")
        pipeline.commit()
    assert pipeline.stats.rejudged == 0
    other = {**coding_session()[0], "session_id": "other", "seq": 0}
    other["ts"] = max(e["ts"] for e in before_end) + 61  # event time moves on elsewhere
    pipeline.feed_event(json.dumps(other).encode(), source="t", location="o", partition="p")
    pipeline.commit()
    assert pipeline.stats.rejudged == 1
    assert not any(s.detail.get("late") for s in store.steps("late"))


class CountingProbe(OrderProbe):
    """:class:`OrderProbe` that counts the steps it judges per session (all its clones
    count in one place), and has a bug: it cannot take a tool named ``boom``."""

    name = "counting_probe"
    judged: ClassVar[Counter[str]] = Counter()

    def update(self, step: Step) -> list[Alert]:
        CountingProbe.judged[step.session_id] += 1
        if step.tool == "boom":
            raise ZeroDivisionError("division by zero")
        return super().update(step)


def _write_events(path: Path, events: list[dict[str, Any]], session: str) -> Path:
    path.write_text("".join(json.dumps({**e, "session_id": session}) + "\n" for e in events))
    return path


def test_a_replay_judges_a_session_with_a_late_step_once_with_the_in_order_alerts(
    tmp_path: Path, late_tool_call: list[dict[str, Any]]
) -> None:
    """Issue 28: a replay knows the whole file before its commit; a session it re-judges
    in event-time order is not judged in arrival order first (a judgement the same
    commit threw away), and stores what in-order delivery stores."""
    CountingProbe.judged.clear()
    late = _write_events(tmp_path / "late.events.jsonl", late_tool_call, "late")
    in_order = _write_events(tmp_path / "in-order.events.jsonl", coding_session(), "in-order")
    url = f"sqlite:///{tmp_path / 'replayed.db'}"
    summary = replay(
        [in_order, late],
        settings=Settings(db_url=url, lateness_ms=0),
        detectors=DetectorSet([CountingProbe()]),
    )
    assert summary.rejudged == 1
    with Store.open(url) as store:
        assert shape(store, "late") == shape(store, "in-order")
        placed = len(store.steps("late"))
        # each step judged once: by the re-judgement, none in arrival order before it
        assert CountingProbe.judged["late"] == placed == CountingProbe.judged["in-order"]
        standing = store.alerts(["late"], superseded=True)
        assert not any(a.superseded for a in standing)
        assert findings(standing, "late") == findings(store.alerts(["in-order"]), "in-order")
        assert len(standing) == 6


def _mixed_input() -> list[tuple[str, dict[str, Any]]]:
    """Two sessions interleaved on one partition: ``late`` (a tool call after its end)
    and ``calm`` (in order), whose steps make dead letters between its judged steps: a
    detector failure (tool ``boom``) before and after a draft whose id, with the suffix of
    a compaction placing it may infer, fits no column (dead-lettered as it is placed)."""
    late = [("late", e) for e in coding_session()]
    late.append(late.pop(5))
    calm = [("calm", e) for e in coding_session()]
    calm[2][1]["tool"] = "boom"
    calm[8][1]["tool"] = "boom"
    # a model call's id with room for no compaction id: unstorable when it is placed
    calm.insert(6, ("calm", {**calm[4][1], "response_id": "r" * 990}))
    mixed = [item for pair in zip(late, calm, strict=False) for item in pair]
    return [*mixed, *calm[len(late) :]]


def _stored(store: Store) -> tuple[list[Any], list[Any], list[tuple[str, str, bytes]]]:
    sessions = ["late", "calm"]
    steps = [
        (s.step_id, s.seq, s.model_session, s.detail) for x in sessions for s in store.steps(x)
    ]
    alerts = sorted(
        (a.alert_id, a.onset_step_id, a.raised_seq, a.evidence, a.superseded)
        for a in store.alerts(sessions, superseded=True)
    )
    letters = [(d.location, d.reason, d.payload) for d in store.dead_letters()]
    return steps, alerts, letters


@pytest.mark.parametrize("commit_each", [True, False], ids=["commit-each", "one-commit"])
def test_judging_once_stores_what_judging_in_arrival_order_first_stores(
    tmp_path: Path, commit_each: bool
) -> None:
    """``Pipeline(judge_once=True)`` (what a replay runs) against the live path's judgement
    as each step is placed: the same steps, alerts (superseded too) and dead letters in
    the same order, the session re-judged in the same commit judged once."""
    stored, counts, firsts = [], [], []
    for judge_once in (False, True):
        CountingProbe.judged.clear()
        with Store.open(f"sqlite:///{tmp_path / f'{judge_once}.db'}") as store:
            pipeline = Pipeline(
                store,
                settings=Settings(lateness_ms=0),
                detectors=DetectorSet([CountingProbe()]),
                judge_once=judge_once,
            )
            for i, (session, e) in enumerate(_mixed_input()):
                data = json.dumps({**e, "session_id": session}).encode()
                pipeline.feed_event(data, source="test", location=f"l{i}", partition="p")
                if commit_each:
                    pipeline.commit()
            pipeline.close()
            assert pipeline.stats.rejudged == 1
            stored.append(_stored(store))
            counts.append(dict(CountingProbe.judged))
            firsts.append([d.reason for d in pipeline.stats.first_dead_letters])
    assert stored[1] == stored[0]
    assert firsts[1] == firsts[0]
    *_, letters = stored[0]
    assert [reason.split(":")[0] for _, reason, _ in letters] == [
        "detector counting_probe failed",
        "unstorable step",
        "detector counting_probe failed",
    ][::-1]  # newest first
    assert counts[1]["calm"] == counts[0]["calm"]
    placed = len(_stored_steps(tmp_path, "late"))
    if commit_each:  # each step judged at its own commit, but the late one: its commit
        # (the input's end) re-judges the session
        assert counts[0]["late"] == 2 * placed and counts[1]["late"] == 2 * placed - 1
    else:  # one commit: judged once
        assert counts[0]["late"] == 2 * placed and counts[1]["late"] == placed


def _stored_steps(tmp_path: Path, session: str) -> list[Step]:
    with Store.open(f"sqlite:///{tmp_path / 'True.db'}") as store:
        return store.steps(session)
