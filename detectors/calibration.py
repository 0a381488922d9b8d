"""Calibrated alert scores: a detector's raw score as a probability that the finding is
real, fitted on labelled runs (``trajwatch/analysis/tuning.py``: isotonic or Platt, scikit-learn)
and read from the config's ``[calibration]`` table, so a score (and, with severity bands,
a severity) means the same whatever detector raised it.

:class:`Calibrated` wraps one detector and rewrites each alert it raises: the score
becomes :meth:`Calibration.probability` of the raw score (piecewise linear through the
fitted knots, flat beyond them). With :class:`Bands`, the severity comes from the
probability (``critical`` at or above ``bands.critical``, ``warn`` at or above
``bands.warn``, else ``info``), and an alert that is no longer critical recommends
``notify``: calibration never makes an action stronger, and a kill or rollback needs a
calibrated critical. The id is the alert's id at its new severity, so live and replay
agree. Its ``score`` and ``thresholds`` are the wrapped detector's, calibrated (the bands,
where given), so the explorer draws what the alerts say. Everything else — state, clones,
the detector's own parameters — is the wrapped detector's.

>>> from detectors.runaway_loop.detector import RunawayLoop
>>> from detectors.testing import Session
>>> half = Calibration(scores=(0.0, 1.0), probabilities=(0.0, 0.5))
>>> detector = calibrated(RunawayLoop(), half, Bands(warn=0.2, critical=0.9))
>>> s = Session()
>>> steps = [s.start()]
>>> for _ in range(6):
...     steps += s.tool("bash", {"command": "make"}, ok=False, error="make: *** Error 2")
>>> alerts = [a for step in steps for a in detector.update(step)]
>>> [(str(a.severity), a.score, str(a.action)) for a in alerts]
[('warn', 0.27, 'notify'), ('warn', 0.5, 'notify')]
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from detectors.base import Detector
from models.records import Action, Alert, Severity, Step, alert_id


@dataclass(frozen=True, slots=True)
class Calibration:
    """Knots of the raw score → probability map: ``scores`` increasing, ``probabilities``
    non-decreasing in [0, 1], as many of each (at least one)."""

    scores: tuple[float, ...]
    probabilities: tuple[float, ...]
    method: str = "isotonic"

    def __post_init__(self) -> None:
        if not self.scores or len(self.scores) != len(self.probabilities):
            raise ValueError("scores and probabilities must be lists of the same length >= 1")
        if any(b <= a for a, b in zip(self.scores, self.scores[1:], strict=False)):
            raise ValueError("scores must be increasing")
        if any(b < a for a, b in zip(self.probabilities, self.probabilities[1:], strict=False)):
            raise ValueError("probabilities must not decrease")
        if not all(0.0 <= p <= 1.0 for p in self.probabilities):
            raise ValueError("probabilities must be within [0, 1]")

    def probability(self, score: float) -> float:
        """The calibrated probability of ``score``, to four decimals.

        >>> Calibration(scores=(0.2, 0.6), probabilities=(0.1, 0.9)).probability(0.4)
        0.5
        """
        xs, ys = self.scores, self.probabilities
        if score <= xs[0]:
            return round(ys[0], 4)
        if score >= xs[-1]:
            return round(ys[-1], 4)
        i = bisect.bisect_right(xs, score)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return round(y0 + (y1 - y0) * (score - x0) / (x1 - x0), 4)


@dataclass(frozen=True, slots=True)
class Bands:
    """Severity from a calibrated probability: ``critical`` ≥ ``critical``, ``warn`` ≥
    ``warn``, else ``info``."""

    warn: float = 0.5
    critical: float = 0.9

    def __post_init__(self) -> None:
        if not 0.0 <= self.warn <= self.critical <= 1.0:
            raise ValueError(
                f"need 0 <= warn <= critical <= 1, got warn {self.warn}, critical {self.critical}"
            )

    def severity(self, probability: float) -> Severity:
        if probability >= self.critical:
            return Severity.CRITICAL
        return Severity.WARN if probability >= self.warn else Severity.INFO


_STOPS = frozenset({Action.KILL, Action.ROLLBACK})


def recalibrate(alert: Alert, calibration: Calibration, bands: Bands | None) -> Alert:
    """``alert`` with its score calibrated (and its severity banded: see the module)."""
    probability = calibration.probability(alert.score)
    note = f" (calibrated p={probability:g} from score {alert.score:g})"
    if bands is None:
        return replace(alert, score=probability, reason=alert.reason + note)
    severity = bands.severity(probability)
    action, checkpoint = alert.action, alert.checkpoint_id
    if severity != Severity.CRITICAL and action in _STOPS:
        action, checkpoint = Action.NOTIFY, None
    return replace(
        alert,
        alert_id=alert_id(alert.detector, alert.session_id, alert.onset_step_id, str(severity)),
        severity=severity,
        score=probability,
        action=action,
        checkpoint_id=checkpoint,
        reason=alert.reason + note,
    )


class Calibrated(Detector):
    """A detector whose alerts are recalibrated (:func:`recalibrate`); made by
    :func:`calibrated`, which names the subclass after the wrapped detector."""

    name = "calibrated"

    def __init__(
        self, *, inner: Detector, calibration: Calibration, bands: Bands | None = None
    ) -> None:
        self.inner = inner
        self.calibration = calibration
        self.bands = bands
        self._reset()

    def _reset(self) -> None:
        """The state is the wrapped detector's."""

    def update(self, step: Step) -> list[Alert]:
        return [recalibrate(a, self.calibration, self.bands) for a in self.inner.update(step)]

    @property
    def score(self) -> float:
        """The wrapped detector's score, calibrated: the map is non-decreasing, so an
        alert's calibrated score stays at most the score of the step that raised it."""
        return self.calibration.probability(self.inner.score)

    @property
    def thresholds(self) -> Mapping[str, float]:
        """With bands, the bands (they set the severity); else the wrapped detector's
        lines, calibrated (a raw score at its line maps at or above the line's image)."""
        if self.bands is not None:
            return {"warn": self.bands.warn, "critical": self.bands.critical}
        lines = self.inner.thresholds
        return {sev: self.calibration.probability(line) for sev, line in lines.items()}

    def clone(self) -> Calibrated:
        return type(self)(inner=self.inner.clone(), calibration=self.calibration, bands=self.bands)

    def state_dict(self) -> dict[str, Any]:
        return self.inner.state_dict()

    def load_state_dict(self, state: dict[str, Any], *, owned: bool = False) -> None:
        self.inner.load_state_dict(state, owned=owned)


def calibrated(
    detector: Detector, calibration: Calibration, bands: Bands | None = None
) -> Detector:
    """``detector`` with calibrated alerts, under its own name (so its stored state, its
    alerts and the action rules that name it stay its own)."""
    fixed = bands is not None or type(detector).thresholds_fixed
    kind = type(
        f"Calibrated_{detector.name}",
        (Calibrated,),
        {"name": detector.name, "thresholds_fixed": fixed},
    )
    wrapped: Detector = kind(inner=detector, calibration=calibration, bands=bands)
    return wrapped
