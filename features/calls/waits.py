"""How long a tool call may legitimately keep its session silent, read from the call itself.

A call that is still running says nothing until it returns; whether its silence is a worker
that died or work in progress depends on what the call declared:

- a **timeout** in its arguments (:func:`declared_timeout_s`): the runtime ends the call
  with an error at that point, so a call silent well past it has nobody left to end it;
- a **person** on the other end (:func:`waits_for_human`): an approval request, a question
  to the user, a command that needs a sandbox escalation the user must grant. Those wait
  as long as the person does.

Contract: pure functions of the tool name and its arguments (a mapping, as
:func:`features.calls.canonical.arguments_value` reads them), no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from features.calls.tool_view import DEFAULT_APPROVAL_RE, may_request_approval, parsed_view

__all__ = ["declared_timeout_s", "waits_for_human"]

_MS_KEYS = ("timeout_ms", "timeoutms", "timeout_millis", "timeout_milliseconds")
_S_KEYS = ("timeout_s", "timeout_sec", "timeout_secs", "timeout_seconds", "wait_seconds")
_BARE_KEYS = ("timeout", "max_wait", "wait_timeout")
_TIMEOUT_KEYS = (*_MS_KEYS, *_S_KEYS, *_BARE_KEYS)
"""Every key :func:`declared_timeout_s` reads: a call naming none of them declares none."""
_MS_TOOLS = frozenset({"Bash", "BashOutput"})
"""Tools whose bare ``timeout`` is in milliseconds: Claude Code's (up to 600000)."""
_VIEW_CHARS = 8_000
"""Characters of a call's arguments (as JSON) :func:`waits_for_human` reads for a request
for approval."""
_SECONDS_CAP = 86_400
"""A bare ``timeout`` above a day of seconds is read as milliseconds."""


def declared_timeout_s(tool: str | None, args: Any) -> float | None:
    """The timeout (seconds) a call's arguments declare, or None.

    ``timeout_ms`` (Codex's ``shell``) is milliseconds; ``timeout_s`` and its spellings
    (MCP shell servers) seconds; a bare ``timeout`` is milliseconds for Claude Code's
    ``Bash`` and for a value above a day of seconds, seconds otherwise (OpenHands).

    >>> declared_timeout_s("shell", {"command": ["make"], "timeout_ms": 2400000})
    2400.0
    >>> declared_timeout_s("Bash", {"command": "npm ci", "timeout": 600000})
    600.0
    >>> declared_timeout_s("execute_bash", {"command": "make", "timeout": 2400})
    2400.0
    >>> declared_timeout_s("Read", {"file_path": "a.py"}) is None
    True
    """
    if type(args) is not dict and not isinstance(args, Mapping):
        return None
    lowered = {k.lower(): v for k, v in args.items() if isinstance(k, str)}
    if not any(key in lowered for key in _TIMEOUT_KEYS):  # most calls name none of them
        return None
    for keys, scale in ((_MS_KEYS, 0.001), (_S_KEYS, 1.0)):
        for key in keys:
            value = _number(lowered.get(key))
            if value is not None:
                return value * scale
    for key in _BARE_KEYS:
        value = _number(lowered.get(key))
        if value is not None:
            in_ms = tool in _MS_TOOLS or value > _SECONDS_CAP
            return value / 1000 if in_ms else value
    return None


def waits_for_human(tool: str | None, args: Any) -> bool:
    """Whether the call waits for a person: a tool named for asking one (approval,
    ``AskUserQuestion``, ``request_user_input``, …: the default approval tools), a call
    whose arguments ask for approval (:mod:`features.calls.tool_view`), or a command run
    with a sandbox escalation the user must grant (Codex's ``with_escalated_permissions``
    / ``sandbox_permissions = "require_escalated"``).

    >>> waits_for_human("AskUserQuestion", {"questions": []})
    True
    >>> waits_for_human("shell", {"command": ["git", "push"], "with_escalated_permissions": True})
    True
    >>> waits_for_human("shell", {"command": ["pytest"]})
    False
    """
    if tool and DEFAULT_APPROVAL_RE.search(tool):
        return True
    if type(args) is dict or isinstance(args, Mapping):
        if args.get("with_escalated_permissions") is True:
            return True
        if args.get("sandbox_permissions") == "require_escalated":
            return True
        if tool and not isinstance(args.get("command"), str | list):
            if not may_request_approval(args):
                # the view reads back ``args``' own keys, none of which asks, or (cut
                # short) no JSON object at all: no request either way, no dump to parse
                return False
            text = json.dumps(args, sort_keys=True)[:_VIEW_CHARS]
            return parsed_view(tool, text).approval_request
    return False


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number > 0 else None
