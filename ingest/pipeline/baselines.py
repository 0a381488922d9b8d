"""The commit's baseline stage: each agent's history learnt, each session handed its
agent's reference (``agent_baseline``, :mod:`detectors.agent_baseline`).

Per commit, inside its transaction, after the sessions' facts and the alerts are written:

1. **learn**: every touched session whose end is placed (its facts know ``ended_ts``) and
   whose behaviour its agent's history has not learnt yet, in ``(ended_ts, session_id)``
   order: its record (the detector's behaviour summary, start and end times) goes into
   the agent's history (:class:`~detectors.agent_baseline.history.AgentHistory`, the
   ``agent_baselines`` row, locked while read and written). A session learnt again (a
   replay, a re-judgement, a late step after its end) replaces its record;
2. **attach**: every touched session whose detector has no reference yet and whose agent
   and start time are known gets :func:`~detectors.agent_baseline.history.fit` of its
   agent's records that *ended before it started*; the detector judges the scoring
   points it passed while waiting and returns their alerts, which the commit stores.

Why this is deterministic: the model a session is judged against is a function of the
records ended before its start, learnt in end order, seeded - not of the order sessions
arrived, settled or were learnt in - and a session's own scoring points are fixed steps
(``min_steps``, then every ``every``), judged when the reference arrives whatever the
commit boundaries. What is guaranteed: in ``serve`` and ``replay`` of one partition (one
recorded file, one receiver), a session's start is placed after every earlier session's
end (event-time order), so the commit that attaches it has learnt all of them: replay =
live. Not guaranteed: across partitions or Kafka workers, a session whose end has not
reached the store when another's start is committed (a partition lagging by more than the
lateness window) is missing from that other's reference - the limit the workspace stage
has too. A record replaced after a later session was attached (a late step after an end)
does not change that session's reference. The history keeps the latest ``keep`` ends:
a session attached again after more than ``keep - window`` newer ends (a restore long
after its start) judges against fewer sessions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from detectors.agent_baseline.detector import AgentBaseline
from detectors.agent_baseline.history import VERSION, AgentHistory, Record
from detectors.base import Detector
from models.records import Alert, SessionInfo
from models.store import StoreUnit

__all__ = ["BaselineStage"]


class _Live(Protocol):
    info: SessionInfo
    detectors: list[Detector]
    checkpoint_due: bool


class BaselineStage:
    """Runs the configured ``agent_baseline`` prototype's cross-session part at commit."""

    def __init__(self, detector: AgentBaseline) -> None:
        self.detector = detector

    def run(
        self, unit: StoreUnit, sessions: Mapping[str, _Live], touched: Sequence[str]
    ) -> list[Alert]:
        """Learn the ended sessions among ``touched`` and attach the others' references
        (module docstring); returns the alerts the attached sessions raise."""
        mine = {}
        for session_id in touched:
            live = sessions.get(session_id)
            detector = _detector_of(live) if live is not None else None
            if live is not None and detector is not None and live.info.agent:
                mine[session_id] = (live.info, detector)
        if not mine:
            return []
        histories: dict[str, AgentHistory] = {}
        changed: set[str] = set()
        ended = sorted(
            (info.ended_ts, sid)
            for sid, (info, detector) in mine.items()
            if info.ended_ts is not None and not detector.learned
        )
        for ended_ts, sid in ended:
            info, detector = mine[sid]
            agent = str(info.agent)
            history = self._history(unit, agent, histories)
            started = info.started_ts if info.started_ts is not None else ended_ts
            history.learn(Record(sid, started, ended_ts, detector.summary()))
            detector.mark_learned()
            changed.add(agent)
            _checkpoint(sessions, sid)
        for agent in sorted(changed):
            history = histories[agent]
            unit.put_agent_baseline(agent, VERSION, len(history.records), history.dumps())
        alerts: list[Alert] = []
        proto = self.detector
        for sid in sorted(mine):
            info, detector = mine[sid]
            if not detector.wants_reference or info.started_ts is None:
                continue
            history = self._history(unit, str(info.agent), histories)
            reference = proto.reference(history.before(info.started_ts))
            alerts += detector.attach(reference)
            _checkpoint(sessions, sid)
        return alerts

    def _history(
        self, unit: StoreUnit, agent: str, histories: dict[str, AgentHistory]
    ) -> AgentHistory:
        if agent not in histories:
            stored = unit.agent_baseline(agent)
            if stored is not None and stored[0] == VERSION:
                histories[agent] = AgentHistory.loads(stored[1], keep=self.detector.keep)
            else:  # none yet, or of another layout: a new history (cold)
                histories[agent] = AgentHistory(self.detector.keep)
        return histories[agent]


def _checkpoint(sessions: Mapping[str, _Live], session_id: str) -> None:
    """The detector's state changed outside its steps (learnt, or handed its reference):
    this commit checkpoints it, so a restore from the store (a restart, the pre-execution
    check's probe) rolls forward from a state that holds it - steps alone would not."""
    sessions[session_id].checkpoint_due = True


def _detector_of(live: _Live) -> AgentBaseline | None:
    for detector in live.detectors:
        if isinstance(detector, AgentBaseline):
            return detector
    return None
