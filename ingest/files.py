"""Recorded files → raw records for the pipeline.

Understood, by name and then by content (``.gz`` and ``.xz`` are decompressed
transparently, whatever the name says, by their magic bytes):

- OTLP/JSON lines, as the OpenTelemetry Collector's ``file`` exporter writes
  them: one ``{"resourceSpans": [...]}`` per line;
- one OTLP/JSON document (``trace.json``);
- OTLP protobuf, length-delimited (a varint size before each
  ``TracesData``/``ExportTraceServiceRequest``, as the OTLP file-exporter spec
  says): ``*.binpb``, ``*.pb``;
- session-event JSONL (``session.jsonl``, ``*.events.jsonl``, or any JSON lines
  whose objects have ``type`` and ``session_id``);
- the TRAIL span-tree format (``{"trace_id", "spans": [... "child_spans" ...]}``);
- AgentDojo run records (JSON lines of ``{"index", "messages", "metadata"}``);
- debug bundles: a folder holding ``session.jsonl``, ``trace.json`` and/or
  ``tool_calls.csv``.

A *recording* is the unit of ordering (a pipeline partition): a debug bundle, or
the files of one folder that share a stem (``run-7.events.jsonl``,
``run-7.otlp.binpb``: the same run seen through the session log and through
spans). Replay merges a recording's files in the order the live service would have
received them (``ingest.replay``).

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

from ingest.agentdojo import is_agentdojo, is_header, session_id_for
from ingest.claude_code import is_claude_code_line
from ingest.codex import is_codex_line
from ingest.errors import InputError

BUNDLE_FILES = ("session.jsonl", "trace.json", "tool_calls.csv")
TOOL_CALLS_COLUMNS = ("session_id", "seq", "ts", "call_id", "tool", "arguments", "ok")
_RECORDING_SUFFIXES = (".json", ".jsonl", ".ndjson", ".binpb", ".pb", ".csv")


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One unit of input: ``format`` is ``otlp_json``, ``otlp_proto``, ``event``,
    ``trail``, ``agentdojo``, ``claude_code`` (a whole transcript: ``payload`` is its
    ``(location, line)`` pairs), ``codex`` (a whole rollout: ``{"lines", "name"}``),
    ``tool_calls_row``, ``skip`` or ``invalid``
    (``payload`` then says why in ``reason``)."""

    format: str
    payload: Any
    location: str
    partition: str
    reason: str = ""


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


def _classify(obj: Any, name: str = "") -> str:
    if name == "trace.json" or ".otlp." in name:
        return "otlp_json"
    if is_agentdojo(obj):
        return "agentdojo"
    if is_header(obj):
        return "skip"
    if is_claude_code_line(obj):
        return "claude_code"
    if is_codex_line(obj):
        return "codex"
    if isinstance(obj, dict):
        if "resourceSpans" in obj or "resource_spans" in obj:
            return "otlp_json"
        if "type" in obj and "session_id" in obj:
            return "event"
        if isinstance(obj.get("spans"), list):
            return "trail"
    return "event"  # the event schema says precisely what is missing


def _json_records(stream: IO[bytes], where: str, partition: str, name: str) -> Iterator[RawRecord]:
    data = stream.read()
    text_start = data.lstrip()[:1]
    first_line, _, rest = data.partition(b"\n")
    one_doc = False
    if text_start == b"[":
        one_doc = True
    elif rest.strip():
        try:
            json.loads(first_line)
        except (ValueError, RecursionError):
            one_doc = True  # a pretty-printed document, not JSON lines
    else:
        one_doc = True
    if one_doc:
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            yield RawRecord("invalid", data, where, partition, f"invalid JSON: {exc}")
            return
        if isinstance(doc, list):  # a JSON array of events or OTLP batches
            for i, item in enumerate(doc):
                yield RawRecord(_classify(item, name), item, f"{where}[{i}]", partition)
        else:
            yield RawRecord(_classify(doc, name), doc, where, partition)
        return
    transcripts: dict[str, list[tuple[str, Any]]] = {"claude_code": [], "codex": []}
    for line_no, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            yield RawRecord(
                "invalid", line, f"{where}:{line_no}", partition, f"invalid JSON: {exc}"
            )
            continue
        kind = _classify(obj, name)
        if kind == "agentdojo":
            # AgentDojo's own index numbers lines from 0; the session id joins on it.
            stem = name.split(".", 1)[0]
            obj = {"record": obj, "session_id": session_id_for(stem, line_no - 1)}
        elif kind in transcripts:
            # a transcript's lines are read together: one API response spans several
            transcripts[kind].append((f"{where}:{line_no}", obj))
            continue
        yield RawRecord(kind, obj, f"{where}:{line_no}", partition)
    if transcripts["claude_code"]:
        yield RawRecord("claude_code", transcripts["claude_code"], where, partition)
    if transcripts["codex"]:
        yield RawRecord("codex", {"lines": transcripts["codex"], "name": name}, where, partition)


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
