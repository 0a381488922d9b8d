"""The one place a record is made storable: every value fits the column the tables define.

Input that decodes can still break a database or a clock: a JSON string with a lone
surrogate (``"\\ud800"`` is a valid JSON escape, and JavaScript instrumentations emit one
when they cut a string between the halves of a pair), a NUL character (PostgreSQL rejects
``\\x00`` in text), ``NaN``/``Infinity``, integers beyond the column's range. The rules,
derived from :mod:`models.tables` (so a schema change changes them):

- **Text is repaired, not rejected.** A lone surrogate or a NUL becomes U+FFFD (the
  replacement character, what a UTF-8 decoder puts for bytes it cannot read): the rest of
  the text is kept, and the mark shows where something was. Nothing else is changed.
- **An id is repaired without merging.** In an id (a session, step, call, span or trace
  id: :data:`ID_FIELDS`) the mark carries the code point it replaces (``\ud800`` →
  U+FFFD ``d800``, :func:`clean_id`), so two ids that differ only in their bad
  characters stay two ids: a session whose id is ``"\ud800"`` and one whose id is
  ``"\udfff"`` are not merged into one session ``"\ufffd"``.
- **Numbers are never repaired.** An integer outside the column's range (``BigInteger``:
  int64; ``Integer``: int32), a float that is not finite, a value of the wrong type, or
  text longer than a ``String(n)`` column is :class:`Unstorable`: clamping or truncating
  would store a value the source never said (and an id cut short could collide). The
  caller dead-letters the record, whole, with the reason.
- JSON columns (``detail``, ``budget``, ``evidence``) hold only JSON: dicts with text
  keys, lists, text (repaired as above), finite numbers, booleans and null, at most
  :data:`MAX_JSON_DEPTH` deep.

>>> clean_text("cut \\ud83d here, NUL \\x00 there")
'cut \\ufffd here, NUL \\ufffd there'
>>> clean_id("conv-\\ud83d"), clean_id("conv-\\udfff")
('conv-\\ufffdd83d', 'conv-\\ufffddfff')
>>> from models.records import Step, StepKind
>>> storable_step(Step(step_id="s#0", session_id="s", kind=StepKind.MODEL_CALL, ts=0,
...                    tokens_in=2**40))
Traceback (most recent call last):
    ...
models.storable.Unstorable: tokens_in: 1099511627776 is outside the column's range (32-bit integer)
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from sqlalchemy import JSON, BigInteger, Boolean, Float, Integer, LargeBinary, String, Table

from models.records import Alert, DeadLetter, SessionInfo, Step
from models.tables import AlertRow, DeadLetterRow, SessionRow, StepRow

__all__ = [
    "ID_FIELDS",
    "MAX_JSON_DEPTH",
    "SEQUENCED_FIELDS",
    "Unstorable",
    "check_step_fields",
    "check_step_identity",
    "clean_id",
    "clean_json",
    "clean_text",
    "json_payload",
    "payload_of",
    "plain_text",
    "storable_alert",
    "storable_dead_letter",
    "storable_info",
    "storable_placed",
    "storable_sequenced",
    "storable_step",
]

MAX_JSON_DEPTH = 64
"""Deepest nesting a JSON column takes: no real detail nests more than a few levels, and a
deeper value (``[[[[…]]]]`` from a fuzzer or a broken producer) would exhaust recursion in
the encoder or the database's JSON parser."""

REPLACEMENT = "\ufffd"
_UNSTORABLE_CHARS = re.compile("[\x00\ud800-\udfff]")
"""NUL, and any surrogate code point: in a Python str every one is lone (``json.loads``
joins a valid pair into one character), and none can be encoded as UTF-8."""


class Unstorable(ValueError):
    """A value no column can hold honestly. ``reason`` names the field and the problem."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate and NUL replaced by U+FFFD; unchanged (the same
    object) when it has none, which is almost always."""
    if text.isascii():  # the common case, in C: only a NUL can be wrong
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    if _UNSTORABLE_CHARS.search(text) is None:
        return text
    return _UNSTORABLE_CHARS.sub(REPLACEMENT, text)


def plain_text(value: object) -> TypeGuard[str]:
    """Whether ``value`` is text that :func:`clean_text` and :func:`clean_id` return as it
    is, told without a search: ASCII without NUL (most text and every id a producer
    writes)."""
    return type(value) is str and value.isascii() and "\x00" not in value


def clean_id(text: str) -> str:
    """``text`` (an id) with every lone surrogate and NUL replaced by U+FFFD and the code
    point's four hex digits; unchanged (the same object) when it has none. Distinct ids stay
    distinct, but for an id that spells such a mark out itself (U+FFFD then four hex
    digits), which no producer writes."""
    if text.isascii():
        return text.replace("\x00", REPLACEMENT + "0000") if "\x00" in text else text
    if _UNSTORABLE_CHARS.search(text) is None:
        return text
    return _UNSTORABLE_CHARS.sub(lambda m: f"{REPLACEMENT}{ord(m.group()):04x}", text)


ID_FIELDS = frozenset(
    {"step_id", "session_id", "parent_step_id", "onset_step_id", "alert_id", "call_id"}
)
"""The columns that hold ids (repaired with :func:`clean_id`, not :func:`clean_text`)."""


def clean_json(value: Any, where: str = "value", depth: int = 0) -> Any:
    """``value`` as storable JSON (see the module rules); the same object when it already
    is (a plain dict or list needing no repair); raises :class:`Unstorable`."""
    kind = type(value)
    # the common values, told by their exact type: no isinstance chain, no recursion
    if kind is str:
        return clean_text(value)
    if value is None or kind is bool or kind is int:
        return value
    if kind is not dict and kind is not list:  # anything else: the rules in order
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            return clean_text(value)
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise Unstorable(f"{where}: {value} is not a finite number")
            return value
    if depth >= MAX_JSON_DEPTH:
        raise Unstorable(f"{where}: nested deeper than {MAX_JSON_DEPTH} levels")
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        out = {}
        same = kind is dict
        for key, item in value.items():
            if plain_text(key) and _plain(item):
                out[key] = item  # nothing to repair or check: the key and the item as they are
                continue
            if not isinstance(key, str):
                raise Unstorable(f"{where}: key {key!r} is not text")
            fixed_key = clean_text(key)
            fixed = clean_json(item, f"{where}.{fixed_key}", depth + 1)
            same = same and fixed_key is key and fixed is item
            out[fixed_key] = fixed
        return value if same else out
    if isinstance(value, list | tuple):
        items = [
            item if _plain(item) else clean_json(item, f"{where}[{i}]", depth + 1)
            for i, item in enumerate(value)
        ]
        same = kind is list and all(a is b for a, b in zip(items, value, strict=True))
        return value if same else items
    raise Unstorable(f"{where}: a {type(value).__name__} is not JSON")


def _plain(item: Any) -> bool:
    """Whether :func:`clean_json` returns ``item`` itself without a look inside: ASCII
    text without NUL, an int, a finite float, a bool, None (most values of a detail)."""
    kind = type(item)
    if kind is str:
        return plain_text(item)
    if kind is float:
        return math.isfinite(item)
    return item is None or kind is int or kind is bool


def _int_check(name: str, bits: int) -> Callable[[Any], Any]:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def check(value: Any) -> Any:
        if type(value) is not int:  # bool is an int subclass: a JSON true is no count
            raise Unstorable(f"{name}: {value!r} is not an integer")
        if not low <= value <= high:
            raise Unstorable(f"{name}: {value} is outside the column's range ({bits}-bit integer)")
        return value

    return check


def _float_check(name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if type(value) is bool or not isinstance(value, int | float):
            raise Unstorable(f"{name}: {value!r} is not a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise Unstorable(f"{name}: {value} is not a finite number")
        if isinstance(value, int) and abs(value) > 2**53:  # beyond exact float64
            raise Unstorable(f"{name}: {value} does not fit a float column")
        return value

    return check


def _text_check(name: str, length: int | None) -> Callable[[Any], Any]:
    clean = clean_id if name in ID_FIELDS else clean_text

    def check(value: Any) -> Any:
        if not isinstance(value, str):
            raise Unstorable(f"{name}: a {type(value).__name__} where text belongs")
        fixed = clean(value)
        if length is not None and len(fixed) > length:
            raise Unstorable(f"{name}: {len(fixed)} characters, the column holds at most {length}")
        return fixed

    return check


def _bool_check(name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, bool):
            raise Unstorable(f"{name}: {value!r} is not true or false")
        return value

    return check


def _checks(table: Table, fields: tuple[str, ...]) -> tuple[tuple[str, bool, Callable], ...]:
    """Per field: its name, whether the column takes NULL, and its value check."""
    out = []
    for name in fields:
        column = table.c[name]
        kind = column.type
        check: Callable[[Any], Any]
        if isinstance(kind, BigInteger):
            check = _int_check(name, 64)
        elif isinstance(kind, Integer):
            check = _int_check(name, 32)
        elif isinstance(kind, Float):
            check = _float_check(name)
        elif isinstance(kind, Boolean):
            check = _bool_check(name)
        elif isinstance(kind, JSON):
            check = _json_check(name)
        elif isinstance(kind, LargeBinary):
            check = _bytes_check(name)
        elif isinstance(kind, String):  # Text is a String with no length
            check = _text_check(name, kind.length)
        else:  # pragma: no cover - a new column type needs a rule here
            raise TypeError(f"no storable rule for {table.name}.{name}: {kind!r}")
        out.append((name, bool(column.nullable) and not column.primary_key, check))
    return tuple(out)


def _json_check(name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        return clean_json(value, name)

    return check


def _bytes_check(name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, bytes):
            raise Unstorable(f"{name}: a {type(value).__name__} where bytes belong")
        return value

    return check


def _record_checker(table: Table, fields: tuple[str, ...]) -> Callable[[Any], dict[str, Any]]:
    checks = _checks(table, fields)
    # Per field, what the common value needs no check for: ASCII text without NUL within
    # the column's length, an int within its range (the check would return it as it is).
    plain: list[tuple[int, int, int]] = []
    for name, _, _ in checks:
        kind = table.c[name].type
        if isinstance(kind, Integer):  # BigInteger too
            bits = 64 if isinstance(kind, BigInteger) else 32
            plain.append((_PLAIN_INT, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
        elif isinstance(kind, String) and not isinstance(kind, LargeBinary):
            plain.append((_PLAIN_TEXT, 0, kind.length if kind.length is not None else -1))
        else:
            plain.append((0, 0, 0))
    return _compiled_changes(table.name, checks, plain)


def _compiled_changes(
    table: str,
    checks: tuple[tuple[str, bool, Callable[[Any], Any]], ...],
    plain: list[tuple[int, int, int]],
) -> Callable[[Any], dict[str, Any]]:
    """The record checker written out one block a field (as ``models.records.step_copier``
    writes the step copy): a third of the cost of looping over the fields, and checked
    in the same order with the same checks, so the same first field is named."""
    lines = ["def changes(record):", "    out = {}"]
    namespace: dict[str, Any] = {"Unstorable": Unstorable}
    for i, ((name, nullable, check), (kind, low, high)) in enumerate(
        zip(checks, plain, strict=True)
    ):
        if not name.isidentifier():  # pragma: no cover - our own column names
            raise TypeError(f"{table}.{name} is not a field name")
        namespace[f"check_{i}"] = check
        missing = (
            "pass"
            if nullable
            else f"raise Unstorable({name + ': missing (null) where a value is required'!r})"
        )
        lines += [f"    value = record.{name}", "    if value is None:", f"        {missing}"]
        if kind == _PLAIN_TEXT:
            limit = "" if high < 0 else f" and len(value) <= {high}"
            lines.append(
                "    elif not (type(value) is str and value.isascii() and "
                f"'\\x00' not in value{limit}):"
            )
        elif kind == _PLAIN_INT:
            lines.append(f"    elif not (type(value) is int and {low} <= value <= {high}):")
        else:
            lines.append("    else:")
        lines += [
            f"        fixed = check_{i}(value)",
            "        if fixed is not value:  # repaired text, or a JSON column's plain copy",
            f"            out[{name!r}] = fixed",
        ]
    lines.append("    return out")
    exec("\n".join(lines), namespace)  # our own column names and numbers only
    changes: Callable[[Any], dict[str, Any]] = namespace["changes"]
    changes.__doc__ = f"The fields of a {table} record whose storable value differs."
    return changes


_PLAIN_TEXT = 1
_PLAIN_INT = 2


def _fields(record_type: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(record_type))


_step_changes = _record_checker(
    StepRow.__table__,  # type: ignore[arg-type]
    tuple(n for n in _fields(Step) if n != "kind"),  # a StepKind: closed by construction
)
SEQUENCED_FIELDS = frozenset(
    {"step_id", "session_id", "seq", "model_session", "parent_step_id", "detail"}
)
"""The fields the pipeline gives a step after it made the step storable: its identity,
its place and what the trajectory features add to its detail (see
:func:`storable_sequenced`)."""
_sequenced_changes = _record_checker(
    StepRow.__table__,  # type: ignore[arg-type]
    tuple(n for n in _fields(Step) if n in SEQUENCED_FIELDS),  # in the order storable_step checks
)
_alert_changes = _record_checker(
    AlertRow.__table__,  # type: ignore[arg-type]
    tuple(n for n in _fields(Alert) if n not in ("severity", "action", "evidence")),
)
_info_changes = _record_checker(SessionRow.__table__, _fields(SessionInfo))  # type: ignore[arg-type]


def storable_step(step: Step) -> Step:
    """``step`` with its text repaired (the same object when nothing needed it); raises
    :class:`Unstorable` naming the first field no column can hold."""
    changes = _step_changes(step)
    return step.with_(**changes) if changes else step


def storable_sequenced(step: Step) -> Step:
    """:func:`storable_step` of a step built from one it returned by changing only
    :data:`SEQUENCED_FIELDS`: the same result (the same object, a repaired copy or the
    same :class:`Unstorable`) for checking only those fields, since the others hold what
    was checked and repaired already (a repair of repaired text changes nothing)."""
    changes = _sequenced_changes(step)
    return step.with_(**changes) if changes else step


_placed_changes = _record_checker(
    StepRow.__table__,  # type: ignore[arg-type]
    tuple(n for n in _fields(Step) if n in SEQUENCED_FIELDS and n != "detail"),
)


def storable_placed(step: Step, added: Mapping[str, Any]) -> Step:
    """:func:`storable_sequenced` of a step whose ``detail`` is a dict of entries of
    details :func:`storable_step` returned and the entries ``added`` (what placing the step
    adds: its trajectory features, a ``late`` mark): the same result, without walking the
    checked entries again when every added one is a plain value (checked JSON is returned
    as it is, so only the added entries could change the outcome; ``detail`` is checked
    last, after the ids and numbers, as :func:`storable_sequenced` checks it)."""
    if type(step.detail) is dict and all(
        plain_text(key) and _plain(value) for key, value in added.items()
    ):
        changes = _placed_changes(step)
        return step.with_(**changes) if changes else step
    return storable_sequenced(step)


def storable_alert(alert: Alert) -> Alert:
    """``alert`` with its text repaired; raises :class:`Unstorable` (see the module)."""
    changes = _alert_changes(alert)
    evidence = [clean_json(e, f"evidence[{i}]") for i, e in enumerate(alert.evidence)]
    if any(a is not b for a, b in zip(evidence, alert.evidence, strict=True)):
        changes["evidence"] = tuple(evidence)
    return dataclasses.replace(alert, **changes) if changes else alert


def storable_info(info: SessionInfo) -> SessionInfo:
    """``info`` with its text repaired; raises :class:`Unstorable` (see the module)."""
    changes = _info_changes(info)
    return dataclasses.replace(info, **changes) if changes else info


_LETTER_LIMITS: dict[str, int | None] = {
    name: getattr(DeadLetterRow.__table__.c[name].type, "length", None)
    for name in ("source", "location", "reason", "content_type")
}


def storable_dead_letter(letter: DeadLetter) -> DeadLetter:
    """``letter`` made storable; never raises, so a dead letter is never lost.

    Its text fields are trajwatch's own words about the input (a reason may quote it):
    repaired as text, and cut to the column's length with an ellipsis. The payload, the
    input itself, is bytes and kept whole; anything else is stored as its UTF-8 text.
    """
    changes: dict[str, Any] = {}
    for name, limit in _LETTER_LIMITS.items():
        value = getattr(letter, name)
        fixed = clean_text(value if isinstance(value, str) else str(value))
        if limit is not None and len(fixed) > limit:
            fixed = fixed[: limit - 1] + "…"
        if fixed != value:
            changes[name] = fixed
    if not isinstance(letter.payload, bytes):
        changes["payload"] = str(letter.payload).encode("utf-8", "surrogatepass")
    return dataclasses.replace(letter, **changes) if changes else letter


def check_step_fields(**values: Any) -> None:
    """Check some step fields before the step exists (the pipeline checks the ids it is
    about to give a step, so a step that cannot be stored never takes a seq); raises
    :class:`Unstorable`."""
    for name, value in values.items():
        if not (plain_text(value) and len(value) <= _STEP_ID_LENGTHS[name]):  # else as it passes
            _STEP_CHECKS[name](value)


def check_step_identity(session_id: str, step_id: str, suffix: str = "") -> None:
    """``check_step_fields(session_id=session_id, step_id=step_id + suffix)`` for the
    pipeline's every step, without the keywords, and without the longer id built unless
    it needs the look: ``suffix`` is ASCII text without NUL (the pipeline's own, such as
    the ``/compaction-inferred`` of a step it may insert)."""
    if not (plain_text(session_id) and len(session_id) <= _SESSION_ID_LENGTH):
        _STEP_CHECKS["session_id"](session_id)
    if not (plain_text(step_id) and len(step_id) + len(suffix) <= _STEP_ID_LENGTH):
        _STEP_CHECKS["step_id"](step_id + suffix)


_STEP_CHECKS = {
    name: check
    for name, _, check in _checks(StepRow.__table__, ("step_id", "session_id"))  # type: ignore[arg-type]
}
_STEP_ID_LENGTHS: dict[str, int] = {
    name: StepRow.__table__.c[name].type.length or 0  # type: ignore[attr-defined]
    for name in _STEP_CHECKS
}
"""The id columns' lengths (0: no plain fast path, for a column without one)."""
_SESSION_ID_LENGTH = _STEP_ID_LENGTHS["session_id"]
_STEP_ID_LENGTH = _STEP_ID_LENGTHS["step_id"]


def payload_of(record: Any) -> bytes:
    """A record (a step, an alert, session info) as JSON bytes, for the dead letter that
    keeps it when it cannot be stored (see :func:`json_payload`)."""
    return json_payload({f.name: getattr(record, f.name) for f in dataclasses.fields(record)})


def json_payload(value: Any) -> bytes:
    """``value`` as JSON bytes for a dead letter, every part as it was: lone surrogates
    included (``surrogatepass``), numbers as Python writes them (``NaN``, ``Infinity``),
    anything else as its ``repr``."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (RecursionError, ValueError):  # nested too deep for JSON: Python's own repr
        text = repr(value)
    return text.encode("utf-8", "surrogatepass")
