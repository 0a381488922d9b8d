"""The Claude Code ``PreToolUse`` hook's answers, its bounded input, and what it decides
when something fails.

Claude Code treats a hook's non-2xx answer, a connection failure and a timeout as a
*non-blocking* error: the tool call runs. So the hook never answers 500: every failure —
a body over the size cap or nested past the depth limit, a body that is not the hook's
JSON, the pre-execution check slow, down, refusing or garbled, a bug — is a
:class:`CheckFailure`, and the
:class:`~trajwatch.check_failure.FailurePolicy` turns it into a decision: by default
``deny`` for a tool that is not read-only (an unknown tool is not: fail closed), ``ask``
for a read-only one. ``allow`` means *no decision*: the user's own permission rules apply
(a monitor may forbid, never grant — the hook never answers ``"allow"``).

The input is judged on a bounded view: at most ``max_body_bytes`` of the stream are read
(a larger declared ``Content-Length`` is refused before reading any), and the JSON is
parsed only once a linear scan has found it no deeper than ``max_depth``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from trajwatch.check_failure import CheckFailure

MAX_BODY_BYTES = 1 << 20
"""The hook body's cap (``--max-body-bytes``): Claude Code's PreToolUse input is the tool
call's arguments, kilobytes; a ``Write`` of a larger file needs a larger cap."""
MAX_DEPTH = 64
"""Nesting allowed in the hook body (``--max-json-depth``); Claude Code's tools take flat
arguments, a few levels deep."""
CAUSES = (
    "too_large",  # the body is over the cap
    "too_deep",  # nested past the depth limit
    "bad_input",  # not JSON, not an object, no session_id
    "timeout",  # the check did not answer in time
    "unreachable",  # no connection to the check
    "unauthorized",  # the check refused the breaker's token (401/403)
    "rejected",  # another 4xx from the check
    "server_error",  # a 5xx from the check
    "bad_answer",  # the check answered something that is not a PreToolUse answer
    "internal",  # an exception in the breaker itself
)
"""A failure's cause: the ``cause`` label of the failures counter."""


def decision_of(answer: dict[str, Any]) -> str | None:
    return answer.get("hookSpecificOutput", {}).get("permissionDecision")


async def read_capped(chunks: AsyncIterator[bytes], declared: str | None, cap: int) -> bytes:
    """The body of at most ``cap`` bytes; :class:`CheckFailure` ``too_large`` as soon as the
    declared length or the bytes read so far pass it (the rest is never read)."""
    if declared is not None and declared.strip().isdigit() and int(declared) > cap:
        raise CheckFailure("too_large", f"a body of {int(declared)} bytes, over {cap}")
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise CheckFailure("too_large", f"a body over {cap} bytes")
        parts.append(chunk)
    return b"".join(parts)


_STRUCTURE = re.compile(rb'["\[\]{}]')
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def nesting(data: bytes, limit: int) -> int:
    """The JSON text's deepest nesting, counted up to ``limit + 1`` (the scan stops there),
    brackets inside strings ignored: linear in ``len(data)``. An unterminated string ends
    the scan (the parser then refuses the text)."""
    depth = deepest = 0
    pos = 0
    while match := _STRUCTURE.search(data, pos):
        char = data[match.start()]
        if char == 0x22:  # '"': skip the string, escapes included
            rest = _STRING_REST.match(data, match.end())
            if rest is None:
                break
            pos = rest.end()
            continue
        pos = match.end()
        if char in (0x5B, 0x7B):  # '[' '{'
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def parse(data: bytes, max_depth: int) -> Any:
    """The hook body as JSON; :class:`CheckFailure` ``too_deep`` past ``max_depth`` (found
    before parsing), ``bad_input`` when it is not JSON."""
    if nesting(data, max_depth) > max_depth:
        raise CheckFailure("too_deep", f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise CheckFailure("bad_input", f"the body is not JSON ({type(exc).__name__})") from None


def tool_of(body: Any) -> str | None:
    tool = body.get("tool_name") if isinstance(body, dict) else None
    return tool if isinstance(tool, str) and tool else None


def session_of(body: Any) -> str:
    """The hook body's ``session_id``; :class:`CheckFailure` ``bad_input`` without one."""
    session = body.get("session_id") if isinstance(body, dict) else None
    if not isinstance(session, str) or not session:
        raise CheckFailure("bad_input", "expected the PreToolUse hook input (no session_id)")
    return session
