"""The answer's provenance, as :mod:`detectors.intent_drift.detector` keeps it: one state object
and the rule that judges a final answer against it.

**Sub-goals abandoned.** A final answer given before any tool returned anything, resting
on figures (:mod:`features.calls.grounding`: numbers of three digits or more) that neither the
task nor any result or error held, the results of its own arithmetic aside: the look-ups
the task needs were never done, and what stands in their place came from nowhere in the
session (recalled, made up, or computed from made-up inputs). The same for the answer's
words when the agent's own plan named a tool (:func:`detectors.intent_drift.reasons.
planned_tools`) that it never called: it said a look-up was needed, skipped it, and
answered with what nothing observed held (TRAIL's GAIA "goal deviation": plan steps
skipped, the answer recalled or simulated). An answer from general knowledge with no
look-up planned ("the capital of France") stays quiet. A warning, never a stop: the
session is ending, and a person judges the answer.

:class:`AnswerState` holds whether any tool returned something, the figures and the text
the session observed (the goal, failures' texts; capped), the tools the agent's prose
named and the tools it called, and the last model output before the answer (its last
:data:`REASONING_CHARS` characters, and its step as the alert's onset).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from detectors.base import make_alert, remember
from detectors.intent_drift.reasons import (
    answer_reason,
    light_step,
    planned_tools,
    step_ref,
    unfounded_figures,
    unfounded_words,
)
from features.calls.grounding import figures
from features.session.completion import final_answer_tool
from models.records import Action, Alert, Severity, Step

MAX_FIGURES = 2_048
"""Figures observed (goal, errors) kept for the answer's provenance."""
REASONING_CHARS = 8_000
"""Characters of the model output before an answer read."""
SEEN_CHARS = 8_000
"""Characters of observed text (the task first, then failures) an answer's words are
looked up in, until a tool returns something (then the rule is off)."""
TASK_CHARS = 4_000
"""Characters of the task kept to tell the tools it names from the plan's own."""
MAX_TOOLS = 32
"""Tools named by the plan, and tools called, kept (each)."""


@dataclass(slots=True)
class AnswerState:
    """What a final answer is judged against."""

    grounded: bool = False  # whether any tool returned something
    observed: dict[str, None] = field(default_factory=dict)  # figures that came in
    reasoning: str = ""
    reasoning_ref: dict[str, Any] | None = None
    answered: bool = False  # the rule fires once
    seen: str = ""  # observed text, lower-cased (capped at SEEN_CHARS)
    task: str = ""  # the first observed text (the task), lower-cased, capped
    planned: dict[str, None] = field(default_factory=dict)  # tools the plan named
    called: dict[str, None] = field(default_factory=dict)  # tools called


def observe(answer: AnswerState, text: str | None) -> None:
    """Remember the figures and the text of a text that came into the session (not the
    agent's)."""
    for f in figures(text):
        remember(answer.observed, f, None, MAX_FIGURES)
    if answer.grounded:
        return  # the answer rule is off: nothing more to look words up in
    room = SEEN_CHARS - len(answer.seen)
    if text and room > 0:
        answer.seen += " " + text[:room].lower()
    if text and not answer.task:
        answer.task = text[:TASK_CHARS].lower()


def note_call(answer: AnswerState, step: Step) -> None:
    """A tool call (not the answer): its tool counts as called."""
    if step.tool:
        remember(answer.called, step.tool.lower(), None, MAX_TOOLS)


def note_result(answer: AnswerState, step: Step) -> None:
    """A tool result: one that returned something grounds every later answer; until
    then an error's or an empty result's figures are observed."""
    if step.status == "ok" and step.result and not final_answer_tool(step.tool):
        answer.grounded = True
        answer.seen = answer.task = ""  # the rule is off from here: keep the state small
    elif not answer.grounded:
        observe(answer, step.error or step.result)


def note_output(answer: AnswerState, step: Step) -> None:
    """A model output before anything grounded the session: the reasoning an answer
    may rest on."""
    if step.text and not answer.grounded:
        answer.reasoning = step.text[-REASONING_CHARS:]
        answer.reasoning_ref = step_ref(step)
        for tool in planned_tools(step.text):
            remember(answer.planned, tool, None, MAX_TOOLS)


def judge_answer(
    answer: AnswerState, step: Step, *, detector: str, goal: str
) -> tuple[Alert, float] | None:
    """The alert (and its score) of a final-answer call ``step`` resting on figures
    from nowhere, or None; once per session."""
    if answer.grounded or answer.answered:
        return None
    missing = unfounded_figures(answer.reasoning, step.arguments, answer.observed)
    # tools the plan named (not the task: its own words), never called; the answer
    # tool itself is the plan's last step, not a look-up
    planned = (
        [
            t
            for t in answer.planned
            if t not in answer.called and t not in answer.task and not final_answer_tool(t)
        ]
        if not missing
        else []
    )
    if planned:
        missing = unfounded_words(step.arguments, answer.seen)
    if not missing:
        return None
    answer.answered = True
    score = min(1.0, 0.4 + 0.05 * len(missing))
    ref = answer.reasoning_ref
    onset = light_step(ref, step.session_id) if ref else step
    alert = make_alert(
        detector,
        onset=onset,
        raised=step,
        evidence=[step],
        score=score,
        severity=Severity.WARN,
        reason=answer_reason(step.tool, goal, missing, planned=planned),
        action=Action.NOTIFY,
    )
    return alert, score
