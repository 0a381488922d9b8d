"""Loop rules judged by results: pure functions :mod:`detectors.runaway_loop.detector` composes.

A loop is told by what the calls *got back*, not by how their arguments look:

- :func:`argument_values` (from :mod:`features.calls.action_keys`, where a call's features
  take them) — a call's argument values, which a signature masks.
- :func:`result_signature` — what a failure says once the parts that vary with the
  call are masked: the call's own argument values echoed back (``No results found for
  query: '<the query>'``), quoted spans, paths and URLs, the numbers the agent passed
  (pages, offsets, line numbers), ids, hashes and timestamps. Counts the tool computed
  stay (``2 failed`` is not ``1 failed``: that is progress). Two calls of one tool that
  fail with one signature failed the same way however their arguments changed.
- :func:`specific` — whether a signature says enough to tell failures apart. ``Exit
  code 1`` is every failing shell command's: only near-same calls may share such an
  error; ``TypeError: forward() got an unexpected keyword argument <q>`` is one bug.
- :func:`same_shape` — calls that vary an argument's value, not what they pass: the
  same tool with the same argument names (a query, a page, a flag's value tweaked).
- :func:`is_request` — whether an argument is a request in words (a query, a question,
  a task for a sub-agent), which an agent can re-word, unlike a path, a URL or a command.
- :func:`critical_needed` — how many repeats kill: a loop of reads answered the same
  burns only tokens, so it needs more evidence than one that fails or acts.

Everything here is a pure function of its arguments (no state, no I/O, no clock) and
bounded: texts are read up to :data:`SIGNATURE_CHARS` characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import repeat

from features.calls.action_keys import argument_values

__all__ = [
    "SIGNATURE_CHARS",
    "argument_values",
    "critical_needed",
    "is_request",
    "mask_echo",
    "result_signature",
    "same_shape",
    "specific",
]

SIGNATURE_CHARS = 300
"""Characters of a result read for its signature (errors say what they are up front)."""
_KEPT = 160  # characters of the masked signature kept
_MIN_VALUE = 3  # argument values shorter than this are not masked (too common as text)
_MIN_LETTERS = 12  # letters a specific signature keeps after masking
_ECHO = 16  # characters of a result that, found among the arguments, are an echo
_ECHO_CHARS = 4_096  # characters of the arguments an echo is looked for in

# Quoted spans (an unclosed quote runs to the line's end: runtimes cut long errors).
_QUOTED_RE = re.compile(r"'[^'\n]*(?:'|$)|\"[^\"\n]*(?:\"|$)|`[^`\n]*(?:`|$)")
# Punctuation around a word that is kept when the word is masked.
_EDGE = "()[]{}<>,;:.!?"
_FILE_RE = re.compile(r"[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}")
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T _][\d:.,]*Z?)?|\d{1,2}:\d{2}(?::\d{2})?[.,\d]*Z?")
_LETTERS_RE = re.compile(r"[^\W\d_]")
_MASK_RE = re.compile(r"<(?:arg|path|url|id|ts|n)>")


def mask_echo(head: str, arguments: str) -> str:
    """``head`` with every run of it that the arguments contain (pieces of at least
    ``_ECHO`` characters: a printed task, a query, a path echoed back, even when the
    arguments split it across string literals) replaced by ``<arg>``. Both texts are
    compared with their spaces collapsed; the arguments are read up to ``_ECHO_CHARS``.

    >>> code = 'task = ("Please find the 2011 census figures " "for Bulgaria by gender")'
    >>> mask_echo("Execution logs: Please find the 2011 census figures for Bulgaria by "
    ...           "gender Last output: None", code)
    'Execution logs: <arg> Last output: None'
    """
    if len(arguments) < _ECHO or len(head) < _ECHO:
        return head
    hay = " ".join(arguments[:_ECHO_CHARS].split())
    last = len(head) - _ECHO
    # an echoed piece of 1.5 × _ECHO - 1 characters or more holds a window starting at
    # a multiple of _ECHO / 2: look there first (a result with no echo, the common case,
    # costs len(head) / 8 searches), and cover the rest only if one is found
    windows = [head[i : i + _ECHO] for i in range(0, last + 1, _ECHO // 2)]
    if not any(map(hay.__contains__, windows)):
        return head
    # the runs of head found in hay: from each window that matches, grow the run while
    # it is still found (every window inside a found run is found: skip past them)
    runs: list[tuple[int, int]] = []
    i, n = 0, len(head)
    while i <= last:
        if head[i : i + _ECHO] not in hay:
            i += 1
            continue
        j = i + _ECHO
        step = _ECHO
        while j < n:
            k = min(n, j + step)
            if head[i:k] in hay:
                j = k
            elif step > 1:
                step //= 2
            else:
                break
        if runs and i <= runs[-1][1]:
            runs[-1] = (runs[-1][0], j)  # overlaps the run before: one run
        else:
            runs.append((i, j))
        i = j - _ECHO + 1 if j - _ECHO + 1 > i else i + 1
    out: list[str] = []
    at = 0
    for a, b in runs:
        out += (head[at:a], "<arg>")
        at = b
    out.append(head[at:])
    return "".join(out)


@lru_cache(maxsize=1024)
def result_signature(text: str, values: tuple[str, ...] = (), *, measured: bool = False) -> str:
    """What a result says once what varies with its call is masked (at most ``_KEPT``
    characters, lower-cased, spaces collapsed). ``values``: the call's argument values
    (:func:`~features.calls.action_keys.argument_values`): where the result echoes one back it
    is masked, and so are the numbers the agent passed (a page, an offset); other short
    numbers stay. ``measured``: fractions are masked too (measurements: a failure's wall
    time, a size), where only counts tell one failure from the next.

    >>> a = result_signature("Exception: No results found for query: 'bird count 2019'."
    ...                      " Use a less specific query.", ("bird count 2019",))
    >>> b = result_signature("Exception: No results found for query: 'YouTube birds'."
    ...                      " Use a less specific query.", ("YouTube birds",))
    >>> a == b, a
    (True, 'exception: no results found for query: <arg>. use a less specific query.')
    >>> result_signature("page 7 of 9 is out of range", ("7",))
    'page <n> of 9 is out of range'
    >>> result_signature("2 failed, 5 passed") == result_signature("1 failed, 6 passed")
    False
    >>> a, b = "exit 1, wall time 0.74 s", "exit 1, wall time 0.6 s"
    >>> result_signature(a, measured=True) == result_signature(b, measured=True)
    True
    >>> result_signature(a) == result_signature(b)
    False
    """
    head = " ".join(text[:SIGNATURE_CHARS].split())
    words: list[str] = []
    passed: list[str] = []
    for value in values:  # each value tested once: a word, or a number the call passed
        (passed if _is_number(value) else words).append(value)
    head = mask_echo(head, "\x1f".join(words))
    for value in words:
        v = " ".join(value.split())
        if len(v) >= _MIN_VALUE and v in head:
            head = head.replace(v, "<arg>")
    numbers = frozenset(passed)
    head = _QUOTED_RE.sub("<arg>", head)
    # a plain word is kept as it is (most are), another read from the table when its
    # mask is known: both tested here, not in a call
    known = _MASKED.get
    masked = [
        w if w.isalpha() else known(w) or _mask_word(w, numbers, measured) for w in head.split(" ")
    ]
    return " ".join(masked)[:_KEPT].lower()


_MASKED: dict[str, str] = {}
"""Word → its mask (:func:`_mask_word`) where the call's numbers cannot change it, or
"" where they can (a number). Results repeat their words (paths, ``0.4s``, a status
line's punctuation) across calls: the tests run once a word. Bounded: emptied when full."""
_MAX_MASKED = 4_096


def _mask_word(word: str, numbers: frozenset[str], measured: bool = False) -> str:
    """One word of a result with what varies masked (its surrounding punctuation kept):
    URLs, paths and file names, timestamps, UUIDs, keys and ids (6+ characters mixing
    letters and digits), long numbers, and numbers the call passed. Word by word, not
    by regex over the text: most words are plain and leave at the first test."""
    if word.isalpha() or not word:
        return word
    masked = _MASKED.get(word)
    if masked is None:
        masked = _mask_fixed(word)
        if len(_MASKED) >= _MAX_MASKED:
            _MASKED.clear()
        _MASKED[word] = masked
    if masked:
        return masked
    # a number: masked if the call passed it, a long one in any case
    core = word.strip(_EDGE)
    left = word[: word.index(core[0])]
    right = word[len(left) + len(core) :]
    if core in numbers:
        mask = "<n>"
    elif core.isdigit() and len(core) >= 5:
        mask = "#"
    elif measured and "." in core:
        # a fraction is a measurement (a wall time, a size, a score), not a count: the
        # same failure timed again is the same failure
        mask = "<x>"
    else:
        return word
    return f"{left}{mask}{right}"


def _mask_fixed(word: str) -> str:
    """:func:`_mask_word` of a word that is not plain, whatever the call's numbers; ""
    when they decide it (its core is a number: digits, or digits around a dot, the only
    values :func:`_is_number` takes for one)."""
    core = word.strip(_EDGE)
    if not core or core.isalpha():
        return word
    left = word[: word.index(core[0])]
    right = word[len(left) + len(core) :]
    if "://" in core:
        mask = "<url>"
    elif "/" in core or "\\" in core:
        mask = "<path>"
    elif core.isdigit():
        return ""
    elif _UUID_RE.fullmatch(core):
        mask = "<id>"
    elif _TS_RE.fullmatch(core):
        mask = "<ts>"
    elif "." in core and _FILE_RE.fullmatch(core):
        mask = "<path>"
    elif len(core) >= 6 and any(c.isdigit() for c in core) and any(c.isalpha() for c in core):
        mask = "<id>"
    elif _is_number(core):
        return ""
    else:
        return word
    return f"{left}{mask}{right}"


def _is_number(value: str) -> bool:
    return value.isdigit() or (value.replace(".", "", 1).isdigit() and value.count(".") == 1)


@lru_cache(maxsize=1024)  # signatures repeat: the answers a loop gets
def specific(signature: str) -> bool:
    """Whether a masked signature says enough to call two failures of one tool the same
    failure whatever their arguments: at least ``_MIN_LETTERS`` letters outside the masks
    (``exit code 1`` has 8, ``command failed`` 13 but says no more than its tool: callers
    also require :func:`same_shape`).

    >>> specific("exit code 1"), specific("typeerror: forward() got an unexpected keyword")
    (False, True)
    """
    bare = _MASK_RE.sub("", signature)
    return len(_LETTERS_RE.findall(bare)) >= _MIN_LETTERS


def same_shape(tool_a: str, names_a: Iterable[str], tool_b: str, names_b: Iterable[str]) -> bool:
    """Two calls vary values, not what they pass: the same tool with the same argument
    names (``web_search(query=…)`` twice; ``read(path=…, offset=…)`` twice).

    >>> same_shape("web_search", ["query"], "web_search", ["query"])
    True
    >>> same_shape("web_search", ["query"], "web_search", ["query", "filter_year"])
    False
    """
    return tool_a == tool_b and frozenset(names_a) == frozenset(names_b)


_MIN_REQUEST_WORDS = 3


def is_request(value: str) -> bool:
    """Whether an argument value is a request in words: at least three words, two in
    three of them plain words or numbers (a year, a count), none a path or a URL.
    Paths, URLs and commands name things; two of them sharing words (files of one
    folder, pages of one site) are two things, not one request re-worded.

    >>> is_request("Pie Menus or Linear Menus, Which Is Better? 2015 DBLP")
    True
    >>> is_request("src/requests/models.py"), is_request("rg -n 'entry' src/constants")
    (False, False)
    """
    tokens = value.split()
    if len(tokens) < _MIN_REQUEST_WORDS:
        return False
    if "/" in value or "\\" in value:  # in a token: neither is a space
        return False
    # the tokens plain once their punctuation is stripped, counted in C
    plain = sum(map(str.isalnum, map(str.strip, tokens, repeat("\"'?!,.:;()[]$"))))
    return 3 * plain >= 2 * len(tokens)


def critical_needed(
    *, critical_cycles: int, critical_read_cycles: int, failed: bool, reads_only: bool
) -> int:
    """Repeats of a loop that kill it. A loop whose calls failed the same way, or that
    acts (a payment, a message, an edit, any shell command), is killed at
    ``critical_cycles``; one made only of reads answered successfully burns nothing but
    tokens (a stuck agent listing the same files), so it needs ``critical_read_cycles``.

    >>> critical_needed(critical_cycles=5, critical_read_cycles=10, failed=False, reads_only=True)
    10
    >>> critical_needed(critical_cycles=5, critical_read_cycles=10, failed=True, reads_only=True)
    5
    """
    return critical_read_cycles if reads_only and not failed else critical_cycles
