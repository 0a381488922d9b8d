"""The detector contract, modelled on river's drift detectors.

A detector is a small object, one per session: ``update(step)`` changes its
state and returns the alerts that step raised (usually none). Constructor
arguments are stored as given, so ``clone()`` and ``repr`` are trivial; all
state is built in ``_reset()``. Detectors do no I/O and never read the wall
clock: time comes from ``step.ts``, so a replay raises the same alerts as the
live run, with the same ids. ``state_dict()``/``load_state_dict()`` round-trip
the state for checkpointing next to the input offsets. Memory is bounded: the
state does not grow with the length of the session.

Besides its alerts, a detector reports how strong its evidence is at every step, river's
way (``update`` changes the state, read-only properties report it):

- ``score``: after each ``update(step)``, the detector's current evidence strength, a
  finite float >= 0 on the scale of its alerts' scores: the quantity its rules compare
  with their lines (a loop's repeats, a stretch's drift weight, the share of a budget
  spent), not a copy of the last alert's score. 0 before any evidence and during
  warm-up. It is part of the state, so a restored detector reports the score it had.
- ``thresholds``: severity (``"warn"``, ``"critical"``) -> the lowest ``score`` at which
  the detector raises an alert of that severity. Every alert is raised on a step whose
  ``score`` reaches its severity's line and is at least the alert's own score (the
  contract test checks both for every registered detector). The line is necessary, not
  sufficient: a detector reports a finding once (per loop, per model session, per
  category), so its score may stay above a line it already fired at. Lines may depend on
  what the detector has seen (``intent_drift`` asks more while a session's goal is
  unknown): read them after the ``update``, like the score. A detector whose lines
  depend on its parameters only says so (``thresholds_fixed = True``): the pipeline,
  which records every score as it goes, then reads its lines once per checkpoint, not
  after every step (the contract test checks the claim).

Each detector's docstring says what its score measures. The explorer (``trajwatch ui``)
draws each one's score over a session's steps with its thresholds: those the pipeline
recorded (:mod:`detectors.score_series`), or a replay of the stored steps.

>>> from detectors.budget_overrun import BudgetOverrun
>>> from detectors.testing import Session
>>> s = Session("contract", budget={"tool_calls": 4})
>>> detector = BudgetOverrun()
>>> for step in [s.start(), *s.tool("bash", {"command": "make"}), *s.tool("ls", {})]:
...     alerts = detector.update(step)
...     print(step.seq, detector.score, [str(a.severity) for a in alerts])
0 0.0 []
1 0.25 []
2 0.25 []
3 0.5 []
4 0.5 []
>>> detector.thresholds
{'warn': 0.8, 'critical': 1.0}
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import islice
from typing import Any, ClassVar, Self

from detectors.state_copy import deepcopy
from models.records import Action, Alert, Severity, Step, StepKind, alert_id


class Detector(ABC):
    """Base class of every detector. Subclasses set ``name`` and implement
    ``_reset`` and ``update``; bad parameters raise ``ValueError`` in ``__init__``."""

    name: ClassVar[str]

    thresholds_fixed: ClassVar[bool] = False
    """True when :attr:`thresholds` depends on the parameters only, never on what the
    detector has seen (module docstring)."""

    _score: float = 0.0
    """What :attr:`score` reports; subclasses build it in ``_reset`` and keep it in
    ``update``. The class default is for detectors that report no score."""

    @abstractmethod
    def _reset(self) -> None:
        """Build the initial state from the stored parameters."""

    @abstractmethod
    def update(self, step: Step) -> list[Alert]:
        """Consume one step of this detector's session, in ``seq`` order."""

    @property
    def score(self) -> float:
        """The current evidence strength, after the last :meth:`update` (module docstring)."""
        return self._score

    @property
    def thresholds(self) -> Mapping[str, float]:
        """Severity → the lowest :attr:`score` at which an alert of that severity fires
        (module docstring). Empty for a detector that reports no score."""
        return {}

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments, as stored."""
        return {name: getattr(self, name) for name in _param_names(type(self))}

    def clone(self) -> Self:
        """A fresh detector with the same parameters and no state.

        The parameters are shared, not copied: every session's detectors are clones
        of one configured prototype, and a deep copy of the policies they carry cost
        ~0.2 ms per detector per new session. Parameters are read-only by contract
        (``update`` never changes them; the contract test checks it)."""
        return type(self)(**self.get_params())

    def state_dict(self) -> dict[str, Any]:
        """The state (everything ``_reset`` builds), as picklable plain data.

        Deep-copied as one object, so an object that several attributes share stays one
        object (runaway_loop keeps a call in its window, its open calls and its retry
        chains, and tests it by identity); copied attribute by attribute, a restored
        detector held two copies and alerted differently."""
        return deepcopy(self.snapshot())  # copy.deepcopy's graph, ~3x faster (state_copy)

    def snapshot(self) -> dict[str, Any]:
        """What :meth:`state_dict` returns, *not* copied: the live objects. For a caller
        that serialises it at once (the session checkpoint pickles every detector's
        snapshot in one ``pickle.dumps``, which copies as deeply and keeps shared objects
        shared) and neither keeps nor changes it. The deep copy is what a checkpoint
        would otherwise pay per commit — 3/4 of its cost. Subclasses that leave state out
        of the checkpoint override this, not :meth:`state_dict`."""
        params = set(self.get_params())
        return {k: v for k, v in vars(self).items() if k not in params}

    def load_state_dict(self, state: dict[str, Any], *, owned: bool = False) -> None:
        """Restore what :meth:`state_dict` returned; later alerts are identical.

        ``owned``: the caller hands ``state`` over and keeps no other reference to it (a
        checkpoint it has just unpickled), so it is used as it is instead of copied. The
        copy is what reopening a stored session cost most (~2 ms a detector)."""
        self._reset()
        for key, value in (state if owned else deepcopy(state)).items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


@cache
def _param_names(cls: type[Detector]) -> tuple[str, ...]:
    # inspect.signature costs ~200 µs, and clone() reads the names for every new session
    return tuple(
        p.name
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    )


@dataclass(frozen=True, slots=True)
class StepRef:
    """What an alert needs of a step — its identity and place — without its payload.

    Detectors that must remember steps (for evidence and onsets) keep these, not
    whole steps: bounded state stays small, and :func:`make_alert` takes either.
    """

    session_id: str
    step_id: str
    seq: int
    ts: int
    source_ref: str

    @classmethod
    def of(cls, step: Step | StepRef) -> StepRef:
        if isinstance(step, StepRef):
            return step
        return cls(step.session_id, step.step_id, step.seq, step.ts, step.source_ref)

    def ref(self) -> dict[str, Any]:
        """The evidence reference, as :meth:`Step.ref` gives it."""
        return {"seq": self.seq, "step_id": self.step_id, "source_ref": self.source_ref}


def make_alert(
    detector: str,
    *,
    onset: Step | StepRef,
    raised: Step | StepRef,
    evidence: Sequence[Step | StepRef],
    score: float,
    severity: Severity,
    reason: str,
    action: Action = Action.NOTIFY,
    checkpoint_id: str | None = None,
) -> Alert:
    """An :class:`Alert` with its deterministic id and evidence references.

    ``onset`` is the first step of the problem (what delay is measured from),
    ``raised`` the step on which the detector fired, ``evidence`` the steps a
    person should look at (the onset first; kept to at most 20).
    """
    refs: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for step in (onset, *evidence):
        if step.step_id not in seen and len(refs) < MAX_EVIDENCE:
            seen.add(step.step_id)
            refs.append(step.ref())
    return Alert(
        alert_id=alert_id(detector, onset.session_id, onset.step_id, str(severity)),
        session_id=onset.session_id,
        detector=detector,
        severity=severity,
        score=round(float(score), 4),
        onset_seq=onset.seq,
        onset_step_id=onset.step_id,
        evidence=tuple(refs),
        reason=reason,
        action=action,
        checkpoint_id=checkpoint_id,
        ts=raised.ts,
        raised_seq=raised.seq,
    )


MAX_EVIDENCE = 20


class Checkpoints:
    """The last few checkpoints of a session (bounded), for ``rollback`` actions:
    the last clean checkpoint is the newest one before the onset."""

    def __init__(self, keep: int = 16) -> None:
        self.keep = keep
        self.items: list[tuple[int, str]] = []

    def update(self, step: Step) -> None:
        if step.kind == StepKind.CHECKPOINT and step.detail.get("checkpoint_id"):
            self.items.append((step.seq, str(step.detail["checkpoint_id"])))
            del self.items[: -self.keep]

    def before(self, seq: int) -> str | None:
        """The newest checkpoint id strictly before step ``seq``, or None."""
        found = None
        for at, checkpoint_id in self.items:
            if at < seq:
                found = checkpoint_id
        return found


def remember(table: dict[Any, Any], key: Hashable, value: Any, cap: int) -> None:
    """Insert ``key`` (refreshing its recency) into an insertion-ordered bounded table: the
    oldest entries go past ``cap`` (every detector ledger is bounded this way).

    >>> t = {"a": None, "b": None}; remember(t, "a", None, 2); remember(t, "c", None, 2); t
    {'a': None, 'c': None}
    """
    table.pop(key, None)
    table[key] = value
    while len(table) > cap:
        del table[next(iter(table))]


def remember_all(table: dict[Any, Any], keys: Iterable[Hashable], value: Any, cap: int) -> None:
    """:func:`remember` each of ``keys`` in turn with ``value``, the table trimmed once at
    the end: the same table, key for key and in the same order (a bounded table keeps
    the ``cap`` keys touched last, oldest first, however often it is trimmed on the way),
    without a call and a trim a key.

    >>> t = {"a": None, "b": None}; remember_all(t, ["c", "a", "d", "c"], None, 3); t
    {'a': None, 'd': None, 'c': None}
    """
    pop = table.pop
    for key in keys:
        pop(key, None)
        table[key] = value
    excess = len(table) - cap
    if excess > 0:
        for key in list(islice(table, excess)):
            del table[key]
