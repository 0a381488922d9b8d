"""A run resumed as a new session, through the pipeline and the store, on SQLite and
PostgreSQL: re-issuing a side effect its dead predecessor had completed is a duplicate
naming that run, its step and its result; re-issuing the call the predecessor never
finished, or the same call in a session that continues no run, is not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from detectors.duplicate_side_effect import DuplicateSideEffect
from detectors.registry import DetectorSet
from ingest.pipeline.engine import Pipeline
from models.records import Alert
from models.store import Store
from trajwatch.settings import Settings

T0 = 1_767_225_600
MAIL = {"to": "customers@example.com", "template": "incident-4711", "batch": 120}
STATUS = {"incident_id": "INC-4711", "status": "monitoring"}


def events(
    sid: str, start: float, calls: list[tuple[str, dict[str, Any], str | None]], **start_fields: Any
) -> list[dict[str, Any]]:
    """A session's events: a start, then each (tool, arguments, result) as a call and, when
    the result is not None, its result; a call without one is where the worker died."""
    out: list[dict[str, Any]] = [
        {
            "type": "session_start",
            "session_id": sid,
            "ts": T0 + start,
            "agent": "ops-bot",
            "goal": "Tell the customers about incident INC-4711",
            **start_fields,
        }
    ]
    for i, (tool, arguments, result) in enumerate(calls):
        at = T0 + start + 10 * (i + 1)
        out.append(
            {
                "type": "tool_call",
                "session_id": sid,
                "ts": at,
                "tool": tool,
                "call_id": f"{sid}-c{i}",
                "arguments": arguments,
            }
        )
        if result is not None:
            out.append(
                {
                    "type": "tool_result",
                    "session_id": sid,
                    "ts": at + 2,
                    "call_id": f"{sid}-c{i}",
                    "ok": True,
                    "output": result,
                }
            )
    return [{**event, "seq": seq} for seq, event in enumerate(out)]


DEAD = events(
    "dead",
    0,
    [
        ("send_email", MAIL, "sent 120/120 emails (sendgrid batch 7f3a)"),
        ("post_status", STATUS, None),
    ],
)
"""The dead run: the e-mails went out, the worker died in the status update."""


def pipeline(store: Store) -> Pipeline:
    return Pipeline(
        store, settings=Settings(lateness_ms=0), detectors=DetectorSet([DuplicateSideEffect()])
    )


def run(store: Store, evs: list[dict[str, Any]]) -> list[Alert]:
    p = pipeline(store)
    for i, event in enumerate(sorted(evs, key=lambda e: e["ts"])):
        p.feed_event(json.dumps(event).encode(), source="test", location=f"l{i}", partition="p")
    p.close()
    assert p.stats.dead_letters == 0, p.stats.first_dead_letters
    return [a for a in store.alerts() if a.detector == "duplicate_side_effect"]


@pytest.mark.parametrize("commits", ["one", "two"])
def test_a_resumer_resending_what_the_dead_run_sent_is_a_duplicate_naming_it(
    store: Store, commits: str
) -> None:
    resumer = events(
        "resumer",
        1800,
        [("post_status", STATUS, '{"ok": true}'), ("send_email", MAIL, "sent 120/120 emails")],
        predecessor_session_id="dead",
    )
    if commits == "two":  # the dead run committed first, the resumer by another process
        assert run(store, DEAD) == []
        found = run(store, resumer)
    else:  # both in one release: the dead run's steps are not stored yet
        found = run(store, DEAD + resumer)
    (alert,) = found
    assert alert.session_id == "resumer"
    assert alert.onset_step_id.endswith("resumer-c1")
    assert "session dead" in alert.reason and "step 1 " in alert.reason
    assert "sent 120/120 emails (sendgrid batch 7f3a)" in alert.reason
    dead_call = next(r for r in alert.evidence if r.get("session_id") == "dead")
    assert dead_call["seq"] == 1
    infos = {info.session_id: info for info in store.sessions()}
    assert infos["resumer"].predecessor == "dead" and infos["dead"].predecessor is None
    # replayed (a new process, the same input): nothing new is stored
    again = run(store, DEAD + resumer)
    assert [a.alert_id for a in again] == [alert.alert_id]


def test_a_resumer_finishing_only_the_call_that_never_completed_is_quiet(store: Store) -> None:
    resumer = events(
        "resumer", 1800, [("post_status", STATUS, '{"ok": true}')], predecessor_session_id="dead"
    )
    assert run(store, DEAD + resumer) == []
    assert {i.session_id: i.predecessor for i in store.sessions()}["resumer"] == "dead"


def test_a_session_that_continues_no_run_sending_the_same_mail_is_quiet(store: Store) -> None:
    other = events("other", 1800, [("send_email", MAIL, "sent 120/120 emails")])
    assert run(store, DEAD + other) == []
    assert {i.session_id: i.predecessor for i in store.sessions()} == {"dead": None, "other": None}
