"""Progress rules of :mod:`detectors.runaway_loop.detector`: what was learnt, changed, reached.

A loop is work that makes no progress; progress is what was learnt or changed. These
pure functions judge it from the small records the detector keeps
(:class:`~detectors.runaway_loop.records.LoopCall`, whose ``digest`` says what a result
told the agent: :func:`features.calls.information.information_digest`):

- :func:`learnt` — a result says something the one before it did not (``3 of 20`` after
  ``2 of 20``): the world moved, the poll or the re-read was worth it.
- :func:`patient` — retries or polls whose deliberate waits grow (exponential back-off):
  patience, for a bounded count, not a loop.
- :func:`attempt` — one check (the same call: a test, a verification, a status) failing
  the same way while the work between its runs changes nothing new (the same file patched
  again and again): attempts at one sub-goal that keep failing are a loop even when every
  attempt is different code. A check that answers something new, or work that changes a
  target not changed before (many files changed successfully is progress), ends it.
- :func:`revisit` — successful changes that alternate between two states (A-B-A-B: a
  revision, its reversal, the revision again; two agents undoing each other's work),
  however their counters (``v3``, ``v4``) and the reads between them change: no change
  reaches a state not reached before.
- :func:`handed_back` — one hand-off made again and again (a call that ran a sub-agent:
  a ``transfer_to_*`` tool, a sub-agent tool, an ``invoke_agent`` span), its sub-agent
  handing back what it handed back before while nothing new was changed: agents passing
  one task back and forth, nothing learnt from another round.
- :func:`delegation_depth` — sub-agents running at once, each opened by a call still
  waiting for its result: agents spawning agents that spawn agents.

No state of their own (they change only the records they are given), no I/O, no clock;
each is O(its inputs), and every input is bounded by the detector.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from detectors.base import MAX_EVIDENCE
from detectors.runaway_loop.patience import PATIENT_GROWTH, patient
from detectors.runaway_loop.records import Attempts, HandBacks, LoopCall, Revisits
from detectors.runaway_loop.retries import Finding, names_only
from features.calls.action_keys import crc

__all__ = [
    "PATIENT_GROWTH",
    "attempt",
    "delegation_depth",
    "elsewhere",
    "handed_back",
    "learnt",
    "patient",
    "revisit",
]


def learnt(call: LoopCall, before: LoopCall) -> bool:
    """Whether ``call``'s result told the agent something ``before``'s did not: both
    answered (digests known) and they differ once volatile parts are masked.

    >>> a = LoopCall(1, "a", "", 0, "t", 1, 1, 0, frozenset(), "t", True, frozenset(), (),
    ...              True, False, 0, 0, 0, 0.0, digest=7)
    >>> b = LoopCall(2, "b", "", 0, "t", 1, 1, 0, frozenset(), "t", False, frozenset(), (),
    ...              True, False, 0, 0, 0, 0.0, digest=8)
    >>> learnt(b, a), learnt(a, a)
    (True, False)
    """
    return bool(call.digest and before.digest and call.digest != before.digest)


def attempt(
    series: dict[int, Attempts],
    check: LoopCall,
    *,
    changed: int,
    between: Iterable[LoopCall],
    warn_at: int,
    max_series: int,
) -> Finding | None:
    """Record a failed run of ``check`` (its result in: ``shape`` set) in the series of
    its exact call; ``changed`` is the count of distinct targets the session has changed
    so far, ``between`` the calls made since the check's previous run. The series goes on
    when the check failed exactly as before and the work since changed no target it had
    not changed before; anything else starts it anew. A finding once the check has failed
    alike ``warn_at`` times with changes made between them. Keeps at most ``max_series``.

    The same check re-run with nothing changed between is the cycle and retry rules' to
    judge: here at least one change must have been made between each pair of runs. A
    failure reporting a smaller count than the run before (``UNMATCHED 9`` after
    ``UNMATCHED 14``: :attr:`LoopCall.tally`) is closer: the series starts anew.
    """
    key = check.exact
    current = series.get(key)
    made = sum(1 for c in between if c.changes and c.status != "error")
    closer = current is not None and 0 <= check.tally < current.check.tally
    if (
        current is None
        or current.shape != check.shape
        or changed > current.changed
        or not made
        or closer
    ):
        series.pop(key, None)
        while len(series) >= max_series:
            del series[next(iter(series))]
        series[key] = Attempts(check, check, check.shape, changed, [check])
        return None
    current.check = check
    current.count += 1
    current.attempts += made
    current.members.append(check)
    if len(current.members) > MAX_EVIDENCE:
        del current.members[1 : len(current.members) - MAX_EVIDENCE + 1]
    if current.count < warn_at:
        return None
    reason = (
        f"`{check.label}` failed the same way {current.count} times since step "
        f"{current.first.seq}, with {current.attempts} change(s) between its runs that "
        "touched nothing not changed before: attempts at one sub-goal, none closer"
    )
    keys = {crc(f"attempts\x1f{key}")}
    members = current.members
    return Finding(members[1], list(members), keys, reason, current.count)


def revisit(
    last: Sequence[LoopCall],
    run: Revisits | None,
    change: LoopCall,
    *,
    warn_at: int,
    kill_at: int,
) -> tuple[Revisits | None, Finding | None]:
    """Judge ``change``, a change that worked, against ``last``, the two successful
    changes before it (oldest first). It *revisits* when its near-duplicate key (words
    of its action; counters mixing letters and digits, such as ``v7``, dropped) is the
    one two changes before and not the one just before (A-B-A). Consecutive revisits
    extend ``run`` (A-B-A-B-A: three); any other change ends it. A finding from
    ``warn_at`` revisits: the work alternates between two states and reaches no third
    one, whatever the reads between them answered. Returns the run after ``change``.

    A change repeated as it was (A-A-A: the same command for another batch) is no
    revisit: the cycle and retry rules judge it. Nor is one whose changed arguments only
    name another target (a refund of another charge, a reply to another e-mail:
    :func:`~detectors.runaway_loop.retries.names_only`): effects on distinct targets
    are progress. Nor is one whose target differs from the change just before it
    (:func:`elsewhere`: a message to another channel, an edit of another file): only a
    change to the same target can undo another.
    """
    if len(last) < 2 or last[-2].key != change.key or last[-1].key == change.key:
        return None, None
    if names_only(last[-2].values, change.values):
        # another refund, file or message id: an effect on a distinct target is
        # progress, not a return to a state reached before
        return None, None
    if elsewhere(last[-1].values, change.values):
        # the change before it acted on another target (a post to #help between two to
        # #announcements): it undoes nothing there, whatever their words
        return None, None
    if run is None or not run.members or run.members[-1] is not last[-1]:
        run = Revisits([last[-2], last[-1]], 0)
    run.members.append(change)
    run.count += 1
    if len(run.members) > MAX_EVIDENCE:
        del run.members[2 : len(run.members) - MAX_EVIDENCE + 2]
    if run.count < warn_at:
        return run, None
    a, b = run.members[0], run.members[1]
    reason = (
        f"{run.count} changes in a row return to the state made two changes before "
        f"(`{a.label}` and `{b.label}` in turn since step {a.seq}): the work alternates "
        "between two states, each undoing the other, and reaches no third"
    )
    keys = {crc(f"revisit\x1f{min(a.key, b.key)}\x1f{max(a.key, b.key)}")}
    return run, Finding(run.members[2], list(run.members), keys, reason, run.count, kill_at)


def elsewhere(before: tuple[str, ...], after: tuple[str, ...]) -> bool:
    """Whether two changes with the same arguments in the same order act on different
    targets: at some position both values are one token (a channel, a path, an id, a
    recipient) and they differ.

    >>> elsewhere(("announcements", "Status: paused"), ("help", "Soon, follow the feed"))
    True
    >>> elsewhere(("reviewer", "dataset v1: with trials"), ("reviewer", "dataset v2: without"))
    False
    """
    if len(before) != len(after):
        return False
    return any(
        old != new and len(old.split()) == 1 and len(new.split()) == 1
        for old, new in zip(before, after, strict=True)
    )


def handed_back(
    handoffs: dict[int, HandBacks],
    call: LoopCall,
    *,
    changed: int,
    warn_at: int,
    kill_at: int,
    max_handoffs: int,
) -> Finding | None:
    """Record the hand-back of ``call``, a hand-off that ran a sub-agent (``delegates``)
    and got its result (``digest``), in the run of its hand-off (its near-duplicate key
    and its numbers: the same sub-agent, the same task). The run goes on while the
    sub-agent hands back what it handed back the time before (the same digest: the
    volatile parts masked, counts kept) and the session changed no target it had not
    changed before (``changed``: distinct targets changed so far); a new result or a new
    change is progress and
    starts the run anew. A finding from ``warn_at`` hand-backs alike: the agents pass the
    task back and forth and none learns anything from another round. Keeps at most
    ``max_handoffs`` runs, the latest.

    >>> def back(seq, digest):
    ...     return LoopCall(seq, str(seq), "", 0, "transfer_to_sql_agent", 7, 7, 0,
    ...                     frozenset(), "transfer_to_sql_agent", False, frozenset(), (),
    ...                     False, False, 0, 0, 0, 0.0, digest=digest, delegates=True)
    >>> runs: dict[int, HandBacks] = {}
    >>> found = [handed_back(runs, back(i, d), changed=0, warn_at=3, kill_at=10,
    ...                      max_handoffs=8) for i, d in enumerate((5, 5, 6, 6, 6))]
    >>> [f is not None for f in found], runs[7].count
    ([False, False, False, False, True], 3)
    """
    key = call.key
    run = handoffs.pop(key, None)  # re-inserted below: the dict keeps the latest last
    if (
        run is None
        or run.digest != call.digest
        or run.members[-1].numbers != call.numbers  # another task: `angle 3`, not `angle 2`
        or changed > run.changed
    ):
        while len(handoffs) >= max_handoffs:
            del handoffs[next(iter(handoffs))]
        handoffs[key] = HandBacks(call.digest, changed, [call])
        return None
    handoffs[key] = run
    run.count += 1
    run.members.append(call)
    if len(run.members) > MAX_EVIDENCE:
        del run.members[1 : len(run.members) - MAX_EVIDENCE + 1]
    if run.count < warn_at:
        return None
    first = run.members[0]
    reason = (
        f"`{call.label}` handed the task to a sub-agent {run.count} times since step "
        f"{first.seq} and got the same result back each time, nothing new changed between: "
        "agents passing one task back and forth"
    )
    keys = {crc(f"handback\x1f{key}")}
    return Finding(run.members[1], list(run.members), keys, reason, run.count, kill_at)


def delegation_depth(open_calls: Iterable[LoopCall]) -> list[LoopCall]:
    """The distinct calls among ``open_calls`` (awaiting their results) that run a
    sub-agent (``delegates``: another agent reasoned while they were open), oldest
    first: how many agents are running under agents now.

    >>> calls = [LoopCall(i, str(i), "", 0, "Task", 1, i, 0, frozenset(), "Task", True,
    ...                   frozenset(), (), False, False, 0, 0, 0, 0.0, delegates=i < 3)
    ...          for i in range(5)]
    >>> [c.seq for c in delegation_depth(calls + calls[:2])]
    [0, 1, 2]
    """
    seen: dict[int, LoopCall] = {}
    for call in open_calls:
        if call.delegates:
            seen.setdefault(id(call), call)
    return sorted(seen.values(), key=lambda c: c.seq)
