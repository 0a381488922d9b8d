"""The commit's workspace stage: each session's writes, judged against the other sessions
of its workspace (``workspace_conflict``, :mod:`detectors.workspace_conflict`).

Per commit, inside its transaction, after the steps and the sessions' facts are written:

1. the writes of the steps placed (:func:`features.session.writes.step_writes`; a
   checkpoint's commit as a write of the branch), under each session's workspace key
   (:meth:`~detectors.workspace_conflict.detector.WorkspaceConflict.key_of`). A session
   whose workspace became known in this commit (its start placed, late or not) or that
   was judged again has all its stored steps read instead: writes placed before its
   workspace was known are recorded then;
2. the workspace rows of those keys are locked (:func:`models.workspace_writes.lock`), the
   writes not recorded yet are recorded, and the workspace's writes in the window read;
3. the detector judges the new writes against the others and raises an alert on each
   session of a conflicting pair, unless that pair already has one of that severity.

What is guaranteed: in ``serve`` and ``replay`` (one process, one commit at a time) and
with Kafka workers on one PostgreSQL store, any two writes of one workspace are judged
together exactly once, by whichever commit records the second of them (the lock makes
concurrent commits of one workspace take turns, and the later reads what the earlier
committed); the pair's verdict depends on the two writes' event times and the sessions'
facts, not on which came first. Not guaranteed across workers: the onset an alert names
is the earliest write of the pair found when it is raised, so partitions that lag each
other by more than the lateness window may name a later write than one process would;
and a session's end that has not reached the store yet counts as "still running".
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from detectors.workspace_conflict.detector import WorkspaceConflict
from detectors.workspace_conflict.rules import Span
from features.session.writes import HEAD, step_writes
from models.records import Alert, SessionInfo, Step, StepKind, WorkspaceWrite
from models.store import StoreUnit

__all__ = ["WorkspaceStage"]

_TOOL_CALL, _CHECKPOINT, _START = StepKind.TOOL_CALL, StepKind.CHECKPOINT, StepKind.START
_WRITING = (_TOOL_CALL, _CHECKPOINT)
"""The kinds of step a write is read from (:meth:`WorkspaceStage._writes`)."""
_MAX_PATH = 1024  # the column's width: a longer path is not recorded


class WorkspaceStage:
    """Runs ``detector`` (the configured ``workspace_conflict`` prototype) at commit."""

    def __init__(self, detector: WorkspaceConflict) -> None:
        self.detector = detector

    def run(
        self,
        unit: StoreUnit,
        steps: Sequence[Step],
        infos: Mapping[str, SessionInfo],
        reread: Collection[str] = (),
    ) -> list[Alert]:
        """The alerts of this commit's writes (module docstring, steps 1-3). ``steps``:
        the steps placed, in order; ``infos``: the live sessions' facts; ``reread``: the
        sessions judged again in this commit (all their stored steps are read)."""
        refill = set(reread) | {s.session_id for s in steps if s.kind == _START}
        placed = (s for s in steps if s.session_id not in refill)
        # only the kinds _writes reads, of the sessions with a workspace key (_writes
        # records none of a keyless session's): the same writes, a fraction of the rows
        # decoded
        key_of = self.detector.key_of
        keyed = [sid for sid in sorted(refill) if key_of(infos.get(sid)) is not None]
        stored = (s for sid in keyed for s in unit.steps(sid, kinds=_WRITING))
        writes = self._writes([*placed, *stored], infos)
        if not writes:
            return []
        keys = sorted({w.workspace_key for w in writes})
        unit.lock_workspaces(keys)
        recorded = unit.recorded_writes({_identity(w) for w in writes})
        new = self._capped(unit, [w for w in writes if _identity(w) not in recorded])
        if not new:
            return []
        unit.add_workspace_writes(new)
        fresh = {_identity(w) for w in new}
        alerts: list[Alert] = []
        detector = self.detector
        for key in keys:
            mine = [w for w in new if w.workspace_key == key]
            if not mine:
                continue
            since = min(w.ts for w in mine) - detector.retention
            until = max(w.ts for w in mine) + detector.window_seconds * 1_000_000_000
            read = unit.workspace_writes(key, since, until, limit=detector.max_read)
            known = [w for w in read if _identity(w) not in fresh]
            sessions = sorted({w.session_id for w in (*known, *mine)})
            if len(sessions) > 1:
                spans = _spans(unit.sessions(sessions), infos)
                found = detector.judge(mine, known, spans)
                if found:
                    involved = sorted(
                        {c.mine.session_id for c in found} | {c.theirs.session_id for c in found}
                    )
                    # raised where each session was when the newer write of its pair
                    # happened (event time): the same whatever the commits' sizes
                    moments = {
                        (w.session_id, c.found_at) for c in found for w in (c.mine, c.theirs)
                    }
                    seq_at = {
                        moment: seq
                        for moment in sorted(moments)
                        if (seq := unit.seq_at(*moment)) is not None
                    }
                    already = _alerted(unit.alerts(involved), detector.name)
                    alerts += detector.alerts(found, spans, seq_at, already)
            # forget what no later write can conflict with (late steps aside: 2 windows)
            unit.prune_workspace_writes(key, max(w.ts for w in mine) - 2 * detector.retention)
        return alerts

    def _writes(
        self, steps: Iterable[Step], infos: Mapping[str, SessionInfo]
    ) -> list[WorkspaceWrite]:
        out: dict[tuple[str, str, str], WorkspaceWrite] = {}
        keys: dict[str, str | None] = {}
        for step in steps:
            if step.kind != _TOOL_CALL and step.kind != _CHECKPOINT:
                continue
            sid = step.session_id
            if sid not in keys:
                keys[sid] = self.detector.key_of(infos.get(sid))
            key = keys[sid]
            if key is None:
                continue
            info = infos[sid]
            found: list[tuple[str, str, str | None]]
            if step.kind == _CHECKPOINT:
                commit = step.detail.get("commit")
                if isinstance(commit, str) and commit.strip():
                    found = [(HEAD, "checkpoint", commit.strip()[:128])]
                else:
                    continue
            else:
                found = [(w.path, w.op, w.target) for w in step_writes(step, info.workspace)]
            for path, op, target in found:
                if len(path) > _MAX_PATH:
                    continue
                write = WorkspaceWrite(
                    workspace_key=key,
                    path=path,
                    op=op,
                    session_id=sid,
                    step_id=step.step_id,
                    seq=step.seq,
                    ts=step.ts,
                    source_ref=step.source_ref,
                    target=target,
                )
                out.setdefault(_identity(write), write)
        return list(out.values())

    def _capped(self, unit: StoreUnit, writes: list[WorkspaceWrite]) -> list[WorkspaceWrite]:
        """``writes`` past each session's ``max_writes`` in its workspace left out."""
        room: dict[tuple[str, str], int] = {}
        kept = []
        for write in writes:
            slot = (write.workspace_key, write.session_id)
            if slot not in room:
                room[slot] = self.detector.max_writes - unit.workspace_write_count(*slot)
            if room[slot] > 0:
                room[slot] -= 1
                kept.append(write)
        return kept


def _identity(write: WorkspaceWrite) -> tuple[str, str, str]:
    return (write.step_id, write.path, write.op)


def _spans(stored: Iterable[SessionInfo], live: Mapping[str, SessionInfo]) -> dict[str, Span]:
    """Each session's :class:`Span`, from its live facts when this process holds it, else
    from the store."""
    out = {}
    for info in stored:
        info = live.get(info.session_id, info)
        out[info.session_id] = Span(
            info.session_id,
            started=info.started_ts,
            ended=info.ended_ts,
            host=info.host,
            directory=info.workspace,
            revision=info.revision,
            agent=info.agent,
        )
    return out


def _alerted(alerts: Iterable[Alert], detector: str) -> dict[str, set[tuple[str, str]]]:
    """Session → (other session, severity) of the stored alerts of ``detector``."""
    out: dict[str, set[tuple[str, str]]] = {}
    for alert in alerts:
        if alert.detector != detector:
            continue
        for ref in alert.evidence:
            other = ref.get("session_id")
            if isinstance(other, str) and other != alert.session_id:
                out.setdefault(alert.session_id, set()).add((other, str(alert.severity)))
    return out
