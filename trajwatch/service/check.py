"""The pre-execution check: would this proposed tool call raise an alert?

``POST /v1/check`` (on ``serve``, and through ``trajwatch breaker``) takes a tool call a
session is about to make, runs it through *copies* of that session's detectors
(:meth:`ingest.pipeline.engine.Pipeline.probe` gives an :class:`ingest.pipeline.probe.Probe`:
``clone()`` + ``load_state_dict(state_dict())`` of the live ones, or of the stored cursor
state) and answers allow or deny with the would-be alerts. Nothing is stored, nothing is
sent, no live state changes: the same detectors as the live run, no second rule set.

Two request shapes:

- trajwatch's own: ``{"session_id", "tool", "arguments", "call_id"?, "agent"?}``, answered
  ``{"decision": "allow"|"deny", "reason", "alerts": [...]}``;
- the Claude Code ``PreToolUse`` hook's input (``session_id``, ``tool_name``,
  ``tool_input``, ``tool_use_id``, ``hook_event_name``), answered as the hook reads it:
  ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
  "permissionDecisionReason": ...}}`` — the reason is shown to the agent. An allowed call
  gets no ``permissionDecision`` (``"allow"`` would skip the user's own permission
  prompt: a monitor may forbid, never grant); warnings go in ``additionalContext``.

Deny when a would-be alert's action is kill or rollback, or its severity critical; a
warning is reported and allowed.

The body is read through a bounded view (:mod:`trajwatch.service.check_input`: depth,
value count and names cut to what the detectors read). Whatever keeps the check from
judging the call whole — a body that is not a proposed call, something cut from it that a
verdict of the view would allow, an exception — is answered by the
:class:`~trajwatch.check_failure.FailurePolicy` (deny for a dangerous tool by
default), never by an error status (:mod:`trajwatch.service.check_route`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from features.calls.actions import tool_call_fields
from features.redact.engine import redact
from ingest.pipeline.probe import Probe
from models.records import Action, Alert, Severity, Step, StepKind
from trajwatch.check_failure import HOOK_EVENT, CheckFailure, FailurePolicy, hook_answer
from trajwatch.service.check_input import bounded_body

log = logging.getLogger("trajwatch.service.check")


class CheckError(ValueError):
    """The request is not a proposed tool call (answered by the failure policy, cause
    ``bad_input``, with this message as the detail)."""


@dataclass(frozen=True, slots=True)
class Proposed:
    session_id: str
    tool: str
    arguments: Any
    call_id: str | None
    agent: str | None
    hook: bool
    """The request came as a Claude Code hook input: answer in the hook's format."""


@dataclass(frozen=True, slots=True)
class Verdict:
    deny: bool
    reason: str
    alerts: Sequence[Alert]

    def to_json(self, hook: bool) -> dict[str, Any]:
        if not hook:
            return {
                "decision": "deny" if self.deny else "allow",
                "reason": self.reason,
                "alerts": [a.to_json() for a in self.alerts],
            }
        return hook_answer("deny" if self.deny else "allow", self.reason, context=bool(self.alerts))


def parse(body: Any) -> Proposed:
    """The proposed call in either shape; :class:`CheckError` naming what is missing."""
    if not isinstance(body, Mapping):
        raise CheckError("the body must be a JSON object")
    hook = "tool_name" in body or "hook_event_name" in body
    session_id = body.get("session_id")
    tool = body.get("tool_name" if hook else "tool")
    arguments = body.get("tool_input" if hook else "arguments", {})
    call_id = body.get("tool_use_id" if hook else "call_id")
    if not isinstance(session_id, str) or not session_id:
        raise CheckError("session_id (a non-empty string) is required")
    if not isinstance(tool, str) or not tool:
        raise CheckError(("tool_name" if hook else "tool") + " (a non-empty string) is required")
    if hook and body.get("hook_event_name", HOOK_EVENT) != HOOK_EVENT:
        raise CheckError(f"only {HOOK_EVENT} hook events can be checked")
    agent = body.get("agent")
    return Proposed(
        session_id=session_id,
        tool=tool,
        arguments=arguments,
        call_id=call_id if isinstance(call_id, str) else None,
        agent=agent if isinstance(agent, str) else None,
        hook=hook,
    )


def proposed_step(proposed: Proposed) -> Step:
    """The tool-call step the runtime would report (the pipeline places it)."""
    call_id = proposed.call_id or "proposed"
    return Step(
        step_id=f"{proposed.session_id}/check/{call_id}",
        session_id=proposed.session_id,
        kind=StepKind.TOOL_CALL,
        ts=0,  # the probe puts it at the session's last event time
        agent=proposed.agent,
        call_id=call_id,
        source="check",
        **tool_call_fields(proposed.tool, proposed.arguments),
    )


def judge(alerts: Sequence[Alert]) -> Verdict:
    """Deny on a would-be kill or rollback, or a critical alert; else allow."""
    blocking = [
        a
        for a in alerts
        if a.action in (Action.KILL, Action.ROLLBACK) or a.severity == Severity.CRITICAL
    ]
    if blocking:
        first = blocking[0]
        reason = (
            f"trajwatch {first.detector} ({first.severity}, would {first.action}): {first.reason}"
        )
        return Verdict(True, redact(reason), alerts)
    if alerts:
        reason = "; ".join(f"trajwatch {a.detector} ({a.severity}): {a.reason}" for a in alerts)
        return Verdict(False, redact(reason), alerts)
    return Verdict(False, "no detector objects", alerts)


@dataclass(slots=True)
class Seen:
    """What the check has read of a request so far: the failure policy's input if it
    fails or times out later."""

    shape: str | None = None
    """``hook`` or ``trajwatch`` once the body is parsed."""
    tool: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answer to one check (always sent with 200), its decision (``deny``, ``ask`` or
    ``allow``: no decision) and the failure causes that made it, for the metrics."""

    answer: dict[str, Any]
    decision: str
    causes: tuple[str, ...] = field(default=())


def shape_of(body: Any) -> str | None:
    """``hook`` for a Claude Code hook input, ``trajwatch`` for the own shape, None for
    something that is not an object."""
    if not isinstance(body, Mapping):
        return None
    return "hook" if "tool_name" in body or "hook_event_name" in body else "trajwatch"


def failed(
    policy: FailurePolicy, failure: CheckFailure, seen: Seen, causes: Sequence[str] = ()
) -> Outcome:
    """The failure policy's outcome for ``failure``, counted under ``causes`` (default:
    its own cause)."""
    decision = policy.decide(seen.tool)
    return Outcome(
        policy.answer(failure, seen.tool, seen.shape),
        decision,
        tuple(causes) or (failure.cause,),
    )


def check(
    data: bytes,
    probe: Callable[[str], Probe],
    policy: FailurePolicy,
    seen: Seen | None = None,
) -> Outcome:
    """The outcome of one request body (bytes as received, within the body cap);
    ``probe(session_id)`` gives the session's detached state (taken under the pipeline's
    lock by the caller). Never raises: every failure is the policy's outcome. ``seen``
    (filled in as the body is read) lets a caller that stops waiting answer the policy's
    decision for the right tool."""
    seen = seen if seen is not None else Seen()
    try:
        view = bounded_body(data)
        seen.shape = shape_of(view.body)
        if isinstance(view.body, Mapping):
            tool = view.body.get("tool_name" if seen.shape == "hook" else "tool")
            seen.tool = tool if isinstance(tool, str) and tool else None
        try:
            proposed = parse(view.body)
        except CheckError as error:
            raise CheckFailure("bad_input", str(error)) from None
        alerts = probe(proposed.session_id).run(proposed_step(proposed))
        verdict = judge(alerts)
    except CheckFailure as failure:
        return failed(policy, failure, seen)
    except Exception as exc:  # a bug must not answer 500: the hook would run the call
        log.exception("the check raised")
        return failed(policy, CheckFailure("internal", type(exc).__name__), seen)
    if view.cuts and not verdict.deny:
        causes = sorted(view.cuts, reverse=True)  # too_deep first
        detail = " and ".join(_CUT_DETAIL[c] for c in causes) + "; judged on what was read"
        return failed(policy, CheckFailure(causes[0], detail), seen, causes)
    decision = "deny" if verdict.deny else "allow"
    return Outcome(verdict.to_json(proposed.hook), decision)


_CUT_DETAIL = {
    "too_deep": "the arguments nest deeper than the detectors read",
    "too_large": "the call holds more than the detectors read",
}
