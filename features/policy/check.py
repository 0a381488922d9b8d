"""Agent policies: checking each step of a session against its policy.

A :class:`Policy` is a validated, precompiled policy (the format and its validation:
:mod:`features.policy.format`); :meth:`Policy.check` tells which rules one step breaks,
given a small :class:`PolicyState` the caller keeps per session, and
:meth:`Policy.observe` also which rules the step *honoured* (:attr:`Violation.scope`),
what :class:`features.policy.ledger.ComplianceLedger` counts per model session.
Tool calls are read through :mod:`features.calls.tool_view`. Pure: no I/O, no wall clock.

Decisions
---------
- **Approvals** are matched by recency, not by tool: runtimes attach the approval to the
  tool that asked (``request_approval``, ``ask_human``), not to ``bash``. An approval
  opens the ``require_approval_for`` rules that the preceding approval request names
  (its arguments match the rule's regex), or all of them when the request names none;
  the next matching call consumes it. A denied approval closes them, and a matching
  call after it is reported as done after the denial. An approval request is known by
  its name (``approval_tools``) or by what it does (its arguments ask a person to
  approve an action: :func:`features.calls.tool_view._asks_approval`); its *result* is the
  answer when it is one ("Approved", ``{"approved": false}``:
  :func:`features.calls.tool_view.approval_answer`), as an ``approval`` step is. A request
  naming the action whose answer telemetry does not show (approved out of band:
  "Approval requested; waiting") is *asked*: enough where the policy only says to ask
  (``require_approval_answer = false``, as the rules derived from "ask for approval
  before …" say), not otherwise. An approval that names no action holds for the current
  turn only (it ends at the start of the next turn). A runtime's decision about one call (Claude
  Code's and Codex's ``tool_decision`` events: an ``approval`` step with the call's id)
  approves or denies that call: a denied call did not run, so it breaks no rule.
- **Tests before commit**: the ``requires`` call must come after the last edit and, by
  default, must not have failed: "tests ran, failed, committed anyway" is the failure the
  rule exists for. A ``requires`` call whose result has not arrived yet counts as run.
  With no edit at all, the rule holds vacuously (and does not count as honoured).
- **Honoured** (:attr:`Violation.scope`): a positive rule (approval, require_before) is
  honoured when its precondition arose and was met; a prohibition family
  (``forbidden_commands``, ``forbidden_tools``, ``forbidden_write_paths``, ``egress``)
  when the agent did that kind of thing (ran a command, wrote a file, reached a host)
  and stayed inside the rule. Budgets are never "honoured": spend is cumulative.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from features.calls.canonical import arguments_value
from features.calls.effects import delegates
from features.calls.step_features import features_of
from features.calls.tool_view import (
    DEFAULT_APPROVAL_RE,
    ToolView,
    approval_answer,
    echoed_grant,
    is_scratch,
    normalise_path,
)
from features.policy.format import (
    BUDGET_KEYS,
    Budget,
    ForbiddenAction,
    RequireBefore,
    RequireMasked,
    joined_screen,
    policy_arguments,
)
from features.policy.matchers import CLICK
from features.policy.scope import argument_strings, call_targets, outside
from features.text.data_kinds import MASK_RE, unmasked
from models.records import Step, StepKind

__all__ = [
    "APPROVAL",
    "BUDGET",
    "EGRESS",
    "FORBIDDEN_ACTION",
    "FORBIDDEN_COMMAND",
    "FORBIDDEN_TOOL",
    "FORBIDDEN_WRITE",
    "NETWORK_SCOPE",
    "REQUIRE_BEFORE",
    "REQUIRE_MASKED",
    "Policy",
    "PolicyState",
    "Violation",
]

# Violation kinds (= the policy key that was broken).
FORBIDDEN_COMMAND = "forbidden_commands"
FORBIDDEN_TOOL = "forbidden_tools"
FORBIDDEN_WRITE = "forbidden_write_paths"
FORBIDDEN_ACTION = "forbidden_actions"
EGRESS = "egress"
APPROVAL = "require_approval_for"
REQUIRE_BEFORE = "require_before"
BUDGET = "budget"
NETWORK_SCOPE = "network_scope"
REQUIRE_MASKED = "require_masked"
_POSITIVE = frozenset({APPROVAL, REQUIRE_BEFORE})
_OWN_SCOPE = frozenset({APPROVAL, REQUIRE_BEFORE, FORBIDDEN_ACTION, REQUIRE_MASKED})
"""Rules honoured one by one (the others by family): a forbidden action is kept by a call
of its own kind (its ``within``), not by any command."""
# PolicyState.approvals values
_NAMED, _FOR_TURN, _ASKED, _DENIED = 1, 2, 3, -1
_APPROVED = (_NAMED, _FOR_TURN)

_START = StepKind.START
_MODEL_CALL = StepKind.MODEL_CALL
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT
_EGRESS = StepKind.EGRESS
_APPROVAL = StepKind.APPROVAL
_END = StepKind.END
_COMPACTION = StepKind.COMPACTION
_OBJECT_RE = re.compile(
    r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,4}|https?://[^\s\"'<>]{3,200}"
    r"|(?<![\w/])(?:[\w.-]{1,64}/){1,8}[\w.-]{1,64}"
)
"""Objects a person's message names (an address, a URL, a path): the calls that use them
are the ones the person asked for."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule one step broke.

    ``rule`` names the rule as a person reads it (``require_approval_for `git\\s+push```),
    ``kind`` the policy key (``require_approval_for``, ``forbidden_commands``, ...,
    ``egress``, ``budget``), ``step_seq`` the step, ``detail`` what happened.
    """

    rule: str
    kind: str
    step_seq: int
    detail: str

    @property
    def scope(self) -> str:
        """What "honoured before" is judged on: the rule itself for positive rules,
        the family for prohibitions (see the module's Decisions)."""
        return self.rule if self.kind in _OWN_SCOPE else self.kind


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_matches(host: str, patterns: Sequence[str], *, subdomains: bool) -> str | None:
    for p in patterns:
        if p == "*" or p == host:
            return p
        if p.startswith("*.") and host.endswith(p[1:]):
            return p
        if p.startswith(".") and (host.endswith(p) or host == p[1:]):
            return p
        if subdomains and host.endswith("." + p):
            return p
        if "*" in p[1:] and fnmatch.fnmatchcase(host, p):
            return p
    return None


@dataclass(frozen=True, slots=True)
class Policy:
    """A validated, precompiled policy. Build with :meth:`from_mapping`.

    >>> p = Policy.from_mapping("demo", {"require_approval_for": [r"git\\s+push"],
    ...                                   "forbidden_write_paths": [".github/workflows/**"]})
    >>> from detectors.testing import Session
    >>> s, state = Session(), PolicyState()
    >>> push, _ = s.tool("bash", {"command": "git push origin main"})
    >>> [v.rule for v in p.check(push, state)]
    ['require_approval_for `git\\\\s+push`']
    >>> ci, _ = s.tool("write_file", {"path": "/w/.github/workflows/ci.yml", "content": "x"})
    >>> [(v.kind, v.detail) for v in p.check(ci, state)]
    [('forbidden_write_paths', 'wrote /w/.github/workflows/ci.yml (glob .github/workflows/**)')]
    """

    policy_id: str
    description: str = ""
    forbidden_commands: tuple[re.Pattern[str], ...] = ()
    forbidden_tools: tuple[str, ...] = ()
    forbidden_write_paths: tuple[str, ...] = ()
    allowed_write_paths: tuple[str, ...] = ()
    forbidden_actions: tuple[ForbiddenAction, ...] = ()
    allowed_egress_hosts: tuple[str, ...] = ("*",)
    denied_egress_hosts: tuple[str, ...] = ()
    allow_loopback_egress: bool = True
    require_approval_for: tuple[re.Pattern[str], ...] = ()
    require_before: tuple[RequireBefore, ...] = ()
    require_approval_answer: bool = True
    network_scope: tuple[str, ...] = ()
    require_masked: tuple[RequireMasked, ...] = ()
    approval_tools: re.Pattern[str] = DEFAULT_APPROVAL_RE
    budget: Budget = field(default_factory=Budget)
    _write_re: re.Pattern[str] | None = None
    _write_res: tuple[re.Pattern[str], ...] = ()
    _allowed_re: re.Pattern[str] | None = None
    # Derived in __post_init__, not compared: the budget limits set (index in BUDGET_KEYS,
    # key, limit), one regex screening all text rules at once (see joined_screen), the names of
    # the approval rules, and a memo of what this policy says about a host (see
    # _host_verdict; what it says about a tool call is kept on the call's features).
    _limits: tuple[tuple[int, str, float], ...] = field(
        default=(), init=False, compare=False, repr=False
    )
    _text_screen: re.Pattern[str] | None = field(
        default=None, init=False, compare=False, repr=False
    )
    _approval_rules: tuple[str, ...] = field(default=(), init=False, compare=False, repr=False)
    _click_rules: tuple[int, ...] = field(default=(), init=False, compare=False, repr=False)
    """The forbidden actions about pressing a button (their ``within`` is any click)."""
    _hosts: _Memo[str, tuple[str | None, bool] | None] = field(
        default_factory=lambda: _Memo(), init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        limits = tuple(
            (i, k, v)
            for i, k in enumerate(BUDGET_KEYS)
            if (v := getattr(self.budget, k)) is not None
        )
        object.__setattr__(self, "_limits", limits)
        text_rules = (
            *self.forbidden_commands,
            *(r for rule in self.require_before for r in (rule.requires, rule.action)),
            *self.require_approval_for,
        )
        object.__setattr__(self, "_text_screen", joined_screen(text_rules))
        object.__setattr__(
            self,
            "_click_rules",
            tuple(
                i
                for i, fa in enumerate(self.forbidden_actions)
                if fa.within is not None and fa.within.pattern == CLICK
            ),
        )
        object.__setattr__(
            self,
            "_approval_rules",
            tuple(f"require_approval_for `{p.pattern}`" for p in self.require_approval_for),
        )

    @classmethod
    def from_mapping(cls, policy_id: str, mapping: Mapping[str, Any]) -> Policy:
        """Validate and compile ``mapping`` (as parsed from TOML; see
        :func:`features.policy.format.policy_arguments`). Raises ``ValueError`` naming the
        policy and the bad key. Pure: reads nothing else."""
        return cls(**policy_arguments(policy_id, mapping))

    # -- checking ---------------------------------------------------------

    def check(self, step: Step, history: PolicyState) -> list[Violation]:
        """The rules ``step`` breaks, updating ``history`` (the caller's per-session
        state; feed every step of the session in order)."""
        return self.observe(step, history)[0]

    def observe(self, step: Step, history: PolicyState) -> tuple[list[Violation], list[str]]:
        """:meth:`check` plus the scopes (:attr:`Violation.scope`) this step *honoured*:
        their precondition arose here and the rule held."""
        kind = step.kind
        if history.first_ts is None:
            history.first_ts = step.ts
        # Most frequent kinds first; the kinds are bound to module names because looking
        # an enum member up on its class costs more than the comparison.
        if kind == _TOOL_CALL:
            history.question = None
            return self._tool_call(step, history)
        if kind == _MODEL_CALL:
            history.tokens += (step.tokens_in or 0) + (step.tokens_out or 0)
            history.cost += step.cost or 0.0
            if self.require_approval_for:
                self._conversation(step, history)
            return self._budget(step, history), []
        if kind == _TOOL_RESULT:
            if history.pending:
                self._tool_result(step, history)
            if history.request_call_id is not None and _call_key(step) == history.request_call_id:
                answer = approval_answer(step.result) if step.status == "ok" else None
                if answer is None and step.status == "ok":
                    answer = echoed_grant(step.result, history.approval_request) or None
                if answer is not None:
                    self._answer(history, answer)
            clicked: list[Violation] = []
            if history.click_call is not None and step.call_id == history.click_call[0]:
                clicked = self._clicked(step, history)
            if step.call_id and step.call_id in history.awaiting:
                # no decision came between the call and its result: it ran unapproved
                seq, found = history.awaiting.pop(step.call_id)
                if seq >= 0:
                    return [Violation(r, APPROVAL, seq, d) for r, d in found] + clicked, []
            return clicked, []
        if kind == _APPROVAL:
            if step.call_id and step.call_id in history.awaiting:
                # the runtime's decision about a call it held (Claude Code and Codex log the
                # permission prompt's answer after the tool_use): approved, the call kept
                # the rules; denied, it did not run. The first such decision of a session
                # comes after its call was judged; from then on calls wait for theirs.
                seq, found = history.awaiting.pop(step.call_id)
                approved = _detail(step).get("approved")
                if approved is None:
                    approved = step.status == "ok"
                if seq < 0:
                    history.late_decisions = True
                return [], [r for r, _ in found] if approved else []
            self._approval(step, history)
            return [], []
        if kind == _COMPACTION:
            # the next user message is the summary of the conversation, not a person
            history.question, history.summary_next, history.user_objects = None, True, ()
            return [], []
        if kind == _END and history.awaiting:
            out = [
                Violation(r, APPROVAL, seq, d)
                for seq, found in history.awaiting.values()
                if seq >= 0
                for r, d in found
            ]
            history.awaiting = {}
            return out, []
        if kind == _EGRESS:
            # An MCP `tools/call` span reaches the tool *server* the operator configured,
            # not a destination the agent chose; that destination is in the call's
            # arguments, checked at the tool call.
            if _detail(step).get("mcp_method"):
                return [], []
            if step.egress_host and not (
                step.parent_step_id == history.last_call_step_id
                and step.egress_host in history.last_call_hosts
            ):
                return self._egress(step, (step.egress_host,), history)
            return [], []
        if kind == _START:
            if history.approvals and _starts_turn(step):
                # a new turn: approvals that named no action, and unanswered requests,
                # end with the turn they were made in
                history.approvals = [
                    0 if a in (_FOR_TURN, _ASKED) else a for a in history.approvals
                ]
            history.start_ts = step.ts
            ws = _detail(step).get("workspace")
            history.workspace = ws if isinstance(ws, str) and ws else None
        return [], []

    def _tool_call(self, step: Step, h: PolicyState) -> tuple[list[Violation], list[str]]:
        h.tool_calls += 1
        h.ensure(self)
        rules = self._rules_of(step, h.workspace)
        if rules.view.approval_request:
            request = (step.arguments or "")[:500]
            h.approval_request = request
            h.request_call_id = _call_key(step)
            h.request_named = tuple(
                i for i, p in enumerate(self.require_approval_for) if p.search(request)
            )
            for i in h.request_named:  # asked; the answer, if telemetry shows one, decides
                if h.approvals[i] not in _APPROVED:
                    h.approvals[i] = _ASKED
            return [], []
        decided = h.decided.pop(step.call_id, None) if step.call_id and h.decided else None
        seq = step.seq
        out = [Violation(rule, kind, seq, detail) for rule, kind, detail in rules.violations]
        honoured = list(rules.honoured)
        if self._timed and (out or honoured):
            ended = self._ended(step.ts, h)
            if ended:
                out = [v for v in out if v.rule not in ended]
                honoured = [r for r in honoured if r not in ended]
        if rules.edited:
            h.last_edit_seq = seq
        # egress named in the arguments (HTTP spans of this call are then not re-counted)
        hosts = _hosts_of(step)
        h.last_call_step_id = step.step_id
        h.last_call_hosts = hosts
        if hosts:
            v, hon = self._egress(step, hosts, h)
            out.extend(v)
            honoured.extend(hon)
        if self.network_scope or self.require_masked:
            v, hon = self._data_rules(step, rules.view, hosts)
            out.extend(v)
            honoured.extend(hon)
        # require_before: a `requires` run in this call counts (pending its result)
        for i in rules.requires:
            h.pending.append((step.call_id, seq, i, h.req_seq[i]))
            h.req_seq[i] = seq
            del h.pending[:-8]
        for i in rules.actions:
            rule = self.require_before[i]
            ran = h.req_seq[i]
            if rule.since == "edit":
                if h.last_edit_seq < 0:
                    continue  # nothing edited: holds vacuously, proves nothing
                # >=: a call that edits and then tests (`sed -i … && pytest`) verified it
                kept = ran >= h.last_edit_seq
            else:
                kept = ran >= 0
            if kept:
                honoured.append(rule.rule)
                continue
            if h.req_failed_seq[i] >= 0 and (
                rule.since == "start" or h.req_failed_seq[i] >= h.last_edit_seq
            ):
                what = f"the last `{rule.requires.pattern}` run (step {h.req_failed_seq[i]}) failed"
            elif rule.since == "edit":
                what = (
                    f"no `{rule.requires.pattern}` run since the last edit (step {h.last_edit_seq})"
                )
            else:
                what = f"no `{rule.requires.pattern}` run before it"
            out.append(
                Violation(
                    rule.rule, REQUIRE_BEFORE, seq, f"`{_clip(rules.view.text, 80)}` but {what}"
                )
            )
        # approvals
        held: list[tuple[str, str]] = []
        for i in rules.approvals:
            rule_name = self._approval_rules[i]
            if decided is False:
                continue  # the runtime asked and the person said no: the call did not run
            state = h.approvals[i]
            if (
                decided
                or state in _APPROVED
                or (state == _ASKED and not self.require_approval_answer)
                or (h.user_objects and any(o in rules.view.text for o in h.user_objects))
            ):
                honoured.append(rule_name)
            else:
                after = (
                    "after its approval was denied"
                    if state == _DENIED
                    else "after a request whose answer was not seen"
                    if state == _ASKED
                    else "without an approval"
                )
                detail = f"`{_clip(rules.view.text, 80)}` {after}"
                if state == 0 and step.call_id:
                    held.append((rule_name, detail))  # its decision may follow the call
                if state != 0 or not (step.call_id and h.late_decisions):
                    out.append(Violation(rule_name, APPROVAL, seq, detail))
            h.approvals[i] = 0
        if held:
            # judged now (seq -1: only a later decision is awaited) unless this session's
            # runtime is known to decide after the call (then judged at the result)
            h.awaiting[step.call_id] = (seq if h.late_decisions else -1, tuple(held))  # type: ignore[index]
            while len(h.awaiting) > 16:
                h.awaiting.pop(next(iter(h.awaiting)))
        if self._click_rules and step.call_id:
            # a click by index or coordinates names its target only in its result
            clicks = self._click_rules
            if any(self.forbidden_actions[i].within.search(rules.view.text) for i in clicks):  # type: ignore[union-attr]
                h.click_call = (step.call_id, seq, rules.view.tool)
        out.extend(self._budget(step, h))
        return out, honoured

    def _data_rules(
        self, step: Step, view: ToolView, hosts: Sequence[str]
    ) -> tuple[list[Violation], list[str]]:
        """The scope of network targets and the masking rules, read from the call's
        arguments: (violations, honoured scopes)."""
        out: list[Violation] = []
        honoured: list[str] = []
        args: Any = None
        parsed = False
        if self.network_scope:
            if not view.commands:
                args, parsed = arguments_value(step.arguments), True
            targets = call_targets(view.tool, args, view.commands, hosts)
            away = outside(targets, self.network_scope)
            if away:
                detail = (
                    f"targeted {', '.join(away[:4])}, outside {', '.join(self.network_scope[:4])}"
                )
                out.append(Violation(NETWORK_SCOPE, NETWORK_SCOPE, step.seq, detail))
            elif targets:
                honoured.append(NETWORK_SCOPE)
        if self.require_masked and _writes_out(view):
            if not parsed:
                args = arguments_value(step.arguments)
            content = "\n".join(_content_strings(args, view))
            for rule in self.require_masked:
                if rule.within is not None and not rule.within.search(view.text):
                    continue
                found = unmasked(content, rule.kinds)
                if found:
                    kinds = ", ".join(dict.fromkeys(k for k, _ in found))
                    detail = f"`{_clip(view.text, 60)}` carries unmasked {kinds}"
                    out.append(Violation(rule.rule, REQUIRE_MASKED, step.seq, detail))
                elif MASK_RE.search(content):
                    honoured.append(rule.rule)
        return out, honoured

    def _clicked(self, step: Step, h: PolicyState) -> list[Violation]:
        """The button rules a click broke, read from its result ("Clicked button with index
        42: Place order"): what a click by index or coordinates pressed is only said
        there. A rule its call already broke is not reported again."""
        _, seq, tool = h.click_call  # type: ignore[misc]
        h.click_call = None
        if step.status != "ok" or not step.result:
            return []
        text = f"{tool} {step.result[:400]}"
        out = []
        for i in self._click_rules:
            fa = self.forbidden_actions[i]
            if fa.action.search(text) and not fa.action.search(f"{tool} {step.arguments or ''}"):
                if fa.until is not None and fa.rule in self._ended(step.ts, h):
                    continue
                detail = f"clicked `{_clip(step.result, 80)}` (call at step {seq})"
                out.append(Violation(fa.rule, FORBIDDEN_ACTION, step.seq, detail))
        return out

    def _rules_of(self, step: Step, workspace: str | None) -> _CallRules:
        """:meth:`_call_rules` of a call, worked out once per step and policy: both policy
        detectors check every call against the same (shared, compiled) policy, and read
        it through the step's features, which keep it for the second."""
        features = features_of(step)
        return features.derived(
            self,
            workspace,
            lambda: self._call_rules(
                features.view_for(self.approval_tools),
                workspace,
                delegating=delegates(step.tool, features.arguments_value),
            ),
        )

    def _call_rules(
        self, view: ToolView, workspace: str | None, *, delegating: bool = False
    ) -> _CallRules:
        """What this policy says about one tool call (its ``view``) whatever the session
        did before it: the prohibitions it breaks (in the order reported) or honours,
        whether it edits, and which history-dependent rules (require_before, approvals)
        it triggers. A call ``delegating`` work to another agent
        (:func:`features.calls.effects.delegates`) is not the actions its brief names:
        the rules on commands and actions read the other agent's own calls."""
        if view.approval_request:
            return _CallRules(view, (), (), False, (), (), ())
        out: list[tuple[str, str, str]] = []
        honoured: list[str] = []
        # forbidden tools
        if self.forbidden_tools:
            tool_lower = view.tool.lower()
            hit = next(
                (t for t in self.forbidden_tools if fnmatch.fnmatchcase(tool_lower, t)), None
            )
            if hit:
                out.append((f"forbidden_tools `{hit}`", FORBIDDEN_TOOL, f"called {view.tool}"))
            elif view.tool:
                honoured.append(FORBIDDEN_TOOL)
        text = view.text
        # rules about an amount read the numeric arguments after the text (key=value lines)
        full = f"{text}\n{view.numbers}" if view.numbers else text
        # One search tells whether any text rule can match (most calls match none).
        screened_out = delegating or (
            self._text_screen is not None and not self._text_screen.search(full)
        )
        # forbidden commands
        if screened_out:
            if self.forbidden_commands and view.commands:
                honoured.append(FORBIDDEN_COMMAND)
        elif self.forbidden_commands and (view.commands or text.strip()):
            before = len(out)
            for pat in self.forbidden_commands:
                m = pat.search(text)
                if m:
                    out.append(
                        (
                            f"forbidden_commands `{pat.pattern}`",
                            FORBIDDEN_COMMAND,
                            f"ran `{_clip(m.group(0))}` in `{_clip(text, 120)}`",
                        )
                    )
            if len(out) == before and view.commands:
                honoured.append(FORBIDDEN_COMMAND)
        # writes
        edited = False
        if view.writes or view.unknown_write:
            before = len(out)
            for raw in view.writes:
                path = normalise_path(raw, workspace)
                if self._write_re is not None and self._write_re.fullmatch(path):
                    glob = next(
                        (
                            g
                            for g, r in zip(
                                self.forbidden_write_paths, self._write_res, strict=True
                            )
                            if r.fullmatch(path)
                        ),
                        "?",
                    )
                    out.append(
                        (
                            f"forbidden_write_paths `{glob}`",
                            FORBIDDEN_WRITE,
                            f"wrote {raw} (glob {glob})",
                        )
                    )
                if not is_scratch(path):
                    edited = True
                    if self._allowed_re is not None and not self._allowed_re.fullmatch(path):
                        out.append(
                            (
                                "allowed_write_paths",
                                FORBIDDEN_WRITE,
                                f"wrote {raw}, outside {', '.join(self.allowed_write_paths)}",
                            )
                        )
            if view.unknown_write:
                edited = True
            if (
                len(out) == before
                and (self.forbidden_write_paths or self.allowed_write_paths)
                and view.writes
            ):
                honoured.append(FORBIDDEN_WRITE)
        # forbidden actions: each kept by a call of its kind, broken by the action; a file
        # write is not the action its content describes (a migration written, not run)
        acts = () if delegating or (view.writes and not view.commands) else self.forbidden_actions
        for fa in acts:
            m = fa.action.search(full)
            if m:
                what = f"ran `{_clip(m.group(0))}` in `{_clip(text, 120)}`"
                out.append((fa.rule, FORBIDDEN_ACTION, what))
            elif fa.within is not None and fa.within.search(text):
                honoured.append(fa.rule)
        requires: tuple[int, ...] = ()
        actions: tuple[int, ...] = ()
        if self.require_before and not screened_out:
            rb = self.require_before
            requires = tuple(i for i, r in enumerate(rb) if r.requires.search(text))
            actions = tuple(i for i, r in enumerate(rb) if r.action.search(text))
        approvals: tuple[int, ...] = ()
        if self.require_approval_for and not screened_out:
            ra = self.require_approval_for
            approvals = tuple(i for i, p in enumerate(ra) if p.search(full))
        return _CallRules(view, tuple(out), tuple(honoured), edited, requires, actions, approvals)

    @property
    def _timed(self) -> bool:
        return any(fa.until is not None for fa in self.forbidden_actions)

    def _ended(self, ts: int, h: PolicyState) -> frozenset[str]:
        """The time-bounded rules no longer in force at ``ts`` (event time, ns)."""
        day = (h.first_ts if h.first_ts is not None else ts) // (86400 * 10**9) * 86400 * 10**9
        out = []
        for fa in self.forbidden_actions:
            if fa.until is None:
                continue
            instant, tod = fa.until
            deadline = instant if instant is not None else day + (tod or 0) * 10**9
            if ts >= deadline:
                out.append(fa.rule)
        return frozenset(out)

    def _conversation(self, step: Step, h: PolicyState) -> None:
        """Approval asked and given in the conversation: the agent's turn ends on a
        question ("May I e-mail offers@kobe-parts.jp?") and the person's next message
        answers it ("Ja, passt, bitte senden."). The answer opens the approval rules the
        question names (else every rule, for the turn), unless it is a refusal."""
        detail = _detail(step)
        message = detail.get("user_message")
        if isinstance(message, str) and message.strip():
            if h.last_user is None:
                h.last_user = message  # the task (some instrumentations repeat it on every call)
            elif h.summary_next:
                h.summary_next = False  # the compaction's summary: nobody answered anything
                h.user_objects = ()
            elif message != h.last_user or h.question is not None:
                # a person's new message: it answers the agent's question, and what it
                # names (an address, a path, an id) it asked for
                h.user_objects = tuple(_OBJECT_RE.findall(message[:2000]))[:16]
                if h.question is not None:
                    h.ensure(self)
                    named = tuple(
                        i for i, p in enumerate(self.require_approval_for) if p.search(h.question)
                    )
                    h.request_named = named
                    self._answer(h, approval_answer(message) is not False)
            h.question = None
        text = (step.text or "").rstrip()
        if text.endswith(("?", "\uff1f", "\u061f")):
            h.question = text[-500:]
            # the agent asks after the compaction: a summary would have come before its
            # turn (the compaction step held it), so the next message is a person's answer
            h.summary_next = False

    def _tool_result(self, step: Step, h: PolicyState) -> None:
        if not h.pending:
            return
        keep = []
        for call_id, seq, i, before in h.pending:
            if call_id is not None and call_id == step.call_id:
                if step.status == "cancelled":
                    # cancelled before it ran: no run at all, the run before it stands
                    # (unless that one has failed since)
                    if h.req_seq[i] == seq:
                        h.req_seq[i] = before if before > h.req_failed_seq[i] else -1
                elif step.status == "error" and self.require_before[i].must_pass:
                    h.req_failed_seq[i] = seq
                    if h.req_seq[i] == seq:
                        h.req_seq[i] = -1
            else:
                keep.append((call_id, seq, i, before))
        h.pending = keep

    def _approval(self, step: Step, h: PolicyState) -> None:
        h.ensure(self)
        approved = _detail(step).get("approved")
        if approved is None:
            approved = step.status == "ok"
        call_id = step.call_id
        if call_id and call_id != h.request_call_id and h.approval_request is None:
            # a decision about one call (a runtime's tool_decision): that call, by its id
            h.decided[call_id] = bool(approved)
            while len(h.decided) > 16:
                h.decided.pop(next(iter(h.decided)))
            return
        self._answer(h, bool(approved))

    def _answer(self, h: PolicyState, approved: bool) -> None:
        """A person's answer to the latest approval request: it opens (or, denied, closes)
        the approval rules the request names, or every rule for this turn when it names
        none. The same request answered twice (its result, then the runtime's approval
        event) opens the same rules."""
        h.ensure(self)
        named = h.request_named or ()
        state = (_NAMED if named else _FOR_TURN) if approved else _DENIED
        for i in named or range(len(self.require_approval_for)):
            h.approvals[i] = state
        h.approval_request = None

    def _egress(
        self, step: Step, hosts: Sequence[str], h: PolicyState
    ) -> tuple[list[Violation], list[str]]:
        out = []
        clean = False
        for host in hosts:
            verdict = self._hosts.get(host)
            if verdict is None and host not in self._hosts:
                verdict = self._hosts.put(host, self._host_verdict(host))
            if verdict is None:
                continue  # loopback
            denied, allowed = verdict
            if denied:
                out.append(
                    Violation(
                        f"denied_egress_hosts `{denied}`", EGRESS, step.seq, f"contacted {host}"
                    )
                )
            elif not allowed:
                out.append(
                    Violation(
                        "allowed_egress_hosts",
                        EGRESS,
                        step.seq,
                        f"contacted {host}, not in allowed_egress_hosts",
                    )
                )
            else:
                clean = True
        return out, [EGRESS] if clean and not out else []

    def _host_verdict(self, host: str) -> tuple[str | None, bool] | None:
        """(the denying pattern, allowed) for ``host``; None when it is exempt loopback."""
        if self.allow_loopback_egress and _is_loopback(host):
            return None
        denied = _host_matches(host, self.denied_egress_hosts, subdomains=True)
        if denied:
            return denied, False
        return None, _host_matches(host, self.allowed_egress_hosts, subdomains=False) is not None

    def _budget(self, step: Step, h: PolicyState) -> list[Violation]:
        out: list[Violation] = []
        hit = h.budget_hit
        if len(hit) >= len(self._limits):
            return out  # no budget, or every limit already reported (each is, once)
        used = (  # in BUDGET_KEYS order
            h.tokens,
            h.cost,
            float(h.tool_calls),
            (step.ts - h.start_ts) / 1e9 if h.start_ts is not None else 0.0,
        )
        for i, key, limit in self._limits:
            if used[i] > limit and key not in hit:
                hit.append(key)
                out.append(
                    Violation(
                        f"budget.{key}",
                        BUDGET,
                        step.seq,
                        f"{key} {used[i]:,.0f} over the budget of {limit:,.0f}",
                    )
                )
        return out


class _CallRules(NamedTuple):
    """What a policy says about one tool call before looking at the session's history
    (see :meth:`Policy._call_rules`): violations as (rule, kind, detail), honoured scopes,
    and the indices of the require_before/approval rules whose regexes match. A named
    tuple rather than a frozen dataclass: one is built per distinct call, and this is
    a third of the cost."""

    view: ToolView
    violations: tuple[tuple[str, str, str], ...]
    honoured: tuple[str, ...]
    edited: bool
    requires: tuple[int, ...]
    actions: tuple[int, ...]
    approvals: tuple[int, ...]


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Memo(dict[_K, _V]):
    """A bounded memo of a pure function, kept on the frozen object it belongs to.

    Not state: it is emptied when full (a simple bound that stays correct under threads,
    since one dict operation is atomic), left out of comparisons, and pickles empty.
    A ``dict`` itself, so a lookup is ``dict.get``.
    """

    __slots__ = ("maxsize",)

    def __init__(self, maxsize: int = 256) -> None:
        super().__init__()
        self.maxsize = maxsize

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.maxsize,))

    def put(self, key: _K, value: _V) -> _V:
        if len(self) >= self.maxsize:
            self.clear()
        self[key] = value
        return value


_OUTBOUND_TOOL_RE = re.compile(
    r"(?i)(?:write|append|insert|update|send|post|reply|upload|share|publish|comment|put|save"
    r"|create|submit|add|set_?values|export)"
)
"""Tools that put data somewhere others read it (their names: ``sheets_append_row``,
``post_message``, ``zendesk_update_ticket``)."""
_ADDRESS_KEY_RE = re.compile(
    r"(?i)^(?:to|cc|bcc|from|recipients?|sender|reply_?to|channel|url|path|file_?path|id|\w*_id)$"
)
"""Argument keys that say where data goes, not what it is (a recipient's address)."""


def _writes_out(view: ToolView) -> bool:
    """Whether a call writes or sends: it writes a file, or its tool is named for putting
    data somewhere (:data:`_OUTBOUND_TOOL_RE`), not an approval request."""
    return bool(view.writes or view.unknown_write or _OUTBOUND_TOOL_RE.search(view.tool))


def _content_strings(args: Any, view: ToolView) -> list[str]:
    """What a call carries: its shell commands, else its argument strings except those
    under keys that address the data (``to``, ``channel``, ``path``), at most 64 KB."""
    if view.commands:
        return list(view.commands)
    return argument_strings(args, 65_536, _ADDRESS_KEY_RE)


def _clip(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _detail(step: Step) -> Mapping[str, Any]:
    """``step.detail``, or an empty mapping when a source put something else there."""
    d = step.detail
    return d if type(d) is dict or isinstance(d, Mapping) else _EMPTY


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _call_key(step: Step) -> str | None:
    """What pairs a call with its result: its id, else (telemetry without call ids) its
    tool's name, so an approval request's answer is read when neither carries an id."""
    if step.call_id:
        return step.call_id
    return f"tool:{step.tool}" if step.tool else None


def _starts_turn(step: Step) -> bool:
    """A ``start`` that begins a later turn of the conversation (``detail.turn``), not a
    sub-agent's, and not the session's own start delivered late (a root span sent when
    the run ended)."""
    detail = _detail(step)
    return bool(detail.get("turn")) and not detail.get("subagent") and not detail.get("late")


def _hosts_of(step: Step) -> tuple[str, ...]:
    egress = _detail(step).get("egress")
    if isinstance(egress, list):
        hosts = [e.get("host") for e in egress if isinstance(e, Mapping)]
        return tuple(dict.fromkeys(h for h in hosts if isinstance(h, str) and h))
    return (step.egress_host,) if step.egress_host else ()


@dataclass(slots=True)
class PolicyState:
    """What :meth:`Policy.check` remembers about a session: small and bounded (a few
    scalars, one flag per approval rule, two seqs per require_before rule, at most 8
    pending ``requires`` runs, the hosts of the last tool call)."""

    workspace: str | None = None
    approvals: list[int] = field(default_factory=list)
    """Per approval rule: 1 approved by a request naming it, 2 approved for this turn by
    one naming no action, 3 asked by a request naming it with no answer seen, -1 denied,
    0 none of these."""
    approval_request: str | None = None
    request_call_id: str | None = None
    """The call id of the latest approval request (its result may be the answer); its
    ``tool:<name>`` when the telemetry gives calls no id."""
    request_named: tuple[int, ...] | None = None
    """The approval rules the latest request names."""
    decided: dict[str, bool] = field(default_factory=dict)
    """Runtime decisions about calls not seen yet: call id → approved (at most 16)."""
    last_edit_seq: int = -1
    req_seq: list[int] = field(default_factory=list)
    req_failed_seq: list[int] = field(default_factory=list)
    pending: list[tuple[str | None, int, int, int]] = field(default_factory=list)
    """``requires`` runs awaiting their result: (call id, seq, rule, the rule's req_seq
    before the run)."""
    last_call_step_id: str | None = None
    last_call_hosts: tuple[str, ...] = ()
    tokens: float = 0.0
    cost: float = 0.0
    tool_calls: int = 0
    start_ts: int | None = None
    budget_hit: list[str] = field(default_factory=list)
    first_ts: int | None = None
    """Event time of the first step seen: the day a time-of-day ``until`` falls on."""
    awaiting: dict[str, tuple[int, tuple[tuple[str, str], ...]]] = field(default_factory=dict)
    """Calls that needed an approval and had none when made, by call id: (seq, (rule,
    detail) pairs), until the runtime's decision or the result (at most 16); seq -1 when
    the call was judged already and only a decision approving it is awaited."""
    late_decisions: bool = False
    """The session's runtime logs its approval decisions after the call (a decision
    about a call already seen arrived): calls needing one are judged at their result."""
    question: str | None = None
    """The agent's last message when it ended on a question (a request for approval)."""
    last_user: str | None = None
    """The first user message seen on a model call (the task)."""
    summary_next: bool = False
    """A compaction was seen: the next user message is its summary."""
    user_objects: tuple[str, ...] = ()
    """What the person's latest message (after the task) names: addresses, URLs, paths."""
    click_call: tuple[str, int, str] | None = None
    """The last click whose result may name what it pressed: (call id, seq, tool)."""

    def ensure(self, policy: Policy) -> None:
        """Size the per-rule lists for ``policy`` (a state starts empty)."""
        if len(self.approvals) != len(policy.require_approval_for):
            self.approvals = [0] * len(policy.require_approval_for)
        if len(self.req_seq) != len(policy.require_before):
            self.req_seq = [-1] * len(policy.require_before)
            self.req_failed_seq = [-1] * len(policy.require_before)
