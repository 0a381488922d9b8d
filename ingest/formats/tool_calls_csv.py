"""A debug bundle's ``tool_calls.csv``: one row per tool call, read as the session events
it records (:mod:`ingest.formats.session_events`), so the schema check names a bad field.

A row has :data:`TOOL_CALLS_COLUMNS`, and optionally ``error`` and ``output_bytes``;
``ts`` is Unix seconds or RFC 3339, ``arguments`` JSON (kept as text when it is not),
``ok`` ``true``/``1``/``yes`` or anything else for a failure.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

TOOL_CALLS_COLUMNS = ("session_id", "seq", "ts", "call_id", "tool", "arguments", "ok")
"""The columns a ``tool_calls.csv`` must have."""


def tool_call_row_events(row: dict[str, str]) -> list[dict[str, Any]]:
    """A ``tool_calls.csv`` row as the ``tool_call`` and ``tool_result`` events it records."""
    session, call_id = row.get("session_id", ""), row.get("call_id", "")
    try:
        seq: Any = int(row.get("seq", ""))
    except ValueError:
        seq = row.get("seq")  # left as text: the schema check names the bad field
    ts: Any = row.get("ts", "")
    with contextlib.suppress(ValueError):
        ts = float(ts)
    arguments: Any = row.get("arguments") or None
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments)
    ok = str(row.get("ok", "")).strip().lower() in ("true", "1", "yes")
    base = {"session_id": session, "seq": seq, "ts": ts, "call_id": call_id}
    result: dict[str, Any] = {
        **base,
        "type": "tool_result",
        "ok": ok,
        "tool": row.get("tool"),
        "event_id": f"{session}#csv{seq}:result",
    }
    if row.get("error"):
        result["error"] = row["error"]
    if (row.get("output_bytes") or "").isdigit():
        result["output_bytes"] = int(row["output_bytes"])
    call = {
        **base,
        "type": "tool_call",
        "tool": row.get("tool"),
        "arguments": arguments,
        "event_id": f"{session}#csv{seq}:call",
    }
    return [call, result]
