"""Small text helpers shared by the normalisers."""

from __future__ import annotations

from features.redact import redact

MAX_TEXT_CHARS = 16_384
"""Longest text a step keeps per field. Whole prompts and tool outputs can be
megabytes; detectors read the head, and the source keeps the rest."""


def clip(text: str | None, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, saying how much was cut.

    >>> clip("abcdef", 4)
    'abcd…[+2 chars]'
    >>> clip(None)
    ''
    """
    if not text:
        return ""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[+{len(text) - limit} chars]"


_REDACTION_MARGIN = 4_096
"""Redaction looks this far past the cut, so a secret that straddles it is still
recognised whole (a PEM private key is the longest common one, ~3 KB)."""


def excerpt(text: str | None, limit: int = MAX_TEXT_CHARS) -> str:
    """The redacted head of ``text``, at most ``limit`` characters: what a step stores.

    Redacting only the head keeps the cost bounded on megabyte tool outputs.

    >>> excerpt("token=" + "ab12" * 10)
    'token=[REDACTED:api_key_assignment]'
    """
    if not text:
        return ""
    head = redact(text[: limit + _REDACTION_MARGIN])
    if len(text) <= limit + _REDACTION_MARGIN:
        return clip(head, limit)
    return f"{head[:limit]}…[+{len(text) - limit} chars]"
