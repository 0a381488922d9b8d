"""One normalisation of a tool call and of its result, shared by every decoder."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from features.calls.canonical import canonical_action_and_json, decoded_arguments
from features.egress.targets import egress_targets
from features.redact.engine import redact_value
from features.text.clip import excerpt
from features.text.frozen import freeze, thaw

MEMO_MAX_CHARS = 4096
"""Arguments with more text than this are normalised uncached (edits and file writes
rarely repeat exactly, and the memo should stay small: 1024 entries × 4 KB at most)."""


def tool_call_fields(tool: str | None, arguments: Any) -> dict[str, Any]:
    """The ``Step`` fields of a tool call: redacted canonical arguments, the canonical
    action signature, and the network targets its arguments name.

    Redaction comes first, so neither the stored arguments nor the action
    signature nor the egress URLs can carry a credential.
    """
    # Normalising costs ~50 µs a call (redaction, egress and canonical-action regexes)
    # and is a pure function of (tool, arguments); loops, polling and retries repeat the
    # same call (932 distinct argument sets among the fixtures' 2,254 calls). So it is
    # memoised on an exact frozen copy of the arguments (features.text.frozen), bounded in
    # entries and size. The keys are the *unredacted* arguments: like the arguments being
    # decoded, they stay in this process's memory only (never stored, logged or pickled).
    key = freeze(arguments, max_chars=MEMO_MAX_CHARS)
    fields = _fields(tool, arguments) if key is None else _memo_fields(tool, key)
    # a fresh dict each time: callers add to ``detail``
    detail = fields["detail"]
    if "egress" in detail:
        detail = {**detail, "egress": [dict(e) for e in detail["egress"]]}
    return {**fields, "detail": dict(detail)}


def tool_result_fields(
    text: str | None, *, failed: bool, cancelled: bool = False
) -> dict[str, Any]:
    """The ``Step`` fields of a tool result from its output ``text``: the redacted head as
    the result, and as the error too when the call ``failed``. A ``cancelled`` call (not
    run: a sibling of its parallel batch failed, or the runtime aborted it) has status
    ``cancelled`` and keeps the runtime's text as its error.

    >>> tool_result_fields("1 failed", failed=True)
    {'status': 'error', 'error': '1 failed', 'result': '1 failed'}
    >>> tool_result_fields("aborted", failed=True, cancelled=True)["status"]
    'cancelled'
    """
    return {
        "status": "cancelled" if cancelled else "error" if failed else "ok",
        "error": excerpt(text or "tool failed") if failed or cancelled else None,
        "result": excerpt(text) if text else None,
    }


@lru_cache(maxsize=1024)
def _memo_fields(tool: str | None, key: tuple[Any, ...]) -> dict[str, Any]:
    return _fields(tool, thaw(key))


def _fields(tool: str | None, arguments: Any) -> dict[str, Any]:
    # Decode, then redact, then derive: every field below (the stored JSON, the action,
    # the egress targets) is made of the redacted decoded value, so an escape that only
    # decoding resolves (``"\\u0067lpat-…"`` in a JSON-encoded argument) cannot carry a
    # token past the redactor into a derived column.
    safe = redact_value(decoded_arguments(arguments))
    targets = egress_targets(tool, safe)
    first = targets[0] if targets else None
    detail: dict[str, Any] = {}
    if targets:
        detail["egress"] = [
            {"host": t.host, "url": t.url, "method": t.method, "via": t.via} for t in targets
        ]
    action, arguments_json = canonical_action_and_json(tool, safe, decoded=True)
    return {
        "tool": tool,
        "action": action,
        "arguments": arguments_json if safe is not None else None,
        "egress_host": first.host if first else None,
        "egress_url": first.url if first else None,
        "egress_method": first.method if first else None,
        "detail": detail,
    }
