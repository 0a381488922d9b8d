"""Canonical forms of tool arguments: the stored JSON text and the action signature.

:func:`canonical_json` is how arguments are stored: sorted keys, compact, UTF-8, with
JSON-encoded object strings decoded, so the same arguments always give the same text.

:func:`canonical_action` is how loop detection tells that two calls are "the same
action": ``tool(key=value,…)`` with sorted keys and the volatile parts of values
replaced by placeholders. The same logical call gives the same signature whether the
arguments come as a dict, a JSON string or with keys in another order.

Normalisation (decisions)
-------------------------
- Timestamps and dates (``2024-05-01``, ``2024-05-01T10:00:00.123Z``, ``10:00:00``) →
  ``<ts>``; UUIDs → ``<uuid>``; hex runs of 7+ characters mixing digits and letters
  (git SHAs, digests) → ``<hash>``; runtime ids (``call_…``, ``toolu_…``, ``req-…``,
  ``msg_…``, ``chatcmpl-…`` … whose tail holds a digit) → ``<id>``.
- Temporary locations (``/tmp``, ``/var/tmp``, ``/dev/shm``, macOS
  ``/var/folders/…/T``, ``pytest-of-user/pytest-N``, ``tempfile`` names ``tmpXXXXXXXX``)
  → ``<tmp>``; the rest of the path stays, so different files in a temp dir differ.
- Every other standalone number (not glued to a preceding letter or ``_``, so
  ``python3``, ``test_x0``, ``sha256`` stay) → ``<n>``, also JSON numbers: retries that
  only change a timeout, a port, a count or a version are the same action.
- Except *positions in content*, which are progress, not noise: values under keys such
  as ``line``, ``offset``, ``limit``, ``page``, ``view_range``, ``start_line`` and
  ``sed``-style ranges (``10,20p``) keep their numbers, so paging through a file
  (``sed -n 1,50p`` then ``sed -n 51,100p``) is not mistaken for a loop. IPv4 addresses
  stay too: a different address is a different target.
- Whitespace runs collapse to one space. Strings longer than 160 characters keep their
  normalised first 120 and gain ``…#`` plus a 12-hex BLAKE2b digest of the whole text
  with its digits removed, so two long strings that differ anywhere but in digits still
  differ. (Digits only, past the head: running the full normalisation over a 2 KB edit
  cost ~600 µs; hashes, UUIDs and temp names deep inside long text therefore still
  distinguish two calls.)
- No ``hash()``: signatures are identical across processes and runs.

Speed: ``.venv/bin/python -m features.calls.canonical`` measures a typical small dict
(``{"command": "sed -n 10,20p /tmp/tmpab12cd34/app.py", "timeout": 30}``) at ≈ 14 µs
and a 2 KB ``str_replace`` edit at ≈ 125 µs (CPython 3.11; the volatile-part regex costs
~0.3 µs per character of text that holds digits, hence the head-only rule above).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from features.text.clip import MAX_ANALYSED_CHARS
from features.text.memo import short_text_memo

__all__ = [
    "arguments_value",
    "canonical_action",
    "canonical_action_and_json",
    "canonical_json",
    "decoded_action_and_json",
    "decoded_arguments",
]

_MAX_DEPTH = 64
_LONG = 160
_KEEP = 120

_VOLATILE_RE = re.compile(
    r"""
    (?P<ts>\d{4}-\d{2}-\d{2}(?:[T\ _]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?
          | (?<![\d:])\d{2}:\d{2}:\d{2}(?:\.\d+)?(?![\d:]))
    | (?P<uuid>(?<![0-9A-Fa-f])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}
          -[0-9A-Fa-f]{12}(?![0-9A-Fa-f]))
    | (?P<tmp>(?:/private)?/var/folders/[^/\s]+/[^/\s]+/T(?![^/\s])
          | (?<![\w.])/(?:tmp|var/tmp|dev/shm)(?![^/\s"'])
          | pytest-of-[^/\s]+/pytest-\d+
          | (?<![A-Za-z0-9])tmp[a-z0-9_]{8}(?![A-Za-z0-9])
          | [A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp)
    | (?P<id>(?<![A-Za-z0-9])(?:call|toolu|tool|req|request|msg|run|resp|chatcmpl|evt|sess
          |session|job|task|txn|trace|span|fc|tc|item|batch|file|thread|step|ckpt)
          [-_](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{6,}(?![A-Za-z0-9]))
    | (?P<hash>(?<![A-Za-z0-9])(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{7,}
          (?![A-Za-z0-9]))
    | (?P<keep>(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])     # IPv4 address
          | (?<![\w,])\d+,\d+[pd](?![A-Za-z0-9]))              # sed range 10,20p
    | (?P<n>(?<![A-Za-z_.\d])\d+(?:\.\d+)*)
    """,
    re.VERBOSE,
)
_PLACEHOLDERS = {
    "ts": "<ts>",
    "uuid": "<uuid>",
    "tmp": "<tmp>",
    "id": "<id>",
    "hash": "<hash>",
    "n": "<n>",
}
_TMP_RUN_RE = re.compile(r"<tmp>(?:/<tmp>)+")
_DIGIT_RE = re.compile(r"\d")
"""With the substring tests of :func:`_needs_work`: ``\\d|tmp|/var/folders|pytest-of|Temp``.
A search for that alternation tries every branch at every position (~20 ns a character
of plain text); a search for one character class scans in C, and ``in`` is a memchr."""
_POSITION_KEYS = frozenset(
    {
        "line",
        "lines",
        "line_number",
        "lineno",
        "start_line",
        "end_line",
        "from_line",
        "to_line",
        "first_line",
        "last_line",
        "insert_line",
        "start",
        "end",
        "offset",
        "limit",
        "page",
        "page_number",
        "view_range",
        "range",
        "line_range",
        "head",
        "tail",
        "n_lines",
        "max_lines",
        "old_start",
        "new_start",
        "cursor",
    }
)


def _replace(m: re.Match[str]) -> str:
    group = m.lastgroup
    return m.group(0) if group == "keep" or group is None else _PLACEHOLDERS[group]


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def normalise_text(text: str) -> str:
    """``text`` with volatile parts replaced, whitespace collapsed and long text shortened.

    >>> normalise_text("pytest /tmp/pytest-of-ci/pytest-7/t0/x.py  --seed 1234")
    'pytest <tmp>/t0/x.py --seed <n>'
    >>> normalise_text("git show 9fceb02d0ae5 at 2024-05-01T10:00:00Z for call_Ab12cd34")
    'git show <hash> at <ts> for <id>'
    """
    return _normalise(text)


# Paths, short commands and edit snippets recur across calls and runs, and one with a
# digit costs the volatile-part regex ~0.3 µs a character or more (a 61-character ``curl``
# command 25-60 µs on a loaded 2-core machine, a memo hit ~0.3 µs).
@short_text_memo(entries=4096, max_chars=256)
def _normalise(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _LONG:
        # The full regex costs ~0.3 µs per character; past the head, digits are dropped
        # instead (numbers, dates, ports, line numbers) and the rest is digested.
        return f"{_normalise_short(text[:_KEEP])}…#{_digest(text.translate(_NO_DIGITS))}"
    return _normalise_short(text)


def _needs_work(text: str) -> bool:
    """Whether ``text`` holds a digit (any Unicode decimal digit, as ``\\d``) or one of
    ``tmp``, ``/var/folders``, ``pytest-of``, ``Temp``: else no volatile part is replaced.

    >>> _needs_work("read the schema"), _needs_work("x٣"), _needs_work("/tmp/x")
    (False, True, True)
    """
    return (
        "tmp" in text
        or "Temp" in text
        or "pytest-of" in text
        or "/var/folders" in text
        or _DIGIT_RE.search(text) is not None
    )


def _normalise_short(text: str) -> str:
    if _needs_work(text):
        text = _volatile_sub(text)
        if "<tmp>/<tmp>" in text:
            text = _TMP_RUN_RE.sub("<tmp>", text)
    return text


_NO_DIGITS = str.maketrans("", "", "0123456789")

_MAY_MATCH_RE = re.compile(r"\d|-|tmp|Temp|/var/|/dev/shm")
"""What every match of :data:`_VOLATILE_RE` holds one of: a word (between spaces)
without any is left as it is."""


def _volatile_sub(text: str) -> str:
    """``_VOLATILE_RE.sub(_replace, text)``, tried only on the runs of space-separated
    words that may hold a match (:data:`_MAY_MATCH_RE`).

    The same text: no match holds a space but a timestamp's (``2024-05-01 10:00``, both
    sides of it holding digits, so in one run), and a space or the end of the text on
    either side of a run satisfies every look-around of the pattern alike. The pattern
    costs ~0.3 µs a character, and most of an action's words are plain."""
    words = text.split(" ")
    if len(words) < 4:
        return _VOLATILE_RE.sub(_replace, text)
    out: list[str] = []
    run: list[str] = []
    for word in words:
        if _MAY_MATCH_RE.search(word):
            run.append(word)
            continue
        if run:
            out.append(_VOLATILE_RE.sub(_replace, " ".join(run)))
            run = []
        out.append(word)
    if run:
        out.append(_VOLATILE_RE.sub(_replace, " ".join(run)))
    return " ".join(out)


def _parse_json_text(text: str, *, arrays: bool) -> Any:
    """The JSON value ``text`` encodes when it is an object (or array), else ``text``."""
    stripped = text.strip()
    if len(stripped) < 2:
        return text
    pairs = "{}[]" if arrays else "{}"
    if (stripped[0], stripped[-1]) not in ((pairs[0], pairs[1]), (pairs[-2], pairs[-1])):
        return text
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):  # deep nesting is text, not data
        return text
    return value if isinstance(value, (dict, list)) else text


def _plain(obj: Any, depth: int = 0) -> Any:
    """``obj`` as plain JSON data: str keys, lists, finite numbers, object strings decoded."""
    if depth > _MAX_DEPTH:
        return "…"
    if isinstance(obj, str):
        parsed = _parse_json_text(obj, arrays=False)
        return obj if parsed is obj else _plain(parsed, depth + 1)
    if obj is None or isinstance(obj, (bool, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if type(obj) is dict or isinstance(obj, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, depth + 1) for v in obj]
    if isinstance(obj, (set, frozenset)):
        items = [_plain(v, depth + 1) for v in obj]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return str(obj)


def _top(arguments: object) -> Any:
    if isinstance(arguments, str):
        arguments = _parse_json_text(arguments, arrays=True)
    return _plain(arguments)


def arguments_value(text: str | None) -> Any:
    """A step's stored ``arguments`` text read back: the JSON value, or the text itself
    when it is not JSON (the runtime sent plain text); None when there is none.

    >>> arguments_value('{"path":"a.py"}'), arguments_value("ls -la"), arguments_value("")
    ({'path': 'a.py'}, 'ls -la', None)
    """
    if not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def arguments_object(text: str | None) -> dict[str, Any] | None:
    """A step's stored ``arguments`` as a JSON object, or None when they are not one (no
    text, text that does not open with ``{``, or not JSON: :func:`arguments_value`).

    >>> arguments_object('{"path":"a.py"}'), arguments_object('["a"]'), arguments_object("{x")
    ({'path': 'a.py'}, None, None)
    """
    if not text or not text.startswith("{"):
        return None
    value = arguments_value(text)
    return value if isinstance(value, dict) else None


def canonical_json(arguments: object) -> str:
    """The canonical JSON text of ``arguments``: sorted keys, compact, ``ensure_ascii=False``.

    A string that holds a JSON object or array is decoded first (runtimes often send
    arguments JSON-encoded), and so is any nested string holding a JSON *object*.
    Non-JSON values become JSON ones (tuples and sets → lists, NaN → ``"nan"``,
    other objects → ``str``). Never raises.

    >>> canonical_json('{"b": 1, "a": {"z": "ü", "y": "{\\\\"k\\\\": 2}"}}')
    '{"a":{"y":{"k":2},"z":"ü"},"b":1}'
    """
    return _dumps(_top(arguments))


def _render(value: Any, keep_numbers: bool) -> str:
    if isinstance(value, str):
        text = " ".join(value.split()) if keep_numbers else _normalise(value)
        return encode_basestring(text)  # json.dumps(text, ensure_ascii=False), no encoder
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value) if keep_numbers else "<n>"
    if isinstance(value, dict):
        parts = (
            f"{key}={_render(value[key], keep_numbers or key.lower() in _POSITION_KEYS)}"
            for key in sorted(value)
        )
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_render(v, keep_numbers) for v in value) + "]"
    return encode_basestring(str(value))


def canonical_action(tool: str | None, arguments: object) -> str:
    """The signature ``tool(key=value,…)`` of a call, stable across volatile details.

    See the module docstring for what is normalised. Deterministic across processes,
    never raises.

    >>> canonical_action("bash", '{"timeout": 30, "command": "cat /tmp/tmpab12cd34/out.txt"}')
    'bash(command="cat <tmp>/out.txt",timeout=<n>)'
    >>> canonical_action("view", {"path": "a.py", "view_range": [10, 40]})
    'view(path="a.py",view_range=[10,40])'
    """
    return _action(tool, _top(arguments))


def decoded_arguments(arguments: object) -> Any:
    """``arguments`` as the plain JSON data both canonical forms are made of: a JSON
    text (and every nested string holding a JSON object) decoded, keys as text.

    Redact *this*, not the raw arguments: decoding turns ``\\u0067lpat-…`` into the
    token it spells, so what is redacted must already be decoded.

    >>> decoded_arguments({"a": '{"b": 1}', "c": (2, 3)})
    {'a': {'b': 1}, 'c': [2, 3]}
    """
    return _top(arguments)


def canonical_action_and_json(
    tool: str | None, arguments: object, *, decoded: bool = False
) -> tuple[str, str]:
    """``(canonical_action(tool, arguments), canonical_json(arguments))``, decoding the
    arguments (and the JSON strings inside them) once for both; not at all when
    ``decoded`` says they come from :func:`decoded_arguments` already.

    >>> canonical_action_and_json("view", '{"path": "a.py", "view_range": [10, 40]}')
    ('view(path="a.py",view_range=[10,40])', '{"path":"a.py","view_range":[10,40]}')
    """
    value = arguments if decoded else _top(arguments)
    text = _dumps(value)
    if len(text) > MAX_ANALYSED_CHARS:
        # Past the analysis bound the signature is the long-text form of the JSON (its
        # normalised head and a digest of the whole): linear, and still a different
        # signature for different arguments.
        return f"{' '.join((tool or '?').split())}({normalise_text(text)})", text
    return _action(tool, value), text


def decoded_action_and_json(tool: str | None, value: Any) -> tuple[str, str]:
    """``(canonical_action(tool, a), canonical_json(a))`` of arguments ``a`` whose
    :func:`decoded_arguments` is ``value``: the same two texts (the canonical JSON of
    plain data reads back as that data), ``value`` decoded once for both. Unlike
    :func:`canonical_action_and_json`, no long-text form: :func:`canonical_action`'s.

    >>> decoded_action_and_json("view", decoded_arguments({"path": "a.py", "n": "{\\"k\\": 2}"}))
    ('view(n={k=<n>},path="a.py")', '{"n":{"k":2},"path":"a.py"}')
    """
    return _action(tool, value), _dumps(value)


def _dumps(value: Any) -> str:
    return _CANONICAL_ENCODER.encode(value)


_CANONICAL_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""What ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
builds on every call (``encode`` keeps no state between calls)."""


def _action(tool: str | None, value: Any) -> str:
    name = " ".join((tool or "?").split())
    if isinstance(value, dict):
        body = _render(value, False)[1:-1]
    elif value is None:
        body = ""
    else:
        body = _render(value, False)
    return f"{name}({body})"
