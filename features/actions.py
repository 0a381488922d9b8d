"""One normalisation of a tool call, shared by every decoder."""

from __future__ import annotations

from typing import Any

from features.canonical import canonical_action, canonical_json
from features.egress import egress_targets
from features.redact import redact_value


def tool_call_fields(tool: str | None, arguments: Any) -> dict[str, Any]:
    """The ``Step`` fields of a tool call: redacted canonical arguments, the canonical
    action signature, and the network targets its arguments name.

    Redaction comes first, so neither the stored arguments nor the action
    signature nor the egress URLs can carry a credential.
    """
    safe = redact_value(arguments)
    targets = egress_targets(tool, safe)
    first = targets[0] if targets else None
    detail: dict[str, Any] = {}
    if targets:
        detail["egress"] = [
            {"host": t.host, "url": t.url, "method": t.method, "via": t.via} for t in targets
        ]
    return {
        "tool": tool,
        "action": canonical_action(tool, safe),
        "arguments": canonical_json(safe) if safe is not None else None,
        "egress_host": first.host if first else None,
        "egress_url": first.url if first else None,
        "egress_method": first.method if first else None,
        "detail": detail,
    }
