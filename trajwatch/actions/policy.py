"""The action policy: which alerts lead to which action, in which mode — pure decisions.

An :class:`ActionPolicy` maps an alert (its detector and severity) and the agent (or
workflow) name of its session to ``notify``, ``resume``, ``kill``, ``rollback`` or nothing,
by the first matching :class:`Rule`; with no rules written, an alert's own recommended
action (:attr:`Alert.action`) is the decision. A per-session cooldown suppresses an action
when an action at least as strong (notify < resume < rollback < kill) fired in the same
session less than ``cooldown_ns`` of event time before; a stronger one always goes through.
Shadow mode, globally or per agent, records the decision without sending it.

Kill discipline (:func:`corroborated`): a kill or rollback a detector *recommends* fires
only with evidence that holds beyond one rule — a second, independent signal in the same
session that judged the harm serious itself (an earlier ``critical`` alert of another
:data:`SIGNAL_GROUPS` family), or the detector on the operator's confirmed list
(``[actions] confirmed_kills``). Otherwise it is withheld and the alert notifies; when
an independent signal (``warn`` or above) comes later, that alert carries the withheld
action. An :data:`ADVISORY` detector is never the second signal; a :data:`CORROBORATING`
one (the per-agent baseline) is one like any other, and never stops a run itself.
Measured on every labelled set (``trajwatch eval``): with a ``warn`` enough as the
earlier signal and premature completion counted, 1 healthy run in 33 and 3 in 27 of two
blind sets were stopped; as now, none of the blind or tuned sets' healthy runs is. A
rule the operator wrote with an explicit action is a confirmed rule and is not gated.
``corroborate = false`` turns the discipline off.

A rollback names the last clean checkpoint before the alert's onset (the detector's own
``checkpoint_id`` when it gave one) and its workspace commit; with no checkpoint before the
onset it says so and falls back to kill.

A resume (a run whose worker died: start it again where it stopped) names the session's
last checkpoint up to the alert (the detector's own when it gave one), and where the
session works (:class:`Workspace`, from its record) with the commit to resume at: the
checkpoint's, else the one checked out at the start. It is no stop, so the kill
discipline does not gate it; but it is withheld (notify) in a session where a kill or
rollback fired: resuming would undo the stop.

Nothing here does I/O or reads a clock: the store's outbox sink, the backtest and replay's
``would_fire`` all call :func:`plan` with what they read, so the three decide alike.

>>> from models.records import Alert, Severity
>>> loop = Alert(alert_id="al_1", session_id="s", detector="runaway_loop",
...              severity=Severity.CRITICAL, score=1.0, onset_seq=9, onset_step_id="s#9",
...              evidence=(), reason="loop", action=Action.ROLLBACK, ts=10)
>>> policy = ActionPolicy(rules=(Rule(detector="runaway_loop", action=Action.KILL),))
>>> [(d.action, d.status) for d in plan(policy, [loop], {"s": "coder"}, {})]
[(<Action.KILL: 'kill'>, 'fire')]
>>> [(d.action, d.why.split("; ")[1][:25]) for d in plan(ActionPolicy(), [loop], {}, {})]
[(<Action.NOTIFY: 'notify'>, 'rollback withheld: no ind')]
>>> undisciplined = ActionPolicy(corroborate=False)
>>> [(d.action, d.why.split("; ")[1]) for d in plan(undisciplined, [loop], {}, {})]
[(<Action.KILL: 'kill'>, 'no checkpoint before the onset (step 9): kill instead')]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from models.records import Action, Alert, Severity

RANK = {Action.NOTIFY: 0, Action.RESUME: 1, Action.ROLLBACK: 2, Action.KILL: 3}
"""How strong an action is, for the cooldown: a stronger one is never suppressed."""
_SEVERITY = {Severity.INFO: 0, Severity.WARN: 1, Severity.CRITICAL: 2}

RECOMMENDED = "recommended"
"""A rule's action meaning "the alert's own recommended action"."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint step of a session: where it is, its id, the workspace commit."""

    seq: int
    checkpoint_id: str
    commit: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    """Where a session works, as its record says (:class:`~models.records.SessionInfo`):
    what a resume names beside the checkpoint. Unknown fields are None."""

    host: str | None = None
    directory: str | None = None
    repository: str | None = None
    branch: str | None = None
    revision: str | None = None
    """The commit checked out at the session's start."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """``detector`` (None: any) at ``severity`` or above (None: any), for the agents in
    ``agents`` (None: any) → ``action`` (an Action, :data:`RECOMMENDED`, or None: nothing)."""

    action: Action | str | None
    detector: str | None = None
    severity: Severity | None = None
    agents: frozenset[str] | None = None

    def matches(self, alert: Alert, agent: str | None) -> bool:
        if self.detector is not None and self.detector != alert.detector:
            return False
        if self.severity is not None and _SEVERITY[alert.severity] < _SEVERITY[self.severity]:
            return False
        return self.agents is None or (agent is not None and agent in self.agents)

    def describe(self) -> str:
        parts = [self.detector or "any detector"]
        if self.severity is not None:
            parts.append(f">= {self.severity}")
        if self.agents is not None:
            parts.append("for " + ",".join(sorted(self.agents)))
        return "rule " + " ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """Per-agent overrides of the policy's mode and cooldown (None: the policy's)."""

    shadow: bool | None = None
    cooldown_ns: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionPolicy:
    rules: tuple[Rule, ...] = ()
    """First match wins; an alert no rule matches gets nothing. No rules at all: every
    alert's recommended action."""
    shadow: bool = False
    cooldown_ns: int = 0
    agents: Mapping[str, AgentSettings] = field(default_factory=dict)

    corroborate: bool = True
    """Kill discipline: a recommended kill or rollback needs an independent signal."""
    confirmed: frozenset[str] = frozenset()
    """Detectors whose recommended kill the operator confirmed: not gated."""

    def choose(self, alert: Alert, agent: str | None) -> tuple[Action | None, str]:
        """The action the rules give ``alert`` of ``agent``'s session, and why."""
        action, why, _ = self.choose_rule(alert, agent)
        return action, why

    def choose_rule(self, alert: Alert, agent: str | None) -> tuple[Action | None, str, bool]:
        """:meth:`choose`, and whether an operator's rule named the action itself (a
        confirmed rule: not gated by the kill discipline)."""
        if not self.rules:
            return alert.action, f"{alert.action} recommended by the detector", False
        for rule in self.rules:
            if rule.matches(alert, agent):
                if rule.action == RECOMMENDED:
                    return alert.action, f"{rule.describe()}: {alert.action} recommended", False
                if rule.action is None:
                    return None, f"{rule.describe()}: no action", True
                return Action(rule.action), f"{rule.describe()}: {rule.action}", True
        return None, "no rule matches", True

    def is_shadow(self, agent: str | None) -> bool:
        own = self.agents.get(agent or "")
        return self.shadow if own is None or own.shadow is None else own.shadow

    def cooldown(self, agent: str | None) -> int:
        own = self.agents.get(agent or "")
        return self.cooldown_ns if own is None or own.cooldown_ns is None else own.cooldown_ns


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What the policy decided for one alert."""

    alert: Alert
    agent: str | None
    action: Action | None
    """None: nothing to do."""
    status: str
    """``fire``, ``suppressed`` (cooldown) or ``none``."""
    mode: str
    """``enforce`` or ``shadow``."""
    why: str
    checkpoint: Checkpoint | None = None
    """For a rollback: the checkpoint to return to; for a resume: the one to resume from."""
    workspace: Workspace | None = None
    """For a resume: where the session works (None when its record names nothing)."""
    fallback: bool = False
    """A rollback with no checkpoint before the onset, turned into a kill."""

    @property
    def fires(self) -> bool:
        return self.status == "fire"

    @property
    def commit(self) -> str | None:
        """The workspace commit the action returns to: the checkpoint's; for a resume with
        no checkpoint, the one checked out at the session's start; None when unknown (a
        checkpoint that recorded none is newer than the start: its commit is unknown)."""
        if self.checkpoint is not None:
            return self.checkpoint.commit
        if self.action == Action.RESUME and self.workspace is not None:
            return self.workspace.revision
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "alert_id": self.alert.alert_id,
            "session_id": self.alert.session_id,
            "agent": self.agent,
            "detector": self.alert.detector,
            "severity": str(self.alert.severity),
            "action": None if self.action is None else str(self.action),
            "status": self.status,
            "mode": self.mode,
            "why": self.why,
            "checkpoint_id": None if self.checkpoint is None else self.checkpoint.checkpoint_id,
            "commit": self.commit,
        }


class Ledger:
    """The actions fired per session, for the cooldown: (event time, action)."""

    def __init__(self, fired: Iterable[tuple[str, int, Action]] = ()) -> None:
        self._fired: dict[str, list[tuple[int, Action]]] = defaultdict(list)
        for session_id, ts, action in fired:
            self.record(session_id, ts, action)

    def record(self, session_id: str, ts: int, action: Action) -> None:
        self._fired[session_id].append((ts, action))

    def stopped(self, session_id: str) -> bool:
        """Whether a kill or rollback fired in the session."""
        return any(action in STOPS for _, action in self._fired.get(session_id, ()))

    def suppressing(self, session_id: str, ts: int, action: Action, cooldown_ns: int) -> int | None:
        """The event time of an action at least as strong as ``action`` fired in the
        session within ``cooldown_ns`` of ``ts``; None if there is none."""
        if cooldown_ns <= 0:
            return None
        for fired_ts, fired in self._fired.get(session_id, ()):
            if RANK[fired] >= RANK[action] and abs(ts - fired_ts) < cooldown_ns:
                return fired_ts
        return None


def rollback_target(alert: Alert, checkpoints: Sequence[Checkpoint]) -> Checkpoint | None:
    """The last clean checkpoint before ``alert``'s onset: the detector's own choice when
    it named one that is before the onset, else the last checkpoint step before it."""
    before = [c for c in checkpoints if c.seq < alert.onset_seq]
    if alert.checkpoint_id is not None:
        for checkpoint in reversed(before):
            if checkpoint.checkpoint_id == alert.checkpoint_id:
                return checkpoint
    return before[-1] if before else None


def resume_target(alert: Alert, checkpoints: Sequence[Checkpoint]) -> Checkpoint | None:
    """The checkpoint a resume starts from: the detector's own choice when it named one of
    the session's checkpoints recorded up to the step that raised ``alert``, else the last
    of those (every checkpoint when that step is unknown); None when there is none."""
    upto = alert.raised_seq if alert.raised_seq >= 0 else None
    known = [c for c in checkpoints if upto is None or c.seq <= upto]
    if alert.checkpoint_id is not None:
        for checkpoint in reversed(known):
            if checkpoint.checkpoint_id == alert.checkpoint_id:
                return checkpoint
    return known[-1] if known else None


def order(alerts: Iterable[Alert]) -> list[Alert]:
    """Alerts in the order the policy sees them: event time, then raising step, then id."""
    return sorted(alerts, key=lambda a: (a.ts, a.session_id, a.raised_seq, a.alert_id))


SIGNAL_GROUPS: Mapping[str, str] = {
    "runaway_loop": "progress",
    "budget_overrun": "progress",
    "intent_drift": "intent",
    "egress_gaming": "egress",
    "compliance_decay": "compliance",
    "policy_violation": "compliance",
    "duplicate_side_effect": "effects",
    "premature_completion": "completion",
}
"""The family of evidence each built-in detector reads: two alerts corroborate each other
only from different families (a loop and the budget it burns are one signal, not two). A
detector not named here is a family of its own."""
STOPS = frozenset({Action.KILL, Action.ROLLBACK})
ADVISORY = frozenset({"premature_completion", "stalled_run", "early_quit", "workspace_conflict"})
"""Detectors whose alerts never count as the second signal for a stop: three judge a run
that has already stopped — premature completion and an early quit its claim at its end, a
stalled run its silence after its worker died: there is nothing left for a kill to stop —
and a workspace conflict judges two runs' overlap, not either one's trajectory. None of
them witnesses that another detector's stop is right."""


CORROBORATING = frozenset({"agent_baseline"})
"""Second opinions: detectors that never stop a run on their own - a stop one of them
recommends, or an operator's rule or confirmed list gives it, is turned into a
notification - but whose ``warn`` corroborates another family's stop as any independent
warning does: it carries a stop withheld earlier in the session. ``agent_baseline``
judges a session against its agent's own history (a learned baseline,
:mod:`detectors.agent_baseline`): it says the run is unlike this agent, not what harm it
does, so it can confirm another detector's verdict but never be one. Its *earlier*
warning does not let a later ``critical`` fire at once (only a ``critical`` does): counted
so, it stopped 2 healthy runs in 27 of the blind longrun set and no more failing runs
than without (``docs/detectors/agent_baseline.md``)."""


def signal_group(detector: str) -> str:
    return SIGNAL_GROUPS.get(detector, detector)


def corroborated(
    alert: Alert, action: Action, why: str, earlier: Sequence[Alert], policy: ActionPolicy
) -> tuple[Action, str, Alert | None]:
    """The kill discipline for ``alert``, recommended ``action``, given the ``earlier``
    alerts of its session (raised before it): the action to take, why, and — when the
    alert carries an earlier alert's withheld stop — that alert (its onset is the one a
    rollback returns before).

    >>> from models.records import Severity
    >>> def a(detector, severity, action, seq):
    ...     return Alert(alert_id=f"al_{seq}", session_id="s", detector=detector,
    ...                  severity=Severity(severity), score=1.0, onset_seq=seq,
    ...                  onset_step_id=f"s#{seq}", evidence=(), reason="r",
    ...                  action=Action(action), ts=seq)
    >>> drift = a("intent_drift", "critical", "kill", 5)
    >>> corroborated(drift, Action.KILL, "why", [], ActionPolicy())[0]
    <Action.NOTIFY: 'notify'>
    >>> egress = a("egress_gaming", "warn", "notify", 9)
    >>> corroborated(egress, Action.NOTIFY, "why", [drift], ActionPolicy())[:1]
    (<Action.KILL: 'kill'>,)
    >>> loop = a("runaway_loop", "critical", "kill", 5)
    >>> budget = a("budget_overrun", "warn", "notify", 9)
    >>> corroborated(budget, Action.NOTIFY, "why", [loop], ActionPolicy())[0]  # one family
    <Action.NOTIFY: 'notify'>
    """
    group = signal_group(alert.detector)
    independent = [
        a
        for a in earlier
        if signal_group(a.detector) != group
        and a.severity != Severity.INFO
        and a.detector not in ADVISORY
    ]
    if action in STOPS:
        if alert.detector in policy.confirmed:
            return action, f"{why}; {alert.detector}'s kills are confirmed by the operator", None
        serious = [a for a in independent if a.severity == Severity.CRITICAL]
        if serious:
            other = serious[0]
            return action, f"{why}; corroborated by {other.detector} ({other.alert_id})", None
        return (
            Action.NOTIFY,
            f"{why}; {action} withheld: no independent signal in the session yet (a kill "
            "needs a critical alert of another detector family, or a rule the operator "
            "confirmed)",
            None,
        )
    if alert.severity == Severity.INFO or alert.detector in ADVISORY:
        return action, why, None
    for other in independent:
        if other.action in STOPS and other.detector not in policy.confirmed:
            return (
                other.action,
                f"{why}; corroborates {other.detector}'s withheld {other.action} "
                f"({other.alert_id}): two independent signals",
                other,
            )
    return action, why, None


def plan(
    policy: ActionPolicy,
    alerts: Iterable[Alert],
    agents: Mapping[str, str | None],
    checkpoints: Mapping[str, Sequence[Checkpoint]],
    ledger: Ledger | None = None,
    earlier: Iterable[Alert] = (),
    workspaces: Mapping[str, Workspace] | None = None,
) -> list[Decision]:
    """Decide every alert (in :func:`order`), recording what fires in ``ledger`` (a fresh
    one if None) so later alerts of the same session see the cooldown. ``earlier``: the
    sessions' alerts decided before (the store's), which the kill discipline reads beside
    the alerts decided here before each one. ``workspaces``: where each session works,
    for the resumes (a session not in it: unknown)."""
    ledger = Ledger() if ledger is None else ledger
    seen: dict[str, list[Alert]] = defaultdict(list)
    for alert in order(earlier):
        seen[alert.session_id].append(alert)
    decisions = []
    for alert in order(alerts):
        agent = agents.get(alert.session_id)
        action, why, confirmed = policy.choose_rule(alert, agent)
        mode = "shadow" if policy.is_shadow(agent) else "enforce"
        before = seen[alert.session_id]
        target = alert
        if action in STOPS and alert.detector in CORROBORATING:
            action = Action.NOTIFY
            why += f"; {alert.detector} is a second opinion: it never stops a run on its own"
        if action is not None and policy.corroborate and not confirmed:
            action, why, carried = corroborated(alert, action, why, before, policy)
            if carried is not None:
                if ledger.stopped(alert.session_id):
                    action, why = Action.NOTIFY, f"{why}; a stop already fired in this session"
                target = carried
        if action == Action.RESUME and ledger.stopped(alert.session_id):
            action = Action.NOTIFY
            why += "; resume withheld: a kill or rollback fired in this session"
        before.append(alert)
        if action is None:
            decisions.append(
                Decision(alert=alert, agent=agent, action=None, status="none", mode=mode, why=why)
            )
            continue
        checkpoint = None
        workspace = None
        fallback = False
        if action == Action.RESUME:
            checkpoint = resume_target(alert, checkpoints.get(alert.session_id, ()))
            workspace = (workspaces or {}).get(alert.session_id)
            commit = checkpoint.commit if checkpoint is not None else None
            if checkpoint is None:
                commit = workspace.revision if workspace is not None else None
                why += f"; no checkpoint: resume from the start ({commit or 'no commit recorded'})"
            else:
                commit = commit or "no commit recorded"
                why += f"; resume from checkpoint {checkpoint.checkpoint_id} ({commit})"
        elif action == Action.ROLLBACK:
            checkpoint = rollback_target(target, checkpoints.get(alert.session_id, ()))
            if checkpoint is None:
                action, fallback = Action.KILL, True
                why += f"; no checkpoint before the onset (step {target.onset_seq}): kill instead"
            else:
                commit = checkpoint.commit or "no commit recorded"
                why += f"; back to checkpoint {checkpoint.checkpoint_id} ({commit})"
        status = "fire"
        fired_ts = ledger.suppressing(alert.session_id, alert.ts, action, policy.cooldown(agent))
        if fired_ts is not None:
            status = "suppressed"
            why += "; suppressed: an action as strong fired in this session within the cooldown"
        else:
            ledger.record(alert.session_id, alert.ts, action)
        decisions.append(
            Decision(
                alert=alert,
                agent=agent,
                action=action,
                status=status,
                mode=mode,
                why=why,
                checkpoint=checkpoint,
                workspace=workspace,
                fallback=fallback,
            )
        )
    return decisions


def checkpoints_by_session(
    rows: Iterable[tuple[str, int, str, str | None]],
) -> dict[str, list[Checkpoint]]:
    """The store's checkpoint rows grouped by session, in seq order."""
    found: dict[str, list[Checkpoint]] = defaultdict(list)
    for session_id, seq, checkpoint_id, commit in rows:
        found[session_id].append(Checkpoint(seq, checkpoint_id, commit))
    for items in found.values():
        items.sort(key=lambda c: c.seq)
    return dict(found)
