"""Premature completion: the agent claims success while its own checks say otherwise.

At the session's END (``detail["claimed_done"]`` true, or ``end_status`` success) it
fires when

- the last check failed: a test/lint/type-check/build run (recognised generically by
  command words, :func:`features.tool_view.is_check_command`, or a tool named like
  ``run_tests``/``lint``/``build``) whose result was an error, with no passing check
  after it; or
- nothing verified the last edit: a source file was edited after the last check (or
  no check ever ran).

Edits that checks cannot verify do not count: prose and notes (``*.md``, ``*.rst``,
``*.txt``, ``README``, ``CHANGELOG``, ``docs/``, ``notes/``), scratch paths (``/tmp``,
logs) and writes whose path is unknown. So a research agent that saves its answer to
``notes/answer.md`` and a coding agent that updates the changelog after the tests pass
are fine. Needs no policy. Warn, ``notify``: the work may be fine, the claim is not
backed.

A check the runtime cancelled before it ran (status ``cancelled``: Claude Code cancels
the siblings of a parallel call that failed) neither passed nor failed: the check before
it is again the last one, and the edits since that one still count.

>>> from detectors.testing import Session
>>> s = Session("demo")
>>> d = PrematureCompletion()
>>> steps = [s.start(), *s.tool("edit_file", {"path": "src/app.py", "old": "a", "new": "b"})]
>>> steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
>>> steps.append(s.end(claimed_done=True))
>>> [(a.onset_seq, a.raised_seq, a.reason) for st in steps for a in d.update(st)]
[(5, 5, 'claimed success, but the last check `pytest -q` (step 3) failed: 1 failed')]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from detectors.base import Detector, make_alert
from detectors.registry import register
from features.tool_view import ToolView, is_scratch, tool_view
from models.records import Action, Alert, Severity, Step, StepKind

# enum members bound once: a module global is cheaper than a class attribute lookup
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT
_START = StepKind.START
_END = StepKind.END

_UNVERIFIABLE_RE = re.compile(
    r"(?i)(\.(md|markdown|rst|txt|adoc|org|csv|tsv|log)$)"
    r"|(^|/)(readme|changelog|changes|news|history|authors|contributors|license|notice|todo)[^/]*$"
    r"|(^|/)(docs?|notes|changelog\.d|\.notes)/"
)
"""Paths whose edits no test or build verifies: prose, notes, data."""

_FAILED_OUTPUT_RE = re.compile(
    r"(?im)\b[1-9]\d* (failed|failing|errors?)\b|^FAILED\b|^FAIL\b|\bexit (status|code) [1-9]"
)
"""Check output that reports failure even when the tool call itself succeeded."""

StepRef = tuple[str, int, str, int, str]
"""(step_id, seq, source_ref, ts, description)."""


def _ref(step: Step, what: str) -> StepRef:
    return (step.step_id, step.seq, step.source_ref, step.ts, what)


@register
class PrematureCompletion(Detector):
    """Flags an END that claims success over a failed or missing check.

    ``min_edits = 1``: unverified source edits needed for the "nothing verified the last
    edit" case (1: one unchecked change to code is already an unbacked claim).
    """

    name = "premature_completion"

    def __init__(self, *, min_edits: int = 1) -> None:
        self.min_edits = min_edits
        if min_edits < 1:
            raise ValueError(f"min_edits must be >= 1, got {min_edits}")
        self._reset()

    def _reset(self) -> None:
        self._workspace: str | None = None
        self._last_check: StepRef | None = None
        self._check_call_id: str | None = None
        self._check_failed: str | None = None
        """Why the last check failed (error text), None if it passed or is pending."""
        self._last_edit: StepRef | None = None
        self._edits_since_check = 0
        self._before_check: tuple[StepRef | None, str | None, int] = (None, None, 0)
        """The last check, its failure and the edits since it, before the pending check."""
        self._done = False

    def update(self, step: Step) -> list[Alert]:
        kind = step.kind
        if kind == _TOOL_CALL:
            self._tool_call(step)
        elif kind == _TOOL_RESULT:
            if self._check_call_id is not None and step.call_id == self._check_call_id:
                self._check_call_id = None
                if step.status == "cancelled":
                    # the runtime cancelled the check before it ran: it verified nothing
                    # and failed nothing, the check before it is again the last one
                    self._last_check, self._check_failed, edits = self._before_check
                    self._edits_since_check += edits
                else:
                    self._check_failed = _failure(step)
        elif kind == _START:
            detail = step.detail if isinstance(step.detail, Mapping) else {}
            ws = detail.get("workspace")
            self._workspace = ws if isinstance(ws, str) and ws else None
        elif kind == _END and not self._done:
            self._done = True
            return self._end(step)
        return []

    def _tool_call(self, step: Step) -> None:
        view = tool_view(step)
        if view is None:
            return
        for raw in view.writes:
            path = raw
            if self._workspace and path.startswith(self._workspace.rstrip("/") + "/"):
                path = path[len(self._workspace.rstrip("/")) + 1 :]
            if _verifiable(path):
                self._last_edit = _ref(step, raw)
                self._edits_since_check += 1
                break
        what = _check_name(view)
        if what is not None:
            # A call that edits and then checks (`sed -i … && pytest`) verified its edit.
            self._before_check = (self._last_check, self._check_failed, self._edits_since_check)
            self._last_check = _ref(step, what)
            self._check_call_id = step.call_id
            self._check_failed = None
            self._edits_since_check = 0

    def _end(self, step: Step) -> list[Alert]:
        detail = step.detail if isinstance(step.detail, Mapping) else {}
        claimed = detail.get("claimed_done") is True or detail.get("end_status") == "success"
        if not claimed:
            return []
        check = self._last_check
        if check is not None and self._check_failed is not None:
            reason = (
                f"claimed success, but the last check `{check[4]}` (step {check[1]}) failed: "
                f"{self._check_failed}"
            )
            evidence = [check]
        elif self._last_edit is not None and self._edits_since_check >= self.min_edits:
            edit = self._last_edit
            if check is None:
                reason = (
                    f"claimed success, but no test, lint or build ever ran; the last edit "
                    f"({edit[4]}, step {edit[1]}) is unverified"
                )
                evidence = [edit]
            else:
                reason = (
                    f"claimed success, but nothing verified the last edit ({edit[4]}, step "
                    f"{edit[1]}): the last check `{check[4]}` ran at step {check[1]}"
                )
                evidence = [edit, check]
        else:
            return []
        stubs = [
            Step(
                step_id=r[0],
                session_id=step.session_id,
                kind=StepKind.TOOL_CALL,
                ts=r[3],
                seq=r[1],
                source_ref=r[2],
            )
            for r in evidence
        ]
        return [
            make_alert(
                self.name,
                onset=step,
                raised=step,
                evidence=stubs,
                score=1.0,
                severity=Severity.WARN,
                reason=reason,
                action=Action.NOTIFY,
            )
        ]


# Pure functions of immutable values, memoised (bounded): loops and retries repeat calls,
# and ``ToolView.is_check`` runs a regex per command segment each time it is read.
@lru_cache(maxsize=256)
def _check_name(view: ToolView) -> str | None:
    """How reasons name the check a call runs (its command), or None if it runs none."""
    if not view.is_check:
        return None
    what = view.commands[0] if view.commands else view.tool
    return " ".join(what.split())[:80]


@lru_cache(maxsize=1024)
def _verifiable(path: str) -> bool:
    """An edit of ``path`` (workspace prefix removed) is one a check can verify."""
    return not is_scratch(path) and not _UNVERIFIABLE_RE.search(path)


def _failure(result: Step) -> str | None:
    """Why a check's result is a failure (its error text), or None if it passed."""
    if result.status == "error":
        return " ".join((result.error or "status error").split())[:120]
    if result.result and _FAILED_OUTPUT_RE.search(result.result[:4000]):
        m = _FAILED_OUTPUT_RE.search(result.result[:4000])
        return f"output says {m.group(0)!r}" if m else "output reports failures"
    return None
