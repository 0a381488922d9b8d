"""A session with a step later than the window is judged again in event-time order when
it settles (issue 27, deliverable 2): its steps take their event-time places, an alert only
arrival order raised is superseded (kept), an alert only event order raises is new."""

from __future__ import annotations

import json
from typing import Any

import pytest

from detectors.base import Detector, make_alert
from detectors.registry import DetectorSet
from ingest.pipeline.engine import Pipeline
from ingest.pipeline.rejudge import SUPERSEDED
from models.records import Alert, Severity, Step, StepKind
from models.store import Store
from tests.unit.ingest.test_pipeline import coding_session
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
