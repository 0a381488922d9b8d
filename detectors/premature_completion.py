"""Premature completion: the agent claims success while its own checks say otherwise.

Flags an END that claims completion while the last check failed (with no passing check
after it), or while a source file was edited after the last check (or no check ran).
What claims completion (:mod:`features.session.completion`): the runtime's
``detail["claimed_done"]``, a final-answer tool called in the turn, or the agent's last
message saying the work is done; a span's OK status is no claim. Every END is judged by
its own turn's claim; a finding is raised once.

Reads tool calls and their results: checks (test, lint, type-check and build runs,
:func:`features.calls.tool_view.is_check_command`, or a tool named like one; a cancelled
one did not run) and edits (prose, notes, scratch paths and writes of unknown paths are
not edits a check verifies); model calls (the last message); END steps. Needs no policy.

Raises ``warn``/NOTIFY: the work may be fine, the claim is not backed. ``score``: 0 while
the work is verified, ``EXPOSED`` (0.5) while a claim would be unbacked, 1.0 at an END
that claims completion over it; ``thresholds``: ``warn`` at 1.0. The parameters' meaning:
:class:`PrematureCompletion`.

What counts as a claim, a check and an edit, and why: ``docs/detectors/single_module.md``.
>>> from detectors.testing import Session
>>> s = Session("demo")
>>> d = PrematureCompletion()
>>> steps = [s.start(), *s.tool("edit_file", {"path": "src/app.py", "old": "a", "new": "b"})]
>>> steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
>>> steps.append(s.end(claimed_done=True))
>>> [(a.onset_seq, a.raised_seq, a.reason) for st in steps for a in d.update(st)]
[(5, 5, 'claimed success, but the last check `pytest -q` (step 3) failed: 1 failed')]
>>> d = PrematureCompletion()
>>> [(d.update(st), d.score)[1] for st in steps]  # edited, checked (failed), claimed
[0.0, 0.5, 0.5, 0.0, 0.5, 1.0]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from detectors.base import Detector, make_alert
from detectors.registry import register
from features.calls.step_features import features_of
from features.calls.tool_view import ToolView, is_scratch
from features.session.completion import claims_done, final_answer_tool
from models.records import Action, Alert, Severity, Step, StepKind

# enum members bound once: a module global is cheaper than a class attribute lookup
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT
_START = StepKind.START
_END = StepKind.END
_MODEL_CALL = StepKind.MODEL_CALL

_UNVERIFIABLE_RE = re.compile(
    r"(?i)(\.(md|markdown|rst|txt|adoc|org|csv|tsv|log"
    r"|docx?|odt|rtf|xlsx?|ods|pptx?|odp|pdf)$)"
    r"|(^|/)(readme|changelog|changes|news|history|authors|contributors|license|notice|todo)[^/]*$"
    r"|(^|/)(docs?|notes|changelog\.d|\.notes)/"
    r"|^[^/.]* [^/.]*$"
)
"""Paths whose edits no test or build verifies: prose, notes, data, office documents,
and document titles (a name with spaces and no extension: ``grocery list`` in a cloud
drive is no source file)."""

_FAILED_OUTPUT_RE = re.compile(
    r"(?im)\b[1-9]\d* (failed|failing|errors?)\b|^FAILED\b|^FAIL\b|\bexit (status|code) [1-9]"
)
"""Check output that reports failure even when the tool call itself succeeded."""

EXPOSED = 0.5
"""The score while a claim of completion would be unbacked (a failed check last, or
source edits no check ran after): half way to the claim that fires."""

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
    thresholds_fixed = True

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
        self._final: str | None = None
        """The final-answer tool called in the current turn, if any."""
        self._last_text: str | None = None
        """The agent's last message, when no tool call came after it."""
        self._reported: tuple[str, ...] = ()
        """Step ids of the last two checks or edits reported (a failed check, then an
        edit after it): one finding each."""
        self._score = 0.0

    def update(self, step: Step) -> list[Alert]:
        kind = step.kind
        if kind == _MODEL_CALL:
            if step.text:
                self._last_text = step.text
        elif kind == _TOOL_CALL:
            self._last_text = None  # the agent acted after it spoke: not its last word
            if final_answer_tool(step.tool):
                self._final = step.tool
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
            if isinstance(ws, str) and ws:
                self._workspace = ws  # a later turn's start keeps the session's workspace
            self._final = self._last_text = None
        elif kind == _END:
            alerts = self._end(step)
            self._final = self._last_text = None  # what the next turn claims is its own
            return alerts
        self._score = self._exposed()
        return []

    @property
    def thresholds(self) -> dict[str, float]:
        """A claim over a failed check or an unverified edit: 1.0."""
        return {"warn": 1.0}

    def _exposed(self) -> float:
        """EXPOSED while a claim of completion would be unbacked (the last check failed,
        or source edits since it), else 0."""
        failed = self._last_check is not None and self._check_failed is not None
        unverified = self._last_edit is not None and self._edits_since_check >= self.min_edits
        return EXPOSED if failed or unverified else 0.0

    def _tool_call(self, step: Step) -> None:
        view = features_of(step).view
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

    def _claim(self, step: Step) -> str | None:
        """How the END's turn claimed completion, or None when it claimed nothing."""
        detail = step.detail if isinstance(step.detail, Mapping) else {}
        recorded = detail.get("claimed_done")
        if recorded is True:
            return "claimed success"
        if recorded is False:
            return None  # the runtime says not done, whatever was said
        if self._final is not None:
            return f"claimed success (called `{self._final}`)"
        if claims_done(self._last_text):
            return "claimed success in its last message"
        return None  # an OK status or a turn's end is no claim

    def _end(self, step: Step) -> list[Alert]:
        claimed = self._claim(step)
        self._score = self._exposed()
        if claimed is None:
            return []
        if self._score:
            self._score = 1.0  # claimed over it (reported at an earlier turn's end or not)
        check = self._last_check
        # one finding each: a failed check or an unverified edit reported at an earlier
        # turn's end is not reported again (a check or edit that stopped being the last
        # cannot become it again, so their ids are enough)
        unreported_failure = (
            check is not None and self._check_failed is not None and check[0] not in self._reported
        )
        if check is not None and unreported_failure:
            reason = (
                f"{claimed}, but the last check `{check[4]}` (step {check[1]}) failed: "
                f"{self._check_failed}"
            )
            evidence = [check]
        elif (
            self._last_edit is not None
            and self._edits_since_check >= self.min_edits
            and self._last_edit[0] not in self._reported
        ):
            edit = self._last_edit
            if check is None:
                reason = (
                    f"{claimed}, but no test, lint or build ever ran; the last edit "
                    f"({edit[4]}, step {edit[1]}) is unverified"
                )
                evidence = [edit]
            else:
                reason = (
                    f"{claimed}, but nothing verified the last edit ({edit[4]}, step "
                    f"{edit[1]}): the last check `{check[4]}` ran at step {check[1]}"
                )
                evidence = [edit, check]
        else:
            return []
        self._reported = (*self._reported[-1:], evidence[0][0])
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
