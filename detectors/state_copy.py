"""``copy.deepcopy`` of detector state, the same copy at a fraction of the cost.

A session's detector state is mostly plain data (dicts, lists, tuples, strings,
numbers, sets, deques), frozen slotted dataclasses (``Step``, ``StepRef``) and plain
classes (slotted dataclasses, ledgers); ``copy.deepcopy`` walks each object through its
generic dispatch and rebuilds every instance through ``__reduce_ex__``, which made
copying the state (at every commit, for every live session) cost more than pickling
it. :func:`deepcopy` copies those types directly and hands anything else to
``copy.deepcopy`` with the same memo, so the result is the same object graph
``copy.deepcopy`` builds: the same sharing (an object reachable twice is copied once),
the same objects kept rather than copied (strings, numbers, enum members, tuples whose
items need no copy), and so the same pickle bytes
(``tests/unit/detectors/test_state_copy.py`` compares them on real sessions' state).
"""

from __future__ import annotations

import copy
import copyreg
import dataclasses
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import Any

__all__ = ["deepcopy"]

_Copier = Callable[[Any, dict[int, Any]], Any]

_ATOMIC = frozenset({type(None), int, float, bool, complex, bytes, str, type, range})
"""Types ``copy.deepcopy`` returns as they are (its ``_deepcopy_atomic``)."""


def deepcopy(x: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy(x, memo)``: an equal graph of new objects, built faster."""
    return _copy(x, {} if memo is None else memo)


def _copy(x: Any, memo: dict[int, Any]) -> Any:
    cls = type(x)
    if cls in _ATOMIC:
        return x  # never in the memo: copy.deepcopy does not memoise what it keeps
    y = memo.get(id(x), _nil)
    if y is not _nil:
        return y
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS[cls] = _copier_for(cls)
    return copier(x, memo)


_nil = object()


def _dict(x: dict[Any, Any], memo: dict[int, Any]) -> dict[Any, Any]:
    y: dict[Any, Any] = {}
    memo[id(x)] = y
    for key, value in x.items():
        y[_copy(key, memo)] = _copy(value, memo)
    return y


def _list(x: list[Any], memo: dict[int, Any]) -> list[Any]:
    y: list[Any] = []
    memo[id(x)] = y
    append = y.append
    for item in x:
        append(_copy(item, memo))
    return y


def _tuple(x: tuple[Any, ...], memo: dict[int, Any]) -> tuple[Any, ...]:
    items = [_copy(item, memo) for item in x]
    # a tuple holding a mutable object that holds the tuple was copied meanwhile
    y = memo.get(id(x), _nil)
    if y is not _nil:
        return y
    if all(a is b for a, b in zip(items, x, strict=True)):
        return x  # kept, as copy.deepcopy keeps it (and does not memoise it)
    copied = tuple(items)
    memo[id(x)] = copied
    return copied


def _kept(x: Any, memo: dict[int, Any]) -> Any:
    return x


def _fallback(x: Any, memo: dict[int, Any]) -> Any:
    return copy.deepcopy(x, memo)


def _copier_for(cls: type) -> _Copier:
    """How to copy an instance of ``cls``: directly where ``copy.deepcopy``'s way is known
    (an enum member is kept; a frozen slotted dataclass with the generated
    ``__getstate__``/``__setstate__`` is rebuilt field by field, memoised before its
    fields are copied, as ``copy._reconstruct`` does), ``copy.deepcopy`` otherwise."""
    if issubclass(cls, type):
        return _kept
    if issubclass(cls, Enum) and cls.__deepcopy__ is Enum.__deepcopy__:
        return _kept
    if _plain_frozen_dataclass(cls):
        names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        new = object.__new__
        set_ = object.__setattr__

        def rebuild(x: Any, memo: dict[int, Any]) -> Any:
            y = new(cls)
            memo[id(x)] = y
            for name in names:
                set_(y, name, _copy(getattr(x, name), memo))
            return y

        return rebuild
    if _plain_object(cls):
        slots = tuple(copyreg._slotnames(cls))  # type: ignore[attr-defined]
        new_object = object.__new__

        def rebuild_object(x: Any, memo: dict[int, Any]) -> Any:
            # object.__reduce_ex__(4): __newobj__(cls), state (__dict__, {slot: value})
            y = new_object(cls)
            memo[id(x)] = y
            own = getattr(x, "__dict__", None)
            state = _copy(own, memo) if own else None
            values = []
            for name in slots:
                try:
                    values.append((name, getattr(x, name)))
                except AttributeError:  # an unset slot is not in the state
                    continue
            copied = [(name, _copy(value, memo)) for name, value in values]
            if state:
                y.__dict__.update(state)
            for name, value in copied:
                setattr(y, name, value)
            return y

        return rebuild_object
    return _fallback


def _plain_object(cls: type) -> bool:
    """Whether ``copy.deepcopy`` copies ``cls`` by ``object.__reduce_ex__`` without any
    hook: no builtin base (a dict or tuple subclass reduces otherwise), no ``__new__``,
    ``__getstate__``, ``__setstate__``, ``__reduce__`` or ``__deepcopy__`` of its own."""
    return (
        cls.__mro__[-1] is object
        and all(k.__module__ != "builtins" for k in cls.__mro__[:-1])
        and cls.__new__ is object.__new__
        and cls.__reduce_ex__ is object.__reduce_ex__
        and cls.__reduce__ is object.__reduce__
        and cls.__getstate__ is object.__getstate__
        and not hasattr(cls, "__setstate__")
        and not hasattr(cls, "__deepcopy__")
        and cls not in copyreg.dispatch_table
    )


def _deque(x: deque[Any], memo: dict[int, Any]) -> deque[Any]:
    y: deque[Any] = deque(maxlen=x.maxlen)
    memo[id(x)] = y
    for item in x:
        y.append(_copy(item, memo))
    return y


def _set(x: set[Any], memo: dict[int, Any]) -> set[Any]:
    y = set([_copy(item, memo) for item in x])
    memo[id(x)] = y
    return y


def _frozenset(x: frozenset[Any], memo: dict[int, Any]) -> frozenset[Any]:
    y = frozenset([_copy(item, memo) for item in x])  # a new one, as copy.deepcopy makes
    memo[id(x)] = y
    return y


def _plain_frozen_dataclass(cls: type) -> bool:
    params = getattr(cls, "__dataclass_params__", None)
    return (
        params is not None
        and params.frozen
        and "__slots__" in cls.__dict__
        and getattr(cls.__setstate__, "__qualname__", "") == "_dataclass_setstate"  # type: ignore[attr-defined]
        and getattr(cls.__getstate__, "__qualname__", "") == "_dataclass_getstate"
        and not hasattr(cls, "__deepcopy__")
        and cls.__reduce_ex__ is object.__reduce_ex__
        and cls.__reduce__ is object.__reduce__
        and cls not in copyreg.dispatch_table
        and object.__new__ is cls.__new__
    )


_COPIERS: dict[type, _Copier] = {
    dict: _dict,
    list: _list,
    tuple: _tuple,
    set: _set,
    frozenset: _frozenset,
    deque: _deque,
}
"""By exact type (a subclass of dict or list takes ``copy.deepcopy``'s own way)."""
