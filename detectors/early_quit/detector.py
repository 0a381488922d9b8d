"""Early quits: a run that wraps up with context to spare and its checks not done.

A model that believes its context is running out summarises and stops: it writes a
progress, summary or hand-off note, hands the work on, or ends on a final answer while its
own plan still has items open. When its context window is in fact far from full and the
task's checks are not done, the run quit early: the work it hands on was its own to do.

Fires at a session's END when all hold:

- **wrap-up** (:mod:`detectors.early_quit.work`): a note written (a prose file the task
  does not name) or a hand-off tool called, with no work after it (no code edit, no check:
  a harness that asks for PROGRESS.md after each item gets it mid-work); or a final answer
  while the agent's plan (:func:`features.calls.plans.open_plan_items`) has open items;
- **work left**: the plan has open items, the note lists unchecked items, the last check
  failed, or a code edit came after the last check (or no check ever ran after one);
- **headroom**: the last model call's prompt used at most ``max_used_share`` of its
  limit: the model's context window (:func:`features.session.windows.context_window`, or
  the window the runtime reported on the call), or the size at which the runtime
  compacted this session, if smaller (its own threshold). An unknown model: no alert.

Raises ``warn``/NOTIFY once per session; onset = the wrap-up act (the note, the hand-off,
or the final answer), evidence the last check and the last plan; the reason gives the
headroom in tokens. ``score``: 0.5 while a wrap-up stands over work left with headroom,
1.0 at an END over it; ``thresholds``: ``warn`` 1.0. State: constant.

>>> from detectors.testing import Session
>>> s = Session("doc", goal="Implement partial captures and make the suite pass")
>>> sonnet = "claude-sonnet-4-5-20250929"  # a 200,000-token window
>>> steps = [s.start(), s.model(tokens_in=60_000, model=sonnet)]
>>> steps += s.tool("edit_file", {"path": "src/pay.py", "old": "a", "new": "b"})
>>> steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="2 failed")
>>> steps.append(s.model(tokens_in=61_000, model=sonnet))
>>> steps += s.tool("write_file", {"path": "PROGRESS.md", "content": "- [ ] tests"})
>>> steps += [s.model(tokens_in=61_500, model=sonnet, text="Saved; stopping."), s.end()]
>>> detector = EarlyQuit()
>>> alerts = [a for st in steps for a in detector.update(st)]
>>> [(a.onset_seq, a.raised_seq) for a in alerts]
[(7, 10)]
>>> alerts[0].reason[:80]
'quit early: wrote PROGRESS.md at 61,700 of 200,000 tokens (31% of its window for'
>>> detector.score
1.0
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from detectors.base import Detector, StepRef, make_alert
from detectors.early_quit.work import (
    check_failed,
    hands_off,
    is_code_edit,
    is_note,
    named_in,
    open_items,
)
from detectors.registry import register
from features.calls.plans import open_plan_items
from features.calls.step_features import features_of
from features.session.windows import context_window
from models.records import Action, Alert, Severity, Step, StepKind

_START, _END, _MODEL_CALL = StepKind.START, StepKind.END, StepKind.MODEL_CALL
_TOOL_CALL, _TOOL_RESULT, _COMPACTION = (
    StepKind.TOOL_CALL,
    StepKind.TOOL_RESULT,
    StepKind.COMPACTION,
)
EXPOSED = 0.5


@register
class EarlyQuit(Detector):
    """Flags a run that wraps up far from its context limit with its checks not done.

    ``max_used_share = 0.5``: the last prompt used at most this share of the context limit
    for the quit to be early (a planned hand-off comes at 80-95%: the runtimes compact
    there). ``min_headroom_tokens = 20000``: and at least this many tokens were left.
    """

    name = "early_quit"
    thresholds_fixed = True

    def __init__(self, *, max_used_share: float = 0.5, min_headroom_tokens: int = 20_000) -> None:
        self.max_used_share = max_used_share
        self.min_headroom_tokens = min_headroom_tokens
        if not 0 < max_used_share < 1:
            raise ValueError(f"max_used_share must be in (0, 1), got {max_used_share}")
        if min_headroom_tokens < 0:
            raise ValueError(f"min_headroom_tokens must be >= 0, got {min_headroom_tokens}")
        self._reset()

    def _reset(self) -> None:
        self._goal = ""
        self._used: int | None = None
        self._window: int | None = None
        self._model: str | None = None
        self._compacted_at: int | None = None
        """The smallest prompt size at which the runtime compacted this session."""
        self._plan: tuple[StepRef, int] | None = None
        self._plan_fresh = False
        """The plan was written after the last code edit: it says what is left now (a
        plan written at the start and never updated says nothing about the end)."""
        self._check: tuple[StepRef, str] | None = None
        self._check_call: str | None = None
        self._check_failed = False
        self._edits_since_check = 0
        self._edited = False
        self._wrapup: tuple[StepRef, str, int] | None = None
        """The wrap-up act standing (no work after it): where, what, open items it lists."""
        self._final: StepRef | None = None
        """The last model call, when no tool call came after it (a final answer)."""
        self._reported = False
        self._score = 0.0

    @property
    def thresholds(self) -> dict[str, float]:
        """An END over a wrap-up with work left and headroom: 1.0."""
        return {"warn": 1.0}

    def update(self, step: Step) -> list[Alert]:
        kind = step.kind
        if kind is _MODEL_CALL:
            self._model_call(step)
        elif kind is _TOOL_CALL:
            self._final = None
            self._tool_call(step)
        elif kind is _TOOL_RESULT:
            if self._check_call is not None and step.call_id == self._check_call:
                self._check_call = None
                if step.status != "cancelled":
                    self._check_failed = check_failed(step)
        elif kind is _COMPACTION:
            detail = step.detail if isinstance(step.detail, Mapping) else {}
            before = detail.get("tokens_before")
            if isinstance(before, int) and before > 0:
                at = self._compacted_at
                self._compacted_at = before if at is None else min(at, before)
        elif kind is _START:
            if step.text and not self._goal:
                self._goal = step.text[:8000]
        elif kind is _END:
            return self._end(step)
        else:
            return []
        self._score = EXPOSED if self._judge() is not None else 0.0
        return []

    # -- state ---------------------------------------------------------------------

    def _model_call(self, step: Step) -> None:
        detail = step.detail if isinstance(step.detail, Mapping) else {}
        if not self._goal:
            message = detail.get("user_message")
            if isinstance(message, str):
                self._goal = message[:8000]
        if step.tokens_in:
            self._used = step.tokens_in + (step.tokens_out or 0)
            self._model = step.model or self._model
            reported = detail.get("context_window")
            window = reported if isinstance(reported, int) and reported > 0 else None
            self._window = window or context_window(step.model) or self._window
        self._final = StepRef.of(step) if step.text else None

    def _tool_call(self, step: Step) -> None:
        features = features_of(step)
        view = features.view
        if hands_off(step.tool):
            self._wrapup = (StepRef.of(step), f"handed the work off (`{step.tool}`)", 0)
            return
        args = features.arguments_value
        plan = open_plan_items(args)
        if plan is not None:
            self._plan = (StepRef.of(step), plan)
            self._plan_fresh = True
        if view is None:
            return
        paths = view.writes
        notes = [p for p in paths if is_note(p) and not named_in(p, self._goal)]
        code = [p for p in paths if is_code_edit(p)]
        if code:
            self._edits_since_check += 1
            self._edited = True
            self._plan_fresh = False  # the plan said what was left before this work
            self._wrapup = None  # work after a note: it was a progress note mid-work
        if notes and not code:
            left = open_items(" ".join(_strings(args)))
            self._wrapup = (StepRef.of(step), f"wrote {notes[0].rsplit('/', 1)[-1]}", left)
        if view.is_check and plan is None:
            what = view.commands[0] if view.commands else view.tool
            self._check = (StepRef.of(step), " ".join(what.split())[:80])
            self._check_call = step.call_id
            self._check_failed = False
            self._edits_since_check = 0
            if not notes:
                self._wrapup = None  # checked after the note: work went on

    # -- the rule ------------------------------------------------------------------

    def _limit(self) -> int | None:
        limits = [x for x in (self._window, self._compacted_at) if x]
        return min(limits) if limits else None

    def _left(self) -> list[str]:
        """The work left, in words (empty: none known)."""
        left = []
        if self._plan is not None and self._plan[1] > 0 and self._plan_fresh:
            left.append(f"{self._plan[1]} item(s) of its plan open (step {self._plan[0].seq})")
        if self._wrapup is not None and self._wrapup[2] > 0:
            left.append(f"the note lists {self._wrapup[2]} unchecked item(s)")
        if self._check is not None and self._check_failed:
            left.append(f"the last check `{self._check[1]}` (step {self._check[0].seq}) failed")
        elif self._edited and self._edits_since_check:
            if self._check is None:
                left.append("no test, lint or build ran after its edits")
            else:
                left.append(f"edits since the last check (step {self._check[0].seq})")
        return left

    def _judge(self) -> tuple[StepRef, str, int, int, list[str]] | None:
        """(onset, the wrap-up act, used, limit, work left) when the run would quit early
        by ending now, else None."""
        limit, used = self._limit(), self._used
        if limit is None or used is None:
            return None
        if used > self.max_used_share * limit or limit - used < self.min_headroom_tokens:
            return None
        left = self._left()
        if not left:
            return None
        if self._wrapup is not None:
            return self._wrapup[0], self._wrapup[1], used, limit, left
        plan = self._plan
        if self._final is not None and plan is not None and plan[1] > 0 and self._plan_fresh:
            return self._final, "ended on a final answer", used, limit, left
        return None

    def _end(self, step: Step) -> list[Alert]:
        found = self._judge()
        self._score = 1.0 if found is not None else 0.0
        if found is None or self._reported:
            return []
        self._reported = True
        onset, act, used, limit, left = found
        headroom = limit - used
        source = "its compaction threshold" if limit == self._compacted_at else "its window"
        reason = (
            f"quit early: {act} at {used:,} of {limit:,} tokens ({used / limit:.0%} of "
            f"{source} for {self._model or 'its model'}), {headroom:,} tokens of headroom, "
            f"with work left: {'; '.join(left)}"
        )
        evidence = [
            ref for ref in (self._check and self._check[0], self._plan and self._plan[0]) if ref
        ]
        return [
            make_alert(
                self.name,
                onset=onset,
                raised=step,
                evidence=evidence,
                score=1.0,
                severity=Severity.WARN,
                reason=reason,
                action=Action.NOTIFY,
            )
        ]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
