"""Stalled runs: a worker that died mid-call, seen by the silence that follows.

A session whose last step is a tool call without its result (or, in a trace, a model
answer asking for tools whose spans never come), or a result the model never answered,
and which stays silent past what its own cadence and its call predict while the input's
clock moves on, is a run whose worker is gone. Silence reaches the detector as a step:
the pipeline places a ``silence`` step in a session that has been quiet for a bound of
time by its partition's clock (:mod:`ingest.pipeline.silence`), so the detector reads no
wall clock and a replay raises the same alert.

The bound (:func:`detectors.stalled_run.waits.bound_ns`): the largest of ``floor_minutes``,
``cadence_factor`` x the session's longest gap among its last ``cadence_steps`` steps, and
``timeout_factor`` x the longest timeout the calls in flight declared (the runtime would
have ended them with an error by then). Quiet: a session that ended, whose model ended its
turn without asking for a tool (a person speaks next), or whose call waits for a person
(an approval, a question, a sandbox escalation: :mod:`features.calls.waits`).

Reads every kind of step for the cadence; tool calls and results, model calls (their
finish reason and traced tool requests), approvals, checkpoints, the start (where the
session works) and the end. Raises ``warn`` with the ``resume`` action once per wait: the
onset is the unanswered call (or the step the model never answered), the evidence the
last checkpoint, the reason names the call, the silence, the bound, the last checkpoint
and its commit, and where the session works. ``score``: the silence over its bound (0 while
the session speaks or waits for a person); ``thresholds``: ``warn`` 1.0. State: constant
(``cadence_steps`` gaps, at most 16 calls in flight).

>>> from detectors.testing import Session
>>> s = Session("doc")
>>> steps = [s.start(), s.model(), *s.tool("bash", {"command": "pytest -q"})]
>>> steps += [s.model(), s.checkpoint("ckpt-1", "3a2180b")]
>>> steps += [s.call("bash", {"command": "make build", "timeout": 600})]
>>> steps += [s.silence(300), s.silence(600), s.silence(1200)]
>>> detector = StalledRun()
>>> for step in steps:
...     for alert in detector.update(step):
...         print(alert.raised_seq, alert.onset_seq, alert.action, round(alert.score, 2))
9 6 resume 1.33
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from detectors.base import Detector, StepRef, make_alert
from detectors.registry import register
from detectors.stalled_run.cadence import Cadence
from detectors.stalled_run.waits import (
    MINUTE,
    Call,
    Wait,
    bound_ns,
    call_of,
    describe,
    minutes,
    requested_calls,
    turn_over,
)
from models.records import Action, Alert, Severity, Step, StepKind

_START, _END, _MODEL_CALL = StepKind.START, StepKind.END, StepKind.MODEL_CALL
_TOOL_CALL, _TOOL_RESULT = StepKind.TOOL_CALL, StepKind.TOOL_RESULT
_APPROVAL, _CHECKPOINT, _SILENCE = StepKind.APPROVAL, StepKind.CHECKPOINT, StepKind.SILENCE
MAX_CALLS = 16
"""Calls in flight remembered (parallel calls); the oldest go past it."""


@register
class StalledRun(Detector):
    """Flags a session silent mid-call past what its cadence and its call predict.

    ``floor_minutes = 15.0``: no run is stalled before this much silence (a runtime's own
    heartbeat timeout and retry come first: 5-10 minutes in Temporal-style workers).
    ``cadence_factor = 4.0``: silence over this many times the session's longest recent
    gap. ``cadence_steps = 32``: the gaps that cadence is read from. ``timeout_factor =
    1.25``: silence over this much of the longest timeout a call in flight declared.
    """

    name = "stalled_run"
    thresholds_fixed = True

    def __init__(
        self,
        *,
        floor_minutes: float = 15.0,
        cadence_factor: float = 4.0,
        cadence_steps: int = 32,
        timeout_factor: float = 1.25,
    ) -> None:
        self.floor_minutes = floor_minutes
        self.cadence_factor = cadence_factor
        self.cadence_steps = cadence_steps
        self.timeout_factor = timeout_factor
        if floor_minutes <= 0:
            raise ValueError(f"floor_minutes must be > 0, got {floor_minutes}")
        if cadence_factor < 1:
            raise ValueError(f"cadence_factor must be >= 1, got {cadence_factor}")
        if cadence_steps < 1:
            raise ValueError(f"cadence_steps must be >= 1, got {cadence_steps}")
        if timeout_factor < 1:
            raise ValueError(f"timeout_factor must be >= 1, got {timeout_factor}")
        self._reset()

    def _reset(self) -> None:
        self._cadence = Cadence(self.cadence_steps)
        self._calls: dict[str, Call] = {}
        """Calls in flight by call id (or step id when the call has none)."""
        self._waiting: str | None = None
        """``tool``, ``model`` or None (ended, or a person speaks next)."""
        self._since: StepRef | None = None
        """The step the wait began at."""
        self._reported = False
        self._checkpoint: tuple[StepRef, str, str | None] | None = None
        self._where: dict[str, str] = {}
        self._score = 0.0

    @property
    def thresholds(self) -> dict[str, float]:
        """Silence at its bound: 1.0."""
        return {"warn": 1.0}

    def update(self, step: Step) -> list[Alert]:
        kind = step.kind
        if kind is _SILENCE:
            return self._silence(step)
        self._cadence.spoke(step.ts)
        self._score = 0.0
        if kind is _TOOL_CALL:
            call = call_of(step)
            self._open(call.call_id or step.step_id, call)
            self._wait("tool", step)
        elif kind is _TOOL_RESULT:
            self._calls.pop(step.call_id or "", None)
            self._wait("tool" if self._calls else "model", step)
        elif kind is _MODEL_CALL:
            self._calls.clear()  # an answer: whatever was in flight came back to it
            requested = requested_calls(step)
            for call in requested:
                self._open(call.call_id or f"{step.step_id}/{call.tool}", call)
            if requested or not turn_over(step):
                self._wait("tool", step)
            else:
                self._wait(None, step)
        elif kind is _APPROVAL:
            # a person answered: the call goes on, a machine's wait again
            self._calls = {k: _unhuman(c) for k, c in self._calls.items()}
            self._wait("tool" if self._calls else "model", step)
        elif kind is _START:
            self._calls.clear()  # a (new) worker starts: nothing of the last is in flight
            self._started(step)
            self._wait("model", step)
        elif kind is _END:
            self._calls.clear()
            self._wait(None, step)
        elif kind is _CHECKPOINT:
            detail = step.detail if isinstance(step.detail, Mapping) else {}
            checkpoint_id = detail.get("checkpoint_id")
            if isinstance(checkpoint_id, str) and checkpoint_id:
                commit = detail.get("commit")
                self._checkpoint = (
                    StepRef.of(step),
                    checkpoint_id,
                    commit if isinstance(commit, str) and commit else None,
                )
        # an error, a compaction, egress: the session is alive (its cadence saw it), and
        # what it waits for is unchanged
        return []

    # -- state -------------------------------------------------------------------

    def _open(self, key: str, call: Call) -> None:
        self._calls.pop(key, None)
        self._calls[key] = call
        while len(self._calls) > MAX_CALLS:
            del self._calls[next(iter(self._calls))]

    def _wait(self, what: str | None, step: Step) -> None:
        self._waiting = what
        self._since = StepRef.of(step)
        self._reported = False

    def _started(self, step: Step) -> None:
        detail = step.detail if isinstance(step.detail, Mapping) else {}
        for key in ("host", "workspace", "repository", "branch", "commit"):
            value = detail.get(key)
            if isinstance(value, str) and value.strip() and key not in self._where:
                self._where[key] = value.strip()[:200]

    # -- the rule ------------------------------------------------------------------

    def _silence(self, step: Step) -> list[Alert]:
        if self._waiting is None or self._since is None or self._cadence.last_ts is None:
            self._score = 0.0
            return []
        calls = tuple(self._calls.values()) if self._waiting == "tool" else ()
        wait = Wait(self._waiting, self._since, calls)
        bound = bound_ns(
            wait,
            self._cadence.longest,
            floor_ns=int(self.floor_minutes * MINUTE),
            cadence_factor=self.cadence_factor,
            timeout_factor=self.timeout_factor,
        )
        if bound is None:
            self._score = 0.0
            return []
        silent = step.ts - self._cadence.last_ts
        self._score = round(silent / bound, 4)
        if self._score < 1.0 or self._reported:
            return []
        self._reported = True
        onset = calls[-1].ref if calls else wait.since
        evidence: list[StepRef | Step] = [step]
        checkpoint_id = None
        if self._checkpoint is not None:
            evidence.insert(0, self._checkpoint[0])
            checkpoint_id = self._checkpoint[1]
        return [
            make_alert(
                self.name,
                onset=onset,
                raised=step,
                evidence=evidence,
                score=self._score,
                severity=Severity.WARN,
                reason=self._reason(wait, silent, bound),
                action=Action.RESUME,
                checkpoint_id=checkpoint_id,
            )
        ]

    def _reason(self, wait: Wait, silent: int, bound: int) -> str:
        cadence = self._cadence.longest
        text = (
            f"no sign of life for {minutes(silent)} while waiting for {describe(wait)}: past "
            f"the {minutes(bound)} its cadence (longest recent gap {minutes(cadence)}) and "
            "its call allow, while the input's clock moved on; the worker is likely gone"
        )
        if self._checkpoint is not None:
            ref, checkpoint_id, commit = self._checkpoint
            text += f"; resume from checkpoint {checkpoint_id} (step {ref.seq}"
            text += f", commit {commit[:12]})" if commit else ")"
        else:
            text += "; no checkpoint: resume from the start"
        where = _where(self._where)
        if where:
            text += f"; workspace {where}"
        return text


def _unhuman(call: Call) -> Call:
    return Call(call.ref, call.tool, call.call_id, call.timeout_s, False, call.command)


def _where(facts: dict[str, Any]) -> str:
    """Where the session works, in words: host:dir, repository@branch, commit."""
    parts = []
    place = ":".join(p for p in (facts.get("host"), facts.get("workspace")) if p)
    if place:
        parts.append(place)
    repo = facts.get("repository")
    if repo:
        parts.append(f"{repo}@{facts['branch']}" if facts.get("branch") else repo)
    elif facts.get("branch"):
        parts.append(f"branch {facts['branch']}")
    if facts.get("commit"):
        parts.append(f"started at {facts['commit'][:12]}")
    return ", ".join(parts)
