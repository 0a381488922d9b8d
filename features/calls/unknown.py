"""Tool arguments and results that say nothing: never recorded, or masked where published.

An instrumentation that records no content sends a tool's name and nothing of its
arguments (Google ADK 2.x unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is
``SPAN_ONLY`` or ``SPAN_AND_EVENT``; Claude Code without content logging): the ingest marks
such a call ``detail[UNRECORDED] = True``. A recording whose publisher masked its content
puts a placeholder where the content was (``[REDACTED_ARGUMENTS len=57 sha=9f2c…]``,
``[redacted_output 1834 bytes]``, ADK's ``<elided>``, Claude Code's ``<REDACTED>``).

Either way the content is **unknown**, and unknown is never equal: two calls whose
arguments are unknown are not "the same call" (seven reads of seven files are no loop, a
return flight no duplicate payment), two placeholders not "the same answer". Detectors ask
:func:`arguments_unknown` and :func:`is_placeholder` before they compare. Pure.

>>> is_placeholder("[REDACTED_ARGUMENTS len=57 sha=9f2c01ab]"), is_placeholder("[redacted_output]")
(True, True)
>>> is_placeholder("<elided>"), is_placeholder("see [redacted] above"), is_placeholder("[1, 2]")
(True, False, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from features.calls.canonical import arguments_value
from models.records import Step

__all__ = [
    "UNRECORDED",
    "arguments_unknown",
    "is_placeholder",
    "result_unknown",
    "without_placeholders",
]

UNRECORDED = "arguments_unrecorded"
"""The ``detail`` key the ingest sets (to True) on a tool call whose arguments the source
did not record."""

_PLACEHOLDER_RE = re.compile(
    r"\[\s*redacted[\w-]*(?:[\s:=][^\[\]\n]{0,200})?\]"
    r"|<\s*(?:redacted|elided|not specified|omitted|hidden)\s*>"
    r"|__redacted__",
    re.IGNORECASE,
)
"""A whole value that is a masking placeholder: ``[REDACTED…]``/``[redacted_output …]``
(with an optional tail such as ``len=… sha=…``), ``<elided>``, ``<REDACTED>``, ADK's
``<not specified>``, OpenInference's ``__REDACTED__``."""
_MAX_PLACEHOLDER = 256


def is_placeholder(text: str | None) -> bool:
    """Whether ``text`` (a whole argument or result) is only a masking placeholder."""
    if not text or len(text) > _MAX_PLACEHOLDER:
        return False
    return _PLACEHOLDER_RE.fullmatch(text.strip()) is not None


def without_placeholders(text: str) -> str:
    """``text`` with every masking placeholder in it (a redactor's ``[REDACTED:api_key]``,
    ``<elided>``) replaced by a space: a placeholder is the redactor's word, not the
    agent's, and says nothing of what a call is about.

    >>> without_placeholders('{"memo": "Q3 grant", "token": "[REDACTED:api_key_assignment]"}')
    '{"memo": "Q3 grant", "token": " "}'
    """
    if "edacted" not in text and "EDACTED" not in text and "<" not in text:
        return text  # (the common case: no marker can be in it)
    return _PLACEHOLDER_RE.sub(" ", text)


def arguments_unknown(step: Step, parsed: Callable[[], Any] | None = None) -> bool:
    """Whether ``step``'s arguments are unknown: not recorded (``detail[UNRECORDED]``), or
    a placeholder in place of all of them (the arguments, or their one value). ``parsed``
    gives their :func:`~features.calls.canonical.arguments_value` when the caller has it
    (the step's features: one parse for all readers); asked only when it is read."""
    detail = step.detail
    if (type(detail) is dict or isinstance(detail, Mapping)) and detail.get(UNRECORDED):
        return True
    text = step.arguments
    if not text or len(text) > 2 * _MAX_PLACEHOLDER:
        return False
    value = parsed() if parsed is not None else arguments_value(text)
    if (type(value) is dict or isinstance(value, Mapping)) and len(value) == 1:
        value = next(iter(value.values()))
    return isinstance(value, str) and is_placeholder(value)


def result_unknown(text: str | None) -> bool:
    """Whether a result (or error) text says nothing: a masking placeholder."""
    return is_placeholder(text)
