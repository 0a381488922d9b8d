"""An agent's own plan, read from its plan tool: how many items it still has open.

Claude Code's ``TodoWrite`` (``todos``), Codex's ``update_plan`` (``plan``), OpenHands'
``task_tracker`` (``task_list``) and the plan tools of custom agents write the whole list
each time, each item with a ``status``. An item is open unless its status says it is done
(``completed``, ``done``, ``cancelled``, …). Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["open_plan_items"]

_LIST_KEYS = ("todos", "plan", "task_list", "tasks", "items", "steps")
_CLOSED = frozenset(
    {"completed", "complete", "done", "cancelled", "canceled", "skipped", "finished", "ok"}
)


def open_plan_items(args: Any) -> int | None:
    """The open items of a plan a call writes, or None when its arguments hold no plan.

    >>> open_plan_items({"plan": [{"step": "a", "status": "completed"},
    ...                           {"step": "b", "status": "pending"}]})
    1
    >>> open_plan_items({"todos": [{"content": "a", "status": "completed"}]})
    0
    >>> open_plan_items({"command": "ls"}) is None
    True
    """
    if type(args) is not dict and not isinstance(args, Mapping):
        return None
    for key in _LIST_KEYS:
        items = args.get(key)
        # None first: most calls hold no plan, and an ABC check costs a Python call
        if items is None or not isinstance(items, Sequence) or isinstance(items, str) or not items:
            continue
        statuses = [i.get("status") for i in items[:200] if isinstance(i, Mapping)]
        texts = [s for s in statuses if isinstance(s, str)]
        if not texts or len(texts) != len(statuses):
            continue
        return len([s for s in texts if s.strip().lower() not in _CLOSED])
    return None
