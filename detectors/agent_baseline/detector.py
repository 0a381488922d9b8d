"""Unlike this agent's history: a learned second opinion on a session's behaviour.

Per agent (the session's agent or service name), a baseline of how its sessions behave -
the mix of tools they call, their tool error rate, the tokens they burn per step, the
hosts they reach that the agent never reached before, how widely their paths spread
(:mod:`features.session.behaviour`) - learnt online across the agent's ended sessions
with river's half-space trees (:mod:`detectors.agent_baseline.history`). A running
session is scored against the model *as of its start*: the sessions of its agent that
ended before it started, learnt in end order. So the verdict is a function of the input,
not of arrival order: the same sessions with the same event times give the same model and
the same alerts in ``serve``, ``replay`` and on Kafka workers (what each of them can and
cannot promise: :mod:`ingest.pipeline.baselines`).

Per session the detector accumulates the session's behaviour (bounded) and, every
``every`` steps from ``min_steps`` on, scores it - once the pipeline's baseline stage has
handed it the reference (:meth:`AgentBaseline.attach`; scoring points passed before that
are kept and judged then, so when the reference arrives changes nothing). It raises one
``warn`` (NOTIFY) per session, at the first scoring point where the trees' anomaly score
reaches ``threshold`` *and* a feature lies above anything in the agent's history (its
highest value) by more than ``margin`` (only an excess counts: fewer errors than usual is
not a warning); the evidence names those features with the session's value and the
history's ``quantile`` and highest value. The session's ratios start at the agent's usual
and move away as its own calls add up (:data:`features.session.behaviour.PRIOR_WEIGHT`):
a young session's few calls are not yet a rate.
Cold start is silent: fewer than ``min_sessions`` prior sessions of the agent, no
reference, no alert. A session without an agent name is never judged.

Never a kill on its own: its alerts recommend NOTIFY, and the action policy counts one
only as the *other family's* earlier signal that corroborates another detector's stop
(:data:`trajwatch.actions.policy.CORROBORATING`).

``score``: the trees' anomaly score (0..1) at the last scoring point, 0 before one;
``thresholds``: ``warn`` at ``threshold``.

>>> from detectors.agent_baseline.history import Record, fit
>>> from detectors.testing import Session
>>> from features.session.behaviour import Behaviour
>>> def run(sid, bad=False):
...     s, b, steps = Session(sid, agent="coder"), Behaviour(), []
...     steps.append(s.start())
...     for i in range(30):
...         if bad and i >= 5:  # fetches from new hosts, and fails
...             steps += s.tool("curl", {"url": f"https://h{i}.test/x"}, ok=False)
...         else:
...             steps += s.tool("bash", {"command": f"pytest /w/app/t{i % 3}"})
...     for step in steps:
...         b.observe(step)
...     return steps, b.summary()
>>> history = [Record(f"h{i}", i, i + 1, run(f"h{i}")[1]) for i in range(10)]
>>> reference = fit(history, window=64, n_trees=10, height=4, seed=7, quantile=0.9)
>>> detector = AgentBaseline()
>>> steps, _ = run("x", bad=True)
>>> detector.attach(reference)
[]
>>> for step in steps:
...     for alert in detector.update(step):
...         print(alert.raised_seq, alert.severity)
...         for part in alert.reason.split("; "):
...             print(part)
29 warn
unlike this agent's history (10 sessions): tool mix distance 0.40 (history p90 0.00, max 0.00)
error rate 0.38 (history p90 0.00, max 0.00)
new hosts (n/(n+2)) 0.83 (history p90 0.00, max 0.00)
anomaly score 0.83
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from detectors.agent_baseline.history import Record, Reference, fit
from detectors.base import Detector, StepRef, make_alert
from detectors.registry import register
from features.session.behaviour import FEATURES, Behaviour, BehaviourSummary
from models.records import Action, Alert, Severity, Step

__all__ = ["AgentBaseline"]

MAX_PENDING = 64
"""Scoring points a session keeps while it waits for its reference (bounded)."""

_LABELS = {
    "mix_distance": "tool mix distance",
    "error_rate": "error rate",
    "tokens_per_step": "tokens per step (log scale)",
    "new_hosts": "new hosts (n/(n+2))",
    "path_spread": "path spread (n/(n+10))",
}


@register
class AgentBaseline(Detector):
    """Warns when a session behaves unlike its agent's earlier sessions.

    Contract: one instance per session, steps in ``seq`` order; no I/O, no clock; the
    reference comes from the pipeline (:meth:`attach`). Bounded state: the behaviour
    counts, the reference (``window`` sessions' trees and quantiles) and at most
    :data:`MAX_PENDING` scoring points.

    Parameters
    ----------
    min_sessions
        Prior ended sessions of the agent before any warning (cold start: silent).
    window
        The latest prior sessions the model learns from.
    keep
        Sessions the stored history keeps per agent (>= ``window``: a session restored
        long after its start still finds the sessions ended before it).
    every, min_steps
        Score at step ``min_steps`` and every ``every`` steps after.
    threshold
        The trees' anomaly score (0..1) at which a session may warn.
    margin
        A feature is unusual above the history's highest value plus ``margin`` (beyond
        anything the agent did before).
    quantile
        The history's quantile the evidence quotes beside its highest value.
    n_trees, height, seed
        The half-space trees' parameters (seeded: the same history, the same model).
    """

    name: ClassVar[str] = "agent_baseline"
    thresholds_fixed = True
    cross_session = True
    """Its verdict depends on other sessions: a re-judgement of this session alone neither
    restates nor supersedes its alerts (the baseline stage re-raises them, same ids)."""

    def __init__(
        self,
        *,
        min_sessions: int = 8,
        window: int = 64,
        keep: int = 256,
        every: int = 10,
        min_steps: int = 20,
        threshold: float = 0.5,
        quantile: float = 0.9,
        margin: float = 0.05,
        n_trees: int = 10,
        height: int = 4,
        seed: int = 20261207,
    ) -> None:
        self.min_sessions = min_sessions
        self.window = window
        self.keep = keep
        self.every = every
        self.min_steps = min_steps
        self.threshold = threshold
        self.quantile = quantile
        self.margin = margin
        self.n_trees = n_trees
        self.height = height
        self.seed = seed
        if min_sessions < 2:
            raise ValueError(f"min_sessions must be >= 2, got {min_sessions}")
        if window < min_sessions:
            raise ValueError(f"window must be >= min_sessions ({min_sessions}), got {window}")
        if keep < window:
            raise ValueError(f"keep must be >= window ({window}), got {keep}")
        if every < 1 or min_steps < 1:
            raise ValueError(f"every and min_steps must be >= 1, got {every}, {min_steps}")
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if not 0 < quantile <= 1:
            raise ValueError(f"quantile must be in (0, 1], got {quantile}")
        if margin < 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        if n_trees < 1 or not 1 <= height <= 10:
            raise ValueError(f"n_trees must be >= 1 and height in 1..10, got {n_trees}, {height}")
        self._reset()

    def _reset(self) -> None:
        self._behaviour = Behaviour()
        self._steps = 0
        self._attached = False
        self._reference: Reference | None = None
        self._pending: list[tuple[StepRef, BehaviourSummary]] = []
        self._fired = False
        self._learned_steps = -1
        self._score = 0.0

    @property
    def thresholds(self) -> dict[str, float]:
        """``warn`` at ``threshold``."""
        return {"warn": self.threshold}

    @property
    def wants_reference(self) -> bool:
        """Whether the pipeline has not handed this session its reference yet."""
        return not self._attached

    @property
    def learned(self) -> bool:
        """Whether its agent's history holds this session's behaviour as it is now (a
        step placed after that, even after the session's end, makes it False again)."""
        return self._learned_steps == self._steps

    def mark_learned(self) -> None:
        """Its agent's history has learnt :meth:`summary` as it is now."""
        self._learned_steps = self._steps

    def summary(self) -> BehaviourSummary:
        """The session's behaviour so far (what its agent's history learns at its end)."""
        return self._behaviour.summary()

    def update(self, step: Step) -> list[Alert]:
        self._behaviour.observe(step)
        self._steps += 1
        if self._steps < self.min_steps or (self._steps - self.min_steps) % self.every:
            return []
        if self._fired:
            return []
        point = (StepRef.of(step), self._behaviour.summary())
        if self._attached:
            return self._judge(*point)
        if len(self._pending) < MAX_PENDING:
            self._pending.append(point)
        return []

    def reference(self, prior: Sequence[Record]) -> Reference | None:
        """The reference learnt from ``prior`` (an agent's records ended before a
        session's start, in end order) with these parameters; None for a cold start
        (fewer than ``min_sessions``). No I/O: the pipeline reads the records."""
        if len(prior) < self.min_sessions:
            return None
        return fit(
            prior,
            window=self.window,
            n_trees=self.n_trees,
            height=self.height,
            seed=self.seed,
            quantile=self.quantile,
        )

    def attach(self, reference: Reference | None) -> list[Alert]:
        """Hand the session its agent's reference (None, or one of fewer than
        ``min_sessions`` sessions: cold, never judged); returns the alerts of the scoring
        points passed while it waited."""
        self._attached = True
        if reference is not None and reference.sessions >= self.min_sessions:
            self._reference = reference
        pending, self._pending = self._pending, []
        alerts: list[Alert] = []
        for point in pending:
            if self._fired:
                break
            alerts += self._judge(*point)
        return alerts

    def _judge(self, at: StepRef, summary: BehaviourSummary) -> list[Alert]:
        reference = self._reference
        if reference is None:
            return []
        values = reference.features(summary)
        score = float(reference.model.score_one(values))
        self._score = score
        if score < self.threshold:
            return []
        unusual = [f for f in FEATURES if values[f] > reference.highest[f] + self.margin]
        if not unusual:
            return []
        self._fired = True
        parts = [
            f"{_LABELS[f]} {values[f]:.2f} (history p{round(self.quantile * 100)} "
            f"{reference.upper[f]:.2f}, max {reference.highest[f]:.2f})"
            for f in unusual
        ]
        return [
            make_alert(
                self.name,
                onset=at,
                raised=at,
                evidence=[at],
                score=score,
                severity=Severity.WARN,
                reason=f"unlike this agent's history ({reference.sessions} sessions): "
                + "; ".join(parts)
                + f"; anomaly score {score:.2f}",
                action=Action.NOTIFY,
            )
        ]
