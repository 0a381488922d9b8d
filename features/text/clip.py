"""Small text helpers shared by the normalisers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from features.redact.engine import redact

if TYPE_CHECKING:
    from models.records import Step

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


MAX_ANALYSED_CHARS = 65_536
"""Most characters of any one field (arguments, result, text, a URL …) that a per-step
analysis examines: egress extraction, the canonical action's head, every detector and
step feature. Past it a field is stored (redacted whole) but not analysed, so a 1 MiB
blob in a tool argument costs what 64 KB costs. Redaction is the exception: it reads
the whole field (a secret at its end is still removed), in linear time."""


def analysed(text: str) -> str:
    """The part of ``text`` analyses examine: its first :data:`MAX_ANALYSED_CHARS`.

    >>> len(analysed("x" * 100_000))
    65536
    """
    return text if len(text) <= MAX_ANALYSED_CHARS else text[:MAX_ANALYSED_CHARS]


ANALYSED_FIELDS = ("action", "arguments", "result", "text", "error", "egress_url")
"""The text fields analyses read a bounded head of."""


def analysed_step(step: Step) -> Step:
    """``step`` as analyses see it: each text field cut to :data:`MAX_ANALYSED_CHARS`
    (the step itself, not a copy, when no field is that long). A cut ``arguments`` is no
    longer JSON; analyses read it as the plain text it then is."""
    long = {
        name: value[:MAX_ANALYSED_CHARS]
        for name in ANALYSED_FIELDS
        if (value := getattr(step, name)) is not None
        and isinstance(value, str)
        and len(value) > MAX_ANALYSED_CHARS
    }
    return step.with_(**long) if long else step


def cut_analysed(step: Step) -> None:
    """Cut, in place, each text field of ``step`` - a fresh copy nothing else holds yet
    (:func:`features.calls.step_features.analysed_view`'s) - to :data:`MAX_ANALYSED_CHARS`."""
    for name in ANALYSED_FIELDS:
        value = getattr(step, name)
        # most fields of most steps are None: no isinstance call for them
        if value is not None and isinstance(value, str) and len(value) > MAX_ANALYSED_CHARS:
            object.__setattr__(step, name, value[:MAX_ANALYSED_CHARS])


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
