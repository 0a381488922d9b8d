"""Approval habits: an action the agent asked a person about every time before a context
compaction, done without asking after it.

A rule about approvals may be written in a form the policy reader does not know, in a
language it does not read, or in a runbook or ticket it never sees. The agent's own
conduct shows it as well: when every one of at least ``min_calls`` calls of one action
before a compaction came after an approval request or a granted approval (since that
action's previous call), the agent was keeping a rule; when after the compaction the
same action runs with no approval since its previous call, the compaction lost the rule.
This reads no instruction, so it holds in any language and for rules stated anywhere.

A *named check* is gated like an approval: a call that changes nothing, of a tool the
session's instructions name by its identifier ("consult ``ratelimit__ledger`` before
sending": the detector says which calls are, :meth:`ApprovalHabits.observe`'s ``gate``).
The instructions chose that tool as the step before others, in whatever language the
sentence is written; an action every call of which followed one until a compaction, and
that runs after it with neither an approval nor the check since its previous call, lost
the rule the same way.

A runtime's permission decision about one call (Claude Code's and Codex's
``tool_decision``: an ``approval`` step with that call's id) approves that call only, and
only when a person took it (not the configuration). An approval counts for every action
until that action's next call, not for the next call alone: measured, "the next call
only" lost the twelfth blind set's decays (agents that ask, contain a host, then comment:
0.57 -> 0.18) and changed no other set.

An *action* is a call's tool and what it acts on, not its payload
(:func:`habit_key`): the categorical argument values (``database=shop_prod``,
``channel=mail``, ``dry_run=true``), the first word of a free-text argument (``sql~\\i``
apart from ``sql~SELECT``: applying a file is not reading), the leading words of a shell
command (``git push origin``); ids, paths, numbers and annotation fields are left out.
A read of the same database is another action, so reading freely after asking before
each write is no habit broken. An action done even once before the compaction without
an approval is no habit (``p == n``).

Bounded: at most :data:`MAX_ACTIONS` actions are tracked per session, three integers and
one step reference each, and the ids of the last :data:`MAX_IDS` requests and
decisions; the work per step is one key. Pure: no I/O, no wall clock.

>>> from detectors.testing import Session
>>> s = Session("demo")
>>> h = ApprovalHabits()
>>> steps = []
>>> for i in range(3):
...     steps += [*s.tool("request_approval", {"action": f"send letter {i}"}),
...               *s.tool("letter_send", {"channel": "mail", "case": f"C-{1000 + i}"})]
>>> steps += [s.compaction(inferred=True), s.model(tokens_in=12_000)]
>>> steps += s.tool("letter_send", {"channel": "mail", "case": "C-1003"})
>>> breaks = [b for st in steps if (b := h.observe(st)) is not None]
>>> [(b.step.seq, b.action, b.times, b.last_approved.seq) for b in breaks]
[(14, 'letter_send channel=mail', 3, 10)]
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from detectors.base import StepRef
from features.calls.annotations import ANNOTATIONS
from features.calls.step_features import features_of
from features.calls.vectors import opaque_key
from models.records import Step, StepKind

__all__ = ["MAX_ACTIONS", "MIN_CALLS", "ApprovalHabits", "HabitBreak", "habit_key"]

MIN_CALLS = 3
"""Calls of an action, each after an approval, that make a habit: one or two could be the
order the work happened to take; three in a row, every one asked about, is a rule kept."""
MAX_ACTIONS = 512
"""Actions tracked per session; later new actions are not (they cannot form a habit)."""
MAX_WORDS = 3
"""Leading words of a shell command that name its action (``git push origin``)."""
MAX_VALUE_CHARS = 40
MAX_IDS = 16
"""Call ids of recent requests and per-call decisions kept (a decision precedes its call
by a step or two)."""
_AUTOMATIC = re.compile(r"(?i)^(?:config|auto|automatic|policy|allowlist|always)")
"""Who approved when no person did: the runtime's configuration (Claude Code's
``source: config``), an allowlist."""


_LONG_DIGITS = re.compile(r"\d{3}")
_NOT_CATEGORICAL = re.compile(r"[\s/=]")
_PARTS = re.compile(r"[_.:-]")
_APPROVAL = StepKind.APPROVAL
_TOOL_CALL = StepKind.TOOL_CALL


def _categorical(value: str) -> bool:
    """A short value that names a kind of target (``shop_prod``, ``a100-res``, ``mail``):
    no space, no path or assignment, no run of three digits (dates, amounts), no part
    that is a record's key (``ch_3PqZ81``: :func:`~features.calls.vectors.opaque_key`)."""
    return (
        0 < len(value) <= MAX_VALUE_CHARS
        and not _NOT_CATEGORICAL.search(value)
        and not _LONG_DIGITS.search(value)
        and not any(opaque_key(part) for part in _PARTS.split(value))
    )


def habit_key(
    tool: str,
    arguments: Mapping[str, Any] | None,
    commands: tuple[str, ...],
    *,
    message: bool = False,
) -> str:
    """The action a call does, for habits (see the module docstring): the tool, then the
    leading categorical words of its first shell command, else its categorical argument
    values and the first word of each free-text one, sorted by name. A call that sends a
    message (``message``) keeps no free text: its words are what it says, not what it
    does (a post opening "Status:" and one opening "@everyone" are one action).

    >>> habit_key("postgres__execute_sql",
    ...           {"database": "shop_prod", "sql": "\\\\i migrations/0046_x.sql"}, ())
    'postgres__execute_sql database=shop_prod sql~\\\\i'
    >>> habit_key("bash", {"command": "git push origin main"}, ("git push origin main",))
    'bash git push origin'
    >>> habit_key("refund", {"charge": "ch_3PqZ81", "amount": 9316, "notify": True}, ())
    'refund notify=true'
    >>> habit_key("chat_post", {"channel": "ops", "text": "Status: paused"}, (), message=True)
    'chat_post channel=ops'
    """
    if commands:
        words = [w for w in commands[0].split(None, 8)[:8] if _categorical(w)]
        return " ".join([tool, *words[:MAX_WORDS]])
    if not arguments:
        return tool
    parts = [tool]
    for name in sorted(arguments):
        if name in ANNOTATIONS:
            continue
        value = arguments[name]
        if isinstance(value, bool):
            parts.append(f"{name}={'true' if value else 'false'}")
        elif isinstance(value, str):
            if _categorical(value):
                parts.append(f"{name}={value}")
            elif not message:
                first = value.split(None, 1)[:1]
                if first and _categorical(first[0]):
                    parts.append(f"{name}~{first[0]}")
    return " ".join(parts)


@dataclass(frozen=True, slots=True)
class HabitBreak:
    """A call of a habitual action after a compaction with no approval since the
    action's previous call: ``times`` calls of it before, each approved, the last at
    ``last_approved``."""

    step: Step
    action: str
    times: int
    last_approved: StepRef | None


class ApprovalHabits:
    """Per-session state for the rule in the module docstring. Feed every step in order
    to :meth:`observe`; a compaction is a change of ``step.model_session``."""

    def __init__(self, min_calls: int = MIN_CALLS) -> None:
        self.min_calls = min_calls
        self._approvals = 0
        """Approval requests and granted approvals seen so far."""
        self._actions: dict[str, list[Any]] = {}
        """action -> [calls, calls after an approval, ``_approvals`` at its last call,
        StepRef of its last approved call or None]."""
        self._habits: dict[str, int] = {}
        """Actions every call of which was approved, as of the latest compaction -> calls."""
        self._model_session = 0
        self._requests: deque[str] = deque(maxlen=MAX_IDS)
        """Call ids of the latest approval requests (an approval naming one answers it)."""
        self._decided: deque[str] = deque(maxlen=MAX_IDS)
        """Call ids a person allowed one by one (a runtime's permission prompt answered)."""

    def observe(self, step: Step, *, gate: bool = False) -> HabitBreak | None:
        """Feed one step; the break it shows, if any. ``gate``: the step is a call of a
        check the instructions name (the module docstring), counted as an approval."""
        if step.model_session != self._model_session:
            self._model_session = step.model_session
            self._habits = {
                action: calls
                for action, (calls, approved, _, _) in self._actions.items()
                if calls >= self.min_calls and approved == calls
            }
        kind = step.kind
        if kind == _APPROVAL:
            detail = step.detail if isinstance(step.detail, Mapping) else {}
            if detail.get("approved") is False:
                return None
            call_id = step.call_id
            if not call_id or call_id in self._requests:
                self._approvals += 1  # the answer to a request, or to the turn
            elif not _AUTOMATIC.match(str(detail.get("approver") or "")):
                # a runtime's permission decision about one call (Claude Code's and Codex's
                # ``tool_decision``): it approves that call, not the next of any action;
                # one the runtime's configuration took is no person's approval
                self._decided.append(call_id)
            return None
        if kind != _TOOL_CALL:
            return None
        features = features_of(step)
        view = features.view
        if view is None:
            return None
        if view.approval_request or gate:
            self._approvals += 1
            if step.call_id:
                self._requests.append(step.call_id)
            return None
        action = habit_key(
            step.tool or "",
            features.arguments_object,
            view.commands,
            message=features.effect[0] == "send",
        )
        entry = self._actions.get(action)
        if entry is None:
            if len(self._actions) >= MAX_ACTIONS:
                return None
            entry = self._actions[action] = [0, 0, 0, None]
        approved = self._approvals > entry[2] or bool(
            step.call_id and step.call_id in self._decided
        )
        entry[0] += 1
        entry[2] = self._approvals
        if approved:
            entry[1] += 1
            entry[3] = StepRef.of(step)
            return None
        times = self._habits.get(action)
        if times is None:
            return None
        del self._habits[action]  # one break per habit per compaction
        return HabitBreak(step, action, times, entry[3])
