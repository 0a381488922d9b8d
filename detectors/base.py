"""The detector contract, modelled on river's drift detectors.

A detector is a small object, one per session: ``update(step)`` changes its
state and returns the alerts that step raised (usually none). Constructor
arguments are stored as given, so ``clone()`` and ``repr`` are trivial; all
state is built in ``_reset()``. Detectors do no I/O and never read the wall
clock: time comes from ``step.ts``, so a replay raises the same alerts as the
live run, with the same ids. ``state_dict()``/``load_state_dict()`` round-trip
the state for checkpointing next to the input offsets. Memory is bounded: the
state does not grow with the length of the session.
"""

from __future__ import annotations

import copy
import inspect
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Self

from models.records import Alert, Step


class Detector(ABC):
    """Base class of every detector. Subclasses set ``name`` and implement
    ``_reset`` and ``update``; bad parameters raise ``ValueError`` in ``__init__``."""

    name: ClassVar[str]

    @abstractmethod
    def _reset(self) -> None:
        """Build the initial state from the stored parameters."""

    @abstractmethod
    def update(self, step: Step) -> list[Alert]:
        """Consume one step of this detector's session, in ``seq`` order."""

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments, as stored."""
        names = [
            p.name
            for p in inspect.signature(type(self).__init__).parameters.values()
            if p.name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        return {name: getattr(self, name) for name in names}

    def clone(self) -> Self:
        """A fresh detector with the same parameters and no state."""
        return type(self)(**copy.deepcopy(self.get_params()))

    def state_dict(self) -> dict[str, Any]:
        """The state (everything ``_reset`` builds), as picklable plain data."""
        params = set(self.get_params())
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if k not in params}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; later alerts are identical."""
        self._reset()
        for key, value in state.items():
            setattr(self, key, copy.deepcopy(value))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"
