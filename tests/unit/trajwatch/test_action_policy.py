"""The action policy's decisions (pure: no store, no network) and its config."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.errors import ConfigError
from models.records import Action, Alert, Severity
from models.store import Store
from trajwatch.actions import payload
from trajwatch.actions.policy import (
    ActionPolicy,
    AgentSettings,
    Checkpoint,
    Ledger,
    Rule,
    Workspace,
    plan,
)
from trajwatch.config import actions_config, load_config
from trajwatch.settings import Settings

SECOND = 1_000_000_000


def alert(
    n: int,
    *,
    session: str = "s1",
    detector: str = "runaway_loop",
    severity: Severity = Severity.CRITICAL,
    action: Action = Action.KILL,
    onset: int = 10,
    ts_s: float = 0,
    checkpoint_id: str | None = None,
) -> Alert:
    return Alert(
        alert_id=f"al_{n:04d}",
        session_id=session,
        detector=detector,
        severity=severity,
        score=0.9,
        onset_seq=onset,
        onset_step_id=f"{session}#{onset}",
        evidence=({"step": onset, "step_id": f"{session}#{onset}"},),
        reason="the same failing call, again and again",
        action=action,
        checkpoint_id=checkpoint_id,
        ts=int(ts_s * SECOND),
        raised_seq=onset + 2,
    )


UNGATED = ActionPolicy(corroborate=False)
"""The policy without the kill discipline, for the mechanisms it does not touch (rules'
order, rollback targets, the cooldown); the discipline has its own tests below."""


def test_without_rules_each_alert_gets_its_recommended_action() -> None:
    alerts = [alert(1, action=Action.NOTIFY), alert(2, action=Action.KILL, ts_s=1)]
    decided = plan(UNGATED, alerts, {"s1": "coder"}, {})
    assert [(d.action, d.status, d.mode) for d in decided] == [
        (Action.NOTIFY, "fire", "enforce"),
        (Action.KILL, "fire", "enforce"),
    ]


def test_the_first_matching_rule_decides_by_detector_severity_and_agent() -> None:
    policy = ActionPolicy(
        rules=(
            Rule(detector="egress_gaming", agents=frozenset({"coder"}), action=Action.KILL),
            Rule(detector="egress_gaming", action=Action.NOTIFY),
            Rule(severity=Severity.CRITICAL, action="recommended"),
            Rule(action=None),
        )
    )
    alerts = [
        alert(1, session="a", detector="egress_gaming", action=Action.NOTIFY),
        alert(2, session="b", detector="egress_gaming", action=Action.KILL),
        alert(3, session="b", action=Action.ROLLBACK, checkpoint_id="ck"),
        alert(4, session="b", severity=Severity.WARN, action=Action.NOTIFY),
    ]
    checkpoints = {"b": [Checkpoint(3, "ck", "abc123")]}
    decided = plan(policy, alerts, {"a": "coder", "b": "researcher"}, checkpoints)
    assert [d.action for d in decided] == [Action.KILL, Action.NOTIFY, Action.ROLLBACK, None]
    assert decided[3].status == "none"


def test_a_rollback_names_the_last_checkpoint_before_the_onset_or_falls_back_to_kill() -> None:
    checkpoints = {
        "s1": [
            Checkpoint(2, "ck-a", "aaa111"),
            Checkpoint(6, "ck-b", "bbb222"),
            Checkpoint(12, "ck-late", "ccc333"),
        ],
    }
    late, early = (
        alert(1, action=Action.ROLLBACK, onset=10),
        alert(2, action=Action.ROLLBACK, onset=1, session="s2"),
    )
    named = alert(3, action=Action.ROLLBACK, onset=10, checkpoint_id="ck-a", session="s3")
    checkpoints["s3"] = checkpoints["s1"]
    decided = {d.alert.alert_id: d for d in plan(UNGATED, [late, early, named], {}, checkpoints)}
    assert decided["al_0001"].checkpoint == Checkpoint(6, "ck-b", "bbb222")
    assert decided["al_0003"].checkpoint == Checkpoint(2, "ck-a", "aaa111")  # the detector's
    fallback = decided["al_0002"]
    assert (fallback.action, fallback.fallback, fallback.checkpoint) == (Action.KILL, True, None)
    assert "no checkpoint before the onset" in fallback.why


def test_the_cooldown_suppresses_as_strong_actions_but_never_an_escalation() -> None:
    policy = ActionPolicy(cooldown_ns=60 * SECOND, corroborate=False)
    alerts = [
        alert(1, action=Action.NOTIFY, ts_s=0),
        alert(2, action=Action.NOTIFY, ts_s=10),  # as strong, within 60 s: suppressed
        alert(3, action=Action.KILL, ts_s=20),  # stronger: goes
        alert(4, action=Action.NOTIFY, ts_s=30),  # weaker than the kill: suppressed
        alert(5, action=Action.NOTIFY, ts_s=90),  # 70 s after the last notify fired
        alert(6, action=Action.NOTIFY, ts_s=15, session="other"),
    ]
    decided = {d.alert.alert_id: d.status for d in plan(policy, alerts, {}, {})}
    assert decided == {
        "al_0001": "fire",
        "al_0002": "suppressed",
        "al_0003": "fire",
        "al_0004": "suppressed",
        "al_0005": "fire",
        "al_0006": "fire",
    }


def test_the_cooldown_remembers_actions_fired_in_earlier_commits() -> None:
    policy = ActionPolicy(cooldown_ns=60 * SECOND, corroborate=False)
    ledger = Ledger([("s1", 0, Action.KILL)])
    [decision] = plan(policy, [alert(1, ts_s=30)], {}, {}, ledger)
    assert decision.status == "suppressed"


# -- resume ---------------------------------------------------------------------------


def test_a_resume_names_the_last_checkpoint_up_to_the_alert_and_the_commit_to_resume_at() -> None:
    checkpoints = {
        "s1": [
            Checkpoint(2, "ck-a", "aaa111"),
            Checkpoint(6, "ck-b", None),  # recorded no commit
            Checkpoint(12, "ck-c", "ccc333"),
            Checkpoint(30, "ck-after", "ddd444"),  # after the step that raised the alert
        ],
    }
    checkpoints["s3"] = checkpoints["s1"]
    where = Workspace(host="ci-7", directory="/w/app", revision="0a0a0a0")
    workspaces = {"s1": where, "s2": where, "s3": where}
    last = alert(1, action=Action.RESUME, onset=10)  # raised at 12
    bare = alert(2, action=Action.RESUME, onset=10, session="s2")
    named = alert(3, action=Action.RESUME, onset=10, checkpoint_id="ck-b", session="s3")
    decided = {
        d.alert.alert_id: d
        for d in plan(ActionPolicy(), [last, bare, named], {}, checkpoints, workspaces=workspaces)
    }
    assert decided["al_0001"].checkpoint == Checkpoint(12, "ck-c", "ccc333")
    assert decided["al_0001"].commit == "ccc333"
    assert "resume from checkpoint ck-c (ccc333)" in decided["al_0001"].why
    # no checkpoint: from the start, at the commit the session started on
    assert (decided["al_0002"].checkpoint, decided["al_0002"].commit) == (None, "0a0a0a0")
    assert "no checkpoint: resume from the start (0a0a0a0)" in decided["al_0002"].why
    # the detector's own checkpoint; its commit unknown (the start's is older than it)
    assert decided["al_0003"].checkpoint == Checkpoint(6, "ck-b", None)
    assert decided["al_0003"].commit is None
    assert all(d.action == Action.RESUME and d.fires for d in decided.values())
    assert all(d.workspace == where for d in decided.values())


def test_a_resume_is_no_stop_but_never_follows_one() -> None:
    # the kill discipline does not gate it: alone, it fires
    [alone] = plan(ActionPolicy(), [alert(1, action=Action.RESUME)], {}, {})
    assert (alone.action, alone.status) == (Action.RESUME, "fire")
    # a session a kill or rollback stopped (in this commit or an earlier one) is not resumed
    for stop in (Action.KILL, Action.ROLLBACK):
        ledger = Ledger([("s1", 0, stop)])
        [held] = plan(UNGATED, [alert(2, action=Action.RESUME, ts_s=3600)], {}, {}, ledger)
        assert held.action == Action.NOTIFY and "resume withheld" in held.why
    kill_then_resume = [alert(3, action=Action.KILL), alert(4, action=Action.RESUME, ts_s=1)]
    decided = [d.action for d in plan(UNGATED, kill_then_resume, {}, {})]
    assert decided == [Action.KILL, Action.NOTIFY]


def test_the_cooldown_ranks_resume_between_notify_and_rollback() -> None:
    policy = ActionPolicy(cooldown_ns=60 * SECOND, corroborate=False)
    alerts = [
        alert(1, action=Action.RESUME, ts_s=0),
        alert(2, action=Action.RESUME, ts_s=10),  # as strong, within 60 s: suppressed
        alert(3, action=Action.NOTIFY, ts_s=20),  # weaker: suppressed
        alert(4, action=Action.ROLLBACK, ts_s=30, onset=40),  # stronger: goes
    ]
    decided = {d.alert.alert_id: d.status for d in plan(policy, alerts, {}, {})}
    assert decided == {
        "al_0001": "fire",
        "al_0002": "suppressed",
        "al_0003": "suppressed",
        "al_0004": "fire",
    }
    assert [a.value for a in Action] == ["notify", "kill", "rollback", "resume"]


def test_a_resume_payload_is_its_own_type_with_the_workspace() -> None:
    import json

    where = Workspace(host="ci-7", directory="/w/app", repository="acme/app", branch="main")
    checkpoints = {"s1": [Checkpoint(3, "ck-1", "abc1234")]}
    [decision] = plan(
        ActionPolicy(), [alert(1, action=Action.RESUME)], {}, checkpoints, workspaces={"s1": where}
    )
    data = json.loads(payload.body(decision))["data"]
    assert json.loads(payload.body(decision))["type"] == "trajwatch.resume"
    assert data["action"] == "resume"
    assert data["checkpoint"] == {"checkpoint_id": "ck-1", "commit": "abc1234", "step": 3}
    assert data["workspace"] == {
        "host": "ci-7",
        "directory": "/w/app",
        "repository": "acme/app",
        "branch": "main",
        "commit": "abc1234",
    }
    [kill] = plan(UNGATED, [alert(2)], {}, {})
    assert "workspace" not in json.loads(payload.body(kill))["data"]  # kill bodies unchanged


# -- the kill discipline -------------------------------------------------------------


def test_a_lone_recommended_kill_is_withheld_and_notifies() -> None:
    [decision] = plan(ActionPolicy(), [alert(1, detector="intent_drift")], {}, {})
    assert (decision.action, decision.status) == (Action.NOTIFY, "fire")
    assert "kill withheld: no independent signal" in decision.why


def test_an_independent_signal_later_carries_the_withheld_kill() -> None:
    drift = alert(1, detector="intent_drift", onset=10, ts_s=1)
    egress = alert(
        2, detector="egress_gaming", severity=Severity.WARN, action=Action.NOTIFY, onset=20, ts_s=2
    )
    decided = plan(ActionPolicy(), [drift, egress], {}, {})
    assert [d.action for d in decided] == [Action.NOTIFY, Action.KILL]
    assert "corroborates intent_drift's withheld kill (al_0001)" in decided[1].why


def test_a_second_recommended_kill_of_another_family_fires_at_once() -> None:
    drift = alert(1, detector="intent_drift", severity=Severity.CRITICAL, action=Action.NOTIFY)
    loop = alert(2, detector="runaway_loop", onset=12, ts_s=1)
    decided = plan(ActionPolicy(), [drift, loop], {}, {})
    assert [d.action for d in decided] == [Action.NOTIFY, Action.KILL]
    assert "corroborated by intent_drift (al_0001)" in decided[1].why


def test_an_earlier_warning_of_another_family_does_not_corroborate_a_kill() -> None:
    drift = alert(1, detector="intent_drift", severity=Severity.WARN, action=Action.NOTIFY)
    loop = alert(2, detector="runaway_loop", onset=12, ts_s=1)
    decided = plan(ActionPolicy(), [drift, loop], {}, {})
    assert [d.action for d in decided] == [Action.NOTIFY, Action.NOTIFY]
    assert "withheld" in decided[1].why


def test_premature_completion_neither_corroborates_nor_carries_a_stop() -> None:
    loop = alert(1, detector="runaway_loop")
    done = alert(
        2,
        detector="premature_completion",
        severity=Severity.CRITICAL,
        action=Action.NOTIFY,
        onset=30,
        ts_s=2,
    )
    assert [d.action for d in plan(ActionPolicy(), [loop, done], {}, {})] == [Action.NOTIFY] * 2
    second = alert(3, detector="intent_drift", onset=40, ts_s=3)
    decided = plan(ActionPolicy(), [done, second], {}, {})
    assert [d.action for d in decided] == [Action.NOTIFY, Action.NOTIFY]


def test_an_agent_baseline_warning_corroborates_another_familys_withheld_kill() -> None:
    loop = alert(1, detector="runaway_loop", onset=12)
    baseline = alert(
        2, detector="agent_baseline", severity=Severity.WARN, action=Action.NOTIFY, ts_s=1
    )
    decided = plan(ActionPolicy(), [loop, baseline], {}, {})
    assert [d.action for d in decided] == [Action.NOTIFY, Action.KILL]
    assert "corroborates runaway_loop's withheld kill (al_0001)" in decided[1].why
    # without it, the same kill stays withheld: the warning is what made it fire
    [alone] = plan(ActionPolicy(), [loop], {}, {})
    assert alone.action == Action.NOTIFY
    # an earlier baseline warning is a warning like any other: a later critical of
    # another family still waits for a second signal (measured: docs/detectors)
    early = alert(
        3, detector="agent_baseline", severity=Severity.WARN, action=Action.NOTIFY, onset=5
    )
    later = alert(4, detector="runaway_loop", onset=12, ts_s=1)
    assert [d.action for d in plan(ActionPolicy(), [early, later], {}, {})] == [
        Action.NOTIFY,
        Action.NOTIFY,
    ]


def test_the_agent_baseline_never_stops_a_run_on_its_own() -> None:
    lone = alert(1, detector="agent_baseline", severity=Severity.WARN, action=Action.NOTIFY)
    assert [d.action for d in plan(ActionPolicy(), [lone], {}, {})] == [Action.NOTIFY]
    # not even when it recommends a stop, a rule names one, or the operator confirmed it
    stop = alert(2, detector="agent_baseline", severity=Severity.CRITICAL, action=Action.KILL)
    ruled = ActionPolicy(rules=(Rule(detector="agent_baseline", action=Action.KILL),))
    confirmed = ActionPolicy(confirmed=frozenset({"agent_baseline"}))
    for policy in (ActionPolicy(), ruled, confirmed, UNGATED):
        [decision] = plan(policy, [stop], {}, {})
        assert decision.action == Action.NOTIFY, policy
        assert "never stops a run on its own" in decision.why
    # and two of its warnings are one family, not two signals
    second = alert(
        3, detector="agent_baseline", severity=Severity.WARN, action=Action.NOTIFY, ts_s=1
    )
    assert {d.action for d in plan(ActionPolicy(), [lone, second], {}, {})} == {Action.NOTIFY}


def test_two_detectors_of_one_family_are_one_signal() -> None:
    loop = alert(1, detector="runaway_loop")
    budget = alert(2, detector="budget_overrun", onset=14, ts_s=1)
    decided = plan(ActionPolicy(), [loop, budget], {}, {})
    assert [d.action for d in decided] == [Action.NOTIFY, Action.NOTIFY]


def test_an_info_alert_corroborates_nothing() -> None:
    drift = alert(1, detector="intent_drift")
    info = alert(
        2, detector="egress_gaming", severity=Severity.INFO, action=Action.NOTIFY, onset=15, ts_s=1
    )
    assert [d.action for d in plan(ActionPolicy(), [drift, info], {}, {})] == [Action.NOTIFY] * 2


def test_the_stores_earlier_alerts_corroborate_across_commits() -> None:
    earlier = [alert(1, detector="egress_gaming", severity=Severity.CRITICAL, action=Action.NOTIFY)]
    [decision] = plan(ActionPolicy(), [alert(2, onset=30, ts_s=5)], {}, {}, earlier=earlier)
    assert decision.action == Action.KILL


def test_a_withheld_kill_is_carried_once_a_stop_already_fired() -> None:
    drift = alert(1, detector="intent_drift", onset=10)
    egress = alert(
        2, detector="egress_gaming", severity=Severity.WARN, action=Action.NOTIFY, onset=20, ts_s=2
    )
    [decision] = plan(
        ActionPolicy(), [egress], {}, {}, Ledger([("s1", 0, Action.KILL)]), earlier=[drift]
    )
    assert decision.action == Action.NOTIFY and "a stop already fired" in decision.why


def test_operator_confirmed_kills_are_not_gated() -> None:
    lone = alert(1, detector="egress_gaming")
    by_list = ActionPolicy(confirmed=frozenset({"egress_gaming"}))
    by_rule = ActionPolicy(rules=(Rule(detector="egress_gaming", action=Action.KILL),))
    assert plan(by_list, [lone], {}, {})[0].action == Action.KILL
    assert plan(by_rule, [lone], {}, {})[0].action == Action.KILL
    recommended = ActionPolicy(rules=(Rule(detector="egress_gaming", action="recommended"),))
    assert plan(recommended, [lone], {}, {})[0].action == Action.NOTIFY  # still gated


def test_a_withheld_rollback_carried_later_returns_before_the_first_onset() -> None:
    drift = alert(1, detector="intent_drift", action=Action.ROLLBACK, onset=10)
    egress = alert(
        2, detector="egress_gaming", severity=Severity.WARN, action=Action.NOTIFY, onset=40, ts_s=3
    )
    checkpoints = {"s1": [Checkpoint(5, "ck-clean", "aaa"), Checkpoint(30, "ck-dirty", "bbb")]}
    decided = plan(ActionPolicy(), [drift, egress], {}, checkpoints)
    assert decided[1].action == Action.ROLLBACK
    assert decided[1].checkpoint == Checkpoint(5, "ck-clean", "aaa")


def test_the_discipline_is_configured_in_actions(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[actions]\ncorroborate = false\nconfirmed_kills = ["egress_gaming"]\n')
    policy = actions_config(load_config(config), Settings()).policy
    assert (policy.corroborate, policy.confirmed) == (False, frozenset({"egress_gaming"}))
    assert actions_config(load_config(None), Settings()).policy.corroborate is True
    config.write_text('[actions]\nconfirmed_kills = ["egress_gamin"]\n')
    with pytest.raises(ConfigError, match="unknown detector 'egress_gamin'"):
        actions_config(load_config(config), Settings())


def test_shadow_mode_globally_or_per_agent() -> None:
    alerts = [alert(1, session="a"), alert(2, session="b")]
    agents = {"a": "coder", "b": "researcher"}
    per_agent = ActionPolicy(agents={"coder": AgentSettings(shadow=True)})
    assert [d.mode for d in plan(per_agent, alerts, agents, {})] == ["shadow", "enforce"]
    everyone = ActionPolicy(shadow=True, agents={"researcher": AgentSettings(shadow=False)})
    assert [d.mode for d in plan(everyone, alerts, agents, {})] == ["shadow", "enforce"]


def test_the_payload_is_the_standard_envelope_and_stays_under_20_kb() -> None:
    [decision] = plan(UNGATED, [alert(1, ts_s=1_767_225_600)], {"s1": "coder"}, {})
    import json

    body = json.loads(payload.body(decision, explorer_url="https://tw.example.com/"))
    assert body["type"] == "trajwatch.kill"
    assert body["timestamp"] == "2026-01-01T00:00:00.000Z"
    assert body["data"]["link"] == "https://tw.example.com/?session=s1&alert=al_0001"
    for key in (
        "alert_id",
        "session_id",
        "agent",
        "detector",
        "severity",
        "score",
        "reason",
        "evidence",
        "checkpoint",
    ):
        assert key in body["data"]
    huge = Alert(
        **{
            **{f: getattr(decision.alert, f) for f in decision.alert.__slots__},
            "evidence": tuple({"step": i, "step_id": "x" * 200} for i in range(500)),
            "reason": "r" * 30_000,
        }
    )
    [big] = plan(ActionPolicy(), [huge], {}, {})
    text = payload.body(big)
    assert len(text.encode()) < payload.MAX_BYTES
    assert json.loads(text)["data"]["evidence_truncated"] is True


def test_the_config_gives_rules_endpoints_and_secrets_from_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "trajwatch.toml"
    config.write_text(
        """
[actions]
cooldown_s = 120
explorer_url = "https://tw.example.com"
[[actions.rules]]
detector = "egress_gaming"
severity = "warn"
action = "kill"
[actions.agents.coder]
shadow = true
[webhooks.breaker]
url = "https://breaker.example.com/hook"
secret_env = ["NEW_SECRET", "OLD_SECRET"]
"""
    )
    environ = {
        "NEW_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "OLD_SECRET": "whsec_dGVzdA==",
    }
    found = actions_config(load_config(config), Settings(), environ)
    assert found.policy.cooldown_ns == 120 * SECOND
    assert found.policy.rules[0].action == Action.KILL
    assert found.policy.is_shadow("coder") and not found.policy.is_shadow("other")
    assert list(found.endpoints) == ["breaker"]
    assert len(found.endpoints["breaker"].signers) == 2
    with pytest.raises(ConfigError, match="OLD_SECRET is not set"):
        actions_config(load_config(config), Settings(), {"NEW_SECRET": environ["NEW_SECRET"]})


def test_zero_config_is_one_endpoint_from_two_environment_variables() -> None:
    settings = Settings.from_env(
        {
            "TRAJWATCH_WEBHOOK_URL": "https://hooks.example.com/x",
            "TRAJWATCH_WEBHOOK_SECRET": "whsec_dGVzdA==",
            "TRAJWATCH_WEBHOOK_ALLOW_PRIVATE": "1",
        }
    )
    found = actions_config({}, settings)
    assert list(found.endpoints) == ["default"] and found.allow_private
    assert found.policy == ActionPolicy()
    assert "whsec" not in repr(settings)
    with pytest.raises(ConfigError, match="whsec_"):
        actions_config({}, Settings(webhook_url="https://x.example.com", webhook_secret="plain"))


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[actions.rules]]\naction = "explode"', "action must be one of"),
        ('[[actions.rules]]\ndetector = "nope"\naction = "kill"', "unknown detector 'nope'"),
        ('[[actions.rules]]\nseverity = "high"\naction = "kill"', "severity must be"),
        ("[actions]\ncooldown_s = -1", "cooldown_s must be"),
        ('[webhooks.x]\nurl = "https://x.example.com"', "needs secret_env"),
    ],
)
def test_a_wrong_action_config_is_one_line_naming_the_key(
    tmp_path: Path, toml: str, message: str
) -> None:
    config = tmp_path / "trajwatch.toml"
    config.write_text(toml + "\n")
    with pytest.raises(ConfigError, match=message):
        actions_config(load_config(config), Settings(), {})


def test_the_outbox_keeps_the_discipline_across_commits(store: Store) -> None:
    """Through the real sink and store (SQLite and PostgreSQL): a lone kill queues a notify;
    the independent signal committed later queues the kill (read from the stored alerts)."""
    from ingest.pipeline.sinks import Committed
    from trajwatch.actions.endpoints import ActionsConfig, Endpoint
    from trajwatch.actions.sink import ActionSink

    sink = ActionSink(ActionsConfig(endpoints={"b": Endpoint("b", "https://breaker.example/")}))
    drift = alert(1, detector="intent_drift", onset=10, ts_s=1)
    egress = alert(
        2, detector="egress_gaming", severity=Severity.WARN, action=Action.NOTIFY, onset=20, ts_s=2
    )
    for new in ([drift], [egress]):
        with store.unit() as unit:
            unit.add_alerts(new)
            sink.in_transaction(unit, Committed(steps=(), alerts=new, dead_letters=()))
    queued = {d.alert_id: d.action for d in store.outbox().list()}
    assert queued == {"al_0001": Action.NOTIFY, "al_0002": Action.KILL}
