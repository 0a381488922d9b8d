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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from features.calls.actions import tool_call_fields
from features.redact.engine import redact
from ingest.pipeline.probe import Probe
from models.records import Action, Alert, Severity, Step, StepKind

HOOK_EVENT = "PreToolUse"


class CheckError(ValueError):
    """The request is not a proposed tool call (answered 400, with this message)."""


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
        out: dict[str, Any] = {"hookEventName": HOOK_EVENT}
        if self.deny:
            out["permissionDecision"] = "deny"
            out["permissionDecisionReason"] = self.reason
        elif self.alerts:
            out["additionalContext"] = self.reason
        return {"hookSpecificOutput": out}


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


def check(body: Any, probe: Callable[[str], Probe]) -> tuple[int, dict[str, Any]]:
    """HTTP status and JSON answer for one request body; ``probe(session_id)`` gives the
    session's detached state (taken under the pipeline's lock by the caller)."""
    try:
        proposed = parse(body)
    except CheckError as error:
        return 400, {"error": str(error)}
    step = proposed_step(proposed)
    alerts = probe(proposed.session_id).run(step)
    return 200, judge(alerts).to_json(proposed.hook)
