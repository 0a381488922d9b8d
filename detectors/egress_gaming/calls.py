"""The recent calls and precursors of :mod:`detectors.egress_gaming.detector`: one state object
and the functions that keep it.

:class:`RecentCalls` holds the last :data:`MAX_RECENT` tool calls (their step
reference, git verbs and call id: a result or an egress span finds its call by them),
the precursors of a gaming action (a search for a benchmark's answers, reading the
environment, adding a remote: the last :data:`MAX_PRECURSORS` become an alert's
evidence) and the benchmark terms searched for (at most 16).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from detectors.base import StepRef
from models.records import Step

MAX_RECENT = 16
MAX_PRECURSORS = 8
MAX_BENCH_TERMS = 16

RefFields = tuple[str, str, int, int, str]
"""StepRef's fields, in order: a plain tuple costs a tenth of a StepRef, built only for
the rare egress span that needs it."""


@dataclass(slots=True)
class RecentCalls:
    """The recent calls, the precursors and the benchmark terms of a session."""

    calls: dict[str, tuple[RefFields, str, str | None]] = field(default_factory=dict)
    precursors: list[StepRef] = field(default_factory=list)
    bench_terms: list[str] = field(default_factory=list)


def record(recent: RecentCalls, step: Step, low: str, verbs: str) -> None:
    """Remember a call with its git ``verbs`` (``low``: its lower-cased arguments; one
    that shows the branch gets `` branch``)."""
    ref = (step.session_id, step.step_id, step.seq, step.ts, step.source_ref)
    branch = "git status" in low or "git branch" in low or "abbrev-ref" in low
    calls = recent.calls
    calls[step.step_id] = (ref, verbs + " branch" if branch else verbs, step.call_id)
    while len(calls) > MAX_RECENT:
        del calls[next(iter(calls))]


def _answered(recent: RecentCalls, result: Step) -> tuple[str, bool] | None:
    """``(step id, found by its parent)`` of the recent call ``result`` answers: by its
    parent step, else by its call id; None when neither is recent."""
    if result.parent_step_id in recent.calls:
        return result.parent_step_id, True
    if result.call_id:
        for step_id, (_, _, known_id) in recent.calls.items():
            if known_id == result.call_id:
                return step_id, False
    return None


def verbs_of(recent: RecentCalls, result: Step) -> tuple[str, str | None]:
    """The git verbs of the call a result answers (by its parent step, else its call
    id), and that call's step id when found by its parent."""
    found = _answered(recent, result)
    if found is None:
        return "", None
    step_id, by_parent = found
    return recent.calls[step_id][1], step_id if by_parent else None


def call_step_id(recent: RecentCalls, result: Step) -> str | None:
    """The step id of the recent call ``result`` answers (by its parent step, else its
    call id), or None."""
    found = _answered(recent, result)
    return found[0] if found else None


def precursor(recent: RecentCalls, step: Step, bench_words: Iterable[str] = ()) -> None:
    """``step`` is a precursor (once); ``bench_words``, the benchmark terms it searched."""
    if all(p.step_id != step.step_id for p in recent.precursors):
        recent.precursors.append(StepRef.of(step))
        del recent.precursors[:-MAX_PRECURSORS]
    terms = recent.bench_terms
    for word in bench_words:
        if word not in terms and len(terms) < MAX_BENCH_TERMS:
            terms.append(word)
