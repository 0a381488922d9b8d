"""The reference breaker and a resume webhook: applied once, no breaker changed (restarting
a run is the orchestrator's job; a resume must never open or close a breaker)."""

from __future__ import annotations

from trajwatch.breaker.state import Breakers


def test_a_resume_is_applied_once_and_changes_no_breaker() -> None:
    breakers = Breakers(":memory:")
    data = {"session_id": "s1", "agent": "coder", "alert_id": "al_1", "action": "resume"}
    assert breakers.apply("al_1:b:resume", {"type": "trajwatch.resume", "data": data})
    assert not breakers.apply("al_1:b:resume", {"type": "trajwatch.resume", "data": data})
    assert breakers.state("session", "s1")[0] == breakers.state("agent", "coder")[0] == "closed"
    # a session a kill opened stays open: a resume closes nothing
    kill = {**data, "alert_id": "al_2", "action": "kill"}
    assert breakers.apply("al_2:b:kill", {"type": "trajwatch.kill", "data": kill})
    breakers.apply(
        "al_3:b:resume", {"type": "trajwatch.resume", "data": {**data, "alert_id": "al_3"}}
    )
    assert breakers.state("session", "s1")[0] == "open"
