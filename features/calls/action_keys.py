"""What a tool call's canonical action and arguments say about repetition.

A loop is the same action again, so the facts that tell one action from another are
worked out once per call (:class:`features.calls.step_features.StepFeatures` holds them):

- :func:`near_key` — the *near-duplicate key* of a canonical action signature: its
  words tagged with their argument, order ignored, random suffixes and placeholders
  dropped, positions (line ranges, pages) kept.
- :func:`action_facts` — the near key, its word bag (capped), the exact signature's
  crc and a short label for reasons.
- :func:`argument_facts` — the argument names (a call's *shape*) and values (masked
  when echoed in a result).
- :func:`numbers_crc` — a digest of the numbers in the raw arguments.
- :func:`head_crc` / :func:`body_crc` — digests of a result's first line and body,
  volatile parts (clocks, ids) left out.

Pure functions of a call's immutable text, memoised (bounded): loops repeat calls
(a memo hit also gives the same objects, so a detector state keeping them pickles the
same). Arguments longer than :data:`MEMO_MAX_CHARS` (file writes, edits) rarely repeat
and are read uncached.
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache
from typing import Any

from features.calls.canonical import arguments_value
from features.text.memo import short_text_memo

__all__ = [
    "MEMO_MAX_CHARS",
    "action_facts",
    "argument_facts",
    "argument_values",
    "body_crc",
    "crc",
    "head_crc",
    "label",
    "near_key",
    "numbers_crc",
]

MAX_WORDS = 48  # words kept per call for near-same tests (the key uses them all)
MEMO_MAX_CHARS = 4096
_DIGIT_BYTES = b"0123456789"
_DIGITS_RE = re.compile(r"\d+")
# ``key=`` of a canonical signature | canonical_action's digest of a long value | a word
# without digits | a word with digits. The last two split one maximal ``[A-Za-z0-9_]+``
# run by whether it holds a digit (the possessive ``++`` cannot give letters back to
# make the lookahead pass), so the loop needs no per-word digit search. The key's
# ``[\w.]*+`` is possessive too: what it could give back is never ``=``, so a word that
# is no key fails at once instead of backtracking through itself.
_TOKEN_RE = re.compile(r"([A-Za-z_][\w.]*+)=|…#([0-9a-f]+)|([A-Za-z_]++)(?![0-9])|([A-Za-z0-9_]+)")
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
_MIN_VALUE = 3  # argument values shorter than this are not masked (too common as text)
_MAX_VALUES = 16  # argument values masked per call


def crc(text: str) -> int:
    """crc32 of ``text`` (UTF-8, lone surrogates passed through)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


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


@lru_cache(maxsize=1024)
def label(tool: str | None, action: str) -> str:
    """A short name of a call for reasons: the tool and its longest string argument.

    >>> label("bash", 'bash(command="pytest  -q tests/")')
    'bash pytest -q tests/'
    """
    values = _QUOTED_RE.findall(action)
    # a command or query (it has spaces) says more than a working directory
    text = max(values, key=lambda v: (" " in v, len(v))) if values else action

    text = " ".join(text.split())
    return f"{tool or '?'} {text[:60]}{'…' if len(text) > 60 else ''}".strip()


@lru_cache(maxsize=1024)
def action_facts(tool: str | None, action: str) -> tuple[int, frozenset[str], int, str]:
    """(near key, word bag capped at ``MAX_WORDS``, crc of the signature, label)."""
    key, words = near_key(action)
    if len(words) > MAX_WORDS:
        words = frozenset(sorted(words)[:MAX_WORDS])
    return key, words, crc(action), label(tool, action)


def argument_values(value: Any) -> tuple[str, ...]:
    """The string and number values of a parsed arguments value, longest first (at most
    ``_MAX_VALUES``; strings shorter than ``_MIN_VALUE`` characters are left out).

    >>> argument_values({"query": "bird species", "page": 3, "flags": ["-v", "--all"]})
    ('bird species', '--all', '3')
    """
    out: list[str] = []

    def walk(v: Any, depth: int) -> None:
        if len(out) >= 4 * _MAX_VALUES or depth > 4:
            return
        if isinstance(v, str):
            s = v.strip()
            if len(s) >= _MIN_VALUE:
                out.append(s)
        elif isinstance(v, bool):
            return
        elif isinstance(v, int | float):
            out.append(str(v))
        elif isinstance(v, dict):
            for item in v.values():
                walk(item, depth + 1)
        elif isinstance(v, list | tuple):
            for item in v:
                walk(item, depth + 1)

    walk(value, 0)
    unique = sorted(set(out), key=lambda s: (-len(s), s))
    return tuple(unique[:_MAX_VALUES])


@short_text_memo(entries=1024, max_chars=MEMO_MAX_CHARS)
def _argument_facts_of(arguments: str) -> tuple[frozenset[str], tuple[str, ...]]:
    value = arguments_value(arguments)
    names = frozenset(value) if isinstance(value, dict) else frozenset()
    return names, argument_values(value)


def argument_facts(arguments: str | None) -> tuple[frozenset[str], tuple[str, ...]]:
    """(argument names, argument values) of a call's raw arguments.

    >>> names, values = argument_facts('{"page": 2, "query": "bird species"}')
    >>> sorted(names), values
    (['page', 'query'], ('bird species', '2'))
    """
    if not arguments:
        return frozenset(), ()
    return _argument_facts_of(arguments)


@short_text_memo(entries=1024, max_chars=MEMO_MAX_CHARS)
def _numbers_crc(arguments: str) -> int:
    return crc(",".join(sorted(_DIGITS_RE.findall(arguments))))


def numbers_crc(arguments: str | None) -> int:
    """crc of the numbers in a call's raw arguments, sorted (0 when there are none)."""
    if not arguments:
        return 0  # crc32 of the empty string
    return _numbers_crc(arguments)


def text_signature(text: str) -> str:
    """``text`` with its blanks collapsed and volatile parts (timestamps, UUIDs, hex
    digests, long numbers) replaced by ``#``.

    >>> text_signature("done  at 2024-05-01T10:00:00Z, id 9fceb02d1")
    'done at #, id #'
    """
    return _VOLATILE_TEXT_RE.sub("#", " ".join(text.split()))


@lru_cache(maxsize=1024)
def head_crc(line: str) -> int:
    """crc of a result's first line, volatile parts removed: statuses and exit codes
    repeat, so this is memoised too."""
    return crc(text_signature(line))


def body_crc(text: str) -> int:
    """crc of ``text`` with its ASCII digits removed. Deleting the digit bytes after
    encoding is the same as deleting the digits before (UTF-8 multi-byte sequences have
    no byte below 0x80), and ``bytes.translate`` is ~10× cheaper than ``str.translate``.

    >>> body_crc("took 12 ms") == body_crc("took 345 ms")
    True
    """
    return zlib.crc32(text.encode("utf-8", "surrogatepass").translate(None, _DIGIT_BYTES))
