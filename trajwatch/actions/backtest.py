"""``trajwatch actions backtest``: a candidate action policy over the stored history.

The stored alerts since a time go through :func:`~trajwatch.actions.policy.plan` in event
time order — with the sessions' agents and checkpoints from the store and a fresh
cooldown ledger — and the report says, per agent, what would have fired (by action, in
enforce and in shadow mode), what the cooldown suppressed, and which rollbacks fell back
to kill for want of a checkpoint. Nothing is written or sent. Replay's ``would_fire`` is
the same decision over the replayed alerts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.records import Action, Alert
from models.store import Store
from trajwatch.actions.policy import ActionPolicy, Decision, checkpoints_by_session, plan

NO_AGENT = "(no agent)"


def decide(store: Store, policy: ActionPolicy, alerts: Sequence[Alert]) -> list[Decision]:
    """``policy``'s decisions for stored ``alerts``, as the live sink would take them on a
    store that had fired nothing before."""
    sessions = sorted({a.session_id for a in alerts})
    if not sessions:
        return []
    agents = {info.session_id: info.agent for info in store.sessions(sessions)}
    checkpoints = checkpoints_by_session(store.checkpoints(sessions))
    return plan(policy, alerts, agents, checkpoints)


@dataclass(frozen=True, slots=True)
class AgentReport:
    agent: str
    alerts: int
    fired: Counter[str]
    """Enforced actions by name."""
    shadow: Counter[str]
    """Actions shadow mode would have sent, by name."""
    suppressed: int
    no_action: int
    rollback_fallbacks: int

    def to_json(self) -> dict[str, Any]:
        names = [str(a) for a in Action]
        return {
            "agent": self.agent,
            "alerts": self.alerts,
            "fired": {n: self.fired[n] for n in names},
            "shadow": {n: self.shadow[n] for n in names},
            "suppressed_by_cooldown": self.suppressed,
            "no_action": self.no_action,
            "rollback_fallbacks": self.rollback_fallbacks,
        }


def report(decisions: Sequence[Decision]) -> list[AgentReport]:
    """Per agent (by name), what ``decisions`` would have done."""
    by_agent: dict[str, list[Decision]] = defaultdict(list)
    for decision in decisions:
        by_agent[decision.agent or NO_AGENT].append(decision)
    reports = []
    for agent in sorted(by_agent):
        mine = by_agent[agent]
        fires = [d for d in mine if d.fires and d.action is not None]
        reports.append(
            AgentReport(
                agent=agent,
                alerts=len(mine),
                fired=Counter(str(d.action) for d in fires if d.mode == "enforce"),
                shadow=Counter(str(d.action) for d in fires if d.mode == "shadow"),
                suppressed=sum(d.status == "suppressed" for d in mine),
                no_action=sum(d.status == "none" for d in mine),
                rollback_fallbacks=sum(d.fallback for d in mine),
            )
        )
    return reports


def to_text(reports: Sequence[AgentReport], since: str) -> str:
    if not reports:
        return f"no alerts stored since {since}"
    lines = [
        f"since {since}: what the policy would have fired",
        f"{'agent':<24} {'alerts':>6} {'notify':>6} {'kill':>5} {'rollbk':>6} {'resume':>6} "
        f"{'shadow':>6} {'cooled':>6} {'none':>5} {'no-ckpt':>7}",
    ]
    for r in reports:
        lines.append(
            f"{r.agent[:24]:<24} {r.alerts:>6} {r.fired['notify']:>6} {r.fired['kill']:>5} "
            f"{r.fired['rollback']:>6} {r.fired['resume']:>6} {sum(r.shadow.values()):>6} "
            f"{r.suppressed:>6} {r.no_action:>5} {r.rollback_fallbacks:>7}"
        )
    lines.append("cooled: suppressed by the per-session cooldown; no-ckpt: rollbacks sent as kill")
    return "\n".join(lines)
