"""Cycle rules of :mod:`detectors.runaway_loop.detector`: pure functions over the window of calls.

The detector keeps the last calls (:class:`~detectors.runaway_loop.records.LoopCall`) and, per
period ``p``, the length of the current run of calls equal to the call ``p`` before
(``runs[p]``). These functions judge that window; they change nothing but what they
return:

- :func:`near` — near-same calls (the arguments that changed share their words);
- :func:`repeats` — whether a new call extends the run at period ``p`` (not after a
  success with other numbers, not polling with a growing wait);
- :func:`shows_progress` — whether a call's result ends the run it is in (a failed call
  worked, or the same call got a new answer);
- :func:`best_period`, :func:`current_cycle`, :func:`cycle_key` — the longest run and
  the cycle's identity;
- :func:`confirmed` — why one repeat is already waste (the same failure again, a replay
  of what failed, token burn);
- :func:`judge_cycle` — the cycle rule: a :class:`CycleFinding` or None.

Each is O(window) at most; no state, no I/O, no clock.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from detectors.runaway_loop.patience import MIN_WAIT, patient
from detectors.runaway_loop.records import LoopCall
from detectors.runaway_loop.rules import critical_needed
from features.calls.action_keys import crc

__all__ = [
    "CycleFinding",
    "best_period",
    "confirmed",
    "current_cycle",
    "cycle_key",
    "judge_cycle",
    "near",
    "repeats",
    "request_words",
    "shows_progress",
]

SECOND = 1_000_000_000
NEAR = 0.5  # share of the changed arguments' words that makes two calls near-same
MIN_BURN = 1_000  # output tokens a call below which nothing is "burnt"
MAX_SHOWN = 3  # calls of a cycle a reason names
POLL_CYCLES = 3  # cycles more a poll that waits each time needs before it warns
_MOVES_RE = re.compile(r"\b(?:swipe|scroll|fling|wheel|page_?(?:down|up)|wait)\b")
_LOOKS_RE = re.compile(r"\bscreenshot\b")


def moves_on(cycle: Sequence[LoopCall]) -> bool:
    """Whether a cycle only moves through what is on screen - a swipe, a scroll, a page
    down, a wait (the GUI action spaces of adb ``input swipe``, computer use, mobile MCP,
    BrowserGym) - and looks (a screenshot), one move at least: repeating such a call
    moves on by design, as a poll waits. With no observation recorded nothing says the
    screen stopped changing, so it gets a poll's allowance
    (:data:`POLL_CYCLES`), a bounded count: scrolling on and on still warns.

    >>> from detectors.runaway_loop.records import LoopCall
    >>> def c(label):
    ...     return LoopCall(0, "", "", 0, "t", 0, 0, 0, frozenset(), label, True, frozenset(),
    ...                     (), True, False, 0, 0, 0, 0.0)
    >>> moves_on([c("shell adb -s <n> shell input swipe <n> <n> <n> <n>")])
    True
    >>> moves_on([c("computer screenshot"), c("computer scroll")])
    True
    >>> moves_on([c("computer screenshot")])
    False
    >>> moves_on([c("shell adb shell input tap <n> <n>")])
    False
    """
    moves = False
    for call in cycle:
        label = call.label.lower()
        if _MOVES_RE.search(label):
            moves = True
        elif not _LOOKS_RE.search(label):
            return False
    return moves


BLOCKING = 30.0  # seconds a repeated call runs, on average, that make it a wait of its own


def near(a: LoopCall, b: LoopCall) -> bool:
    """Near-same calls: the same tool, and the arguments that differ mostly share their
    words (containment, so ``npm install`` ~ ``rm -rf node_modules && npm install``).
    Arguments equal in both (a working directory, a timeout) are left out: they would
    make any two commands of one shell look alike."""
    if a.tool != b.tool:
        return False
    if a.key == b.key:
        return True
    only_a, only_b = a.words - b.words, b.words - a.words
    changed = {w.partition(":")[0] for w in only_a | only_b}
    wa = {w for w in a.words if w.partition(":")[0] in changed}
    wb = {w for w in b.words if w.partition(":")[0] in changed}
    small = min(len(wa), len(wb))
    return small > 0 and len(wa & wb) / small >= NEAR


def request_words(request: str) -> tuple[str, ...]:
    """A request's words, lower-cased, quotes and punctuation dropped, in sorted order:
    the same request re-ordered or re-quoted gives the same words.

    >>> request_words('"bird species" in Lisbon?') == request_words("in Lisbon: bird species")
    True
    """
    return tuple(sorted(w.strip("\"'?!,.:;()[]") for w in request.lower().split()))


def cycle_key(cycle: Sequence[LoopCall]) -> int:
    """A cycle's identity whatever call it is entered at (B-C-A is A-B-C)."""
    return crc("\x1f".join(str(k) for k in sorted({c.key for c in cycle})))


def repeats(calls: Sequence[LoopCall], call: LoopCall, p: int, wait_growth: float) -> bool:
    """Whether ``call`` (not yet in ``calls``) repeats the call ``p`` before it, with no
    sign of progress."""
    n = len(calls)
    prev = calls[n - p]
    if prev.key != call.key:
        return False
    if prev.status != "error" and prev.numbers != call.numbers:
        # canonical signatures hide numbers (they are noise in *retries*); after a
        # success, a call with other numbers tries something new (answers, pages)
        return False
    if prev.status == "error" and any(
        calls[j].key == call.key and calls[j].status == "ok" and calls[j].numbers != call.numbers
        for j in range(n - p + 1, n)
    ):
        # the failed call worked since, and this one names another target (batch 0
        # pushed after its retries, now batch 1): the work moved on, nothing repeats
        return False
    if n >= 2 and calls[n - 1].key == call.key and calls[n - 2].key == call.key:
        # Polling with back-off: the wait between back-to-back repeats grew. Only
        # back to back is the gap the agent's wait: inside a longer cycle it is the
        # other calls' and the model's time, which varies by chance (14 s, then
        # 21 s), and a deliberate wait there is a call of its own (``sleep 20``),
        # whose changed numbers already make it a new action.
        last, before = calls[n - 1], calls[n - 2]
        gap, prev_gap = call.ts - last.ts, last.ts - before.ts
        if gap >= wait_growth * prev_gap and gap - prev_gap >= 5 * SECOND:
            return False
    return True


SEEN_RUNS = 3
"""Earlier runs of a cycle's call an answer is compared with: an answer one of them gave
is no news."""


def shows_progress(calls: Sequence[LoopCall], i: int, p: int) -> bool:
    """Whether the result of ``calls[i]`` shows progress against the call ``p`` before
    it: a failed call now worked, or the same call gave a new answer - one that neither
    the run before nor the :data:`SEEN_RUNS` before that gave. Back-to-back
    (period 1) any new answer counts: polling a changing world, re-reading a file that
    changed. Inside a longer cycle only the first line does (a poll's state, an exit
    code, a page's title): there the bodies of re-fetched pages and search results
    change for reasons that are not progress (rotating content, snippets, clocks)."""
    call, prev = calls[i], calls[i - p]
    if prev.exact != call.exact:
        return False
    worked = prev.status == "error" and call.status != "error"
    # back to back is the call just before being this same call, whatever the period:
    # a run of one call read 6 times also matches at period 2
    back_to_back = p == 1 or calls[i - 1].exact == call.exact
    # back to back, what the whole result says (its volatile parts masked, short counts
    # kept: ``3 of 20`` after ``2 of 20`` is the world moving; a new chunk id is not)
    answered = (
        call.head is not None
        and prev.head is not None
        and (call.head != prev.head or (back_to_back and call.digest != prev.digest))
    )
    if answered and not worked:
        # an answer this call gave before (a status flipping between ``failed`` and
        # ``up_for_retry`` after each re-run) is no news: progress is what was not seen
        for back in range(2, SEEN_RUNS + 2):
            k = i - back * p
            if k < 0:
                break
            seen = calls[k]
            if seen.exact == call.exact and seen.head == call.head and (
                not back_to_back or seen.digest == call.digest
            ):
                return False
    return worked or answered


def best_period(runs: Sequence[int], least: int | None = None) -> tuple[int, int] | None:
    """(period, run) of the longest current run of at least ``least`` repeated calls
    (default: one full repeat of the cycle); ``runs[p]`` is the run at period ``p``.

    >>> best_period([0, 0, 3, 1]), best_period([0, 1, 0, 0]), best_period([0, 1, 0], least=2)
    ((2, 3), (1, 1), (1, 1))
    """
    best = None
    longest = 0
    for p in range(1, len(runs)):
        run = runs[p]
        if run >= (p if least is None else min(p, least)) and run > longest:
            best, longest = p, run
    return None if best is None else (best, longest)


def current_cycle(calls: Sequence[LoopCall], runs: Sequence[int]) -> tuple[int, int] | None:
    """(identity, seq of its first call) of the current cycle, if any."""
    best = best_period(runs)
    if best is None:
        return None
    p, run = best
    n = len(calls)
    held = held_repeats(n, p, run)
    if held is None:
        return None
    cycle = [calls[n - held - p + j] for j in range(p)]
    return cycle_key(cycle), cycle[0].seq


def held_repeats(n: int, p: int, run: int) -> int | None:
    """How many of a run's ``run`` repeated calls the window of ``n`` calls still holds
    behind one whole cycle of period ``p``: a run outlives the bounded window (an
    identical poll repeated for hours), its count does not. None when the window holds
    less than one cycle.

    >>> held_repeats(40, 1, 12), held_repeats(40, 1, 300), held_repeats(40, 2, 300)
    (12, 39, 38)
    >>> held_repeats(3, 4, 9) is None
    True
    """
    held = min(run, n - p)
    return held if held >= 0 else None


def confirmed(
    cycle: Sequence[LoopCall],
    repeated: Sequence[LoopCall],
    *,
    models: int,
    out_tokens: int,
    burn_ratio: float,
) -> str:
    """Why one repeat of the cycle is already waste, or '' when it may not be. Token
    burn compares the model calls since the cycle's first occurrence (``models`` and
    ``out_tokens`` are the session's totals now) with the session's mean before it."""
    start = cycle[0]
    failed = {c.error for c in cycle if c.error}
    again = [c for c in repeated if c.error in failed]
    if again:
        return f"`{again[0].label}` failed again the same way"
    # a replay of what failed: the calls before the failed one repeated with the same
    # results (the same edit re-applied after its revert), and the failed call is
    # issued again, its result not in yet
    *done, pending = repeated
    before = cycle[len(done) % len(cycle)]
    if (
        len(cycle) >= 2
        and pending.status is None
        and before.error
        and all(
            c.body is not None and c.body == cycle[i % len(cycle)].body for i, c in enumerate(done)
        )
    ):
        return (
            f"`{pending.label}` is run again after it failed, with the same calls "
            "before it giving the same results"
        )
    spent_models = models - start.models
    if spent_models and start.models:
        usual = max(start.out_tokens / start.models, 1.0)
        burnt = (out_tokens - start.out_tokens) / spent_models
        if burnt >= burn_ratio * usual and burnt >= MIN_BURN:
            return (
                f"the model spent {burnt:,.0f} output tokens a call inside it, "
                f"{burnt / usual:.0f}× its usual {usual:,.0f}"
            )
    return ""


@dataclass(frozen=True, slots=True)
class CycleFinding:
    """A cycle judged waste: its onset (the first repeat), the cycle and its repeats
    (evidence), the loop's identities, the reason (without the spend), the cycles run
    (whole), and the cycles that kill it."""

    onset: LoopCall
    evidence: list[LoopCall]
    keys: set[int]
    reason: str
    cycles: int
    kill_at: int


def observed_same(cycle: Sequence[LoopCall], repeated: Sequence[LoopCall]) -> bool:
    """Whether the calls of a cycle that print something (a UI dump, a status) answered
    each repeat as the cycle did, whole (:attr:`~detectors.runaway_loop.records.LoopCall
    .digest`: a screenshot's progress bar on its second line counts), while the others
    printed nothing (``input tap``, ``input swipe``: actions whose effect only the next
    observation shows). The actions' silence is no evidence either way; the
    observations' sameness is: the taps changed nothing on the screen.

    >>> from detectors.runaway_loop.records import LoopCall
    >>> def c(digest):
    ...     return LoopCall(0, "", "", 0, "t", 0, 0, 0, frozenset(), "", True, frozenset(),
    ...                     (), True, False, 0, 0, 0, 0.0, status="ok", digest=digest)
    >>> cycle = [c(0), c(0), c(7)]
    >>> observed_same(cycle, [c(0), c(0), c(7), c(0)])
    True
    >>> observed_same(cycle, [c(0), c(0), c(8)]), observed_same(cycle, [c(0)])
    (False, False)
    """
    p = len(cycle)
    seen = False
    for i, call in enumerate(repeated):
        first = cycle[i % p]
        if (call.head is None) != (first.head is None) or call.status == "error":
            return False
        if call.digest or first.digest:
            if call.digest != first.digest:
                return False
            seen = True
    return seen


def judge_cycle(
    calls: Sequence[LoopCall],
    runs: Sequence[int],
    *,
    settled: bool,
    warn_cycles: int,
    critical_cycles: int,
    critical_read_cycles: int,
    models: int,
    out_tokens: int,
    burn_ratio: float,
    patience: int = 6,
) -> CycleFinding | None:
    """The cycle rule on the window ``calls`` (``runs`` its runs per period).
    ``settled``: the latest call's result is in (or will not come), so the count rule
    may judge it; before that, only hard evidence of waste (a repeat that failed the
    same way, token burn) may fire. ``patience``: repeats of one call, each waiting
    longer than the one before, that are patience, not waste."""
    best = best_period(runs, least=2)
    if best is None:
        return None
    p, run = best
    n = len(calls)
    held = held_repeats(n, p, run)
    if not held:  # the window holds no repeat behind the cycle
        return None
    cycles = 1 + run / p
    # what the rules below need, in O(1) before any list is built: an early
    # confirmation needs run >= p - 1 and exact repeats, the count rule a settled,
    # whole cycle repeated warn_cycles times (``needed`` is at least that)
    counts = settled and run >= p and cycles >= warn_cycles
    if run < p - 1 or not (
        counts
        or all(calls[n - held + i].exact == calls[n - held - p + i].exact for i in range(held))
    ):
        return None
    cycle = [calls[n - held - p + j] for j in range(p)]
    repeated = [calls[j] for j in range(n - held, n)]
    onset = repeated[0]
    # unknown results are no evidence of "no progress": then ask for Gemini CLI's
    # 5 identical consecutive calls (fixtures: healthy runs call `git diff --stat`
    # 4 times in a row, results unrecorded)
    known = all(c.head is not None or c.status == "error" for c in repeated) or observed_same(
        cycle, repeated
    )
    needed = warn_cycles if known else warn_cycles + 2
    # the same call answered the same, none failed: a re-read (after a compaction,
    # to check an edit, a status looked at again); a few are tolerated, one more
    # than a cycle needs (OpenLIT's "3 identical calls" fires on them)
    reread = p == 1 and known and not any(c.status == "error" for c in (*cycle, *repeated))
    if reread:
        needed += 1
    # a poll that waits each time (``sleep 60 && status``, a wait call in the cycle):
    # patience, for a bounded count - three cycles more (blind sets: healthy runs wait
    # on an alert or an export 3-6 times; stuck polls go on for dozens)
    # A call that itself blocks for long (a watch, a log window, a long timeout) waits
    # as a sleep does.
    repeats_run = run // p + 1
    polls = repeated[-1].wait - cycle[0].wait >= MIN_WAIT * repeats_run or (
        sum(c.took for c in repeated) >= BLOCKING * repeats_run
    )
    if polls or (not known and moves_on(cycle)):
        needed += POLL_CYCLES
    # early, after one repeat: only for exact repeats (an edit and its revert share
    # their words) with hard evidence of waste
    exact = all(c.exact == calls[n - held - p + i].exact for i, c in enumerate(repeated))
    # all but the last call of the cycle repeated exactly (E-T-C-E-T: the same edit,
    # the same test failing the same way), at least two calls
    # ... unless each repeat waited longer than the one before (back-off: patience)
    waits = [b.wait - a.wait for a, b in zip((cycle[0], *repeated), repeated, strict=False)]
    # ... or each repeat ran longer than the one before (a growing --timeout, a client
    # backing off inside the call; two at least, the results in). One call repeated is
    # judged so at any period: its answers may alternate (429, 503, 429) into a cycle of 2
    # (from the cycle's first call, or from its first repeat: a poll that saw progress
    # starts its back-off again)
    took = [c.took for c in (cycle[0], *repeated) if c.status is not None]
    one_call = all(c.exact == cycle[0].exact for c in cycle)
    if one_call and (
        (p == 1 and patient(waits, patience))
        or any(len(t) >= 2 and patient(t, patience) for t in (took, took[1:]))
    ):
        return None  # patience, for a bounded count (patient() is False past it)
    # ... or each run of the cycle started longer after the one before than that one did:
    # a back-off the recording shows only in its timestamps (restart, status; wait 20 s,
    # 70 s, 150 s ...), for the same bounded count
    gaps = [
        (b.ts - a.ts) / 1e9 for a, b in itertools.pairwise((cycle[0], *repeated[::p]))
    ]
    if len(gaps) >= 2 and patient(gaps, patience):
        return None
    # a poll whose answer just moved (the cycle's first call failed otherwise than its
    # run before) is looked at again: one answered repeat of the news confirms nothing yet
    fresh = one_call and cycle[0].news and len(took) < 3
    why = (
        confirmed(cycle, repeated, models=models, out_tokens=out_tokens, burn_ratio=burn_ratio)
        if exact and run >= p - 1 and not fresh
        else ""
    )
    if not why and (not settled or run < p or cycles < needed):
        return None
    shown = ", ".join(f"`{c.label}`" for c in cycle[:MAX_SHOWN])
    more = f" and {p - MAX_SHOWN} more" if p > MAX_SHOWN else ""
    what = f"the same call {shown}" if p == 1 else f"a cycle of {p} calls ({shown}{more})"
    reason = (
        f"{run + p} tool calls since step {cycle[0].seq} repeat {what}: "
        f"{cycles:g} cycles, no new action"
        + ("" if known else " (results not recorded)")
        + (", every answer the same" if reread else "")
        + (", waiting each time" if polls else "")
        + (f"; {why}" if why else "")
    )
    evidence = [*cycle, *repeated]
    kill_at = critical_needed(
        critical_cycles=critical_cycles,
        critical_read_cycles=critical_read_cycles,
        failed=any(c.error or c.status == "error" for c in evidence),
        # a cycle that changes nothing (reads, polls, status checks) burns tokens only
        reads_only=all(c.reads or not c.changes for c in cycle),
    )
    keys = {cycle_key(cycle)} | {c.chain for c in evidence if c.chain}
    return CycleFinding(onset, evidence, keys, reason, int(cycles), kill_at)
