"""What a session is waiting for, and how long that may take: pure functions.

A session that has not ended waits for one of two things (:class:`Wait`):

- ``tool``: a call without its result (the call's step, or, in a trace, the tool calls a
  model answer asked for: a call's span is exported when it ends, so a call in flight has
  only its request to show);
- ``model``: a model answer, after a result came back (or the session started).

A session whose model answered without asking for a tool waits for a person (its turn is
over), as does a call to a person (an approval, a question, an escalation the user must
grant: :func:`features.calls.waits.waits_for_human`): no bound, no alert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from detectors.base import StepRef
from features.calls.step_features import features_of
from features.calls.waits import declared_timeout_s, waits_for_human
from models.records import Step

SECOND = 1_000_000_000
MINUTE = 60 * SECOND

_TOOL_FINISH = frozenset({"tool_use", "tool_calls", "function_call", "tool_call"})
"""Finish reasons of a model answer that asks for a tool."""
_TURN_OVER = frozenset({"stop", "end_turn", "stop_sequence", "max_tokens", "length"})
"""Finish reasons of an answer that ends the turn (Gemini's ``STOP`` also ends a turn
that called tools: its requests, when traced, say so)."""


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call in flight: where it was asked for, and what it declared."""

    ref: StepRef
    tool: str
    call_id: str | None
    timeout_s: float | None
    human: bool
    command: str | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    """What a silent session is waiting for (see the module): ``tool`` with the calls in
    flight, or ``model`` with the step it answers."""

    what: str
    since: StepRef
    calls: tuple[Call, ...] = ()


def call_of(step: Step) -> Call:
    """A tool call step as a :class:`Call`."""
    args = features_of(step).arguments_value
    tool = step.tool or "?"
    return Call(
        ref=StepRef.of(step),
        tool=tool,
        call_id=step.call_id,
        timeout_s=declared_timeout_s(tool, args),
        human=waits_for_human(tool, args),
        command=_command(args),
    )


def requested_calls(step: Step) -> tuple[Call, ...]:
    """The tool calls a model call's answer asked for (``detail.tool_requests``, read from
    a trace by :mod:`ingest.semconv.spans`), as calls in flight from that step."""
    detail = step.detail if isinstance(step.detail, Mapping) else {}
    requests = detail.get("tool_requests")
    if not isinstance(requests, Sequence) or isinstance(requests, str):
        return ()
    ref = StepRef.of(step)
    out = []
    for request in requests[:8]:
        if not isinstance(request, Mapping) or not isinstance(request.get("name"), str):
            continue
        timeout = request.get("timeout_s")
        call_id = request.get("id")
        out.append(
            Call(
                ref=ref,
                tool=request["name"],
                call_id=call_id if isinstance(call_id, str) else None,
                timeout_s=float(timeout) if isinstance(timeout, int | float) else None,
                human=request.get("human") is True,
            )
        )
    return tuple(out)


def turn_over(step: Step) -> bool:
    """Whether a model call without tool requests ends its turn (a person speaks next)."""
    finish = (step.finish_reason or "").lower()
    return finish in _TURN_OVER or (bool(finish) and finish not in _TOOL_FINISH)


def bound_ns(
    wait: Wait, cadence_ns: int, *, floor_ns: int, cadence_factor: float, timeout_factor: float
) -> int | None:
    """How long ``wait`` may stay silent before the run counts as stalled, or None when it
    waits for a person: the largest of ``floor_ns``, ``cadence_factor`` x the session's
    recent cadence (its longest recent gap) and, for calls, ``timeout_factor`` x the
    longest timeout they declared.

    >>> call = Call(StepRef("s", "s#1", 1, 0, ""), "shell", "c1", 2400.0, False)
    >>> bound_ns(Wait("tool", call.ref, (call,)), 40 * SECOND, floor_ns=15 * MINUTE,
    ...          cadence_factor=4.0, timeout_factor=1.25) // MINUTE
    50
    """
    if any(call.human for call in wait.calls):
        return None
    bound = max(floor_ns, int(cadence_factor * cadence_ns))
    timeouts = [c.timeout_s for c in wait.calls if c.timeout_s is not None]
    if timeouts:
        bound = max(bound, int(timeout_factor * max(timeouts) * SECOND))
    return bound


def minutes(ns: int) -> str:
    """A duration as people say it: ``45 s``, ``12 min``, ``2.5 h``."""
    seconds = ns / SECOND
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def describe(wait: Wait) -> str:
    """What the session waits for, in words, for the reason."""
    if wait.what == "model":
        return f"a model answer after step {wait.since.seq}"
    parts = []
    for call in wait.calls[:3]:
        what = f"`{call.tool} {call.command[:80]}`" if call.command else f"`{call.tool}`"
        if call.timeout_s is not None:
            what += f" (timeout {minutes(int(call.timeout_s * SECOND))})"
        parts.append(f"{what} asked at step {call.ref.seq}")
    return "the result of " + ", ".join(parts) if parts else "a tool call's result"


def _command(args: Any) -> str | None:
    if not isinstance(args, Mapping):
        return None
    for key in ("command", "cmd", "path", "file_path", "url", "query"):
        value = args.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
            if value.startswith("bash -lc "):
                value = value[len("bash -lc ") :]
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return None
