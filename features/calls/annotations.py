"""Annotation arguments: prose a call carries about itself, not input to what it does.

Runtimes let the model say why it makes a call beside what the call does: Claude Code's
``Bash`` takes ``description`` next to ``command``, MCP tools take a ``reason`` or a
``comment``, approval-gated tools a ``justification``. The text changes with the model's
mood ("Retry the same batch.", "Back off 8 s and retry."), the action does not. A loop is
the same action again, so :func:`operative_arguments` drops these fields before a call's
action is keyed (:attr:`features.calls.step_features.StepFeatures.action`): a retry that
only re-words its description repeats its call.

The names are the runtimes' argument names (a schema vocabulary, read from the argument
keys only, never from text). A field is dropped only at the top level and only when the
call has another argument: a tool whose whole input is a ``description`` keeps it.
Pure, O(len(arguments)).
"""

from __future__ import annotations

from typing import Any

from features.calls.canonical import arguments_value, canonical_json

__all__ = ["ANNOTATIONS", "annotated", "operative_arguments", "operative_fields"]

ANNOTATIONS = frozenset(
    {"description", "reason", "comment", "justification", "explanation", "rationale"}
)
"""Argument names runtimes use for the model's note about its own call."""


def operative_arguments(arguments: str | None) -> str | None:
    """``arguments`` (a call's stored JSON text) without its top-level annotation fields,
    as canonical JSON; None when there is nothing to drop (no such field, arguments that
    are not a JSON object, or no other argument).

    >>> operative_arguments('{"command": "make test", "description": "Run the tests."}')
    '{"command":"make test"}'
    >>> operative_arguments('{"command": "make test"}') is None
    True
    >>> operative_arguments('{"description": "a task for a sub-agent"}') is None
    True
    """
    if not annotated(arguments):
        return None  # the common case, a substring scan: no parse
    kept = operative_fields(arguments_value(arguments))
    return None if kept is None else canonical_json(kept)


def annotated(arguments: str | None) -> bool:
    """Whether ``arguments`` (stored JSON text) may hold an annotation field: one of the
    names quoted in it (a substring scan). Without, :func:`operative_arguments` is None."""
    if not arguments:
        return False
    return any(f'"{name}"' in arguments for name in ANNOTATIONS)


def operative_fields(value: object) -> dict[str, Any] | None:
    """The fields of arguments read back (``value``: their
    :func:`~features.calls.canonical.arguments_value`) that are not annotations, or None
    when :func:`operative_arguments` is None: their canonical JSON is its text. A new
    dict of ``value``'s own values (``value`` is not changed)."""
    if not isinstance(value, dict):
        return None
    kept = {k: v for k, v in value.items() if k not in ANNOTATIONS}
    if not kept or len(kept) == len(value):
        return None
    return kept
