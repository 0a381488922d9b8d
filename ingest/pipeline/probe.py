"""The pre-execution check's run: a session's analysis detached from the pipeline, shown
a proposed step (:meth:`Probe.run`) without anything of the pipeline or the store
changing."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from detectors.base import Detector
from features.calls.step_features import StepFeatures, analysed_view
from features.redact.engine import redact_step
from features.session.trajectory import TrajectoryFeatures
from features.text.clip import analysed_step
from ingest.pipeline.session import LiveSession
from models.records import Alert, Step


@dataclass(slots=True)
class Probe:
    """A session's analysis state detached from the pipeline
    (:meth:`ingest.pipeline.engine.Pipeline.probe`): :meth:`run` shows what its detectors
    would raise on a proposed step."""

    session_id: str
    next_seq: int
    last_ts: int
    agent: str | None
    features: TrajectoryFeatures
    detectors: list[Detector]

    @classmethod
    def copied(cls, session: LiveSession) -> Probe:
        """A copy of live ``session``'s analysis: its detectors by ``clone()`` +
        ``load_state_dict(state_dict())``, its trajectory features deep-copied."""
        copies = []
        for detector in session.detectors:
            copy_ = detector.clone()
            copy_.load_state_dict(detector.state_dict())
            copies.append(copy_)
        return cls(
            session_id=session.info.session_id,
            next_seq=session.next_seq,
            last_ts=session.last_ts,
            agent=session.info.agent,
            features=copy.deepcopy(session.features),
            detectors=copies,
        )

    @classmethod
    def taking(cls, session: LiveSession) -> Probe:
        """``session``'s analysis as it is: for a session no one else holds (restored
        from the store for this probe alone)."""
        return cls(
            session_id=session.info.session_id,
            next_seq=session.next_seq,
            last_ts=session.last_ts,
            agent=session.info.agent,
            features=session.features,
            detectors=session.detectors,
        )

    def run(self, step: Step) -> list[Alert]:
        """The alerts ``step`` would raise as the session's next step (given the next
        ``seq`` and the features the pipeline would add). A detector that raises is
        skipped: a check must answer."""
        step = redact_step(step)
        shared = StepFeatures(analysed_step(step))
        features = self.features.observe(step, seq=self.next_seq, features=shared)
        placed = step.with_(
            seq=self.next_seq,
            session_id=self.session_id,
            agent=step.agent or self.agent,
            ts=max(step.ts, self.last_ts),
            detail={**step.detail, **features},
        )
        view = analysed_view(placed, shared)
        alerts: list[Alert] = []
        for detector in self.detectors:
            try:
                alerts.extend(detector.update(view))
            except Exception:  # a detector bug: the live run dead-letters it
                continue
        return alerts
