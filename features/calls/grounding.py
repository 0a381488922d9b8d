"""Where an answer's figures came from: the numbers a text states, and which of them no
observed text holds.

An agent that answers a question it was told to look up states figures (a count, a
population, a price, a year's total). Each either came into the session — the task's
text, a tool's result, an error it reported — or the agent brought it: recalled, made
up, or computed from numbers it made up. :func:`figures` reads the figures of a text,
spelt one way whatever the thousands separators (``350,284``, ``350 284`` and
``350284`` are one figure); :func:`ungrounded` keeps those that none of the observed
figures is.

A figure is a number of at least :data:`MIN_DIGITS` digits (``216,618``, ``133.7``,
``1987``): shorter ones (a step number, a count of three) say nothing about provenance.

Contract: pure functions of their arguments, bounded (a text is read up to ``limit``
characters, at most :data:`MAX_FIGURES` figures kept), no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable

__all__ = ["MAX_FIGURES", "MIN_DIGITS", "computed", "figures", "ungrounded"]

MIN_DIGITS = 3
MAX_FIGURES = 256
_FIGURE_RE = re.compile(
    r"(?<![\w.])\d{1,3}(?:[,\u202f\u00a0 ]\d{3})+(?:\.\d+)?(?![\w])|\d+(?:\.\d+)?"
)
_SEPARATORS_RE = re.compile(r"[,\u202f\u00a0 ]")
_OPERATOR_RE = re.compile(r"[-+*/×÷^%–−]|\bx\b")


def figures(text: str | None, *, limit: int = 20_000) -> frozenset[str]:
    """The figures ``text`` states (its first ``limit`` characters), separators dropped.

    >>> sorted(figures("216,618 men and 350 284 women: 133.7 thousand, step 2"))
    ['133.7', '216618', '350284']
    >>> figures("call_9fceb02d at 12:05") == frozenset()
    True
    """
    if not text:
        return frozenset()
    out: list[str] = []
    for match in _FIGURE_RE.finditer(text[:limit]):
        start, end = match.span()
        # a digit run inside an identifier (``call_9fceb02d``, ``v2``) is no figure
        if (start and (text[start - 1].isalpha() or text[start - 1] == "_")) or (
            end < len(text) and (text[end].isalpha() or text[end] == "_")
        ):
            continue
        figure = _SEPARATORS_RE.sub("", match.group())
        if sum(c.isdigit() for c in figure) >= MIN_DIGITS:
            out.append(figure)
            if len(out) >= MAX_FIGURES:
                break
    return frozenset(out)


# ``= <figure>`` not followed by an operator: the result of a computation shown
_RESULT_RE = re.compile(
    r"=\s*(\d{1,3}(?:[,\u202f\u00a0]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w.,]?\d)(?!\s*[-+*/×÷^%])"
)


def computed(text: str | None, *, limit: int = 20_000) -> frozenset[str]:
    """The figures ``text`` shows as results of its own arithmetic: a bare figure on the
    right of an ``=`` whose left side computes something (``350,284 - 216,618 =
    133,666``, ``1250 * 4 = 5000``). A figure assigned to a name (``men = 216618``) is
    an input the text states, not a result.

    >>> sorted(computed("d = 350284 - 216618 = 133666; men = 216618"))
    ['133666']
    """
    if not text:
        return frozenset()
    text = text[:limit]
    out = set()
    for match in _RESULT_RE.finditer(text):
        figure = _SEPARATORS_RE.sub("", match.group(1))
        left = re.split(r"[=\n;:]", text[max(0, match.start() - 200) : match.start()])[-1]
        if _OPERATOR_RE.search(left) and sum(c.isdigit() for c in figure) >= MIN_DIGITS:
            out.add(figure)
    return frozenset(out)


def ungrounded(stated: Iterable[str], observed: Container[str]) -> list[str]:
    """The ``stated`` figures that are not ``observed`` (sorted). A decimal is grounded
    by its whole part too (``133.7`` by ``133``: a rounded or scaled reading).

    >>> ungrounded({"216618", "2011", "133.7"}, {"2011", "133"})
    ['216618']
    """
    return sorted(f for f in stated if f not in observed and f.split(".", 1)[0] not in observed)
