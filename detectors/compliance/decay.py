"""Compliance decay: the agent stops following its policy after a context compaction.

Flags, once per model session after a compaction (explicit or inferred), a policy rule
the agent honoured at least ``min_honoured`` times before the compaction and breaks after
it, or a violation rate after it significantly higher than before it (one-sided Fisher
exact test, ``p < alpha``, once ``min_rate_violations`` violating calls are in).

Reads the session's policy (the START step's ``policy_id``, else ``agent_policies``, else
``default_policy``, else the rules derived from its own instructions:
``derived_policies``), every tool call, checked against it by
:mod:`features.policy.check`, approvals, checkpoints and compactions
(``step.model_session``). A :class:`~features.policy.ledger.ComplianceLedger` keeps per
model session the calls, the violations and the rules honoured. Without a policy only the
approval habits fire: an action asked about before every call until a compaction and done
unasked after it (:mod:`detectors.compliance.habits`; a warning).

Raises ``critical``, ROLLBACK to the last checkpoint before the onset, else KILL; onset =
the first violating step since the compaction; evidence = that step, the compaction and
the violating steps (<= 20); the reason quotes the p-value. ``policy_violation`` shares
the ledger: give both the same ``min_honoured``, ``alpha`` and ``min_rate_violations``, and
a finding is reported by exactly one of them. ``score``: after a compaction the rate
test's ``1 - p``, and from a broken honoured rule to the next compaction at least
``HONOURED_SCORE`` (0.9); ``thresholds``: ``min(0.9, 1 - alpha)`` for both severities.
The parameters' meaning: :class:`ComplianceDecay`.

Why, and the split with ``policy_violation``: ``docs/detectors/compliance.md``.
>>> from detectors.testing import Session
>>> policy = {"require_approval_for": [r"git\\s+push"]}
>>> d = ComplianceDecay(policies={"p": policy})
>>> s = Session("demo", policy_id="p")
>>> steps = [s.start()]
>>> for i in range(2):
...     steps += [s.approval("request_approval"), *s.tool("bash", {"command": "git push"})]
>>> steps += [s.checkpoint("ck-1"), s.compaction(inferred=True), s.model(tokens_in=12_000)]
>>> steps += s.tool("bash", {"command": "git push origin main"})
>>> alerts = [a for st in steps for a in d.update(st)]
>>> [(a.onset_seq, a.raised_seq, str(a.action), a.checkpoint_id) for a in alerts]
[(10, 10, 'rollback', 'ck-1')]
>>> print(alerts[0].reason)  # doctest: +NORMALIZE_WHITESPACE
after the compaction at step 8 (inferred: input tokens 150k → 20k) the agent broke
require_approval_for `git\\s+push` (`git push origin main` without an approval), which it
honoured 2 times before; 1 violation in 1 action after vs 0 in 2 before (Fisher exact p=0.33)
>>> d.score, d.thresholds  # a broken honoured rule: 0.9 (the rate test alone: 1 - 0.33)
(0.9, {'warn': 0.9, 'critical': 0.9})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from detectors.base import Checkpoints, Detector, StepRef, make_alert
from detectors.compliance.habits import ApprovalHabits, HabitBreak
from detectors.registry import register
from features.calls.step_features import features_of
from features.policy.catalog import (
    DERIVED_MODES,
    compile_policies,
    derived_policy,
    instructions_of,
    project_rules_read,
    resolve_policy_id,
    rule_sentences,
    task_of,
)
from features.policy.check import BUDGET, Policy, PolicyState, Violation
from features.policy.ledger import ComplianceLedger, Finding
from models.records import Action, Alert, Severity, Step, StepKind

HONOURED_SCORE = 0.9
"""The least score of a broken honoured rule: breaking what the agent kept is decay
however few calls there are to test a rate on."""
MAX_KEPT = 19
"""Violating steps kept per model session (plus the compaction: 20 evidence refs)."""

MIN_NAMED_TOOL = 6
"""The shortest tool name read as named by the instructions (``ledger`` is a word;
``rl_chk`` is an identifier)."""

# Bound once: looking a member up on the enum class costs more than the comparison.
_CHECKPOINT = StepKind.CHECKPOINT
_COMPACTION = StepKind.COMPACTION
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT


class PolicyDetector(Detector):
    """What ``compliance_decay`` and ``policy_violation`` share: the policy parameters,
    resolving the session's policy, checking each step and classifying violations.

    The compiled policies (``_compiled``) are derived from the parameters in
    ``__init__`` (which is where a bad policy must fail) and are not state:
    :meth:`state_dict` leaves them out, so checkpoints stay small.
    """

    def __init__(
        self,
        *,
        policies: Mapping[str, Mapping[str, Any]] | None = None,
        agent_policies: Mapping[str, str] | None = None,
        default_policy: str | None = None,
        alpha: float = 0.01,
        min_honoured: int = 1,
        min_rate_violations: int = 2,
        derived_policies: str = "warn",
    ) -> None:
        self.policies = policies
        self.agent_policies = agent_policies
        self.default_policy = default_policy
        self.alpha = alpha
        self.min_honoured = min_honoured
        self.min_rate_violations = min_rate_violations
        self.derived_policies = derived_policies
        if derived_policies not in DERIVED_MODES:
            modes = ", ".join(DERIVED_MODES)
            raise ValueError(f"derived_policies must be one of {modes}, got {derived_policies!r}")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if min_honoured < 1:
            raise ValueError(f"min_honoured must be >= 1, got {min_honoured}")
        if min_rate_violations < 1:
            raise ValueError(f"min_rate_violations must be >= 1, got {min_rate_violations}")
        if agent_policies is not None and not isinstance(agent_policies, Mapping):
            raise ValueError("agent_policies must map agent names to policy ids")
        self._compiled: dict[str, Policy] = compile_policies(policies)
        for agent, pid in (agent_policies or {}).items():
            if pid not in self._compiled:
                raise ValueError(f"agent_policies[{agent!r}] names unknown policy {pid!r}")
        if default_policy is not None and default_policy not in self._compiled:
            raise ValueError(f"default_policy {default_policy!r} is not among the policies")
        self._reset()

    def _reset(self) -> None:
        self._resolved = False
        self._policy_id: str | None = None
        self._pstate = PolicyState()
        self._ledger = ComplianceLedger()
        self._checkpoints = Checkpoints()
        self._compaction: tuple[StepRef, str] | None = None
        """The latest compaction: its step and a description for reasons."""
        self._violating: list[StepRef] = []
        """Violating steps since the latest compaction (first = onset), at most MAX_KEPT."""
        self._instructions: str | None = None
        """For a session no policy names: the text its rules were derived from ("" when it
        states none): its system instructions and its task, each from the first step
        that carries it."""
        self._system: str | None = None
        self._task: str | None = None
        self._project: str | None = None
        """The project's instructions file as the agent read it (``CLAUDE.md``)."""
        self._project_calls: list[str] = []
        """The calls reading it whose result has not come (their step and call ids)."""
        self._early: list[Step] = []
        """Until those instructions arrive: the last MAX_EARLY steps the policy's state
        depends on (calls, results, approvals; slimmed in checkpoints), replayed into it
        when they do."""
        self._score = 0.0  # see each subclass's ``update``

    def snapshot(self) -> dict[str, Any]:
        state = super().snapshot()  # a new dict: popping and replacing change no live state
        state.pop("_compiled", None)
        if state.get("_early"):
            state["_early"] = [_slim(step) for step in state["_early"]]
        return state

    def _observe(self, step: Step) -> tuple[Finding | None, bool]:
        """Check ``step``; (finding, compacted) where ``compacted`` says a new model
        session began with this step. (None, False) when the session has no policy."""
        if not self._resolved:
            self._resolved = True
            self._policy_id = resolve_policy_id(
                step, self._compiled, self.agent_policies, self.default_policy
            )
        # compactions and checkpoints are kept whatever the policy: an approval habit
        # (compliance_decay) is judged without one
        kind = step.kind
        if kind == _CHECKPOINT:  # the only kind Checkpoints keeps; skip the call otherwise
            self._checkpoints.update(step)
        compacted = self._ledger.roll(step.model_session)
        if compacted:
            self._violating = []
            self._compaction = None
        if kind == _COMPACTION:
            self._compaction = (StepRef.of(step), _describe_compaction(step))
        if self._policy_id is not None:
            policy = self._compiled[self._policy_id]
        else:
            derived = self._derived(step)
            if derived is None:
                return None, compacted
            policy = derived
        violations, honoured = policy.observe(step, self._pstate)
        if not (violations or honoured or kind == _TOOL_CALL):
            return None, compacted  # nothing for the ledger to count (most steps)
        finding = self._ledger.record(
            step,
            violations,
            honoured,
            min_honoured=self.min_honoured,
            alpha=self.alpha,
            min_rate_violations=self.min_rate_violations,
        )
        if (
            finding is not None
            and any(v.kind != BUDGET for v in finding.violations)
            and len(self._violating) < MAX_KEPT
            and (not self._violating or self._violating[-1].seq != step.seq)
        ):
            self._violating.append(StepRef.of(step))
        return finding, compacted

    def _derived(self, step: Step) -> Policy | None:
        """The policy derived from the session's own instructions (``derived_policies``
        not ``off``), once a step has carried them; None before, or when they state no rule."""
        if self.derived_policies == "off":
            return None
        system = instructions_of(step) if self._system is None else None
        task = task_of(step) if self._task is None else None
        project = self._project_read(step) if self._project is None else None
        if system is None and task is None and project is None:
            if not self._instructions:
                if step.kind in _EARLY_KINDS and step.seq < EARLY_UNTIL:
                    self._early.append(step)  # slimmed when checkpointed (state_dict)
                    del self._early[:-MAX_EARLY]
                elif self._early and step.seq >= EARLY_UNTIL:
                    self._early = []  # instructions this late would be another session's
            return derived_policy(self._instructions) if self._instructions else None
        # rules are written in the system instructions and in the person's request; each
        # may come on its own step (a start with the goal, a model call with the prompt)
        self._system = system if system is not None else self._system
        self._task = task if task is not None else self._task
        self._project = project if project is not None else self._project
        had = bool(self._instructions)
        text = "\n".join(t for t in (self._system, self._task, self._project) if t)
        policy = derived_policy(text)
        self._instructions = text if policy is not None else ""
        if policy is not None and not had:
            # the instructions may come late (a root span sent when the run ends): what
            # the session did before them sets the policy's state (an approval asked,
            # an edit, a test run), though it is not reported
            for early in self._early:
                policy.observe(early, self._pstate)
            self._early = []
        return policy

    def _project_read(self, step: Step) -> str | None:
        """The text of the project's instructions file (:func:`project_rules_read`), on
        the result of the call that read it; None on any other step. Rules are written
        there as in a system prompt, which a transcript does not record."""
        text = project_rules_read(self._project_calls, step)
        if text is not None:
            self._project_calls = []
        return text

    @property
    def _unconfirmed(self) -> bool:
        """The session runs under rules derived from its instructions that no person has
        confirmed: alerts warn and notify whatever the rule (``derived_policies = "warn"``)."""
        return self._policy_id is None and self.derived_policies == "warn"

    def _derived_note(self, rules: list[str]) -> str:
        """Where derived rules came from, for reasons: the sentence of each."""
        if self._policy_id is not None or not self._instructions:
            return ""
        cited = rule_sentences(self._instructions)
        sentences = list(dict.fromkeys(cited[r] for r in rules if r in cited))
        quoted = "; ".join(f'"{_clip(s)}"' for s in sentences)
        status = "unconfirmed, so a warning" if self._unconfirmed else "enforced by config"
        return f" [rule derived from the session's instructions ({status}): {quoted}]"


MAX_EARLY = 16
"""Steps kept before a session's instructions arrive (see ``PolicyDetector._early``): what
matters of them is recent (the request before a guarded call, the tests after the last
edit). Bounded: 16 steps, checkpointed slim (no text, results cut at the 500 characters
an approval's answer is read from, only the detail the policy reads): exact for the policy."""
EARLY_UNTIL = 512
"""Sessions past this many steps without instructions keep no early steps."""
_EARLY_KINDS = frozenset(
    {StepKind.START, StepKind.TOOL_CALL, StepKind.TOOL_RESULT, StepKind.APPROVAL}
)
_EARLY_DETAIL = ("approved", "workspace", "egress", "mcp_method")


def _slim(step: Step) -> Step:
    """All the policy's state needs of an early step (see MAX_EARLY)."""
    detail = step.detail if isinstance(step.detail, Mapping) else {}
    return step.with_(
        text=None,
        result=step.result[:500] if step.result else step.result,
        detail={k: detail[k] for k in _EARLY_DETAIL if k in detail},
    )


def _clip(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _describe_compaction(step: Step) -> str:
    d = step.detail if isinstance(step.detail, Mapping) else {}
    before, after = d.get("tokens_before"), d.get("tokens_after")
    how = "inferred" if d.get("inferred") else "explicit"
    if isinstance(before, int | float) and isinstance(after, int | float):
        return f"{how}: input tokens {_k(before)} → {_k(after)}"
    return how


def _k(n: float) -> str:
    return f"{n / 1000:.0f}k" if n >= 1000 else f"{n:.0f}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@register
class ComplianceDecay(PolicyDetector):
    """Flags a session whose policy compliance breaks down after a context compaction
    (see the module docstring for the rule, the test and the split with
    ``policy_violation``).

    Parameters (defaults chosen a priori, then checked on fixture seeds 7 and 11: see
    ``docs/policies.md``, "Measured"):

    - ``policies``/``agent_policies``/``default_policy``: policy id → raw mapping (as
      parsed from TOML); agent name → policy id for sessions whose start names none;
      the policy of everything else. No policy, no alerts.
    - ``alpha = 0.01``: significance of the rate test. Conservative because any single
      violation is already reported by ``policy_violation``; this path is for a
      *pattern* (two violations in five calls after 0 in 80 gives p≈0.003).
    - ``min_honoured = 1``: how often a rule must have held before the compaction for
      breaking it after to count as decay (the brief's "at least once").
    - ``min_rate_violations = 2``: one violation is an incident, not a rate.
    """

    name = "compliance_decay"
    thresholds_fixed = True

    def _reset(self) -> None:
        super()._reset()
        self._fired_session = -1
        """The model session this detector last alerted in (one alert per model session)."""
        self._floor = 0.0
        """The least score of this model session: once an honoured rule broke, that
        finding's score (HONOURED_SCORE, or the rate test's 1 - p when higher)."""
        self._habits = ApprovalHabits()
        """Actions the agent asked approval for every time (:mod:`.habits`): judged
        whether or not the session has a policy."""

    @property
    def thresholds(self) -> dict[str, float]:
        """The lower of the two rules' lines, for either severity (the severity says
        whether a person confirmed the rules, not how strong the evidence is): a broken
        honoured rule scores at least ``HONOURED_SCORE``, the rate test fires above
        ``1 - alpha``."""
        line = min(HONOURED_SCORE, 1.0 - self.alpha)
        return {"warn": line, "critical": line}

    def update(self, step: Step) -> list[Alert]:
        finding, compacted = self._observe(step)
        habit = self._habits.observe(step, gate=self._named_check(step))
        if compacted:
            self._floor = 0.0
        if habit is not None:
            self._floor = max(self._floor, HONOURED_SCORE)
        if finding is not None and finding.decay == "honoured":
            # decay shown, until the next compaction: what the alert carries
            self._floor = max(self._floor, HONOURED_SCORE, 1.0 - finding.p_value)
        led = self._ledger
        # the rate test's statistic, once it may judge: 1 - p of the violations since the
        # latest compaction against those before, with at least min_rate_violations
        rate = (
            1.0 - led.p_value()
            if led.model_session and led.after_bad >= self.min_rate_violations
            else 0.0
        )
        self._score = max(self._floor, rate)
        ms = self._ledger.model_session
        if self._fired_session == ms:
            return []
        if finding is not None and finding.decay is not None and self._violating:
            self._fired_session = ms
            return [self._alert(step, finding)]
        if habit is not None:
            self._fired_session = ms
            return [self._habit_alert(habit)]
        return []

    def _named_check(self, step: Step) -> bool:
        """Whether ``step`` calls a check the session's instructions name: a tool whose
        name is an identifier (``ratelimit__ledger``, ``check_quota``, an MCP server's
        ``get-retention-label``: an ``_``, a ``.`` or a ``-`` in it), written in the
        system instructions, the task or the project's instructions file (an MCP tool
        also without its ``mcp__`` prefix), that changes nothing (:mod:`.habits`)."""
        tool = step.tool
        if step.kind != _TOOL_CALL or not tool:
            return False
        names = [tool] if not tool.startswith("mcp__") else [tool, tool[5:]]
        if not any(
            ("_" in n or "." in n or "-" in n) and len(n) >= MIN_NAMED_TOOL for n in names
        ):
            return False
        texts = [t for t in (self._system, self._task, self._project) if t]
        if not any(n in t for n in names for t in texts):
            return False
        features = features_of(step)
        return features.effect == (None, False) and not features.acts

    def _compaction_cited(self, onset: StepRef) -> tuple[str, list[StepRef]]:
        """(how a reason names the latest compaction, evidence: ``onset`` and that
        compaction's step when it was seen)."""
        if self._compaction is None:  # the compaction step itself was not seen (sparse input)
            return f"the compaction before model session {self._ledger.model_session}", [onset]
        ref, how = self._compaction
        return f"the compaction at step {ref.seq} ({how})", [onset, ref]

    def _habit_alert(self, habit: HabitBreak) -> Alert:
        """A habit broken after a compaction (:mod:`.habits`): the agent's own conduct,
        not a rule a person confirmed, so a warning that notifies."""
        onset = StepRef.of(habit.step)
        where, evidence = self._compaction_cited(onset)
        if habit.last_approved is not None:
            evidence.append(habit.last_approved)
        reason = (
            f"after {where} the agent ran `{_clip(habit.action, 80)}` with no approval or "
            "check its instructions name since its previous call; before it, each of its "
            f"{_plural(habit.times, 'call')} of that action came after an approval, an "
            f"approval request or that check (the last at step "
            f"{habit.last_approved.seq if habit.last_approved else '?'}) [the agent's own "
            "habit, not a rule a person confirmed, so a warning]"
        )
        return make_alert(
            self.name,
            onset=onset,
            raised=habit.step,
            evidence=evidence,
            score=HONOURED_SCORE,
            severity=Severity.WARN,
            reason=reason,
            action=Action.NOTIFY,
        )

    def _alert(self, step: Step, finding: Finding) -> Alert:
        onset = self._violating[0]
        led = self._ledger
        where, evidence = self._compaction_cited(onset)
        evidence += self._violating[1:]
        counts = (
            f"{_plural(led.after_bad, 'violation')} in {_plural(led.after_actions, 'action')} "
            f"after vs {led.before_bad} in {led.before_actions} before "
            f"(Fisher exact p={finding.p_value:.2g})"
        )
        if finding.decay == "honoured":
            v: Violation = finding.decayed[0]
            times = led.honoured_before.get(v.scope, 0)
            kept = (
                f"which it honoured {_plural(times, 'time')} before"
                if v.scope == v.rule
                else f"which it kept in {_plural(times, 'clean ' + _FAMILY.get(v.kind, 'action'))}"
                " before"
            )
            reason = f"after {where} the agent broke {v.rule} ({v.detail}), {kept}; {counts}"
            score = max(HONOURED_SCORE, 1.0 - finding.p_value)
        else:
            rules = sorted({v.rule for v in finding.decayed})
            reason = (
                f"after {where} the agent's policy violations rose significantly: {counts}; "
                f"latest: {', '.join(rules)}"
            )
            score = 1.0 - finding.p_value
        checkpoint = self._checkpoints.before(onset.seq)
        reason += self._derived_note([v.rule for v in finding.decayed])
        if self._unconfirmed:
            severity, action, checkpoint = Severity.WARN, Action.NOTIFY, None
        else:
            severity = Severity.CRITICAL
            action = Action.ROLLBACK if checkpoint else Action.KILL
        return make_alert(
            self.name,
            onset=onset,
            raised=step,
            evidence=evidence,
            score=score,
            severity=severity,
            reason=reason,
            action=action,
            checkpoint_id=checkpoint,
        )


_FAMILY = {
    "forbidden_commands": "shell command",
    "forbidden_tools": "tool call",
    "forbidden_write_paths": "write",
    "egress": "egress",
    "network_scope": "network target",
}
"""What a prohibition's precondition is, for reasons ("kept in 12 clean writes")."""
