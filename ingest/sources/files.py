"""Recorded files → raw records for the pipeline.

Understood, by name and then by content (``.gz`` and ``.xz`` are decompressed
transparently, whatever the name says, by their magic bytes):

- OTLP/JSON lines, as the OpenTelemetry Collector's ``file`` exporter writes
  them: one ``{"resourceSpans": [...]}`` per line;
- one OTLP/JSON document (``trace.json``), or several back to back, pretty-printed or
  not (as GitHub Copilot's OpenTelemetry file exporter writes them; a broken one is one
  dead letter, :mod:`ingest.sources.json_stream`); Grafana Tempo's and Jaeger's trace API
  shapes and the pre-1.0 OTLP keys too (:mod:`ingest.formats.otlp_json`);
- OTLP protobuf, length-delimited (a varint size before each
  ``TracesData``/``ExportTraceServiceRequest``, as the OTLP file-exporter spec
  says): ``*.binpb``, ``*.pb``;
- session-event JSONL (``session.jsonl``, ``*.events.jsonl``, or any JSON lines
  whose objects have ``type`` and ``session_id``);
- the TRAIL span-tree format (``{"trace_id", "spans": [... "child_spans" ...]}``);
- AgentDojo run records (JSON lines of ``{"index", "messages", "metadata"}``);
- debug bundles: a folder holding ``session.jsonl``, ``trace.json`` and/or
  ``tool_calls.csv``;
- the agent runtimes' own files, by content (:mod:`ingest.formats.table`): Claude Code
  transcripts, Codex rollouts and ``codex exec --json`` captures, Gemini CLI session
  recordings and its ``--telemetry-outfile`` (the OpenTelemetry JS SDK's objects back to
  back).

A *recording* is the unit of ordering (a pipeline partition): a debug bundle, or
the files of one folder that share a stem (``run-7.events.jsonl``,
``run-7.otlp.binpb``: the same run seen through the session log and through
spans). Replay merges a recording's files in the order the live service would have
received them (``ingest.formats.table``).

A folder that is not a bundle is walked recursively in sorted order; files of
other kinds (README, labels, policies) are skipped and counted.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import lzma
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from ingest.formats.table import FORMATS, RawRecord, classify
from ingest.formats.tool_calls_csv import TOOL_CALLS_COLUMNS
from ingest.sources.json_stream import JsonValue, iter_values
from models.errors import InputError

BUNDLE_FILES = ("session.jsonl", "trace.json", "tool_calls.csv")
_RECORDING_SUFFIXES = (".json", ".jsonl", ".ndjson", ".binpb", ".pb", ".csv")


@dataclass(slots=True)
class ReadStats:
    files: int = 0
    skipped: list[str] = field(default_factory=list)


def _open(path: Path) -> BinaryIO:
    with path.open("rb") as probe:
        magic = probe.read(6)
    if magic[:2] == b"\x1f\x8b":
        return cast(BinaryIO, gzip.open(path, "rb"))
    if magic == b"\xfd7zXZ\x00":
        return cast(BinaryIO, lzma.open(path, "rb"))
    return path.open("rb")


def _base_name(path: Path) -> str:
    name = path.name
    for ext in (".gz", ".xz"):
        name = name.removesuffix(ext)
    return name


def is_recording(path: Path) -> bool:
    return _base_name(path).endswith(_RECORDING_SUFFIXES)


def is_bundle(path: Path) -> bool:
    return path.is_dir() and any(
        (path / name).exists() or (path / f"{name}.gz").exists() or (path / f"{name}.xz").exists()
        for name in BUNDLE_FILES
    )


def recording_of(path: Path) -> str:
    """The partition of a file that is not in a bundle: its folder and stem."""
    return str(path.parent / path.name.split(".", 1)[0])


def iter_paths(paths: list[Path], stats: ReadStats) -> Iterator[tuple[Path, str]]:
    """Files to read with their recording (partition), in a deterministic order in
    which the files of one recording are adjacent."""
    for path in paths:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
        if is_bundle(path):
            for name in BUNDLE_FILES:
                for candidate in (path / name, path / f"{name}.gz", path / f"{name}.xz"):
                    if candidate.exists():
                        yield candidate, str(path)
        elif path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_dir():
                    yield from iter_paths([child], stats)
                elif is_recording(child) and _base_name(child) not in ("labels.csv",):
                    yield child, recording_of(child)
                else:
                    stats.skipped.append(str(child))
        else:
            yield path, recording_of(path)


def read_recordings(
    paths: list[Path], stats: ReadStats | None = None
) -> Iterator[tuple[str, list[Iterator[RawRecord]]]]:
    """Each recording under ``paths`` (its name, which is its partition) with the records
    of each of its files, file by file; raises InputError for a missing path."""
    stats = stats if stats is not None else ReadStats()
    for partition, group in itertools.groupby(iter_paths(paths, stats), key=itemgetter(1)):
        files = [read_file(path, partition) for path, _ in group]
        stats.files += len(files)
        yield partition, files


def read_file(path: Path, partition: str) -> Iterator[RawRecord]:
    name = _base_name(path)
    with _open(path) as stream:
        if name.endswith((".binpb", ".pb")):
            yield from _delimited_protobuf(stream, str(path), partition)
        elif name.endswith(".csv"):
            yield from _tool_calls_csv(stream, str(path), partition)
        else:
            yield from _json_records(stream, str(path), partition, name)


def _delimited_protobuf(stream: IO[bytes], where: str, partition: str) -> Iterator[RawRecord]:
    data = stream.read()
    pos = index = 0
    while pos < len(data):
        length = shift = 0
        start = pos
        while True:
            if pos >= len(data):
                yield RawRecord(
                    "invalid",
                    data[start:],
                    f"{where}@{start}",
                    partition,
                    "truncated length prefix at the end of the file",
                )
                return
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        if pos + length > len(data):
            # Keep what there is: the protobuf salvage path rescues complete spans.
            yield RawRecord("otlp_proto", data[pos:], f"{where}#{index}", partition)
            return
        yield RawRecord("otlp_proto", data[pos : pos + length], f"{where}#{index}", partition)
        pos += length
        index += 1


def read_json_bytes(data: bytes, where: str, partition: str, name: str) -> Iterator[RawRecord]:
    """The records of a JSON file's bytes (JSON lines, one document, or documents back to
    back), read as :func:`read_file` reads a file called ``name``."""
    return _json_records(io.BytesIO(data), where, partition, name)


def _json_records(stream: IO[bytes], where: str, partition: str, name: str) -> Iterator[RawRecord]:
    data = stream.read()
    first_line, _, rest = data.partition(b"\n")
    if data.lstrip()[:1] != b"[" and rest.strip():
        try:
            json.loads(first_line)
        except (RecursionError, ValueError):
            pass  # a pretty-printed document, or several: not JSON lines
        else:
            yield from _records(_json_lines(data, where), where, partition, name)
            return
    values = iter_values(data)
    first, second = next(values, None), next(values, None)
    if first is None:
        return
    if second is None:  # one document, located by the file alone
        items = _document(first, where, 0)
    else:  # documents back to back, each located by its first line
        items = (
            item
            for index, value in enumerate(itertools.chain((first, second), values))
            for item in _document(value, f"{where}:{value.line}", index)
        )
    yield from _records(items, where, partition, name)


_Item = tuple[str, int, Any, str]
"""A value read from a file: its location, its 0-based line or ordinal, and the value, or
(when the last field gives the reason it could not be read) its bytes."""


def _json_lines(data: bytes, where: str) -> Iterator[_Item]:
    """JSON lines, the fast path: a value per line."""
    for line_no, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            reason = "nested too deeply to parse" if isinstance(exc, RecursionError) else exc
            yield f"{where}:{line_no}", line_no - 1, line, f"invalid JSON: {reason}"
            continue
        yield f"{where}:{line_no}", line_no - 1, obj, ""


def _document(value: JsonValue, where: str, index: int) -> Iterator[_Item]:
    """One top-level JSON value; an array is a list of events or OTLP batches."""
    if value.error:
        yield where, index, value.raw, value.error
    elif isinstance(value.value, list):
        for i, item in enumerate(value.value):
            yield f"{where}[{i}]", i, item, ""
    else:
        yield where, index, value.value, ""


def _records(items: Iterator[_Item], where: str, partition: str, name: str) -> Iterator[RawRecord]:
    """A file's values as records of their formats; the values of a ``whole_file`` format
    (a transcript) are gathered into one record."""
    whole: dict[str, list[tuple[str, Any]]] = {}
    for at, index, obj, error in items:
        if error:
            yield RawRecord("invalid", obj, at, partition, error)
            continue
        fmt = FORMATS[classify(obj, name)]
        if fmt.whole_file:
            whole.setdefault(fmt.name, []).append((at, obj))
            continue
        payload = obj if fmt.prepare is None else fmt.prepare(obj, name, index)
        yield RawRecord(fmt.name, payload, at, partition)
    for kind, lines in whole.items():
        yield RawRecord(kind, {"lines": lines, "name": name}, where, partition)


def _tool_calls_csv(stream: IO[bytes], where: str, partition: str) -> Iterator[RawRecord]:
    text = stream.read().decode("utf-8", "surrogateescape")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in TOOL_CALLS_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        yield RawRecord(
            "invalid",
            b"",
            where,
            partition,
            f"tool_calls.csv lacks columns {missing}; expected {list(TOOL_CALLS_COLUMNS)}",
        )
        return
    for row_no, row in enumerate(reader, start=2):
        yield RawRecord("tool_calls_row", row, f"{where}:{row_no}", partition)
