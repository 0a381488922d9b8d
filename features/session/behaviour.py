"""A session's behaviour in a few numbers: what a per-agent baseline compares across runs.

:class:`Behaviour` accumulates, step by step, the raw counts of one session (bounded:
the tool mix keeps its :data:`MAX_TOOLS` most used tools, the hosts and directories
:data:`MAX_PLACES` each); :meth:`Behaviour.summary` freezes them as a
:class:`BehaviourSummary`, the record the baseline stores per session. Five features are
read from a summary against what the agent did before (:func:`features`,
:class:`Usual`): the distance of its tool mix from the agent's usual mix, its tool error
rate, the tokens it burns per step (these three shrunk towards the agent's usual while
the session is young, :data:`PRIOR_WEIGHT`), how many hosts it reached that the agent
never reached before, and how widely its paths spread (distinct directories). Each is
mapped into [0, 1] (the half-space trees' default limits) by a fixed, monotone
transform, so a value is comparable across agents.

Pure: no I/O, no clock; a function of the steps fed, in order.

>>> from detectors.testing import Session
>>> s = Session("b")
>>> b = Behaviour()
>>> steps = [s.start(), *s.tool("bash", {"command": "ls /srv/app/src"}),
...          *s.tool("read_file", {"path": "/srv/app/docs/a.md"}, ok=False)]
>>> for step in steps:
...     b.observe(step)
>>> summary = b.summary()
>>> summary.tools, summary.tool_results, summary.errors, summary.dirs
((('bash', 1), ('read_file', 1)), 2, 1, 2)
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from models.records import Step, StepKind

__all__ = [
    "FEATURES",
    "PRIOR_WEIGHT",
    "Behaviour",
    "BehaviourSummary",
    "Usual",
    "features",
    "mix_distance",
    "ratios",
]

MAX_TOOLS = 16
"""Tools kept in a summary's mix (the most used; the rest share ``other``)."""
MAX_PLACES = 64
"""Hosts, and directories, a session keeps (the first seen): bounded state."""
MAX_ARGUMENT_CHARS = 2048
"""How much of a call's arguments the path scan reads (bounded, linear)."""

FEATURES = ("mix_distance", "error_rate", "tokens_per_step", "new_hosts", "path_spread")
"""The features' names, in the order :func:`features` gives them."""

# a path of two or more components; not a URL's (after ``:`` or another ``/``)
_PATH_RE = re.compile(r"(?<![:/\w])(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]+)+")
_TOOL_CALL, _TOOL_RESULT, _MODEL_CALL, _EGRESS = (
    StepKind.TOOL_CALL,
    StepKind.TOOL_RESULT,
    StepKind.MODEL_CALL,
    StepKind.EGRESS,
)
_TOKENS_SCALE = math.log1p(1_000_000)  # a million tokens a step: the top of the range


@dataclass(frozen=True, slots=True)
class BehaviourSummary:
    """The raw counts of one session (or of its first steps): what the history keeps."""

    tools: tuple[tuple[str, int], ...] = ()
    """(tool, calls), the :data:`MAX_TOOLS` most called, by count then name; ``other``
    holds the rest."""
    steps: int = 0
    tool_results: int = 0
    errors: int = 0
    tokens: int = 0
    hosts: tuple[str, ...] = ()
    """Hosts reached (egress steps, hosts in tool arguments), sorted, at most
    :data:`MAX_PLACES`."""
    dirs: int = 0
    """Distinct directories (a path's first three components) named in tool arguments."""


class Behaviour:
    """Accumulates a session's :class:`BehaviourSummary` (bounded state)."""

    def __init__(self) -> None:
        self.tools: Counter[str] = Counter()
        self.steps = 0
        self.tool_results = 0
        self.errors = 0
        self.tokens = 0
        self.hosts: set[str] = set()
        self.dirs: set[str] = set()

    def observe(self, step: Step) -> None:
        """Count one step of the session, in seq order."""
        self.steps += 1
        kind = step.kind
        if kind == _TOOL_CALL:
            tool = step.tool or "?"
            if tool in self.tools or len(self.tools) < 4 * MAX_TOOLS:
                self.tools[tool] += 1
            else:
                self.tools["other"] += 1
            if step.arguments:
                self._paths(step.arguments[:MAX_ARGUMENT_CHARS])
            detail = step.detail
            is_map = type(detail) is dict or isinstance(detail, Mapping)
            egress = detail.get("egress") if is_map else None
            for target in egress if isinstance(egress, list) else ():
                if isinstance(target, Mapping) and isinstance(target.get("host"), str):
                    self._host(target["host"])
        elif kind == _TOOL_RESULT:
            self.tool_results += 1
            if step.status == "error":
                self.errors += 1
        elif kind == _MODEL_CALL:
            self.tokens += (step.tokens_in or 0) + (step.tokens_out or 0)
        elif kind == _EGRESS and step.egress_host:
            self._host(step.egress_host)

    def _host(self, host: str) -> None:
        if len(self.hosts) < MAX_PLACES:
            self.hosts.add(host.lower().removeprefix("www."))

    def _paths(self, text: str) -> None:
        if "/" not in text:  # every match holds one
            return
        for match in _PATH_RE.finditer(text):
            if len(self.dirs) >= MAX_PLACES:
                return
            parts = [p for p in match.group(0).split("/") if p not in ("", ".", "..", "~")]
            if len(parts) >= 2:
                self.dirs.add("/".join(parts[:3]))

    def summary(self) -> BehaviourSummary:
        """The counts so far, frozen."""
        ranked = sorted(self.tools.items(), key=lambda kv: (-kv[1], kv[0]))
        kept = ranked[:MAX_TOOLS]
        rest = sum(n for _, n in ranked[MAX_TOOLS:])
        if rest:
            kept.append(("other", rest))
        return BehaviourSummary(
            tools=tuple(kept),
            steps=self.steps,
            tool_results=self.tool_results,
            errors=self.errors,
            tokens=self.tokens,
            hosts=tuple(sorted(self.hosts)),
            dirs=len(self.dirs),
        )


PRIOR_WEIGHT = 10.0
"""Pseudo-counts of the agent's usual behaviour added to a session's own counts before its
ratios are taken (tool mix, error rate, tokens per step): a session's first calls are a
small sample (one failed call in three is not a 33% error rate yet), so its ratios start
at the agent's usual and move away as its own evidence grows. A finished session of
hundreds of calls is barely changed."""


@dataclass(frozen=True, slots=True)
class Usual:
    """What an agent usually does, as the ratios a session is shrunk towards: the shares
    of its tool mix, its error rate and its tokens per step (means over its history)."""

    mix: Mapping[str, float]
    error_rate: float = 0.0
    tokens_per_step: float = 0.0


def mix_distance(
    tools: Iterable[tuple[str, int]], usual: Mapping[str, float], prior: float = 0.0
) -> float:
    """Total variation distance in [0, 1] between a session's tool mix (its counts plus
    ``prior`` pseudo-calls spread as ``usual``) and ``usual`` (shares summing to 1); 0 when
    either is empty."""
    counts = dict(tools)
    total = sum(counts.values())
    if not total or not usual:
        return 0.0
    names = set(counts) | set(usual)
    return 0.5 * sum(
        abs((counts.get(n, 0) + prior * usual.get(n, 0.0)) / (total + prior) - usual.get(n, 0.0))
        for n in names
    )


def features(
    summary: BehaviourSummary, usual: Usual, known_hosts: Iterable[str]
) -> dict[str, float]:
    """The five features of ``summary`` (:data:`FEATURES`) in [0, 1], against what the
    agent ``usual``-ly does (ratios shrunk towards it, :data:`PRIOR_WEIGHT`) and the hosts
    it reached before (``known_hosts``)."""
    known = set(known_hosts)
    new_hosts = sum(1 for h in summary.hosts if h not in known)
    w = PRIOR_WEIGHT if usual.mix else 0.0  # no history: nothing to shrink towards
    per_step = (summary.tokens + w * usual.tokens_per_step) / (summary.steps + w or 1)
    errors = (summary.errors + w * usual.error_rate) / (summary.tool_results + w or 1)
    return {
        "mix_distance": round(mix_distance(summary.tools, usual.mix, w), 6),
        "error_rate": round(errors, 6),
        "tokens_per_step": round(min(1.0, math.log1p(per_step) / _TOKENS_SCALE), 6),
        "new_hosts": round(new_hosts / (new_hosts + 2), 6),
        "path_spread": round(summary.dirs / (summary.dirs + 10), 6),
    }


def ratios(summary: BehaviourSummary) -> tuple[float, float]:
    """A session's own (error rate, tokens per step), unshrunk: what :class:`Usual`
    averages."""
    return (
        summary.errors / summary.tool_results if summary.tool_results else 0.0,
        summary.tokens / summary.steps if summary.steps else 0.0,
    )
