"""One bounded memo for the pure functions of short text that recur across a run's calls.

Agents repeat themselves: the same paths, commands, host names and small argument objects
come back call after call and run after run, and the features read from them cost
microseconds each (regexes, JSON parsing, ``ipaddress``). :func:`short_text_memo`
memoises such a function in a least-recently-used table of ``entries`` for texts of at
most ``max_chars`` characters — so the table holds at most ``entries × max_chars``
characters of keys — and computes longer texts (file writes, edits, long results: rarely
repeated, costly to hash and to hold) directly.

The function must be pure and return a value nobody mutates (a tuple, a frozenset, a str,
a frozen dataclass): a memo hit hands every caller the same object.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import ParamSpec, TypeVar

__all__ = ["short_text_memo"]

P = ParamSpec("P")
R = TypeVar("R")


def short_text_memo(
    *, entries: int, max_chars: int, text: int = 0
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: memoise calls whose positional argument ``text`` (a str) has at most
    ``max_chars`` characters, in an LRU table of ``entries``; other calls (longer text,
    keyword arguments) run the function directly. Every argument must be hashable.

    >>> @short_text_memo(entries=2, max_chars=5)
    ... def shout(word: str) -> str:
    ...     return word.upper()
    >>> shout("hey"), shout("hey"), shout("a longer text")
    ('HEY', 'HEY', 'A LONGER TEXT')
    """

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        memo = lru_cache(maxsize=entries)(fn)

        @wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            key: str = args[text]  # type: ignore[assignment]
            if kwargs or len(key) > max_chars:
                return fn(*args, **kwargs)
            return memo(*args)

        return call

    return decorate
