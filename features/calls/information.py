"""What a tool call learnt and what it changed: the inputs of progress.

Progress is what was learnt or changed. Three pure functions give the facts a detector
needs to tell the two from going round in circles:

- :func:`information_digest` — the identity of what a result *says*: its text with the
  parts that vary without meaning anything masked (timestamps, clock times, durations and
  other decimals, long numbers, hex digests and ids, UUIDs). Short integers stay: ``3 of
  20 replicas`` is not ``4 of 20``, ``2 failed`` is not ``1 failed`` — that is the world
  changing. Two results with one digest told the agent the same thing.
- :func:`changed_targets` — what a call that changes the workspace changed (the files an
  edit or a patch names), so that many files changed successfully count as progress and
  the same file patched again does not.
- :func:`wait_seconds` — a deliberate wait a call makes (``sleep 30 && gh run view``,
  ``time.sleep(5)``, a ``wait(seconds=10)`` tool): polling and retrying with a wait that
  grows is patience.

Each is pure, bounded (texts read up to :data:`DIGEST_CHARS` / :data:`WAIT_CHARS`
characters) and memoised where calls repeat.
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache

__all__ = [
    "DIGEST_CHARS",
    "TALLY_LINE",
    "WAIT_CHARS",
    "changed_targets",
    "failure_shape",
    "failure_tally",
    "information_digest",
    "wait_seconds",
]

DIGEST_CHARS = 2_000
"""Characters of a result its digest reads (what a result says comes first)."""
WAIT_CHARS = 4_096
"""Characters of a call's arguments searched for a wait."""

# What varies without meaning anything, in the order tried: dates and times, UUIDs, ids
# and digests (a run of letters and digits holding both, 6+ characters), decimals
# (durations, sizes, scores), long numbers. Short integers are left alone.
_VOLATILE_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T _]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b"
    r"|[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"
    r"|\b(?=[A-Za-z_-]*\d)(?=\w*[A-Za-z])[A-Za-z0-9_-]{6,}\b"
    r"|\d+\.\d+"
    r"|\d{5,}"
)

_MAY_MATCH_RE = re.compile(r"[\d-]")
"""What every match of :data:`_VOLATILE_RE` holds one of (a UUID may hold no digit)."""


def _masked(head: str) -> str:
    """``_VOLATILE_RE.sub("#", head)`` for ``head`` with its blanks collapsed to single
    spaces, run only on the runs of space-separated words holding a digit or ``-``.

    The same text: only a date-time's match holds a space, with digits on both sides of
    it (so in one run); every look-around of the pattern reads word characters and
    ``-`` only, so a space or the end of the text beside a run reads alike. The pattern
    is tried at every character (~0.3 µs each), and most words of a result are plain.

    >>> _masked("build 2025-08-03 11:53:13 took 1.78 s on a6f9e2c1 ok")
    'build # took # s on # ok'
    """
    search, n = _MAY_MATCH_RE.search, len(head)
    out: list[str] = []
    at = 0
    found = search(head)
    while found is not None:
        start = head.rfind(" ", 0, found.start()) + 1
        end = head.find(" ", found.start())
        end = n if end < 0 else end
        found = search(head, end)
        while found is not None and head.rfind(" ", 0, found.start()) == end:
            end = head.find(" ", found.start())  # the next word holds one too: one run
            end = n if end < 0 else end
            found = search(head, end)
        out += (head[at:start], _VOLATILE_RE.sub("#", head[start:end]))
        at = end
    if not out:
        return head
    out.append(head[at:])
    return "".join(out)


_TIMER_RE = re.compile(r"(?i)\b((?:x-)?rate-?limit-reset|retry-after)(\s*[:=]\s*)\d+")
"""A rate limit's timer (RFC 9110's ``Retry-After`` seconds, the RateLimit fields'
``reset``): a countdown that moves with the clock, not with the world."""


def _mask_timers(text: str) -> str:
    """``text`` with the seconds of its rate-limit timers masked (``Retry-After: #``): a
    429 answered with ``Retry-After: 3596`` four seconds after ``3600`` says the same.

    >>> _mask_timers("HTTP 429 Too Many Requests; Retry-After: 3596")
    'HTTP 429 Too Many Requests; Retry-After: #'
    """
    if "etry-" not in text and "eset" not in text:
        return text
    return _TIMER_RE.sub(r"\1\2#", text)


_KEYED_NUMBER_RE = re.compile(
    r'"([A-Za-z_][A-Za-z0-9_]{0,40})"\s*:\s*"?(-?\d+(?:\.\d+)?%?)(?=["\s]*[,}\]])'
)
"""A number that is the value of a named field of a record (``"MaterialsPlanned": 30758``,
``"avg": 211.5``, ``"Progress": "91%"``)."""
_KEY_PART_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_CLOCK_OR_ID_PARTS = frozenset(
    {
        *("time", "ts", "timestamp", "stamp", "elapsed", "duration", "took", "latency"),
        *("uptime", "age", "wall", "eta", "remaining", "since", "until", "date", "at"),
        *("ms", "us", "ns", "sec", "secs", "second", "seconds", "min", "mins", "minutes"),
        *("epoch", "expires", "expiry", "deadline", "created", "updated", "modified"),
        *("id", "ids", "key", "no", "nr", "num", "number", "ref", "entry", "seq", "version"),
        *("etag", "token", "hash", "offset", "cursor", "page", "rev", "revision", "build"),
    }
)
"""The last word of a field named for the clock (``elapsed``, ``wallTimeMs``, ``ts``) or
for an identity (``entry``, ``orderId``, ``seq``): its number moves with the clock or names
a record, and is masked like any other."""
_DIGITS_AS_LETTERS = str.maketrans("0123456789.", "abcdefghij,")


def _keep_quantity(m: re.Match[str]) -> str:
    """A named field's number, kept (its digits spelt as letters, which nothing masks)
    unless the field is named for the clock or an identity."""
    parts = _KEY_PART_RE.findall(m[1])
    if not parts or parts[-1].lower() in _CLOCK_OR_ID_PARTS:
        return m[0]
    return (
        m[0][: m.start(2) - m.start()]
        + m[2].translate(_DIGITS_AS_LETTERS)
        + m[0][m.end(2) - m.start() :]
    )


@lru_cache(maxsize=2048)
def information_digest(text: str) -> int:
    """crc32 of what ``text`` (a result, an error) says: its first :data:`DIGEST_CHARS`
    characters, blanks collapsed, volatile parts masked (module docstring).

    >>> a = information_digest("Chunk ID: 678fe8\\nWall time: 1.7820 seconds\\nqueued")
    >>> a == information_digest("Chunk ID: bf83c3\\nWall time: 61.7930 seconds\\nqueued")
    True
    >>> information_digest("0 of 20 available") == information_digest("1 of 20 available")
    False
    >>> information_digest("at 2025-08-03T11:53:13.096Z ok") == information_digest("at 12:00 ok")
    True
    >>> information_digest("429; Retry-After: 3600") == information_digest("429; Retry-After: 3592")
    True

    A record's named quantity is the world, however long or fractional (a job's planned
    count, a process value settling); a field named for the clock or an identity is not:

    >>> information_digest('{"avg": 211.0, "n": 29799}') == information_digest(
    ...     '{"avg": 211.5, "n": 29799}')
    False
    >>> information_digest('{"state": "RUNNING", "elapsedMs": 20913.5, "entry": 157280}') == (
    ...     information_digest('{"state": "RUNNING", "elapsedMs": 61207.9, "entry": 157281}'))
    True
    """
    head = _mask_timers(" ".join(text[:DIGEST_CHARS].split()))
    if '":' in head:
        head = _KEYED_NUMBER_RE.sub(_keep_quantity, head)
    return zlib.crc32(_masked(head).encode("utf-8", "surrogatepass"))


_NO_DIGITS = str.maketrans("", "", "0123456789")


def failure_shape(text: str) -> int:
    """crc32 of what a failure says with every digit dropped: the same failure whatever
    its counts and line numbers (``23 filtered out`` is ``52 filtered out``; a test that
    fails the same assertion fails the same way). Progress through a failing check is
    judged by what changed between its runs, not by its counters.

    >>> failure_shape("FAILED. 1 failed; 23 filtered out") == failure_shape(
    ...     "FAILED. 1 failed; 52 filtered out")
    True

    Volatile parts are masked before the digits go (an id ``83a069`` is not the word
    ``a``):

    >>> failure_shape("exit 1\\nChunk ID: 83a069") == failure_shape("exit 1\\nChunk ID: cc719b")
    True
    """
    head = _masked(" ".join(text[:DIGEST_CHARS].split()))
    return zlib.crc32(head.translate(_NO_DIGITS).encode("utf-8", "surrogatepass"))


_COUNT_RE = re.compile(r"(?<![\w.:/#-])\d{1,7}(?![\w.:/-])")
TALLY_LINE = 120
"""Longest first line read for a tally: a summary, not a trace or a listing."""


def failure_tally(text: str) -> int:
    """The one count a failure reports on its short first line (``UNMATCHED 14
    payouts``, ``3 tests failed``), -1 when that line holds none or several (``1 failed,
    3 passed``), or is long: fewer of what still fails, run after run, is the check
    getting closer - the digits :func:`failure_shape` drops.

    >>> failure_tally("UNMATCHED 14 payouts\\nsee log"), failure_tally("1 failed, 3 passed")
    (14, -1)
    >>> failure_tally("File src/a.py:42: SyntaxError"), failure_tally("Traceback (most recent)")
    (-1, -1)
    """
    line = text.lstrip()[: TALLY_LINE + 1].partition("\n")[0]
    if len(line) > TALLY_LINE:
        return -1
    counts = _COUNT_RE.findall(line)
    return int(counts[0]) if len(counts) == 1 else -1


_PATCH_FILE_RE = re.compile(r"\*\*\* (?:Update|Add|Delete) File: ([^\s\\\"]+)")


def changed_targets(arguments: str, paths: frozenset[str] | set[str]) -> frozenset[str]:
    """The targets a call that changes the workspace changed: the files a patch names
    (``*** Update File: src/a.py``), else ``paths`` (the paths its arguments write,
    :attr:`features.calls.step_features.StepFeatures.mutation_targets`). Empty when
    neither names one (the caller then knows only that *something* changed).

    >>> sorted(changed_targets('*** Begin Patch\\n*** Update File: src/a.py\\n@@', set()))
    ['src/a.py']
    >>> sorted(changed_targets('{"file_path": "/w/b.py"}', {"/w/b.py"}))
    ['/w/b.py']
    """
    found = _PATCH_FILE_RE.findall(arguments[:WAIT_CHARS])
    if found:
        return frozenset(found)
    return frozenset(paths)


# ``sleep 30``, ``sleep 1.5``, ``time.sleep(5)``, ``Start-Sleep -Seconds 5``, ``timeout /t 5``
_SLEEP_RE = re.compile(
    r"(?<![\w.])(?:sleep|time\.sleep|asyncio\.sleep|Start-Sleep(?:\s+-Seconds)?)"
    r"[\s(]+(\d+(?:\.\d+)?)\s*(ms|s|m)?\b",
    re.IGNORECASE,
)
_WAIT_TOOL_RE = re.compile(r"(?:^|[_.\-])(?:wait|sleep|pause)(?:$|[_.\-])", re.IGNORECASE)
_WAIT_ARG_RE = re.compile(
    r"\"(seconds|secs|duration|delay|timeout|ms|milliseconds|minutes)\"\s*:\s*(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0}


@lru_cache(maxsize=1024)
def wait_seconds(tool: str, arguments: str) -> float:
    """Seconds ``tool`` called with ``arguments`` deliberately waits: the largest sleep
    its command or code runs, or, for a tool named for waiting (``wait``, ``sleep``),
    its duration argument. 0.0 when it waits for nothing.

    >>> wait_seconds("bash", '{"command": "sleep 30 && gh run view 1 --json status"}')
    30.0
    >>> wait_seconds("python", "import time\\ntime.sleep(2.5)\\nprint(1)")
    2.5
    >>> wait_seconds("wait", '{"seconds": 20}'), wait_seconds("bash", '{"command": "ls"}')
    (20.0, 0.0)
    """
    text = arguments[:WAIT_CHARS]
    best = 0.0
    # Every match holds ``sleep`` (case-insensitively: each character of a match folds to
    # the pattern's own letter, so the case-folded text holds it). The pattern, tried at
    # every character, costs ~6 µs on a 200-character call; most calls never sleep.
    if "sleep" in text.casefold():
        for number, unit in _SLEEP_RE.findall(text):
            best = max(best, float(number) * _UNIT.get(unit.lower(), 1.0))
    if best == 0.0 and tool and _WAIT_TOOL_RE.search(tool.rsplit("__", 1)[-1]):
        for name, number in _WAIT_ARG_RE.findall(text):
            scale = 0.001 if name.lower() in ("ms", "milliseconds") else 1.0
            scale = 60.0 if name.lower() == "minutes" else scale
            best = max(best, float(number) * scale)
    return best
