"""A stream of JSON values, whatever whitespace separates them.

Some producers write JSON documents back to back rather than one per line: GitHub
Copilot's OpenTelemetry file exporter writes pretty-printed OTLP/JSON objects one
after another, others concatenate compact ones on a line, RFC 7464 JSON text
sequences put an ASCII RS (``\\x1e``) before each. :func:`iter_values` reads them
all with ``json.JSONDecoder.raw_decode`` in a loop (no copy of the rest of the text
per value), and yields them lazily, one value in memory at a time besides the text.

A value that cannot be read costs that value only: it is yielded as an error with
its line, byte offset and bytes, and reading resumes at the next line that starts
with ``{`` or ``[`` at column 0 (where a pretty-printer or a JSON-lines writer puts
the next top-level value). Invalid UTF-8 inside a value makes that value an error;
its neighbours are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_SEPARATORS = re.compile(r"[ \t\n\r\x1e]*")
"""JSON's whitespace, plus RFC 7464's record separator."""
_NEXT_VALUE = re.compile(r"\n(?=[{\[])")
_UNDECODABLE = re.compile("[\udc80-\udcff]")
"""What ``surrogateescape`` makes of bytes that are not UTF-8 (a JSON ``\\udc80``
escape stays six ASCII characters in the text, so it is never mistaken for one)."""
_DECODER = json.JSONDecoder()
_BYTE_LENGTH = {"utf-8-sig": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}


@dataclass(frozen=True, slots=True)
class JsonValue:
    """One top-level value: ``value`` if it was read, else ``error`` says why and ``raw``
    holds its bytes. ``line`` (1-based) and ``offset`` (bytes) are where it starts."""

    value: Any
    line: int
    offset: int
    error: str = ""
    raw: bytes = b""


def iter_values(data: bytes) -> Iterator[JsonValue]:
    """Every top-level JSON value in ``data`` (UTF-8, or UTF-16/32 as ``json`` detects it),
    in order; never raises on bad input."""
    encoding = json.detect_encoding(data)
    try:
        text = data.decode(encoding, "surrogateescape")
    except UnicodeDecodeError as exc:  # only UTF-16/32 can fail so: escapes cover UTF-8
        yield JsonValue(None, 1, 0, f"invalid {encoding}: {exc.reason}", data)
        return
    counter = _Position(data, text, encoding)
    pos = _skip(text, 0)
    while pos < len(text):
        line, offset = counter.line(pos), counter.offset(pos)
        error, end = "", pos
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            error = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        except RecursionError:
            error = "invalid JSON: nested too deeply to parse"
        else:
            bad = _UNDECODABLE.search(text, pos, end)
            if bad is None:
                yield JsonValue(value, line, offset)
            else:
                error = f"invalid UTF-8 at byte {counter.offset(bad.start())}"
        if error:
            if end == pos:  # resync, unless the value's bounds are known (bad UTF-8)
                resync = _NEXT_VALUE.search(text, pos + 1)
                end = resync.start() if resync is not None else len(text)
            yield JsonValue(None, line, offset, error, data[offset : counter.offset(end)])
        pos = _skip(text, end)


def _skip(text: str, pos: int) -> int:
    match = _SEPARATORS.match(text, pos)
    return match.end() if match is not None else pos


class _Position:
    """Line numbers and byte offsets of text positions, asked for in increasing order:
    each call counts only the text since the previous one, so a file costs one pass."""

    def __init__(self, data: bytes, text: str, encoding: str) -> None:
        # the byte length of text is the same whatever the byte order; a BOM is not text
        self._encoding = _BYTE_LENGTH.get(encoding, encoding)
        self._text = text
        self._line_at, self._line = 0, 1
        self._offset_at = 0
        self._offset = len(data) - len(text.encode(self._encoding, "surrogateescape"))

    def line(self, pos: int) -> int:
        self._line += self._text.count("\n", self._line_at, pos)
        self._line_at = pos
        return self._line

    def offset(self, pos: int) -> int:
        chunk = self._text[self._offset_at : pos]
        self._offset += len(chunk.encode(self._encoding, "surrogateescape"))
        self._offset_at = pos
        return self._offset
