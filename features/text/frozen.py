"""Exact, hashable copies of plain data, so pure functions of it can be memoised.

``lru_cache`` needs hashable arguments, but tool arguments and policy tables are dicts
and lists. :func:`freeze` makes a hashable copy that tags every value with its type
and keeps every order, so two values have equal keys only when they are equal *and*
of the same types in the same order (``1`` ≠ ``1.0`` ≠ ``True``, a list ≠ a tuple):
whatever a function does with one it does with the other. :func:`thaw` gives the
value back (an equal copy) for the function to run on. Anything but plain data
(dict with str keys, list, tuple, str, int, float, bool, None) gives no key: the
caller then computes uncached.

>>> thaw(freeze({"a": [1, 2.0, True, None, "s"]}))
{'a': [1, 2.0, True, None, 's']}
>>> freeze({"a": 1}) == freeze({"a": 1.0}), freeze({1: "x"}), freeze("x" * 10, max_chars=4)
(False, None, None)
"""

from __future__ import annotations

from typing import Any

__all__ = ["freeze", "thaw"]

_SCALARS = (str, int, float, bool, type(None))


MAX_DEPTH = 64
"""Deeper values give no key: :func:`thaw` takes two frames a level, and a value nested
600 levels (an agent's tool arguments) made it raise ``RecursionError`` out of the
pipeline; the uncached path bounds its own walks (``features.calls.canonical``)."""


def freeze(value: Any, *, max_chars: int | None = None) -> tuple[Any, ...] | None:
    """A hashable, type-tagged copy of ``value``; None when it is not plain data, its
    strings hold more than ``max_chars`` characters in all (keeps memo entries small) or
    it nests deeper than :data:`MAX_DEPTH`.

    >>> deep: Any = "x"
    >>> for _ in range(MAX_DEPTH + 1):
    ...     deep = [deep]
    >>> freeze(deep) is None, freeze(deep[0]) is None
    (True, False)
    """
    budget = [max_chars if max_chars is not None else -1]
    return _freeze(value, budget, 0)


def _freeze(value: Any, budget: list[int], depth: int) -> tuple[Any, ...] | None:
    kind = type(value)
    if kind is str:
        if budget[0] >= 0:
            budget[0] -= len(value)
            if budget[0] < 0:
                return None
        return (str, value)
    if (kind is dict or kind is list or kind is tuple) and depth >= MAX_DEPTH:
        return None
    if kind is dict:
        items = []
        for k, v in value.items():
            fv = _freeze(v, budget, depth + 1)
            if type(k) is not str or fv is None:
                return None
            items.append((k, fv))
        return (dict, tuple(items))
    if kind is list or kind is tuple:
        parts = []
        for v in value:
            fv = _freeze(v, budget, depth + 1)
            if fv is None:
                return None
            parts.append(fv)
        return (kind, tuple(parts))
    if kind in _SCALARS:
        return (kind, value)
    return None


def thaw(key: tuple[Any, ...]) -> Any:
    """The value :func:`freeze` made ``key`` from (a fresh, equal copy)."""
    kind, body = key
    if kind is dict:
        return {k: thaw(v) for k, v in body}
    if kind is list or kind is tuple:
        return kind(thaw(v) for v in body)
    return body
