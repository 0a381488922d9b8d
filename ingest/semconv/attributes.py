"""The GenAI conventions' operation names, and readers of attribute values as
instrumentations send them: the first of several names that is set, as text or an
integer, and JSON carried in a string.

Shared by :mod:`ingest.semconv.spans` (spans → steps), :mod:`ingest.semconv.dialects` (other
instrumentations' spellings) and :mod:`ingest.formats.session_events` (event fields). Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "AGENT_OPERATIONS",
    "GENAI_OPERATIONS",
    "MODEL_OPERATIONS",
    "NOT_A_STEP",
    "OTHER_OPERATIONS",
    "TOOL_OPERATIONS",
    "first",
    "first_int",
    "first_str",
    "json_value",
    "positive_int",
    "real_id",
]

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})
NOT_A_STEP = "trajwatch.not_a_step"
"""The operation :mod:`ingest.semconv.dialects` gives a span that stands for no step of its own
(ADK's ``execute_tool (merged)`` summary of parallel calls, Claude Code's
``claude_code.tool.execution`` child of a tool span): not even an error step."""
OTHER_OPERATIONS = frozenset({"embeddings", "create_agent", NOT_A_STEP})
"""GenAI operations that are no step, whatever else the span carries (an embedding call
has token counts, but it is not a model call of the agent's)."""
GENAI_OPERATIONS = MODEL_OPERATIONS | TOOL_OPERATIONS | AGENT_OPERATIONS | OTHER_OPERATIONS
"""Every ``gen_ai.operation.name`` the mapping knows."""


def first(attrs: Mapping[str, Any], names: Iterable[str]) -> Any:
    """The value of the first of ``names`` that is set and not empty, else None.

    >>> first({"a": "", "b": 0, "c": 1}, ("a", "b", "c"))
    0
    """
    for name in names:
        value = attrs.get(name)
        if value is not None and value != "":
            return value
    return None


def first_str(attrs: Mapping[str, Any], names: Iterable[str]) -> str | None:
    """:func:`first` as text (a number is written out).

    >>> first_str({"a": "", "b": 7}, ("a", "b")), first_str({}, ("a",))
    ('7', None)
    """
    # first()'s loop written out: ~7 calls a span, most of them finding nothing
    for name in names:
        value = attrs.get(name)
        if value is not None and value != "":
            return value if isinstance(value, str) else str(value)
    return None


def first_int(attrs: Mapping[str, Any], names: Iterable[str]) -> int | None:
    """:func:`first` as an integer: ints, integral floats and numeric strings; else None.

    >>> [first_int({"t": v}, ("t",)) for v in ("42", 1.5, True)]
    [42, None, None]
    """
    value = first(attrs, names)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def json_value(value: Any) -> Any:
    """A string holding a JSON object or array, decoded; anything else (structured
    values, plain text, invalid JSON) as it is.

    >>> json_value('{"a": [1]}'), json_value("ls -la"), json_value("[oops")
    ({'a': [1]}, 'ls -la', '[oops')
    """
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(stripped)
            except (ValueError, RecursionError):
                return value
    return value


def positive_int(value: Any) -> int:
    """``value`` when it is a positive integer (not a bool), else 0: a token count as
    runtimes log it, where a missing or bad count adds nothing.

    >>> [positive_int(v) for v in (12, 0, -3, True, "7", None)]
    [12, 0, 0, 0, 0, 0]
    """
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


_PLACEHOLDER_IDS = frozenset({"", "none", "null", "nil", "undefined", "n/a", "<not specified>"})
"""Ids instrumentations write when they have none (ADK's ``"<not specified>"``, a Python
``None`` or a JSON ``null`` turned into text): two calls with such an id are not one."""


def real_id(value: str | None) -> str | None:
    """``value`` unless it is missing or a placeholder for a missing id.

    >>> [real_id(v) for v in ("call_1", "<not specified>", "None", " ", None)]
    ['call_1', None, None, None, None]
    """
    if value is None or value.strip().lower() in _PLACEHOLDER_IDS:
        return None
    return value
