"""What :mod:`detectors.intent_drift.detector` says when it fires, and its answer rule.

- :func:`drift_reason` — the sentence of a drift alert: where the agent went, for how
  long, how heavy, and the tool result its terms came from when they did.
- :func:`unfounded_figures` / :func:`unfounded_words` / :func:`planned_tools` /
  :func:`answer_reason` — the sub-goals abandoned: a final answer, given before any tool
  returned anything, stating figures (three digits or more,
  :mod:`features.calls.grounding`) that nothing the session observed held and that its
  own arithmetic did not compute; or, when the agent's own plan named a tool it then
  never called, stating words that nothing observed held.
- :func:`stretch_severity` — the level a stretch of off-task calls reaches, each
  level alerted once per stretch.
- :func:`step_ref` / :func:`light_step` — the small references the detector's state
  keeps instead of steps, and the stand-in steps alerts are made of.

Pure functions; no I/O, no clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from features.calls.grounding import computed, figures, ungrounded
from features.calls.vectors import CONTENT_DROP, tokenize
from models.records import Severity, Step, StepKind

__all__ = [
    "answer_reason",
    "drift_reason",
    "light_step",
    "planned_tools",
    "step_ref",
    "stretch_severity",
    "unfounded_figures",
    "unfounded_words",
]


def step_ref(step: Step) -> dict[str, Any]:
    """What the detector keeps of a step: its id, place, source and time."""
    return {"seq": step.seq, "step_id": step.step_id, "source_ref": step.source_ref, "ts": step.ts}


def light_step(ref: Mapping[str, Any], session_id: str) -> Step:
    """A stand-in Step holding only what alerts need (id, seq, source ref): state keeps
    these small references, never whole steps.

    >>> light_step({"seq": 3, "step_id": "s/3", "source_ref": "t:3"}, "s").seq
    3
    """
    return Step(
        step_id=str(ref["step_id"]),
        session_id=session_id,
        kind=StepKind.TOOL_CALL,
        ts=int(ref.get("ts", 0)),
        seq=int(ref["seq"]),
        source_ref=str(ref.get("source_ref", "")),
    )


def drift_reason(
    onset_seq: int,
    labels: Iterable[str],
    goal: str,
    actions: int,
    weight: float,
    injected_from: int | None,
) -> str:
    """The reason of a drift alert.

    >>> drift_reason(9, ["github.com/other/payments"], "fix the parser", 3, 4.0, None)
    "since step 9 the agent works on `github.com/other/payments`, outside the task's scope (task: fix the parser): 3 off-task actions in a row (drift weight 4)"
    """  # noqa: E501
    where = ", ".join(f"`{x}`" for x in list(labels)[:4])
    head = f"since step {onset_seq} the agent "
    head += (
        f"works on {where}, outside the task's scope"
        if where
        else "works on topics unrelated to the task"
    )
    task = f" (task: {goal})" if goal else ""
    tail = f": {actions} off-task actions in a row (drift weight {weight:g})"
    inj = ""
    if injected_from is not None:
        inj = (
            f"; its terms first appeared in the tool result at step "
            f"{injected_from}, not in the task (possible prompt injection)"
        )
    return head + task + tail + inj


def unfounded_figures(
    reasoning: str, arguments: str | None, observed: Collection[str]
) -> list[str]:
    """The figures an answer states (in its arguments, or the reasoning before it) that
    nothing ``observed`` (the goal, results, errors) held; what the reasoning computed
    (``… = 5000``) is derived, not stated, and left out.

    >>> unfounded_figures("The population is 48,213.", '{"answer": "48213"}', {"1990"})
    ['48213']
    >>> unfounded_figures("So 12 * 500 = 6000", '{"answer": "6000"}', {"500"})
    []
    """
    stated = figures(reasoning) | figures(arguments)
    return ungrounded(stated - computed(reasoning), observed)


_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_TOOL_NAME_RE = re.compile(r"(?<![\w.])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w.])")
_UNSPACED_RE = re.compile(r"[\W_]+")


def planned_tools(text: str | None, *, limit: int = 8_000) -> list[str]:
    """The tools the agent's own prose names (its first ``limit`` characters, code
    blocks left out): ``snake_case`` names, the shape of a function it can call
    (``search_agent``, ``inspect_file_as_text``), not words of any language. A plan
    that names a tool says a look-up is needed; variables in code are not plans.

    >>> planned_tools("1. Use the search_agent tool. ```py rows = load_all() ``` then")
    ['search_agent']
    """
    if not text:
        return []
    prose = _FENCE_RE.sub(" ", text[:limit])
    return list(dict.fromkeys(_TOOL_NAME_RE.findall(prose)))[:16]


def _answer_text(arguments: str | None) -> str:
    """The answer's text: the string and number values of its arguments (JSON), not
    their keys; the arguments as given when they are not JSON."""
    if not arguments:
        return ""
    try:
        value = json.loads(arguments[:20_000])
    except ValueError:
        return arguments[:20_000]
    parts: list[str] = []
    stack = [value]
    while stack and len(parts) < 256:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif item is not None:
            parts.append(str(item))
    return " ".join(parts)


def unfounded_words(arguments: str | None, seen: str) -> list[str]:
    """The content words (3 letters or more) of an answer's ``arguments`` that the text
    the session observed (``seen``: the task, failures; lower-cased) does not hold -
    none when the answer is spelt out in that text, its letters in order (a sentence
    read off a grid of letters, a name quoted), or when fewer than half are missing.

    >>> unfounded_words('{"answer": "negative binomial"}', "what model did both studies use?")
    ['binomial', 'negative']
    >>> unfounded_words('{"answer": "THE SEAGULL"}', "read the block: the / seag / ull")
    []
    """
    text = _answer_text(arguments)
    words = sorted({w for w in tokenize(text, drop=CONTENT_DROP) if len(w) >= 3})
    if not words:
        return []
    letters = _UNSPACED_RE.sub("", text.lower())
    if letters and letters in _UNSPACED_RE.sub("", seen):
        return []
    missing = [w for w in words if w not in seen]
    return missing if 2 * len(missing) >= len(words) else []


def answer_reason(
    tool: str | None, goal: str, missing: list[str], *, planned: Collection[str] = ()
) -> str:
    """The reason of an answer given on figures (or, with ``planned``, the tools its
    plan named and it never called, on words) from nowhere."""
    shown = ", ".join(f"`{f}`" for f in missing[:4])
    more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
    task = f" (task: {goal})" if goal else ""
    if planned:
        tools = ", ".join(f"`{t}`" for t in list(planned)[:3])
        return (
            f"the agent answered with `{tool}` before any tool had returned anything"
            f"{task}: its plan named {tools}, never called, and what it states "
            f"({shown}{more}) appears in nothing the session observed"
        )
    return (
        f"the agent answered with `{tool}` before any tool had returned anything"
        f"{task}: the look-ups the task needs were never done, and the figures it "
        f"states ({shown}{more}) appear in nothing the session observed"
    )


def stretch_severity(
    weight: float, *, warned: bool, critical: bool, warn_at: float, critical_at: float
) -> Severity | None:
    """The level a stretch of weight ``weight`` reaches that it has not alerted at yet
    (``warned``, ``critical``): critical from ``critical_at``, else a warning from
    ``warn_at``; None when nothing new. A stretch that jumps past both lines alerts
    once, critical.

    >>> [stretch_severity(w, warned=False, critical=False, warn_at=2, critical_at=4)
    ...  for w in (1, 2, 5)]
    [None, <Severity.WARN: 'warn'>, <Severity.CRITICAL: 'critical'>]
    >>> stretch_severity(3, warned=True, critical=False, warn_at=2, critical_at=4)
    """
    if weight < warn_at:
        return None
    if not critical and weight >= critical_at:
        return Severity.CRITICAL
    return None if warned else Severity.WARN
