"""One run touching files another run owns: sessions of a fleet writing one workspace.

Flags two sessions of one workspace (one :func:`~features.session.workspace.workspace_key`:
the same repository and branch, else the same host and directory) that write the same
files, commit or push the same branch while both run, or one that resets the tree under
another run or reverts what another run's last checkpoint committed (the rules:
:mod:`detectors.workspace_conflict.rules`). Raises one alert on *each* session of a
conflicting pair, with evidence from both (the other session's steps carry its
``session_id`` in their evidence reference).

A cross-session detector. Per session it keeps no state and raises nothing (``update``
returns ``[]``, ``score`` stays 0): what it judges is other sessions' writes, which no
per-session object sees. The pipeline's workspace stage
(:mod:`ingest.pipeline.workspaces`) extracts each placed step's writes
(:func:`features.session.writes.step_writes`), records them in the store in the commit's
transaction, reads the other sessions' writes of the same workspace in the window, and
hands both to :meth:`WorkspaceConflict.judge` and :meth:`WorkspaceConflict.alerts`, which
do no I/O and read no clock. Alert ids come from content (session, onset step, severity),
so a replay stores and delivers nothing twice.

Every alert recommends NOTIFY: the detector never stops a run on its own (the harm is two
runs' work mixed up: a person decides which keeps the workspace; the run whose work was
undone can resume from its last checkpoint, which the reason names).

Host-less directories (``dir::/workspace``: the same container path on every pod) are weak
evidence that two sessions share a place: they are not judged unless
``judge_hostless = true``.

>>> from models.records import WorkspaceWrite
>>> from detectors.workspace_conflict.rules import Span
>>> key = "dir:ws5:/home/zoe/app"
>>> a = WorkspaceWrite(workspace_key=key, path="src/r.py", op="edit", session_id="A",
...                    step_id="A/7", seq=7, ts=60 * 10**9)
>>> b = WorkspaceWrite(workspace_key=key, path="src/r.py", op="edit", session_id="B",
...                    step_id="B/4", seq=4, ts=240 * 10**9)
>>> spans = {"A": Span("A", started=0), "B": Span("B", started=30 * 10**9)}
>>> detector = WorkspaceConflict()
>>> found = detector.judge([b], [a], spans)
>>> [(c.rule, c.mine.session_id, c.theirs.session_id) for c in found]
[('same_file', 'B', 'A')]
>>> alerts = detector.alerts(found, spans, {("A", 240 * 10**9): 9, ("B", 240 * 10**9): 4})
>>> [(x.session_id, x.onset_seq, x.raised_seq, str(x.severity)) for x in alerts]
[('B', 4, 4, 'warn'), ('A', 7, 9, 'warn')]
>>> [ref.get("session_id") for ref in alerts[1].evidence]
['A', 'B']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from detectors.base import MAX_EVIDENCE, Detector, StepRef, make_alert
from detectors.registry import register
from detectors.workspace_conflict.rules import Conflict, Span, conflicts
from features.session.workspace import workspace_key
from features.session.writes import HEAD, REMOTE, TREE
from models.records import Action, Alert, SessionInfo, Severity, Step, WorkspaceWrite

__all__ = ["WorkspaceConflict"]

_NS = 1_000_000_000
_SCORE = {Severity.WARN: 0.6, Severity.CRITICAL: 1.0}
_HALF = MAX_EVIDENCE // 2

_CONSEQUENCE = {
    "same_file": "two runs editing one file overwrite each other's work",
    "same_branch": "two runs committing or pushing one branch interleave or reject each "
    "other's commits",
    "force_push": "a forced push drops the other run's pushed commits from the remote",
    "reset_over": "the reset throws away the other run's edits and commits under it",
    "reverted_checkpoint": "the reset undoes what the checkpoint committed",
    "stale_base": "a run started from an older revision edits what the other run's "
    "checkpoint committed",
}


@register
class WorkspaceConflict(Detector):
    """Flags sessions of one workspace whose writes conflict (see the module docstring).

    Contract: ``update`` consumes one session's steps and raises nothing (cross-session:
    :meth:`judge` and :meth:`alerts` are called by the pipeline's workspace stage with
    the writes it read from the store). Bounded: the stage records at most
    ``max_writes`` writes of a session in one workspace and reads at most ``max_read``
    writes of a workspace per check; the store forgets writes older than the longer
    window. No I/O, no clock.

    Parameters
    ----------
    window_seconds:
        How far apart (event time) two sessions' writes of one place may be and still
        conflict, when both sessions are live at both writes; also how long a write is
        kept for that. Two hours: a run's edits of a file it owns span its run.
    revert_window_seconds:
        How long after another session's checkpoint a reset to another revision (or an
        edit from an older base) counts as undoing it.
    max_writes:
        Writes of one session in one workspace recorded at most (its first ones).
    max_read:
        Writes of one workspace read per check at most (the newest in the window).
    judge_hostless:
        Judge workspaces known by a directory alone, with no host (``/workspace`` in
        every container): off, such a key is weak evidence of one place.
    """

    name = "workspace_conflict"
    thresholds_fixed = True
    cross_session: ClassVar[bool] = True
    """Raises its alerts from the pipeline's workspace stage, not from ``update``: a
    re-judgement of one session neither raises nor supersedes them."""

    def __init__(
        self,
        *,
        window_seconds: int = 7200,
        revert_window_seconds: int = 21600,
        max_writes: int = 512,
        max_read: int = 4096,
        judge_hostless: bool = False,
    ) -> None:
        for label, value in (
            ("window_seconds", window_seconds),
            ("revert_window_seconds", revert_window_seconds),
            ("max_writes", max_writes),
            ("max_read", max_read),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{label} must be an int >= 1, got {value!r}")
        if not isinstance(judge_hostless, bool):
            raise ValueError(f"judge_hostless must be true or false, got {judge_hostless!r}")
        self.window_seconds = window_seconds
        self.revert_window_seconds = revert_window_seconds
        self.max_writes = max_writes
        self.max_read = max_read
        self.judge_hostless = judge_hostless
        self._reset()

    def _reset(self) -> None:
        self._score = 0.0

    @property
    def thresholds(self) -> dict[str, float]:
        """The scores its alerts carry (``warn`` 0.6, ``critical`` 1.0); its per-session
        ``score`` stays 0: the cross-session alerts are raised by the workspace stage."""
        return {str(k): v for k, v in _SCORE.items()}

    def update(self, step: Step) -> list[Alert]:
        """Nothing per session: the findings need other sessions (module docstring)."""
        return []

    # -- cross-session ------------------------------------------------------------------

    @property
    def retention(self) -> int:
        """How long (ns of event time) a write stays relevant: the longer window."""
        return max(self.window_seconds, self.revert_window_seconds) * _NS

    def key_of(self, info: SessionInfo | None) -> str | None:
        """The workspace key the session's writes are recorded under, or None (none
        known, or host-less while ``judge_hostless`` is off)."""
        if info is None:
            return None
        key = workspace_key(
            host=info.host,
            directory=info.workspace,
            repository=info.repository,
            branch=info.branch,
        )
        if key is not None and key.startswith("dir::") and not self.judge_hostless:
            return None
        return key

    def judge(
        self,
        new: Sequence[WorkspaceWrite],
        known: Sequence[WorkspaceWrite],
        spans: Mapping[str, Span],
    ) -> list[Conflict]:
        """The conflicts of ``new`` writes (just recorded) with ``known`` ones and each
        other (:func:`~detectors.workspace_conflict.rules.conflicts`)."""
        return conflicts(
            new,
            known,
            spans,
            window=self.window_seconds * _NS,
            revert_window=self.revert_window_seconds * _NS,
        )

    def alerts(
        self,
        found: Sequence[Conflict],
        spans: Mapping[str, Span],
        seq_at: Mapping[tuple[str, int], int],
        already: Mapping[str, set[tuple[str, str]]] | None = None,
    ) -> list[Alert]:
        """One alert per session, other session and severity of ``found`` (each side of a
        pair), from the conflicts of that severity found first in event time
        (:attr:`~detectors.workspace_conflict.rules.Conflict.found_at`): what a commit of
        any size raises is what one step at a time raises. ``already``: session → (other
        session, severity) alerted before, not raised again. ``seq_at``: (session, event
        time) → the session's seq then: the alert is raised at the time its conflict
        exists (the session that wrote first is raised there, not at the old write its
        onset names)."""
        already = already or {}
        groups: dict[tuple[str, str, Severity], list[tuple[Conflict, bool]]] = defaultdict(list)
        for conflict in found:
            one, two = conflict.mine.session_id, conflict.theirs.session_id
            groups[(one, two, conflict.severity)].append((conflict, True))
            groups[(two, one, conflict.severity)].append((conflict, False))
        out: list[Alert] = []
        critical_at = {
            (session, other): min(c.found_at for c, _ in items)
            for (session, other, severity), items in groups.items()
            if severity == Severity.CRITICAL
        }
        for (session, other, severity), items in groups.items():
            done = already.get(session, set())
            if (other, str(severity)) in done:
                continue
            at = min(c.found_at for c, _ in items)
            if severity == Severity.WARN and (
                (other, str(Severity.CRITICAL)) in done
                or critical_at.get((session, other), at + 1) <= at
            ):
                continue  # a warning after the pair's critical alert says nothing new
            first = sorted(
                ((c, side) for c, side in items if c.found_at == at),
                key=lambda item: (item[0].rule, item[0].mine.step_id, item[0].theirs.step_id),
            )
            mine: list[WorkspaceWrite] = sorted(
                {(c.mine if side else c.theirs) for c, side in first},
                key=lambda w: (w.ts, w.step_id, w.path),
            )
            theirs: list[WorkspaceWrite] = sorted(
                {(c.theirs if side else c.mine) for c, side in first}
                | {c.checkpoint for c, _ in first if c.checkpoint is not None},
                key=lambda w: (w.ts, w.step_id, w.path),
            )
            onset = mine[0]
            raised = StepRef(
                session,
                onset.step_id,
                max(seq_at.get((session, at), onset.seq), onset.seq),
                at,
                onset.source_ref,
            )
            conflict, is_mine = first[0]
            alert = make_alert(
                self.name,
                onset=StepRef(session, onset.step_id, onset.seq, onset.ts, onset.source_ref),
                raised=raised,
                evidence=[],
                score=_SCORE[severity],
                severity=severity,
                reason=_reason(conflict, is_mine, spans),
                action=Action.NOTIFY,
            )
            evidence: list[Mapping[str, Any]] = [w.ref() for w in mine[:_HALF]]
            evidence += [w.ref() for w in theirs[:_HALF]]
            out.append(replace(alert, evidence=tuple(evidence)))
        return out


def _reason(conflict: Conflict, is_mine: bool, spans: Mapping[str, Span]) -> str:
    """A sentence a person can check: what each session did, when, where, and why it
    matters."""
    own, other = (conflict.mine, conflict.theirs) if is_mine else (conflict.theirs, conflict.mine)
    who = spans.get(other.session_id)
    name = f"session {other.session_id}" + (f" ({who.agent})" if who and who.agent else "")
    gap = _duration(abs(own.ts - other.ts))
    when = "later" if other.ts > own.ts else "earlier"
    text = (
        f"this session's step {own.seq} {_did(own)}; {name} {_did(other)} at its step "
        f"{other.seq}, {gap} {when}, in workspace {own.workspace_key}: "
        f"{_CONSEQUENCE[conflict.rule]}"
    )
    if conflict.checkpoint is not None:
        text += f" (its checkpoint at step {conflict.checkpoint.seq}, commit "
        text += f"{(conflict.checkpoint.target or '?')[:12]})"
    span = spans.get(own.session_id)
    if conflict.rule == "stale_base" and span and span.revision:
        text += f"; this session started from {span.revision[:12]}"
    if conflict.rule in ("reset_over", "reverted_checkpoint", "force_push"):
        text += ". The run whose work was undone can resume from its last checkpoint"
    return text + "."


def _did(write: WorkspaceWrite) -> str:
    target = f" to {write.target[:12]}" if write.target else ""
    if write.path == TREE:
        return f"resets the whole tree{target}"
    if write.path == HEAD:
        if write.op == "checkpoint":
            return f"checkpoints commit {(write.target or '?')[:12]}"
        return "commits on the branch"
    if write.path == REMOTE:
        return "force-pushes the branch" if write.op == "force_push" else "pushes the branch"
    return f"{'deletes' if write.op == 'delete' else 'writes'} {write.path}"


def _duration(ns: int) -> str:
    seconds = ns // _NS
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
