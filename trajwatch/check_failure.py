"""What a pre-execution check answers when it cannot judge a call as designed: ``serve``'s
``POST /v1/check`` and ``trajwatch breaker``'s Claude Code hook, one notion for both.

Claude Code treats a hook's non-2xx answer, a connection failure and a timeout as a
*non-blocking* error: the tool call runs. So the check never answers 4xx/5xx to a body it
was given to judge (only 401 to a caller without the token, and 404 when ``serve`` runs no
check): every failure — a body over the cap, not JSON, not a proposed call, nested or
sized past what the detectors read, slower than ``check_timeout_ms``, an exception — is
answered 200 with the decision of a :class:`FailurePolicy`: by default ``deny`` for a tool
that is not read-only (an unknown tool is not: fail closed) and ``ask`` for a read-only
one. ``allow`` means *no decision* (the user's own permission rules apply): a monitor may
forbid, never grant. The same notion as ``trajwatch breaker``'s hook (Claude Code's
read-only tools, the same three decisions and defaults), so a call judged through the
breaker or directly by ``serve`` fails the same way.

Each failure is logged (one line: cause, tool, decision) and counted in ``/metrics``
(:class:`CheckMetrics`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from models.errors import ConfigError

__all__ = [
    "CAUSES",
    "DECISIONS",
    "HOOK_EVENT",
    "READ_ONLY_TOOLS",
    "CheckFailure",
    "CheckMetrics",
    "FailurePolicy",
    "hook_answer",
    "shown",
]

log = logging.getLogger("trajwatch.service.check")

HOOK_EVENT = "PreToolUse"
DECISIONS = ("deny", "ask", "allow")
READ_ONLY_TOOLS = ("Read", "Glob", "Grep", "LS", "NotebookRead", "TodoRead", "TodoWrite")
"""Claude Code's tools that change nothing outside the session (as ``trajwatch breaker``'s
``--read-only-tools``); ``TRAJWATCH_CHECK_READ_ONLY_TOOLS`` replaces the list."""
CAUSES = (
    "too_large",  # the body is over check_max_body_bytes, or holds more than the check reads
    "too_deep",  # the arguments nest deeper than the detectors read
    "bad_input",  # not JSON, not an object, no session_id or tool name
    "timeout",  # no verdict within check_timeout_ms
    "internal",  # an exception in the check itself
)
"""A failure's cause: the ``cause`` label of ``trajwatch_check_failures_total``."""


class CheckFailure(Exception):
    """The check cannot judge the call as designed: ``cause`` (one of :data:`CAUSES`) and
    a ``detail`` shown to the agent (in the hook's reason) and the operator (in the log)."""

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(f"{cause}: {detail}")
        self.cause = cause
        self.detail = detail


SERVE_SETTINGS = ("TRAJWATCH_CHECK_FAILURE_DANGEROUS", "TRAJWATCH_CHECK_FAILURE_OTHER")
"""The names ``serve`` sets the two decisions by (the breaker's are its flags)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FailurePolicy:
    """What a failure decides: ``dangerous`` for a tool outside ``read_only_tools`` (or an
    unknown one), ``other`` for a read-only one; each one of :data:`DECISIONS`. ``settings``
    names the two as the operator sets them (shown in errors and reasons); ``speaker`` opens
    each reason (``trajwatch``, ``trajwatch breaker``)."""

    dangerous: str = "deny"
    other: str = "ask"
    read_only_tools: frozenset[str] = field(default_factory=lambda: frozenset(READ_ONLY_TOOLS))
    settings: tuple[str, str] = SERVE_SETTINGS
    speaker: str = "trajwatch"

    def __post_init__(self) -> None:
        for name, value in zip(self.settings, (self.dangerous, self.other), strict=True):
            if value not in DECISIONS:
                raise ConfigError(
                    f"{name} must be one of {', '.join(DECISIONS)}, got {value!r}; "
                    "give deny, ask or allow"
                )

    @staticmethod
    def tools(text: str) -> frozenset[str]:
        """Comma-separated tool names (exact, as the runtime names them)."""
        return frozenset(t.strip() for t in text.split(",") if t.strip())

    def read_only(self, tool: str | None) -> bool:
        return tool is not None and tool in self.read_only_tools

    def decide(self, tool: str | None) -> str:
        return self.other if self.read_only(tool) else self.dangerous

    def judge(self, tool: str | None, failure: CheckFailure) -> tuple[str, str]:
        """The decision for ``tool`` after ``failure``, and the reason the agent and the
        operator read."""
        decision = self.decide(tool)
        read_only = self.read_only(tool)
        reason = (
            f"{self.speaker}: the check failed ({failure.cause}: {failure.detail}); "
            f"{shown(tool) if tool else 'an unknown tool'} is "
            f"{'read-only' if read_only else 'not read-only'}, so: {decision} "
            f"({self.settings[1] if read_only else self.settings[0]})"
        )
        return decision, reason

    def answer(self, failure: CheckFailure, tool: str | None, shape: str | None) -> dict[str, Any]:
        """The check's answer after ``failure`` for ``tool``, in the request's ``shape``
        (``hook``, ``trajwatch``, or None when the body was too broken to tell: then both
        keys, so either kind of client reads it). Logged, not counted (the caller counts)."""
        decision, reason = self.judge(tool, failure)
        log.warning(
            "check failed (%s: %s); tool %s, decision %s",
            failure.cause,
            failure.detail,
            shown(tool) if tool else "unknown",
            decision,
        )
        out: dict[str, Any] = {}
        if shape != "hook":
            out.update(decision=decision, reason=reason, alerts=[], failure=failure.cause)
        if shape != "trajwatch":
            out.update(hook_answer(decision, reason))
        return out


def hook_answer(decision: str | None, reason: str, *, context: bool = False) -> dict[str, Any]:
    """A ``PreToolUse`` answer: ``deny`` or ``ask`` with the reason shown, else no decision
    (the reason as ``additionalContext`` when ``context``)."""
    out: dict[str, Any] = {"hookEventName": HOOK_EVENT}
    if decision in ("deny", "ask"):
        out["permissionDecision"] = decision
        out["permissionDecisionReason"] = reason
    elif context:
        out["additionalContext"] = reason
    return {"hookSpecificOutput": out}


class CheckMetrics:
    """The check's counters, in the service's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.decisions = Counter(
            "trajwatch_checks",
            "Pre-execution checks answered, by decision (allow = no decision)",
            ["decision"],
            registry=registry,
        )
        self.failures = Counter(
            "trajwatch_check_failures",
            "Checks answered by the failure policy, by cause",
            ["cause"],
            registry=registry,
        )
        for cause in CAUSES:  # every series present from the start: a rate() sees the first
            self.failures.labels(cause)
        for decision in DECISIONS:
            self.decisions.labels(decision)

    def count(self, decision: str, causes: Iterable[str] = ()) -> None:
        self.decisions.labels(decision).inc()
        for cause in causes:
            self.failures.labels(cause).inc()


def shown(value: object, limit: int = 120) -> str:
    """An agent-controlled value in a log line or reason: quoted, escaped (no line breaks),
    clipped to ``limit`` characters; ``-`` for None."""
    if value is None:
        return "-"
    text = str(value)
    return json.dumps(text[:limit] + ("..." if len(text) > limit else ""))
