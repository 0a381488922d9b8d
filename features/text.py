"""Small text helpers shared by the normalisers."""

from __future__ import annotations

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
