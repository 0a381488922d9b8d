"""The pre-execution check's bounded view of a request body.

The body is agent-controlled: a tool input nested 600 levels deep once made the check
raise (a 500: Claude Code runs the call), and a 10 MiB tool name cost 33 s of CPU. So the
check never reads more than the detectors do, in time linear in the body:

- **depth**: a JSON container nested deeper than :data:`MAX_ARGUMENT_LEVELS` inside the
  arguments (the egress walk reads no deeper: ``features.egress.targets._MAX_WALK``) is
  replaced by the string :data:`CUT`. The cut is made on the *text*, by a linear scan,
  before anything is parsed, so no parser or walk ever recurses past the bound; a string
  that holds JSON (which the detectors decode) is bounded the same way, with the levels
  left at its place, and re-encoded only if something in it was cut;
- **count**: at most :data:`MAX_NODES` values of the arguments are kept (past about that
  many, their canonical JSON is longer than the 64 KiB the detectors analyse);
- **names**: the session id, tool name, call id and agent are cut at
  :data:`MAX_NAME_CHARS` (the store's columns hold no more).

A string's length is not cut: the detectors read a bounded head of each field already and
redaction is linear, and a long ``Write`` keeps the digest that tells it from another.
The body itself is capped by the caller (``check_max_body_bytes``).

:func:`bounded_body` returns the view and what was cut (``too_deep``, ``too_large``): the
check judges the view, and when the view is allowed although something was cut, the call
was not seen whole, and its :class:`~trajwatch.check_failure.FailurePolicy`
decides (deny for a dangerous tool by default).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from trajwatch.check_failure import CheckFailure

__all__ = ["CUT", "MAX_ARGUMENT_LEVELS", "MAX_NAME_CHARS", "MAX_NODES", "Bounded", "bounded_body"]

MAX_ARGUMENT_LEVELS = 32
"""Containers kept inside the arguments (the arguments object is the first): the egress
walk (``features.egress.targets._MAX_WALK``) reads 32 levels; redaction and the canonical
form 64. Claude Code's tools take arguments two or three levels deep."""
MAX_NODES = 16_384
"""Values kept of the arguments (keys not counted): each takes at least 4 characters of
canonical JSON (``"k":1,``), and the detectors analyse 64 KiB of it
(``features.text.clip.MAX_ANALYSED_CHARS``)."""
MAX_NAME_CHARS = 512
"""The longest session id, tool name, call id or agent the check reads
(``models.tables``: ``SESSION_ID``/``NAME`` hold 512)."""
CUT = "…(cut by trajwatch's check)"
"""What stands in for a container nested past :data:`MAX_ARGUMENT_LEVELS`."""

_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
"""A JSON string (escapes included) or a bracket: the scan skips strings whole."""
_CUT_JSON = json.dumps(CUT, ensure_ascii=False)
_ARGUMENT_KEYS = ("arguments", "tool_input")
_NAME_KEYS = ("session_id", "tool", "tool_name", "call_id", "tool_use_id", "agent")


@dataclass(slots=True)
class Bounded:
    """The body as the check reads it, and what had to be cut to read it."""

    body: Any
    cuts: set[str] = field(default_factory=set)
    """``too_deep`` and/or ``too_large``."""


def bounded_body(data: bytes) -> Bounded:
    """The request body as a bounded JSON value; :class:`CheckFailure` ``bad_input`` when
    it is not UTF-8 JSON. The arguments sit one level below the body's object, so the body
    keeps ``1 + MAX_ARGUMENT_LEVELS`` levels.

    >>> deep = '{"session_id": "s", "tool": "t", "arguments": ' + "[" * 40 + "]" * 40 + "}"
    >>> view = bounded_body(deep.encode())
    >>> view.cuts, json.dumps(view.body).count("[")
    ({'too_deep'}, 32)
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckFailure("bad_input", "the body is not UTF-8") from None
    walk = _Walk()
    text, cut = cut_depth(text, 1 + MAX_ARGUMENT_LEVELS)
    if cut:
        walk.cuts.add("too_deep")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise CheckFailure("bad_input", "the body is not JSON") from None
    if isinstance(body, dict):
        for key in _ARGUMENT_KEYS:
            if key in body:
                body[key] = walk.bound(body[key], 0)
        for key in _NAME_KEYS:
            value = body.get(key)
            if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
                body[key] = value[:MAX_NAME_CHARS]
                walk.cuts.add("too_large")
    return Bounded(body, walk.cuts)


def cut_depth(text: str, levels: int) -> tuple[str, bool]:
    """``text`` with every JSON container deeper than ``levels`` (the outermost is level
    1) replaced by :data:`CUT` as a JSON string, and whether one was. Linear: one scan of
    the brackets outside strings. Text that is not JSON comes out as something that is not
    JSON either (the parser then refuses it).

    >>> cut_depth('{"a": [1, {"b": [2]}], "c": "[[["}', 2)
    ('{"a": [1, "…(cut by trajwatch\\'s check)"], "c": "[[["}', True)
    """
    if levels < 1:
        raise ValueError(f"levels must be >= 1, got {levels}")
    parts: list[str] = []
    depth = 0
    kept = 0  # where the text not yet copied starts
    cut_from = -1  # where the container being cut starts (-1: none)
    for match in _TOKEN.finditer(text):
        char = text[match.start()]
        if char == '"':
            continue
        if char in "[{":
            depth += 1
            if depth == levels + 1 and cut_from < 0:
                cut_from = match.start()
        else:
            if depth == levels + 1 and cut_from >= 0:
                parts.append(text[kept:cut_from])
                parts.append(_CUT_JSON)
                kept = match.end()
                cut_from = -1
            depth -= 1
    if cut_from >= 0:  # unclosed: cut to the end (the parser refuses what is left)
        parts.append(text[kept:cut_from])
        parts.append(_CUT_JSON)
        kept = len(text)
    if not parts:
        return text, False
    parts.append(text[kept:])
    return "".join(parts), True


@dataclass(slots=True)
class _Walk:
    """Bounds a parsed value in place of the detectors' reading: the node budget, and
    strings holding JSON (decoded by the detectors) cut to the levels left at their place."""

    nodes: int = MAX_NODES
    cuts: set[str] = field(default_factory=set)
    edits: int = 0

    def bound(self, value: Any, depth: int) -> Any:
        """``value`` at walk depth ``depth`` (the arguments are 0), bounded. Recursion is
        bounded: containers are at most ``MAX_ARGUMENT_LEVELS`` deep (cut on the text), and
        each decoded string spends the levels left."""
        if isinstance(value, str):
            return self._string(value, depth)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if not self._take():
                    break
                out[key] = self.bound(item, depth + 1)
            return out
        if isinstance(value, list):
            items: list[Any] = []
            for item in value:
                if not self._take():
                    break
                items.append(self.bound(item, depth + 1))
            return items
        return value

    def _take(self) -> bool:
        if self.nodes <= 0:
            self.cuts.add("too_large")
            self.edits += 1
            return False
        self.nodes -= 1
        return True

    def _string(self, text: str, depth: int) -> str:
        stripped = text.strip()
        if len(stripped) < 2 or (stripped[0], stripped[-1]) not in (("{", "}"), ("[", "]")):
            return text
        # the detectors decode this string: its root container is one level below it
        levels = MAX_ARGUMENT_LEVELS - (depth + 1)
        if levels < 1:  # no level left to read it in: if it is JSON, none of it is read
            try:
                json.loads(stripped)
            except ValueError:
                return text
            except RecursionError:
                pass
            self.cuts.add("too_deep")
            self.edits += 1
            return CUT
        cut_text, cut = cut_depth(stripped, levels)
        try:
            parsed = json.loads(cut_text)
        except (ValueError, RecursionError):
            return text  # not JSON: the detectors read it as text too
        if not isinstance(parsed, (dict, list)):
            return text
        before = self.edits
        bounded = self.bound(parsed, depth + 1)
        if not cut and self.edits == before:
            return text  # nothing in it was cut: the detectors read the original
        if cut:
            self.cuts.add("too_deep")
        self.edits += 1
        return json.dumps(bounded, ensure_ascii=False)
