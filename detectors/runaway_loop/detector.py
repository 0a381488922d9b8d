"""Runaway loops: a session repeating the same action cycle without progress.

Flags, over the last ``window`` tool calls: uninterrupted repetition of a cycle of up to
``max_period`` near-duplicate calls; retries of one tool that fail the same way, also while
their arguments change; calls with changing arguments answered the same; one request in
words re-worded back to back (a warning only, unless every answer was new). Progress
ends a loop: a result that changed, a wait that grew (polling with back-off), a failed
call that then works, a compaction (re-reading is how an agent recovers what a summary
dropped), a user turn giving the values a retry changed (the user corrected its input).

Reads tool calls (their near-duplicate key and canonical action:
:func:`features.calls.step_features.features_of`), tool results (status, error, result
text) and model calls (tokens and cost spent in the loop); no I/O, time from ``step.ts``.

Raises ``warn``/NOTIFY at ``warn_cycles`` occurrences of a cycle (one more for re-reads
answered the same, two more when the results are not recorded; earlier when the waste is
confirmed: the same failure again, or token burn of ``burn_ratio`` x the session's usual),
``critical``/KILL at ``critical_cycles`` (``critical_read_cycles`` for a cycle of reads
that neither failed) or once ``critical_tokens`` or ``critical_cost`` are spent since the
first repeat; each severity once per loop; onset = the first repeat; the last clean
checkpoint is attached. ``score``: where a rule fires, its alert's score (0.5 / 0.9 + 0.02
x cycles, at most 1), else 0.4 x repeats / repeats needed; ``thresholds``: ``warn`` 0.5,
``critical`` 0.9. The parameters' meaning: :class:`RunawayLoop`. State: bounded by
``window``; O(``max_period``) per update.

What counts as a loop and as progress, the severities, and why:
``docs/detectors/runaway_loop.md``.
>>> from detectors.testing import Session
>>> s = Session("doc", goal="Make the test suite pass")
>>> steps = [s.start()]
>>> for path in ("src/a.py", "src/b.py", "tests/test_a.py"):
...     steps += [s.model(), *s.tool("read_file", {"path": path})]
>>> for i in range(6):  # the same wrong edit, the same failing test, revert, again
...     steps.append(s.model(tokens_in=20_000 + 1_000 * i))
...     steps += s.tool("edit_file", {"path": "src/a.py", "old": "x + 1", "new": "x - 1"})
...     steps += s.tool("bash", {"command": "pytest -q"}, ok=False, error="1 failed")
...     steps += s.tool("bash", {"command": "git checkout -- src/a.py"})
>>> detector = RunawayLoop()
>>> for step in steps:
...     for alert in detector.update(step):
...         print(alert.raised_seq, alert.severity, alert.action, alert.onset_seq)
21 warn notify 18
42 critical kill 18
>>> detector.score, detector.thresholds  # the loop runs on: still at its kill
(1.0, {'warn': 0.5, 'critical': 0.9})
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from detectors.base import Checkpoints, Detector, StepRef, make_alert, remember
from detectors.registry import register
from detectors.runaway_loop.cycles import (
    best_period,
    current_cycle,
    judge_cycle,
    repeats,
    shows_progress,
)
from detectors.runaway_loop.progress import attempt, delegation_depth, handed_back, revisit
from detectors.runaway_loop.records import (
    Attempts,
    FailureChain,
    HandBacks,
    LoopCall,
    Revisits,
    SameAnswers,
)
from detectors.runaway_loop.retries import (
    Finding,
    add_failure,
    end_chains,
    reasked,
    retry_finding,
    same_answer,
)
from features.calls.action_keys import body_crc, crc, head_crc, near_key
from features.calls.information import (
    changed_targets,
    failure_shape,
    failure_tally,
    information_digest,
    wait_seconds,
)
from features.calls.step_features import features_of
from features.calls.unknown import result_unknown
from models.records import Action, Alert, Severity, Step, StepKind

__all__ = ["RunawayLoop", "near_key"]

# the state's records, under the names checkpoints pickle them by (detectors.runaway_loop.records)
_Call = LoopCall
_Chain = FailureChain
_Answers = SameAnswers
_Attempts = Attempts
_Revisits = Revisits
_HandBacks = HandBacks
# enum members bound once: a module global is cheaper than a class attribute lookup
_MODEL_CALL = StepKind.MODEL_CALL
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT
_CHECKPOINT = StepKind.CHECKPOINT
_COMPACTION = StepKind.COMPACTION
_START = StepKind.START
_CRITICAL = Severity.CRITICAL
_WARN = Severity.WARN
_HEAD = 120  # characters of a result's first line compared inside cycles
_BODY = 2_000  # characters of a result compared for the same call back-to-back
_MAX_CHAINS = 4
_MAX_OPEN = 64
_MAX_TURNS = 16
"""User turns the detector remembers having read (:meth:`RunawayLoop._user_turn`)."""
_TOLD_CHARS = 2_000
"""Characters of a new user turn kept for the call after it (:meth:`RunawayLoop._corrected`)."""
_MAX_FIRED = 32
_MAX_SERIES = 8  # checks whose failed runs are followed (progress.attempt)
_MAX_HANDOFFS = 8  # hand-offs whose hand-backs are followed (progress.handed_back)
_MAX_TARGETS = 512  # targets changed, remembered (the count of new ones is kept whole)
BUILDING = 0.4
"""The score a loop builds towards before a rule fires (0.4 x repeats / repeats needed),
below the warning's 0.5."""


@register
class RunawayLoop(Detector):
    """Flags a session repeating the same action cycle without progress.

    Contract: one instance per session, steps in ``seq`` order; no I/O, time from
    ``step.ts``; state bounded by ``window`` (never grows with the session). Raises
    ``warn``/NOTIFY, then ``critical``/KILL, each at most once per loop; onset = the
    first repeat; evidence = the repeated calls (≤ 20); a reason with counts and
    tokens. ``docs/detectors/runaway_loop.md`` says what counts as a loop and as progress.

    Parameters
    ----------
    window
        Tool calls remembered (novelty, cycles, evidence).
    max_period
        Longest cycle looked for (A-B-…, up to this many calls).
    warn_cycles
        Occurrences of a cycle that raise ``warn`` (3: the third identical call). One
        more is needed when the repeated calls' results are unknown.
    critical_cycles
        Occurrences of a cycle, or failures of a retry chain, that raise ``critical``.
    critical_read_cycles
        Occurrences that raise ``critical`` for a cycle made only of reads
        (:func:`features.calls.facts.read_tool`) that neither failed: such a loop burns
        tokens only (AgentDojo's healthy runs list the same files 5-16 times), so it
        is killed on twice the evidence, or on the token and cost limits.
    burn_ratio
        Token burn: mean output tokens of the model calls inside a repeated cycle, as a
        multiple of the session's mean before it, that confirms the waste early.
    critical_tokens
        Tokens (in + out) spent since the first repeat of one loop that raise ``critical``.
    critical_cost
        Dollars (``step.cost``) spent since the first repeat that raise ``critical``.
    wait_growth
        A call repeated back to back whose wait since its previous occurrence is this
        many times the previous wait (and ≥ 5 s longer) is polling with back-off, not a
        loop. Inside a longer cycle the gap is not a wait: applied there (before), the
        chance growth of a cycle's duration hid 2 of the 180 loops of seeds 7-43.
    """

    name: ClassVar[str] = "runaway_loop"
    thresholds_fixed = True

    def __init__(
        self,
        *,
        window: int = 40,  # room for 6 repeats of a 6-call cycle, and for novelty
        max_period: int = 6,  # fixtures: loop cycles have 1–3 calls; TRAIL: 1
        warn_cycles: int = 3,  # OpenLIT's 3; fixtures seeds 7+11: healthy runs repeat ≤ 2.5 cycles
        critical_cycles: int = 5,  # fixtures seeds 7+11: loops run 5–12 cycles
        critical_read_cycles: int = 10,  # twice the evidence for reads answered the same
        burn_ratio: float = 4.0,  # fixtures seeds 7+11: burn loops spend 16–25× usual
        critical_tokens: int = 1_000_000,  # ≈ $3 at $3/Mtok: stop the loop before it costs more
        critical_cost: float = 5.0,
        wait_growth: float = 1.5,  # fixtures: back-off polls wait 10→20→30 s, 5→10→20→40 s
        patience: int = 6,  # retries with growing waits tolerated: 2, 4, 8, 16, 32 s
        warn_delegations: int = 4,  # blind sets: healthy runs hold ≤ 2 sub-agents open, loops 6-15
        critical_delegations: int = 8,
    ) -> None:
        self.window = window
        self.max_period = max_period
        self.warn_cycles = warn_cycles
        self.critical_cycles = critical_cycles
        self.critical_read_cycles = critical_read_cycles
        self.burn_ratio = burn_ratio
        self.critical_tokens = critical_tokens
        self.critical_cost = critical_cost
        self.wait_growth = wait_growth
        self.patience = patience
        self.warn_delegations = warn_delegations
        self.critical_delegations = critical_delegations
        if max_period < 1:
            raise ValueError(f"max_period must be >= 1, got {max_period}")
        if window < 2 * max_period + 1:
            raise ValueError(f"window must be >= 2 * max_period + 1, got {window}")
        if warn_cycles < 2:
            raise ValueError(f"warn_cycles must be >= 2, got {warn_cycles}")
        if critical_cycles < warn_cycles:
            raise ValueError(
                f"critical_cycles must be >= warn_cycles ({warn_cycles}), got {critical_cycles}"
            )
        if critical_read_cycles < critical_cycles:
            raise ValueError(
                f"critical_read_cycles must be >= critical_cycles ({critical_cycles}), "
                f"got {critical_read_cycles}"
            )
        if burn_ratio <= 1:
            raise ValueError(f"burn_ratio must be > 1, got {burn_ratio}")
        if critical_tokens < 1:
            raise ValueError(f"critical_tokens must be >= 1, got {critical_tokens}")
        if critical_cost <= 0:
            raise ValueError(f"critical_cost must be > 0, got {critical_cost}")
        if wait_growth <= 1:
            raise ValueError(f"wait_growth must be > 1, got {wait_growth}")
        if patience < 2:
            raise ValueError(f"patience must be >= 2, got {patience}")
        if warn_delegations < 2:
            raise ValueError(f"warn_delegations must be >= 2, got {warn_delegations}")
        if critical_delegations < warn_delegations:
            raise ValueError(
                f"critical_delegations must be >= warn_delegations ({warn_delegations}), "
                f"got {critical_delegations}"
            )
        self._reset()

    def _reset(self) -> None:
        self._session_id = ""
        self._calls: deque[LoopCall] = deque(maxlen=self.window)
        self._seen: dict[int, int] = {}  # near key → calls in the window with it
        self._runs = [0] * (self.max_period + 1)  # [p]: calls equal to the call p before
        self._open: dict[str, LoopCall] = {}  # call id and step id → call awaiting its result
        self._chains: dict[int, FailureChain] = {}  # error → chain of failures
        self._answers: SameAnswers | None = None  # the current run of the same answer
        self._asked: list[LoopCall] = []  # the current run of one request re-worded
        self._asked_count = 0
        self._novel = 0
        self._last_changes: deque[LoopCall] = deque(maxlen=2)  # successful changes
        self._revisits: Revisits | None = None  # the current run of A-B-A-B changes
        # a compaction or a new user turn since the last call: the next call repeats nothing
        self._fresh = False
        self._tokens = 0
        self._out_tokens = 0
        self._models = 0
        self._cost = 0.0
        # the totals at the last tool result: a call's tokens include the model call
        # that chose it
        self._mark: tuple[int, int, int, float] = (0, 0, 0, 0.0)
        # loop identity → (severity raised: 1 warn, 2 critical; the loop's onset)
        self._fired: dict[int, tuple[int, LoopCall]] = {}
        self._checkpoints = Checkpoints()
        self._series: dict[int, Attempts] = {}  # exact check → its failed runs alike
        self._handoffs: dict[int, HandBacks] = {}  # hand-off → its hand-backs alike
        self._targets: dict[str, None] = {}  # targets changed (the latest _MAX_TARGETS)
        self._changed = 0  # distinct targets changed so far (new ones only)
        self._waited = 0.0  # seconds of deliberate waits the session's calls made
        self._results = 0  # tool results seen
        self._score = 0.0  # the strongest loop evidence at the latest call or result
        self._turns: dict[int, None] = {}  # CRCs of the user turns read (the latest few)
        self._told: str | None = None  # a new user turn's text, until the next call

    @property
    def thresholds(self) -> dict[str, float]:
        """Where the alerts' scores start: ``warn`` 0.5, ``critical`` 0.9."""
        return {"warn": 0.5, "critical": 0.9}

    def _building(self, count: float, needed: int) -> None:
        """Evidence below the warning: ``count`` repeats of the ``needed``, at most BUILDING."""
        score = BUILDING * min(1.0, count / needed)
        if score > self._score:
            self._score = score

    # -- update ----------------------------------------------------------------------

    def update(self, step: Step) -> list[Alert]:
        if not self._session_id:
            self._session_id = step.session_id
        kind = step.kind
        if kind == _MODEL_CALL:
            out = step.tokens_out or 0
            self._tokens += (step.tokens_in or 0) + out
            self._out_tokens += out
            self._models += 1
            self._cost += step.cost or 0.0
            self._user_turn(features_of(step).goal)
            return self._delegating(step) if self._open else []
        if kind == _TOOL_CALL:
            return self._on_call(step)  # a repeat holds the score, a new action ends it
        if kind == _TOOL_RESULT:
            self._score = 0.0  # each result is judged anew
            return self._on_result(step)
        if kind == _CHECKPOINT:
            self._checkpoints.update(step)
        elif kind == _START and self._open:
            return self._delegating(step)  # a sub-agent starts under an open call
        elif kind == _COMPACTION:
            # the context was compacted: re-reading what it held is how an agent recovers
            # it, so the first call after it repeats nothing (a loop that goes on is seen
            # anew from there)
            self._afresh()
        return []

    def _afresh(self) -> None:
        """The next call repeats nothing, and the runs of the same answer and of one
        request re-worded end (after a compaction, a user's correction)."""
        self._fresh = True
        self._answers = None
        self._asked, self._asked_count = [], 0

    def _user_turn(self, text: str | None) -> None:
        """Note a user turn the session has not read before (``text``: a model call's
        request, :attr:`~features.calls.step_features.StepFeatures.goal`) for the next
        call (:meth:`_corrected`). Keyed by a CRC of the text (a runtime that resends the
        request on every model call brings it once); the latest :data:`_MAX_TURNS` kept."""
        if not text:
            return
        key = crc(text)
        if key in self._turns:
            return
        remember(self._turns, key, None, _MAX_TURNS)
        self._told = text[:_TOLD_CHARS].lower()

    def _corrected(self, call: LoopCall) -> bool:
        """Whether ``call``, the first after a new user turn, repeats the latest call of its
        tool with only values that turn gave changed: the user corrected the input ("the zip is
        39878") and the agent tries again with it - news it did not find itself, not a
        blind retry. The failure chains and the runs of repeated calls, re-worded
        requests and the same answer then start again from it. A turn that gives none of
        the changed values (a planning prompt that restates the task) ends nothing."""
        told, self._told = self._told, None
        if not told:
            return False
        before = next((c for c in reversed(self._calls) if c.tool == call.tool), None)
        if before is None:
            return False
        changed = [v for v in call.values if v not in before.values]
        return bool(changed) and all(len(v) >= 2 and v.lower() in told for v in changed)

    def _on_call(self, step: Step) -> list[Alert]:
        action = step.action or step.tool
        if not action:
            return []
        calls = self._calls
        # the previous call's result never came: judge its cycle now
        alerts = self._check_cycle(step) if calls and not calls[-1].checked else []
        features = features_of(step)
        key, words, exact, label = features.action
        if features.unknown_arguments:
            # arguments not recorded or masked: unknown is never equal, so the call
            # repeats none (a key of its own, below every crc32) and says no words
            key = exact = -1 - step.seq
            words = frozenset()
        names, values = features.arguments
        seen = self._seen
        novel = key not in seen
        self._novel += novel
        tokens, out_tokens, models, cost = self._mark
        # positional, in field order: a third of the cost of 15 keywords, once per call
        call = LoopCall(
            step.seq,
            step.step_id,
            step.source_ref,
            step.ts,
            step.tool or "?",
            key,
            exact,
            features.numbers,
            words,
            label,
            novel,
            names,
            values,
            features.reads,
            features.acts,
            tokens,
            out_tokens,
            models,
            cost,
        )
        arguments = step.arguments or ""
        self._waited += wait_seconds(call.tool, arguments)
        call.wait = self._waited
        call.results_at = self._results
        effect = features.effect
        if features.acts or effect[1]:
            call.changes = True
            call.targets = changed_targets(arguments, features.mutation_targets) or frozenset(
                {f"#{exact}"}  # no target named: the change itself is its own
            )
        if self._told is not None and self._corrected(call):
            self._chains.clear()
            self._afresh()
        n = len(calls)
        runs = self._runs
        if novel or self._fresh:
            self._fresh = False
            self._score = 0.0
            # no call in the window has its key, so it repeats none of the last
            # max_period calls (window > max_period): every run ends
            for p in range(1, len(runs)):
                runs[p] = 0
        else:
            wait_growth = self.wait_growth
            for p in range(1, len(runs)):
                if p <= n and calls[n - p].key == key and repeats(calls, call, p, wait_growth):
                    runs[p] += 1
                else:
                    runs[p] = 0
        if n == calls.maxlen:
            old = calls[0].key
            seen[old] -= 1
            if not seen[old]:
                del seen[old]
        calls.append(call)
        seen[key] = seen.get(key, 0) + 1
        # a result names its call by call id, or only by parent step id (TRAIL spans)
        self._open["s:" + step.step_id] = call
        if step.call_id:
            self._open["c:" + step.call_id] = call
        while len(self._open) > _MAX_OPEN:
            del self._open[next(iter(self._open))]
        if any(runs):  # else no call repeats and the cycle rules have nothing to judge
            alerts += self._check_cycle(step, settled=False)
        view = features.view
        alerts += self._reasked(step, call, view is not None and bool(view.commands))
        return alerts

    def _on_result(self, step: Step) -> list[Alert]:
        self._mark = (self._tokens, self._out_tokens, self._models, self._cost)
        self._results += 1
        call = None
        if step.call_id:
            call = self._open.get("c:" + step.call_id)
        if call is None and step.parent_step_id:
            call = self._open.get("s:" + step.parent_step_id)
        if call is None:
            return []
        self._open.pop("s:" + call.step_id, None)
        if step.call_id:
            self._open.pop("c:" + step.call_id, None)
        call.status = step.status
        if step.status == "cancelled":
            # The runtime cancelled the call before it ran (a sibling of its parallel
            # batch failed): no failure of its own, no success, and its error text is the
            # runtime's, not a result. The call stays in the window, its result unknown.
            if self._calls and self._calls[-1] is call:
                if any(self._runs):
                    return self._check_cycle(step)
                call.checked = True
            return []
        failed = step.status == "error"
        text = step.error if failed and step.error else step.result
        if step.ts > call.ts:
            call.took = (step.ts - call.ts) / 1e9
        masked = result_unknown(text)
        if masked:
            # a placeholder says nothing: never the same answer or error as another, so
            # a result of its own (as the publisher's digests differ) - never "no change"
            text = None
            call.head = call.body = head_crc(f"\x00masked result of call {call.seq}")
        # what it told the agent: the error and the output a failure printed
        said = f"{text}\n{step.result}" if failed and text and step.result else text or ""
        if said:
            call.digest = information_digest(said) or 1
            if failed:
                call.shape = failure_shape(said) or 1
                call.tally = failure_tally(said)
        if text:
            # text.lstrip()[:_BODY] without copying a long result whole: a prefix holding
            # a non-space character strips the same; only all-space prefixes need more
            start = text[: 2 * _BODY].lstrip()
            if len(start) < _BODY and len(text) > 2 * _BODY:
                start = text.lstrip()
            call.head = information_digest(start[:_HEAD].partition("\n")[0])
            # digits dropped, not the regex (~10 µs per KB): clocks and ids in a body
            # must not pass for progress; the first line keeps a poll's counters
            call.body = body_crc(start[:_BODY])
            if said is not text:
                # a failure's first line is its error (`exit status 1`); what it printed
                # says whether the world moved (`2 of 6 ready` after `1 of 6`)
                call.head = call.digest
        if any(self._runs):  # only a running repeat can show progress
            self._progress(call)
        # the error signature and text ignore leading space: the unstripped text will do
        if failed:
            self._answers = None
            # the output is part of how it failed: `2 of 6 ready` after `1 of 6` is the
            # world moving, not the same failure again
            alerts = [] if masked else self._on_failure(step, call, said, text or "")
            if not masked and call.shape:
                alerts += self._attempted(step, call)
        else:
            if call.changes:
                self._changed_targets(call)
                alerts = self._revisited(step, call)
            else:
                alerts = []
            alerts += self._on_success(call)
            alerts += self._same_answer(step, call, text or "")
            if call.delegates and call.digest and not masked:
                alerts += self._handed_back(step, call)
        if self._calls and self._calls[-1] is call:
            if any(self._runs):
                alerts += self._check_cycle(step)
            else:
                call.checked = True  # what _check_cycle marks, with nothing to judge
        return alerts

    def _progress(self, call: LoopCall) -> None:
        """Reset the runs ``call`` extends when its result shows progress
        (:func:`~detectors.runaway_loop.cycles.shows_progress`)."""
        calls = self._calls
        n = len(calls)
        i = n - 1
        while i >= 0 and calls[i] is not call:
            i -= 1
        if i < 0:
            return
        for p in range(1, self.max_period + 1):
            if not self._runs[p] or i < p or n - 1 - i >= self._runs[p]:
                continue
            if shows_progress(calls, i, p):
                self._runs[p] = 0

    # -- progress (detectors.runaway_loop.progress) ------------------------------------

    def _changed_targets(self, call: LoopCall) -> None:
        """A change worked: count the targets it changed that none had before."""
        targets = self._targets
        for target in call.targets:
            if target in targets:
                continue
            self._changed += 1
            targets[target] = None
            while len(targets) > _MAX_TARGETS:
                del targets[next(iter(targets))]

    def _revisited(self, step: Step, call: LoopCall) -> list[Alert]:
        """A change worked: the A-B-A-B rule (:func:`~.progress.revisit`)."""
        self._revisits, finding = revisit(
            self._last_changes,
            self._revisits,
            call,
            warn_at=self.warn_cycles,
            kill_at=self.critical_read_cycles,
        )
        self._last_changes.append(call)
        return [] if finding is None else self._emit(step, finding)

    def _attempted(self, step: Step, call: LoopCall) -> list[Alert]:
        """A failed run of a check: the attempts rule (:func:`~.progress.attempt`)."""
        calls = self._calls
        n = len(calls)
        i = n - 1
        while i >= 0 and calls[i] is not call:
            i -= 1
        j = i - 1
        while j >= 0 and calls[j].exact != call.exact:
            j -= 1
        between = [calls[k] for k in range(j + 1, i)] if j >= 0 else []
        finding = attempt(
            self._series,
            call,
            changed=self._changed,
            between=between,
            warn_at=self.warn_cycles,
            max_series=_MAX_SERIES,
        )
        if finding is None:
            return []
        # the same loop may also be a cycle or a retry chain: one identity, one alert
        cycle = current_cycle(calls, self._runs)
        if cycle is not None:
            finding.keys.add(cycle[0])
        finding.keys.update(c.chain for c in finding.evidence if c.chain)
        return self._emit(step, finding)

    def _handed_back(self, step: Step, call: LoopCall) -> list[Alert]:
        """A sub-agent handed its result back: the hand-off rule
        (:func:`~.progress.handed_back`)."""
        finding = handed_back(
            self._handoffs,
            call,
            changed=self._changed,
            warn_at=self.warn_cycles,
            kill_at=self.critical_read_cycles,
            max_handoffs=_MAX_HANDOFFS,
        )
        if finding is None:
            return []
        # the same loop may also be a cycle: one identity, one alert
        cycle = current_cycle(self._calls, self._runs)
        if cycle is not None:
            finding.keys.add(cycle[0])
        return self._emit(step, finding)

    def _delegating(self, step: Step) -> list[Alert]:
        """Another agent reasons (a model call, a sub-agent's start) while calls are
        open and results keep coming: the open calls run sub-agents. Alerts on the
        number running under open calls at once (:func:`~.progress.delegation_depth`)."""
        results = self._results
        marked = False
        for call in self._open.values():
            if not call.delegates and (results > call.results_at or step.kind == _START):
                call.delegates = marked = True
        if not marked:
            return []
        running = delegation_depth(self._open.values())
        depth = len(running)
        if depth < self.warn_delegations:
            return []
        critical = depth >= self.critical_delegations
        reason = (
            f"{depth} sub-agents are running at once, each started by a call still waiting "
            f"for its result (`{running[0].label}` … `{running[-1].label}`): agents "
            "spawning agents"
        )
        keys = {crc(f"delegation\x1f{running[0].seq}")}
        finding = Finding(running[1], running, keys, reason, depth, warn_only=False)
        severity = _CRITICAL if critical else _WARN
        return self._raise(
            step, keys, severity, finding.onset, running, reason + self._spend(finding.onset), depth
        )

    # -- the rules judged by results (detectors.runaway_loop.retries) --------------------------

    def _on_success(self, call: LoopCall) -> list[Alert]:
        if self._chains:
            end_chains(self._chains, call)
        return []

    def _on_failure(self, step: Step, call: LoopCall, said: str, error: str) -> list[Alert]:
        """``said``: the error and what the failure printed; ``error``: the error alone."""
        calls = self._calls
        i = len(calls) - 1
        while i >= 0 and calls[i] is not call:
            i -= 1
        j = i - 1
        while j >= 0 and calls[j].exact != call.exact:
            j -= 1
        before = calls[j] if j >= 0 else None  # the same call's last run: O(window)
        if before is not None:
            call.since = call.wait - before.wait
        # what it printed tells the failures apart where only its counts moved (`2 of 6
        # ready` after `1 of 6`: the world moving); printed otherwise in words (another
        # test failing beside the same one), it is the same error again
        reworded = before is not None and before.status == "error" and before.shape != call.shape
        text = error if reworded and error else said
        chain = add_failure(self._chains, call, text, self._novel, _MAX_CHAINS, before)
        call.news = chain.moved and chain.first is call
        self._building(chain.count, self.warn_cycles)
        finding = retry_finding(chain, call, self.warn_cycles, self.patience)
        if finding is None:
            return []
        # the same loop may also be a cycle: one identity, one alert
        cycle = current_cycle(self._calls, self._runs)
        if cycle is not None and cycle[1] <= call.seq:
            finding.keys.add(cycle[0])
        return self._emit(step, finding)

    def _same_answer(self, step: Step, call: LoopCall, text: str) -> list[Alert]:
        self._answers, finding = same_answer(
            self._answers,
            call,
            text,
            warn_cycles=self.warn_cycles,
            critical_read_cycles=self.critical_read_cycles,
        )
        answers = self._answers
        if answers is not None and answers.count >= 2 and answers.members[-1] is call:
            self._building(answers.count, self.warn_cycles)  # the run grew by this call
        return [] if finding is None else self._emit(step, finding)

    def _reasked(self, step: Step, call: LoopCall, command: bool) -> list[Alert]:
        self._asked, self._asked_count, finding = reasked(
            self._asked, self._asked_count, call, command=command, warn_cycles=self.warn_cycles
        )
        asked = self._asked
        if self._asked_count >= 2 and asked and asked[-1] is call:
            self._building(self._asked_count, self.warn_cycles + 1)  # the run grew by it
        return [] if finding is None else self._emit(step, finding)

    # -- cycles ----------------------------------------------------------------------

    def _check_cycle(self, step: Step, *, settled: bool = True) -> list[Alert]:
        """The cycle rule (:func:`~detectors.runaway_loop.cycles.judge_cycle`) on ``step``.
        ``settled``: the latest call's result is in (or will not come)."""
        calls = self._calls
        if settled:
            calls[-1].checked = True
        if not any(self._runs):
            return []  # no call repeats: the common case
        best = best_period(self._runs, least=2)
        if best is None:
            return []
        self._building(1 + best[1] / best[0], self.warn_cycles)
        finding = judge_cycle(
            calls,
            self._runs,
            settled=settled,
            warn_cycles=self.warn_cycles,
            critical_cycles=self.critical_cycles,
            critical_read_cycles=self.critical_read_cycles,
            models=self._models,
            out_tokens=self._out_tokens,
            burn_ratio=self.burn_ratio,
            patience=self.patience,
        )
        if finding is None:
            return []
        severity = self._severity(finding.cycles, finding.onset, finding.kill_at)
        reason = finding.reason + self._spend(finding.onset)
        return self._raise(
            step, finding.keys, severity, finding.onset, finding.evidence, reason, finding.cycles
        )

    # -- alerts ----------------------------------------------------------------------

    def _emit(self, step: Step, finding: Finding) -> list[Alert]:
        """The alert of a result rule's finding (severity from the limits; the spend)."""
        onset = finding.onset
        severity = (
            _WARN if finding.warn_only else self._severity(finding.count, onset, finding.kill_at)
        )
        reason = finding.reason + self._spend(onset)
        return self._raise(
            step, finding.keys, severity, onset, finding.evidence, reason, finding.count
        )

    def _severity(self, cycles: int, onset: LoopCall, kill_at: int | None = None) -> Severity:
        spent = self._tokens - onset.tokens
        cost = self._cost - onset.cost
        if (
            cycles >= (self.critical_cycles if kill_at is None else kill_at)
            or spent >= self.critical_tokens
            or cost >= self.critical_cost
        ):
            return _CRITICAL
        return _WARN

    def _spend(self, onset: LoopCall) -> str:
        spent = self._tokens - onset.tokens
        cost = self._cost - onset.cost
        text = f"; {spent:,} tokens since the first repeat at step {onset.seq}" if spent else ""
        return text + (f" (${cost:,.2f})" if cost else "")

    def _raise(
        self,
        step: Step,
        keys: set[int],
        severity: Severity,
        onset: LoopCall,
        evidence: list[LoopCall],
        reason: str,
        cycles: int,
    ) -> list[Alert]:
        level = 2 if severity == _CRITICAL else 1
        critical = level == 2
        score = min(1.0, (0.9 if critical else 0.5) + 0.02 * cycles)
        if score > self._score:
            self._score = score  # the rules' verdict, reported before or not
        known = [self._fired[k] for k in keys if k in self._fired]
        if any(f[0] >= level for f in known):
            return []
        if known:
            onset = known[0][1]  # escalating a loop already reported: keep its onset
        for k in sorted(keys):
            self._fired.pop(k, None)  # re-insert: the dict keeps the newest loops
            self._fired[k] = (level, onset)
        while len(self._fired) > _MAX_FIRED:
            del self._fired[next(iter(self._fired))]
        return [
            make_alert(
                self.name,
                onset=self._ref_of(onset),
                raised=step,
                evidence=[self._ref_of(c) for c in evidence if c is not onset],
                score=score,
                severity=severity,
                reason=reason,
                action=Action.KILL if critical else Action.NOTIFY,
                checkpoint_id=self._checkpoints.before(onset.seq) if critical else None,
            )
        ]

    def _ref_of(self, call: LoopCall) -> StepRef:
        return StepRef(self._session_id, call.step_id, call.seq, call.ts, call.source_ref)
