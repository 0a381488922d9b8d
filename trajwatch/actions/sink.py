"""The actions' pipeline sink: the transactional outbox.

Inside the commit that stores new alerts (:meth:`ActionSink.in_transaction`), the action
policy decides each one and one outbox row per configured endpoint is written through the
same :class:`~models.store.StoreUnit`: an alert and its actions are durable together or
not at all, so a crash can lose neither. Only alerts new to the store reach a sink, and
rows are keyed by ``delivery_id``, so input delivered or replayed again queues nothing
twice. Once the commit is durable (:meth:`ActionSink.after_commit`) the dispatcher is
woken; it sends from the store, never from memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from ingest.pipeline.sinks import Committed, Sink
from models.records import Action, Alert, Delivery, delivery_id
from models.store import StoreUnit
from trajwatch.actions import payload
from trajwatch.actions.endpoints import ActionsConfig
from trajwatch.actions.policy import (
    ActionPolicy,
    Decision,
    Ledger,
    Workspace,
    checkpoints_by_session,
    plan,
)


class ActionSink(Sink):
    """Writes the policy's decisions to the outbox; wakes ``dispatcher`` after commit."""

    def __init__(self, config: ActionsConfig, dispatcher: object | None = None) -> None:
        self.config = config
        self._dispatcher = dispatcher
        self.queued = 0
        """Outbox rows written, over the sink's life."""

    def in_transaction(self, unit: StoreUnit, committed: Committed) -> None:
        if not committed.alerts or not self.config.endpoints:
            return
        sessions = sorted({a.session_id for a in committed.alerts})
        new = {a.alert_id for a in committed.alerts}
        decisions = plan(
            self.config.policy,
            committed.alerts,
            unit.session_agents(sessions),
            checkpoints_by_session(unit.checkpoints(sessions)),
            Ledger(unit.fired_actions(sessions)),
            earlier=[a for a in unit.alerts(sessions) if a.alert_id not in new],
            workspaces=workspaces(committed.alerts, unit, self.config.policy),
        )
        rows = outbox_rows(decisions, list(self.config.endpoints), self.config.explorer_url)
        self.queued += unit.add_deliveries(rows)

    def after_commit(self, committed: Committed) -> None:
        wake = getattr(self._dispatcher, "wake", None)
        if committed.alerts and wake is not None:
            wake()


def workspaces(
    alerts: Sequence[Alert], unit: StoreUnit, policy: ActionPolicy
) -> dict[str, Workspace]:
    """Where the sessions that may be resumed work, from their records: those of the
    ``alerts`` recommending a resume, or all of them when a rule of ``policy`` sends one
    (no read when none may be)."""
    if any(rule.action == Action.RESUME for rule in policy.rules):
        resuming = {a.session_id for a in alerts}
    else:
        resuming = {a.session_id for a in alerts if a.action == Action.RESUME}
    if not resuming:
        return {}
    return {
        info.session_id: Workspace(
            host=info.host,
            directory=info.workspace,
            repository=info.repository,
            branch=info.branch,
            revision=info.revision,
        )
        for info in unit.sessions(sorted(resuming))
    }


def outbox_rows(
    decisions: Sequence[Decision], endpoints: Sequence[str], explorer_url: str | None
) -> list[Delivery]:
    """One row per decided action and endpoint: ``pending`` to send, ``shadow`` (shadow
    mode) or ``suppressed`` (cooldown) to record only. Decisions of no action write none."""
    rows = []
    for decision in decisions:
        if decision.action is None:
            continue
        if decision.status == "suppressed":
            status = "suppressed"
        else:
            status = "shadow" if decision.mode == "shadow" else "pending"
        body = payload.body(decision, explorer_url=explorer_url)
        alert = decision.alert
        for endpoint in endpoints:
            rows.append(
                Delivery(
                    delivery_id=delivery_id(alert.alert_id, endpoint, decision.action),
                    alert_id=alert.alert_id,
                    endpoint=endpoint,
                    action=decision.action,
                    mode=decision.mode,
                    status=status,
                    session_id=alert.session_id,
                    agent=decision.agent,
                    alert_ts=alert.ts,
                    decision=decision.why,
                    payload=body,
                )
            )
    return rows
