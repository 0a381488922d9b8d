"""Runaway loops: a session repeating the same action cycle without progress.

What counts as a loop
---------------------
Two kinds of evidence, both over the recent tool calls only (a bounded window):

1. **Tandem cycles.** Every tool call gets a *near-duplicate key*: the words of its
   canonical action signature (``step.action``, volatile parts already normalised),
   each tagged with its argument (so an edit and its revert differ), lower-cased, word
   order ignored, dropping fragments that mix letters and digits (``npm-cache-bd5220``)
   but keeping pure numbers, which survived canonicalisation only as positions (line
   ranges, offsets, pages) — so paging through a file is not a loop, while
   ``q="nrg_ind_ren 2019 electricity"`` and ``q="electricity 2019 nrg_ind_ren"`` are
   the same call. For each period ``p`` in ``1..max_period`` the detector keeps the
   length of the current run of calls equal to the call ``p`` before (A-B-C-A-B-C…).
   Unlike OpenLIT's count of identical calls anywhere in the session (``git diff
   --stat`` between edits trips it) or Gemini CLI's *consecutive* identical calls
   (blind to A-B-A-B and to retries with a changed flag), only uninterrupted
   repetition counts.
2. **Retry after failure, judged by the result.** Failures of one tool with the same
   error *signature* (:func:`detectors.loop_rules.result_signature`: the call's own
   arguments echoed back, quoted spans, paths, URLs, ids and the numbers it passed
   masked) of near-same calls (the arguments that differ share ≥ half their words:
   ``npm install`` ~ ``rm -rf node_modules && npm install``) — or of calls that only
   vary their values (the same argument names: a query, a page, an offset, a flag's
   value) when the signature is specific enough to name one failure (``TypeError: …
   unexpected keyword argument <arg>``, not ``Exit code 1``). Changing arguments look
   like progress; the same answer to each is not. Such a chain ends when the tool
   works with other arguments (the agent is searching, not stuck). It fires at the
   second failure when nothing new was tried between them (TRAIL labels such a retry
   Resource Abuse), else once the failures outnumber the new calls tried between them
   by two (``pip config list`` between retries is a look, not a fix; an edit between
   test runs that keep failing is work). A success of a call the chain tried ends it:
   a transient failure, retried, is fine.
3. **One request re-worded.** Calls of one tool and shape back to back whose longest
   argument is a request in words (a query, a question, a task:
   :func:`detectors.loop_rules.is_request`; not a path, a URL or a command), each
   re-wording the one before, nothing else done with their answers: a warning at the
   fourth asking, or at the third when one asks again, in the same words re-ordered or
   re-quoted, what an earlier one of the run asked. Never a kill: re-wording may yet
   find something.

Exemptions (progress)
---------------------
- **Re-reads**: the same call answered the same, none failed (a file re-read after a
  compaction or to check an edit, a status looked at again) needs one cycle more than
  ``warn_cycles`` (the fourth identical call: OpenLIT's "3 identical calls" fires on
  the third). A compaction starts every run anew: re-reading is how an agent recovers
  what the summary dropped. One call repeated back to back whose body changed made
  progress at every period (a file read 6 times over its edits also matches at 2).
- **Polling**: an identical call whose result changed, or, repeated back to back,
  whose wait since its previous occurrence grew by ``wait_growth`` (back-off), resets
  the run: the world is changing, or the agent is waiting for it to. Back to
  back (period 1) any change of the result counts (digits dropped past the first line,
  so clocks do not); inside a longer cycle only the first line does (a status, an exit
  code, a page title), because re-fetched pages and search snippets change for reasons
  that are not progress.
- A failed call followed by a success of the same call resets the run.
- After a success, a call that differs only in numbers is a new action (trying other
  answers or pages), though canonical signatures hide numbers (noise in *retries*).
- Calls whose results are not recorded cannot show progress or its absence: they
  need Gemini CLI's 5 consecutive repeats (``warn_cycles + 2``).
- A call the runtime cancelled before it ran (status ``cancelled``: Claude Code cancels
  the siblings of a parallel call that failed) neither failed nor worked: it starts no
  retry chain and ends none, and its result counts as not recorded.

Severity
--------
- ``warn`` (NOTIFY) when a cycle has run ``warn_cycles`` times (default 3: the third
  identical call, the OpenLIT count, but consecutive), or earlier — once all but the
  last call of a cycle repeated exactly (≥ 2 calls) — when that is confirmed waste: a
  call of the cycle failed again the same way, or the model calls since the cycle
  began spend ``burn_ratio`` × the session's usual output tokens (token burn), or a
  call that failed is issued again after the calls before it in the cycle repeated
  with the same results (the same edit re-applied after its revert, then the same
  failing test: warned at the test's call, not its failure; fixtures seeds 11/13/17,
  validated on 41/43: edit/test/revert delay 4 → 3 steps, no new alert elsewhere).
- ``critical`` (KILL) at ``critical_cycles`` cycles (or failures) — at
  ``critical_read_cycles`` for a cycle made only of reads that neither failed (it burns
  nothing but tokens: :func:`detectors.loop_rules.critical_needed`) — or when the tokens
  (``critical_tokens``) or dollars (``critical_cost``) spent since the first repeat pass
  a limit. Action: KILL, not ROLLBACK — a loop wastes budget but its repeated steps
  rarely damage the workspace, and rolling back would also discard the good work done
  between the checkpoint and the loop; the last clean checkpoint before the onset is
  attached for the operator who wants it.
- Each severity fires once per loop (a loop is identified by its set of actions and
  its errors); a different loop later alerts again. The onset is the first repeat (the
  second occurrence of the cycle's first action); escalation keeps it.

Score
-----
Judged anew at each tool result, ended by a new action (or a compaction), held across
a repeated call's step and the steps that are no tool call: where a rule fires
(or would, had it not reported that loop already), the score its alert carries, 0.5 +
0.02 x cycles for ``warn`` and 0.9 + 0.02 x cycles for ``critical`` (capped at 1);
below that, ``BUILDING`` x repeats / repeats needed (``warn_cycles``; one more for a
re-worded request), at most 0.4. ``thresholds``: ``warn`` 0.5, ``critical`` 0.9.

State: the last ``window`` calls (small records), ``max_period`` run counters, a few
retry chains and open calls, all bounded; per update O(max_period).

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

import re
import zlib
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

from detectors.base import MAX_EVIDENCE, Checkpoints, Detector, StepRef, make_alert
from detectors.loop_rules import (
    argument_values,
    critical_needed,
    is_request,
    result_signature,
    same_shape,
    specific,
)
from detectors.registry import register
from features.call_facts import read_tool, sending_tool
from features.canonical import arguments_value
from features.tool_view import tool_view
from models.records import Action, Alert, Severity, Step, StepKind

__all__ = ["RunawayLoop"]

_SECOND = 1_000_000_000
_DIGIT_BYTES = b"0123456789"
# enum members bound once: a module global is cheaper than a class attribute lookup
_MODEL_CALL = StepKind.MODEL_CALL
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT
_CHECKPOINT = StepKind.CHECKPOINT
_COMPACTION = StepKind.COMPACTION
_CRITICAL = Severity.CRITICAL
_WARN = Severity.WARN
_MAX_WORDS = 48  # words kept per call for near-same tests (the key uses them all)
_DIGITS_RE = re.compile(r"\d+")
# ``key=`` of a canonical signature | canonical_action's digest of a long value | a word
# without digits | a word with digits. The last two split one maximal ``[A-Za-z0-9_]+``
# run by whether it holds a digit (the possessive ``++`` cannot give letters back to
# make the lookahead pass), so the loop needs no per-word digit search.
_TOKEN_RE = re.compile(r"([A-Za-z_][\w.]*)=|…#([0-9a-f]+)|([A-Za-z_]++)(?![0-9])|([A-Za-z0-9_]+)")
# a double-quoted string with backslash escapes, the loop unrolled (same matches, ~3×
# faster than ``"((?:[^"\\]|\\.)*)"``: a character class repeats in C, an alternation
# is tried per character)
_QUOTED_RE = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"')
_PLACEHOLDERS = frozenset({"tmp", "ts", "uuid", "id", "hash"})
# Volatile parts of error and result text: timestamps, UUIDs, hex digests, long ids.
# Short numbers stay: "2 test(s) failed" is not "1 test(s) failed".
_VOLATILE_TEXT_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}[T _]?[\d:.,]*Z?"
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,}\b"
    r"|\d{5,}"
)
_HEAD = 120  # characters of a result's first line compared inside cycles
_BODY = 2_000  # characters of a result compared for the same call back-to-back
_NEAR = 0.5  # share of the changed arguments' words that makes two calls near-same
_MIN_BURN = 1_000  # output tokens a call below which nothing is "burnt"
_MAX_CHAINS = 4
_MAX_OPEN = 64
_MAX_FIRED = 32
_MAX_SHOWN = 3
BUILDING = 0.4
"""The score a loop builds towards before a rule fires (0.4 x repeats / repeats needed),
below the warning's 0.5."""


@dataclass(slots=True)
class _Call:
    """What the detector keeps of one tool call: hashes and counters, no text but a
    short label for reasons."""

    seq: int
    step_id: str
    source_ref: str
    ts: int
    tool: str
    key: int  # near-duplicate key: crc32 of the word bag
    exact: int  # crc32 of the canonical signature
    numbers: int  # crc32 of the numbers in the raw arguments
    words: frozenset[str]
    label: str
    novel: bool  # its key was not in the window before it
    names: frozenset[str]  # its argument names (same_shape)
    values: tuple[str, ...]  # its argument values, masked in its result's signature
    reads: bool  # its tool only reads (loop_rules.critical_needed)
    acts: bool  # it writes a file or sends something: its answer is a receipt
    # session totals before the model call that chose this call (as of the last result)
    tokens: int  # tokens in + out
    out_tokens: int  # output tokens
    models: int  # model calls
    cost: float
    status: str | None = None  # of its result, once seen
    head: int | None = None  # crc32 of the result's first line; None when no text
    body: int | None = None  # crc32 of the result's first _BODY characters
    error: int = 0  # crc32 of tool + error signature, when it failed
    chain: int = 0  # identity of the failure chain it joined (its error and first call)
    checked: bool = False  # cycle rules evaluated for it


@dataclass(slots=True)
class _Answers:
    """Consecutive successful calls of one tool and shape, arguments changing, that got
    the same answer (their own arguments masked)."""

    signature: str
    first: _Call
    members: list[_Call] = field(default_factory=list)
    count: int = 1


@dataclass(slots=True)
class _Chain:
    """Failures of near-same calls with the same error."""

    error: int
    error_text: str
    first: _Call
    ident: int  # the loop's identity: its error, and the call that first failed so
    by_shape: bool = False  # a member joined by its result alone, its arguments changed
    members: list[_Call] = field(default_factory=list)
    count: int = 0
    novel_mark: int = 0  # the detector's novel-call count at the last failure
    novel_between: int = 0  # new calls tried between the failures


def near_key(action: str) -> tuple[int, frozenset[str]]:
    """The near-duplicate key of a canonical action signature, and its word bag.

    Words are tagged with their argument (``q:electricity``) so an edit and its revert
    differ; their order is ignored; fragments mixing letters and digits (random
    suffixes) and canonical placeholders are dropped; pure numbers stay (they survived
    canonicalisation only as positions: line ranges, offsets).

    >>> near_key('search(q="nrg_ind_ren <n> electricity")') == near_key(
    ...     'search(q="electricity <n> nrg_ind_ren")')
    True
    >>> near_key('bash(command="sed -n 1,50p a.py")') == near_key(
    ...     'bash(command="sed -n 51,100p a.py")')
    False
    """
    head, _, body = action.partition("(")
    words = {head.strip().lower()}
    arg = ""
    # one pass: a ``key=`` switches the argument, a word is tagged with it
    for key, digest, word, mixed in _TOKEN_RE.findall(body):
        if key:
            arg = key
        elif digest:
            words.add(f"{arg}:#{digest}")  # a long value: its digest tells two edits apart
        elif word:
            if len(word) > 1:
                word = word.lower()
                if word not in _PLACEHOLDERS:
                    words.add(f"{arg}:{word}")
        elif len(mixed) > 1 and mixed.isdigit():  # a number, not a random suffix
            words.add(f"{arg}:{mixed}")
    bag = frozenset(words)
    return zlib.crc32("\x1f".join(sorted(bag)).encode("utf-8", "surrogatepass")), bag


def _text_sig(text: str) -> str:
    return _VOLATILE_TEXT_RE.sub("#", " ".join(text.split()))


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


# Pure functions of a call's immutable text, memoised (bounded): a loop is by definition
# the same action again. ``_action_facts`` is everything a call's action gives (near_key
# plus _label cost ~25 µs uncached), ``_numbers`` the digest of its raw arguments'
# numbers (a findall and sort over the arguments); arguments longer than
# ``_MEMO_MAX_CHARS`` (file writes, edits) rarely repeat and are read uncached.
_MEMO_MAX_CHARS = 4096


@lru_cache(maxsize=1024)
def _action_facts(tool: str | None, action: str) -> tuple[int, frozenset[str], int, str]:
    """(near key, word bag capped at ``_MAX_WORDS``, crc of the signature, label)."""
    key, words = near_key(action)
    if len(words) > _MAX_WORDS:
        words = frozenset(sorted(words)[:_MAX_WORDS])
    return key, words, _crc(action), _label(tool, action)


def _argument_facts_of(arguments: str) -> tuple[frozenset[str], tuple[str, ...]]:
    value = arguments_value(arguments)
    names = frozenset(value) if isinstance(value, dict) else frozenset()
    return names, argument_values(value)


_memo_argument_facts = lru_cache(maxsize=1024)(_argument_facts_of)


def _argument_facts(arguments: str | None) -> tuple[frozenset[str], tuple[str, ...]]:
    """(argument names, argument values) of a call's raw arguments."""
    if not arguments:
        return frozenset(), ()
    if len(arguments) > _MEMO_MAX_CHARS:
        return _argument_facts_of(arguments)
    return _memo_argument_facts(arguments)


def _acts(step: Step) -> bool:
    """Whether a call writes a file or sends something (its answer is then a receipt:
    ``Edited <path>: 1 replacement`` says nothing about progress)."""
    view = tool_view(step)
    return bool(view is not None and (view.writes or view.unknown_write)) or sending_tool(step.tool)


def _numbers_crc(arguments: str) -> int:
    return _crc(",".join(sorted(_DIGITS_RE.findall(arguments))))


_memo_numbers_crc = lru_cache(maxsize=1024)(_numbers_crc)


def _numbers(arguments: str | None) -> int:
    if not arguments:
        return 0  # crc32 of the empty string
    if len(arguments) > _MEMO_MAX_CHARS:
        return _numbers_crc(arguments)
    return _memo_numbers_crc(arguments)


@lru_cache(maxsize=1024)
def _head_crc(line: str) -> int:
    """crc of a result's first line (at most ``_HEAD`` characters), volatile parts
    removed: statuses and exit codes repeat, so this is memoised too."""
    return _crc(_text_sig(line))


def _body_crc(text: str) -> int:
    """crc of ``text`` with its ASCII digits removed. Deleting the digit bytes after
    encoding is the same as deleting the digits before (UTF-8 multi-byte sequences have
    no byte below 0x80), and ``bytes.translate`` is ~10× cheaper than ``str.translate``."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass").translate(None, _DIGIT_BYTES))


def _near(a: _Call, b: _Call) -> bool:
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
    return small > 0 and len(wa & wb) / small >= _NEAR


def _request_words(request: str) -> tuple[str, ...]:
    """A request's words, lower-cased, quotes and punctuation dropped, in sorted order:
    the same request re-ordered or re-quoted gives the same words."""
    return tuple(sorted(w.strip("\"'?!,.:;()[]") for w in request.lower().split()))


def _cycle_key(cycle: list[_Call]) -> int:
    """A cycle's identity whatever call it is entered at (B-C-A is A-B-C)."""
    return _crc("\x1f".join(str(k) for k in sorted({c.key for c in cycle})))


@lru_cache(maxsize=1024)
def _label(tool: str | None, action: str) -> str:
    """A short name of a call for reasons: the tool and its longest string argument."""
    values = _QUOTED_RE.findall(action)
    # a command or query (it has spaces) says more than a working directory
    text = max(values, key=lambda v: (" " in v, len(v))) if values else action

    text = " ".join(text.split())
    return f"{tool or '?'} {text[:60]}{'…' if len(text) > 60 else ''}".strip()


@register
class RunawayLoop(Detector):
    """Flags a session repeating the same action cycle without progress.

    Contract: one instance per session, steps in ``seq`` order; no I/O, time from
    ``step.ts``; state bounded by ``window`` (never grows with the session). Raises
    ``warn``/NOTIFY, then ``critical``/KILL, each at most once per loop; onset = the
    first repeat; evidence = the repeated calls (≤ 20); a reason with counts and
    tokens. The module docstring says what counts as a loop and as progress.

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
        (:func:`features.call_facts.read_tool`) that neither failed: such a loop burns
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
        self._reset()

    def _reset(self) -> None:
        self._session_id = ""
        self._calls: deque[_Call] = deque(maxlen=self.window)
        self._seen: dict[int, int] = {}  # near key → calls in the window with it
        self._runs = [0] * (self.max_period + 1)  # [p]: calls equal to the call p before
        self._open: dict[str, _Call] = {}  # call id and step id → call awaiting its result
        self._chains: dict[int, _Chain] = {}  # error → chain of failures
        self._answers: _Answers | None = None  # the current run of the same answer
        self._asked: list[_Call] = []  # the current run of one request re-worded
        self._asked_count = 0
        self._novel = 0
        self._compacted = False  # a compaction since the last call
        self._tokens = 0
        self._out_tokens = 0
        self._models = 0
        self._cost = 0.0
        # the totals at the last tool result: a call's tokens include the model call
        # that chose it
        self._mark: tuple[int, int, int, float] = (0, 0, 0, 0.0)
        # loop identity → (severity raised: 1 warn, 2 critical; the loop's onset)
        self._fired: dict[int, tuple[int, _Call]] = {}
        self._checkpoints = Checkpoints()
        self._score = 0.0  # the strongest loop evidence at the latest call or result

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
            return []
        if kind == _TOOL_CALL:
            return self._on_call(step)  # a repeat holds the score, a new action ends it
        if kind == _TOOL_RESULT:
            self._score = 0.0  # each result is judged anew
            return self._on_result(step)
        if kind == _CHECKPOINT:
            self._checkpoints.update(step)
        elif kind == _COMPACTION:
            # the context was compacted: re-reading what it held is how an agent recovers
            # it, so the first call after it repeats nothing (a loop that goes on is seen
            # anew from there)
            self._compacted = True
        return []

    def _on_call(self, step: Step) -> list[Alert]:
        action = step.action or step.tool
        if not action:
            return []
        calls = self._calls
        # the previous call's result never came: judge its cycle now
        alerts = self._check_cycle(step) if calls and not calls[-1].checked else []
        key, words, exact, label = _action_facts(step.tool, action)
        names, values = _argument_facts(step.arguments)
        seen = self._seen
        novel = key not in seen
        self._novel += novel
        tokens, out_tokens, models, cost = self._mark
        # positional, in field order: a third of the cost of 15 keywords, once per call
        call = _Call(
            step.seq,
            step.step_id,
            step.source_ref,
            step.ts,
            step.tool or "?",
            key,
            exact,
            _numbers(step.arguments),
            words,
            label,
            novel,
            names,
            values,
            read_tool(step.tool),
            _acts(step),
            tokens,
            out_tokens,
            models,
            cost,
        )
        n = len(calls)
        runs = self._runs
        if novel or self._compacted:
            self._compacted = False
            self._score = 0.0
            # no call in the window has its key, so it repeats none of the last
            # max_period calls (window > max_period): every run ends
            for p in range(1, len(runs)):
                runs[p] = 0
        else:
            for p in range(1, len(runs)):
                if p <= n and calls[n - p].key == key and self._repeats(call, n, p):
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
        alerts += self._reasked(step, call)
        return alerts

    def _repeats(self, call: _Call, n: int, p: int) -> bool:
        """Whether ``call`` repeats the call ``p`` before it, with no sign of progress."""
        calls = self._calls
        prev = calls[n - p]
        if prev.key != call.key:
            return False
        if prev.status != "error" and prev.numbers != call.numbers:
            # canonical signatures hide numbers (they are noise in *retries*); after a
            # success, a call with other numbers tries something new (answers, pages)
            return False
        if n >= 2 and calls[n - 1].key == call.key and calls[n - 2].key == call.key:
            # Polling with back-off: the wait between back-to-back repeats grew. Only
            # back to back is the gap the agent's wait: inside a longer cycle it is the
            # other calls' and the model's time, which varies by chance (14 s, then
            # 21 s), and a deliberate wait there is a call of its own (``sleep 20``),
            # whose changed numbers already make it a new action.
            last, before = calls[n - 1], calls[n - 2]
            gap, prev_gap = call.ts - last.ts, last.ts - before.ts
            if gap >= self.wait_growth * prev_gap and gap - prev_gap >= 5 * _SECOND:
                return False
        return True

    def _on_result(self, step: Step) -> list[Alert]:
        self._mark = (self._tokens, self._out_tokens, self._models, self._cost)
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
        if text:
            # text.lstrip()[:_BODY] without copying a long result whole: a prefix holding
            # a non-space character strips the same; only all-space prefixes need more
            start = text[: 2 * _BODY].lstrip()
            if len(start) < _BODY and len(text) > 2 * _BODY:
                start = text.lstrip()
            call.head = _head_crc(start[:_HEAD].partition("\n")[0])
            # digits dropped, not the regex (~10 µs per KB): clocks and ids in a body
            # must not pass for progress; the first line keeps a poll's counters
            call.body = _body_crc(start[:_BODY])
        if any(self._runs):  # only a running repeat can show progress
            self._progress(call)
        # the error signature and text ignore leading space: the unstripped text will do
        if failed:
            self._answers = None
            alerts = self._on_failure(step, call, text or "")
        else:
            alerts = self._on_success(call)
            alerts += self._same_answer(step, call, text or "")
        if self._calls and self._calls[-1] is call:
            if any(self._runs):
                alerts += self._check_cycle(step)
            else:
                call.checked = True  # what _check_cycle marks, with nothing to judge
        return alerts

    def _progress(self, call: _Call) -> None:
        """Reset the runs ``call`` extends when its result shows progress: a failed call
        now worked, or the same call gave a new answer. Back-to-back (period 1) any new
        answer counts: polling a changing world, re-reading a file that changed. Inside
        a longer cycle only the first line does (a poll's state, an exit code, a page's
        title): there the bodies of re-fetched pages and search results change for
        reasons that are not progress (rotating content, snippets, clocks)."""
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
            prev = calls[i - p]
            if prev.exact != call.exact:
                continue
            worked = prev.status == "error" and call.status != "error"
            # back to back is the call just before being this same call, whatever the
            # period: a run of one call read 6 times also matches at period 2
            back_to_back = p == 1 or calls[i - 1].exact == call.exact
            answered = (
                call.head is not None
                and prev.head is not None
                and (call.head != prev.head or (back_to_back and call.body != prev.body))
            )
            if worked or answered:
                self._runs[p] = 0

    # -- the same answer to changing arguments ----------------------------------------

    def _same_answer(self, step: Step, call: _Call, text: str) -> list[Alert]:
        """Consecutive successful calls of one tool and shape that vary their arguments
        and get the same answer, once what echoes the arguments is masked (a task
        re-worded and printed back, a query answered by the same page): no call learns
        anything the first did not. Identical calls are the cycle rules' to judge, and
        calls that write or send are left out (their answer is a receipt)."""
        answers = self._answers
        if call.acts or not text:
            self._answers = None
            return []
        signature = result_signature(text, call.values)
        if not specific(signature):
            self._answers = None
            return []
        if (
            answers is None
            or answers.signature != signature
            or not same_shape(answers.first.tool, answers.first.names, call.tool, call.names)
        ):
            self._answers = _Answers(signature, call, [call])
            return []
        if call.exact == answers.members[-1].exact:
            return []  # the same call again: a cycle, not changed arguments
        answers.members.append(call)
        answers.count += 1
        if len(answers.members) > MAX_EVIDENCE:  # keep the first, the onset and the latest
            del answers.members[2 : len(answers.members) - MAX_EVIDENCE + 2]
        count = answers.count
        self._building(count, self.warn_cycles)
        if count < self.warn_cycles:
            return []
        onset = answers.members[1]
        reason = (
            f"{count} calls of `{call.tool}` with changing arguments (`{answers.first.label}` "
            f"… `{call.label}`) got the same answer `{signature[:80]}` (their own arguments "
            f"masked as <arg>): none learnt anything new{self._spend(onset)}"
        )
        keys = {_crc(f"answer\x1f{signature}\x1f{answers.first.key}")}
        severity = self._severity(count, onset, self.critical_read_cycles)
        return self._raise(step, keys, severity, onset, answers.members, reason, count)

    # -- one request re-worded ---------------------------------------------------------

    def _reasked(self, step: Step, call: _Call) -> list[Alert]:
        """Calls of one tool and shape back to back, each re-wording the request the one
        before made (its longest argument is words, :func:`detectors.loop_rules.is_request`:
        a query, a question, a task; the arguments that changed mostly share their words:
        :func:`_near`), with no other
        call between them: whatever each answered, the agent did nothing with it but
        ask again. A warning once the same request has been asked ``warn_cycles`` + 1
        times running, or ``warn_cycles`` times when one of them asks again, in the same
        words, what an earlier one of the run asked (the same query re-ordered or
        re-quoted: the agent has lost track of what it tried). Never a kill: re-wording
        may yet find something; only identical calls and repeated failures are strong
        evidence. Calls that write or send are left out (a changed edit is work), and
        an identical call again is the cycle rules' to judge."""
        asked = self._asked
        if call.acts or not call.values or not is_request(call.values[0]):
            self._asked, self._asked_count = [], 0
            return []
        view = tool_view(step)
        if view is not None and view.commands:  # a command, not a request
            self._asked, self._asked_count = [], 0
            return []
        last = asked[-1] if asked else None
        if (
            last is None
            or not same_shape(last.tool, last.names, call.tool, call.names)
            or not _near(last, call)
        ):
            self._asked, self._asked_count = [call], 1
            return []
        if call.exact == last.exact:
            return []
        words = _request_words(call.values[0])
        again = any(_request_words(c.values[0]) == words for c in asked)
        asked.append(call)
        self._asked_count += 1
        if len(asked) > MAX_EVIDENCE:  # keep the first, the onset and the latest
            del asked[2 : len(asked) - MAX_EVIDENCE + 2]
        count = self._asked_count
        self._building(count, self.warn_cycles + 1)
        if count < self.warn_cycles + 1 and not (again and count >= self.warn_cycles):
            return []
        first = asked[0]
        reason = (
            f"{count} calls of `{call.tool}` in a row re-word one request (`{first.label}` "
            f"… `{call.label}`), nothing else done with their answers"
            + ("; one asks again, in the same words, what an earlier one asked" if again else "")
            + self._spend(asked[1])
        )
        keys = {_crc(f"asked\x1f{first.key}")}
        return self._raise(step, keys, _WARN, asked[1], asked, reason, count)

    # -- retry after failure ---------------------------------------------------------

    def _on_success(self, call: _Call) -> list[Alert]:
        if not self._chains:
            return []
        for error in [
            e
            for e, c in self._chains.items()
            if any(m.key == call.key for m in c.members)
            or (c.by_shape and same_shape(c.first.tool, c.first.names, call.tool, call.names))
        ]:
            # a call that had failed now worked: it was transient; or, for failures of
            # changing arguments, the tool works with others: the agent is searching
            del self._chains[error]
        return []

    def _on_failure(self, step: Step, call: _Call, text: str) -> list[Alert]:
        signature = result_signature(text, call.values)
        error = _crc(f"{call.tool}\x1f{signature}")
        call.error = error
        chain = self._chains.get(error)
        near = chain is not None and _near(chain.first, call)
        # the same specific failure of a call varying its values (a page, an offset, a
        # query, a flag's value): judged by the result, not the changed arguments
        shaped = (
            chain is not None
            and not near
            and specific(signature)
            and same_shape(chain.first.tool, chain.first.names, call.tool, call.names)
        )
        if chain is not None and (near or shaped):
            # new calls tried since the last failure, not counting this retry itself
            chain.novel_between += self._novel - chain.novel_mark - call.novel
            chain.by_shape = chain.by_shape or shaped
        else:
            # the signature masks echoed arguments (``<arg> failed``), so the identity
            # also names the first call: `npm install` and `cargo build` are two loops
            chain = _Chain(
                error=error,
                error_text=" ".join(text.split())[:80],
                first=call,
                ident=_crc(f"{error}\x1f{call.key}"),
            )
            self._chains.pop(error, None)
            while len(self._chains) >= _MAX_CHAINS:
                del self._chains[next(iter(self._chains))]
        self._chains[error] = chain
        call.chain = chain.ident
        chain.novel_mark = self._novel
        chain.count += 1
        chain.members.append(call)
        if len(chain.members) > MAX_EVIDENCE:  # keep the first, the onset and the latest
            del chain.members[2 : len(chain.members) - MAX_EVIDENCE + 2]
        failures = chain.count
        self._building(failures, self.warn_cycles)
        # a bare retry that fails the same way is already waste (TRAIL labels it);
        # with other work between the failures, the repeats must outnumber it
        bare = failures >= 2 and chain.novel_between == 0
        outweighed = failures >= self.warn_cycles and chain.novel_between <= failures - 2
        if not (bare or outweighed):
            return []
        onset = chain.members[1]
        tried = (
            f", with {chain.novel_between} other new call(s) tried between them"
            if chain.novel_between
            else ", retried with nothing else tried"
        )
        if chain.by_shape:
            what = (
                f"{failures} calls of `{call.tool}` with changing arguments (`{chain.first.label}`"
                f" … `{call.label}`) got the same failure `{chain.error_text}` (the same once "
                "their own arguments, paths and ids are masked)"
            )
        else:
            what = (
                f"{failures} near-identical calls `{chain.first.label}` failed with the same "
                f"error `{chain.error_text}`"
            )
        reason = f"{what}{tried}{self._spend(onset)}"
        keys = {chain.ident}  # the same loop may also be a cycle: one identity, one alert
        cycle = self._current_cycle()
        if cycle is not None and cycle[1] <= call.seq:
            keys.add(cycle[0])
        severity = self._severity(failures, onset)
        return self._raise(step, keys, severity, onset, chain.members, reason, failures)

    # -- cycles ----------------------------------------------------------------------

    def _best_period(self, least: int | None = None) -> tuple[int, int] | None:
        """(period, run) of the longest current run of at least ``least`` repeated calls
        (default: one full repeat of the cycle)."""
        best = None
        longest = 0
        for p in range(1, self.max_period + 1):
            run = self._runs[p]
            if run >= (p if least is None else min(p, least)) and run > longest:
                best, longest = p, run
        return None if best is None else (best, longest)

    def _current_cycle(self) -> tuple[int, int] | None:
        """(identity, seq of its first call) of the current cycle, if any."""
        best = self._best_period()
        if best is None:
            return None
        p, run = best
        n = len(self._calls)
        cycle = [self._calls[n - run - p + j] for j in range(p)]
        return _cycle_key(cycle), cycle[0].seq

    def _check_cycle(self, step: Step, *, settled: bool = True) -> list[Alert]:
        """The cycle rules, on ``step``. ``settled``: the latest call's result is in (or
        will not come), so the count rule may judge it; before that, only hard evidence
        of waste (a repeat that failed the same way, token burn) may fire."""
        calls = self._calls
        if settled:
            calls[-1].checked = True
        if not any(self._runs):
            return []  # no call repeats: the common case
        best = self._best_period(least=2)
        if best is None:
            return []
        p, run = best
        n = len(calls)
        cycles = 1 + run / p
        self._building(cycles, self.warn_cycles)
        # what the rules below need, in O(1) before any list is built: an early
        # confirmation needs run >= p - 1 and exact repeats, the count rule a settled,
        # whole cycle repeated warn_cycles times (``needed`` is at least that)
        counts = settled and run >= p and cycles >= self.warn_cycles
        if run < p - 1 or not (
            counts
            or all(calls[n - run + i].exact == calls[n - run - p + i].exact for i in range(run))
        ):
            return []
        cycle = [calls[n - run - p + j] for j in range(p)]
        repeated = [calls[j] for j in range(n - run, n)]
        onset = repeated[0]
        # unknown results are no evidence of "no progress": then ask for Gemini CLI's
        # 5 identical consecutive calls (fixtures: healthy runs call `git diff --stat`
        # 4 times in a row, results unrecorded)
        known = all(c.head is not None or c.status == "error" for c in repeated)
        needed = self.warn_cycles if known else self.warn_cycles + 2
        # the same call answered the same, none failed: a re-read (after a compaction,
        # to check an edit, a status looked at again); a few are tolerated, one more
        # than a cycle needs (OpenLIT's "3 identical calls" fires on them)
        reread = p == 1 and known and not any(c.status == "error" for c in (*cycle, *repeated))
        if reread:
            needed += 1
        # early, after one repeat: only for exact repeats (an edit and its revert share
        # their words) with hard evidence of waste
        exact = all(c.exact == calls[n - run - p + i].exact for i, c in enumerate(repeated))
        # all but the last call of the cycle repeated exactly (E-T-C-E-T: the same edit,
        # the same test failing the same way), at least two calls
        confirmed = self._confirmed(cycle, repeated) if exact and run >= p - 1 else ""
        if not confirmed and (not settled or run < p or cycles < needed):
            return []
        shown = ", ".join(f"`{c.label}`" for c in cycle[:_MAX_SHOWN])
        more = f" and {p - _MAX_SHOWN} more" if p > _MAX_SHOWN else ""
        what = f"the same call {shown}" if p == 1 else f"a cycle of {p} calls ({shown}{more})"
        reason = (
            f"{run + p} tool calls since step {cycle[0].seq} repeat {what}: "
            f"{cycles:g} cycles, no new action"
            + ("" if known else " (results not recorded)")
            + (", every answer the same" if reread else "")
            + (f"; {confirmed}" if confirmed else "")
            + self._spend(onset)
        )
        evidence = [*cycle, *repeated]
        keys = {_cycle_key(cycle)} | {c.chain for c in evidence if c.chain}
        kill_at = critical_needed(
            critical_cycles=self.critical_cycles,
            critical_read_cycles=self.critical_read_cycles,
            failed=any(c.error for c in evidence),
            reads_only=all(c.reads for c in cycle),
        )
        severity = self._severity(int(cycles), onset, kill_at)
        return self._raise(step, keys, severity, onset, evidence, reason, int(cycles))

    def _confirmed(self, cycle: list[_Call], repeated: list[_Call]) -> str:
        """Why one repeat of the cycle is already waste, or '' when it may not be.
        Token burn compares the model calls since the cycle's first occurrence with
        the session's mean before it."""
        start = cycle[0]
        failed = {c.error for c in cycle if c.error}
        again = [c for c in repeated if c.error in failed]
        if again:
            return f"`{again[0].label}` failed again the same way"
        # a replay of what failed: the calls before the failed one repeated with the
        # same results (the same edit re-applied after its revert), and the failed call
        # is issued again, its result not in yet
        *done, pending = repeated
        before = cycle[len(done) % len(cycle)]
        if (
            len(cycle) >= 2
            and pending.status is None
            and before.error
            and all(c.body is not None and c.body == cycle[i].body for i, c in enumerate(done))
        ):
            return (
                f"`{pending.label}` is run again after it failed, with the same calls "
                "before it giving the same results"
            )
        models = self._models - start.models
        if models and start.models:
            usual = max(start.out_tokens / start.models, 1.0)
            burnt = (self._out_tokens - start.out_tokens) / models
            if burnt >= self.burn_ratio * usual and burnt >= _MIN_BURN:
                return (
                    f"the model spent {burnt:,.0f} output tokens a call inside it, "
                    f"{burnt / usual:.0f}× its usual {usual:,.0f}"
                )
        return ""

    # -- alerts ----------------------------------------------------------------------

    def _severity(self, cycles: int, onset: _Call, kill_at: int | None = None) -> Severity:
        spent = self._tokens - onset.tokens
        cost = self._cost - onset.cost
        if (
            cycles >= (self.critical_cycles if kill_at is None else kill_at)
            or spent >= self.critical_tokens
            or cost >= self.critical_cost
        ):
            return _CRITICAL
        return _WARN

    def _spend(self, onset: _Call) -> str:
        spent = self._tokens - onset.tokens
        cost = self._cost - onset.cost
        text = f"; {spent:,} tokens since the first repeat at step {onset.seq}" if spent else ""
        return text + (f" (${cost:,.2f})" if cost else "")

    def _raise(
        self,
        step: Step,
        keys: set[int],
        severity: Severity,
        onset: _Call,
        evidence: list[_Call],
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

    def _ref_of(self, call: _Call) -> StepRef:
        return StepRef(self._session_id, call.step_id, call.seq, call.ts, call.source_ref)
