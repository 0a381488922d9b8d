"""When two sessions' writes to one workspace conflict: the rules, as pure functions.

Input: writes (:class:`~models.records.WorkspaceWrite`, one place of one workspace a step
wrote; :mod:`features.session.writes` says which places) and what is known of each
session (:class:`Span`: when it ran, where, from which revision). Output: the pairs of
writes that conflict (:class:`Conflict`). A pair is judged from its event times alone,
so it is the same whichever of the two writes is seen first.

The rules, for writes ``a`` (session A) and ``b`` (session B ≠ A) of one workspace key:

- ``same_file``: both write one file, within ``window`` of each other, the later write
  while the earlier writer's session is live (not ended). Two runs editing one file at
  once.
- ``same_branch``: both commit on the branch of one checkout (same host and directory),
  or both push the remote branch, within ``window``, the earlier writer live as above.
- ``force_push``: A force-pushes the remote branch after B pushed it, B's push made while
  A was running (A's base did not hold B's commits): they are gone from the remote,
  whether B still runs or not.
- ``reset_over``: A resets the whole tree of a checkout (``git reset --hard``, ``stash``,
  ``clean -f``, ``checkout .``) that B shares, while B is live, after B wrote in it
  (within ``window``): B's edits or commits are undone under it.
- ``reverted_checkpoint``: A resets a checkout B's last checkpoint committed in to a
  revision that is not that checkpoint's commit (within ``revert_window`` of it, B live or
  not): "one run reverting what another run's last checkpoint committed".
- ``stale_base``: A, started after B's checkpoint from a revision that is not its commit
  (the workspace's latest checkpoint before A started), writes a file B wrote before that
  checkpoint (within ``revert_window``): A edits what B committed, from an older base.

Look-alikes that stay quiet: sessions that only read (no writes); the same repository on
another branch or worktree (another workspace key); sequential runs (neither live at the
other's write) where the later starts from the earlier's checkpoint commit; scratch
paths (``/tmp``, logs: never recorded as writes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from features.session.workspace import directory_path
from features.session.writes import HEAD, REMOTE, TREE
from models.records import Severity, WorkspaceWrite

__all__ = ["Conflict", "Span", "conflicts", "same_checkout", "same_revision"]

_FILE_OPS = frozenset({"edit", "delete"})
_PUSHES = frozenset({"push", "force_push"})
_SPECIAL = frozenset({HEAD, REMOTE, TREE})

SEVERITY = {
    "same_file": Severity.WARN,
    "same_branch": Severity.WARN,
    "stale_base": Severity.WARN,
    "force_push": Severity.CRITICAL,
    "reset_over": Severity.CRITICAL,
    "reverted_checkpoint": Severity.CRITICAL,
}
"""A rule's severity: critical where one run's work is undone, warn where it may be."""


@dataclass(frozen=True, slots=True)
class Span:
    """What is known of one session: its first and last event times (``ended`` None
    while it runs), where it works and the revision it started from."""

    session_id: str
    started: int | None = None
    ended: int | None = None
    host: str | None = None
    directory: str | None = None
    revision: str | None = None
    agent: str | None = None

    def live_at(self, ts: int) -> bool:
        """Whether the session had started and not ended at event time ``ts``."""
        return (self.started is None or self.started <= ts) and (
            self.ended is None or ts <= self.ended
        )


@dataclass(frozen=True, slots=True)
class Conflict:
    """A pair of conflicting writes: ``mine`` (of the writes just recorded) and
    ``theirs`` (another session's); ``rule`` names the rule (module docstring)."""

    rule: str
    mine: WorkspaceWrite
    theirs: WorkspaceWrite
    checkpoint: WorkspaceWrite | None = None
    """For ``stale_base``: the other session's checkpoint that committed ``theirs``."""

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.rule]

    @property
    def found_at(self) -> int:
        """The event time the conflict exists from: the later of its two writes."""
        return max(self.mine.ts, self.theirs.ts)


def same_checkout(a: Span, b: Span) -> bool:
    """Whether two sessions work in one checkout: one host and one directory, both known.

    >>> same_checkout(Span("a", host="ci-7", directory="/w/x/"), Span("b", host="CI-7",
    ...               directory="/w/x"))
    True
    >>> same_checkout(Span("a", directory="/w/x"), Span("b", directory="/w/x"))
    False
    """
    if not (a.host and b.host and a.directory and b.directory):
        return False
    return a.host.strip().lower() == b.host.strip().lower() and directory_path(
        a.directory
    ) == directory_path(b.directory)


def same_revision(a: str | None, b: str | None) -> bool:
    """Whether two revisions name one commit: equal, or one a prefix (>= 7 hex digits)
    of the other, case aside.

    >>> same_revision("5c16ec3", "5C16EC3A9F00"), same_revision("5c16ec3", "6db0f78")
    (True, False)
    """
    if not a or not b:
        return False
    x, y = a.strip().lower(), b.strip().lower()
    short = min(len(x), len(y))
    return (short >= 7 and x[:short] == y[:short]) or x == y


def conflicts(
    new: Sequence[WorkspaceWrite],
    known: Sequence[WorkspaceWrite],
    spans: Mapping[str, Span],
    *,
    window: int,
    revert_window: int,
) -> list[Conflict]:
    """The conflicts ``new`` writes (just recorded) make with ``known`` writes (recorded
    before, any session) and with each other, each pair once, ``mine`` from ``new``.
    ``window`` and ``revert_window`` in nanoseconds. ``spans``: session id → :class:`Span`
    (a session missing is taken as live throughout, place unknown).

    Pure and linear in ``len(new) × (len(known) + len(new))``; the caller bounds both.
    """
    everyone = [*known, *new]
    checkpoints = sorted(
        (w for w in everyone if w.path == HEAD and w.op == "checkpoint"),
        key=lambda w: (w.ts, w.step_id),
    )
    found: list[Conflict] = []
    seen: set[tuple[str, str, str, str, str]] = set()
    order = {id(w): i for i, w in enumerate(new)}
    for mine in new:
        span = spans.get(mine.session_id) or Span(mine.session_id)
        for theirs in everyone:
            if theirs.session_id == mine.session_id:
                continue
            if id(theirs) in order and order[id(theirs)] >= order[id(mine)]:
                continue  # a pair of two new writes: judged once, from the later one
            other = spans.get(theirs.session_id) or Span(theirs.session_id)
            for rule in _pair_rules(mine, theirs, span, other, window, revert_window):
                key = (rule, mine.step_id, mine.path, theirs.step_id, theirs.path)
                if key not in seen:
                    seen.add(key)
                    found.append(Conflict(rule, mine, theirs))
        for rule, theirs, checkpoint in _checkpoint_rules(
            mine, span, checkpoints, everyone, spans, revert_window
        ):
            key = (rule, mine.step_id, mine.path, theirs.step_id, theirs.path)
            if key not in seen:
                seen.add(key)
                found.append(Conflict(rule, mine, theirs, checkpoint))
    return found


def _pair_rules(
    a: WorkspaceWrite, b: WorkspaceWrite, sa: Span, sb: Span, window: int, revert_window: int
) -> Iterator[str]:
    """The rules a pair of writes of two sessions breaks (module docstring)."""
    gap = abs(a.ts - b.ts)
    if gap > window:
        return
    # the later write lands while the earlier writer still runs: its work in progress
    # is overwritten (a run that had ended handed over; a sequential run is no conflict)
    both_live = sb.live_at(a.ts) if b.ts <= a.ts else sa.live_at(b.ts)
    if a.path == b.path and a.path not in _SPECIAL:
        if a.op in _FILE_OPS and b.op in _FILE_OPS and both_live:
            yield "same_file"
        return
    if a.path == b.path == HEAD and a.op == b.op == "commit":
        if both_live and same_checkout(sa, sb):
            yield "same_branch"
        return
    if a.path == b.path == REMOTE and a.op in _PUSHES and b.op in _PUSHES:
        for forced, pushed, by in ((a, b, sa), (b, a, sb)):
            # a forced push over a push made after the forcing run began (its base did
            # not hold those commits): they are gone from the remote, ended run or not
            if forced.op == "force_push" and pushed.ts <= forced.ts and by.live_at(pushed.ts):
                yield "force_push"
                return
        if both_live:
            yield "same_branch"
        return
    for reset, victim, by, of in ((a, b, sa, sb), (b, a, sb, sa)):
        if (
            reset.path == TREE
            and reset.op == "reset"
            and victim.op != "checkpoint"
            and victim.path not in (TREE, REMOTE)
            and victim.ts <= reset.ts
            and of.live_at(reset.ts)
            and same_checkout(by, of)
        ):
            yield "reset_over"


def _checkpoint_rules(
    mine: WorkspaceWrite,
    span: Span,
    checkpoints: Sequence[WorkspaceWrite],
    everyone: Sequence[WorkspaceWrite],
    spans: Mapping[str, Span],
    revert_window: int,
) -> Iterator[tuple[str, WorkspaceWrite, WorkspaceWrite | None]]:
    """``reverted_checkpoint`` and ``stale_base`` for ``mine`` against the workspace's
    checkpoints (sorted by time; other sessions' only count): (rule, the other session's
    write, the checkpoint when it is not that write)."""
    if mine.path == TREE and mine.op == "reset" and mine.target:
        last = _latest_before(checkpoints, mine.ts, mine.session_id)
        if (
            last is not None
            and mine.ts - last.ts <= revert_window
            and last.target
            and not same_revision(mine.target, last.target)
            and same_checkout(span, spans.get(last.session_id) or Span(last.session_id))
        ):
            yield "reverted_checkpoint", last, None
    if mine.op in _FILE_OPS and span.started is not None and span.revision:
        last = _latest_before(checkpoints, span.started, mine.session_id)
        if (
            last is None
            or not last.target
            or mine.ts - last.ts > revert_window
            or same_revision(span.revision, last.target)
        ):
            return
        committed = next(
            (
                w
                for w in everyone
                if w.session_id == last.session_id
                and w.path == mine.path
                and w.op in _FILE_OPS
                and w.ts <= last.ts
            ),
            None,
        )
        if committed is not None:
            yield "stale_base", committed, last


def _latest_before(
    checkpoints: Sequence[WorkspaceWrite], ts: int, besides: str
) -> WorkspaceWrite | None:
    """The newest checkpoint at or before ``ts`` of the workspace, if it is not session
    ``besides``'s own (a session reverting its own checkpoint conflicts with no one)."""
    latest = None
    for checkpoint in checkpoints:
        if checkpoint.ts > ts:
            break
        latest = checkpoint
    return latest if latest is not None and latest.session_id != besides else None
