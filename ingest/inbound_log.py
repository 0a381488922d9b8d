"""The receiver's write-ahead log: accepted request bodies, durable before they are answered.

The live pipeline holds steps back for ordering (the lateness watermark) and until a
trace goes quiet, so a request's spans are not all stored when it is answered. What
makes the answer honest is this log: a request's body is appended and ``fsync``'d before
the 200, and a restart feeds every record still *live* back through the pipeline in the
order they were accepted. A record is retired once everything it fed has been released
and committed; what a re-fed record repeats is dropped by the store's stable step ids.

On disk: segment files ``<first seq>.wal`` in one folder, each a run of frames
``[u32 length][u32 crc32][u16 kind length][kind][body]`` (little-endian). A torn frame
at the end of a segment (a crash mid-write, never acknowledged) ends what is read of it.
Retiring appends a mark frame (kind ``retired``, the seqs as u64s; not fsync'd: a lost
mark only means a harmless second feed). A segment is deleted when its records and those
of every older segment are retired and a newer segment exists, so a mark is never
deleted before the records it names.

>>> import tempfile
>>> log = InboundLog(Path(tempfile.mkdtemp()))
>>> log.append([("traces/proto", b"abc"), ("logs/json", b"{}")])
[0, 1]
>>> log.retire([0])
>>> log.close()
>>> again = InboundLog(log.directory)
>>> [(r.seq, r.kind, r.body) for r in again.recovered]
[(1, 'logs/json', b'{}')]
>>> again.close()
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["InboundLog", "InboundRecord"]

_HEADER = struct.Struct("<II")
_KIND = struct.Struct("<H")
_SEQ = struct.Struct("<Q")
RETIRED = "retired"
"""The kind of a mark frame: the records whose seqs it holds need no replay."""
SEGMENT_BYTES = 8 << 20
"""A segment is closed and a new one started past this size."""


@dataclass(frozen=True, slots=True)
class InboundRecord:
    seq: int
    kind: str
    """What the body is: ``traces/proto``, ``traces/json``, ``logs/proto``, ``logs/json``."""
    body: bytes


class InboundLog:
    """Append, fsync, retire; the records still live at open are in :attr:`recovered`."""

    def __init__(self, directory: Path, *, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.recovered: list[InboundRecord] = []
        self._live: dict[Path, set[int]] = {}
        self._segment_of: dict[int, Path] = {}
        next_seq = 0
        retired: set[int] = set()
        for path in sorted(self.directory.glob("*.wal")):
            first = int(path.stem)
            records, marks = _read_segment(path, first)
            retired.update(marks)
            self.recovered.extend(records)
            self._live[path] = {r.seq for r in records}
            for record in records:
                self._segment_of[record.seq] = path
            next_seq = max(next_seq, first + len(records))
        self._next_seq = next_seq
        self.recovered = [r for r in self.recovered if r.seq not in retired]
        self._active: Path | None = None
        self._file: BinaryIO | None = None
        self._size = 0
        self._drop_retired(retired)

    def append(self, records: Iterable[tuple[str, bytes]]) -> list[int]:
        """Write ``(kind, body)`` records and make them durable; returns their seqs."""
        frames = []
        seqs = []
        file = self._writable()
        assert self._active is not None
        live = self._live[self._active]
        for kind, body in records:
            frames.append(_frame(kind, body))
            seq = self._next_seq
            self._next_seq += 1
            seqs.append(seq)
            live.add(seq)
            self._segment_of[seq] = self._active
        data = b"".join(frames)
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
        self._size += len(data)
        return seqs

    def retire(self, seqs: Iterable[int]) -> None:
        """Everything these records fed is committed: they need not be replayed."""
        seqs = [seq for seq in seqs if seq in self._segment_of]
        if not seqs:
            return
        file = self._writable()
        body = b"".join(_SEQ.pack(seq) for seq in seqs)
        file.write(_frame(RETIRED, body))
        file.flush()
        self._size += _HEADER.size + _KIND.size + len(RETIRED) + len(body)
        self._drop_retired(seqs)

    def _drop_retired(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            path = self._segment_of.pop(seq, None)
            if path is not None:
                self._live[path].discard(seq)
        self._drop_empty()

    def live_count(self) -> int:
        return len(self._segment_of)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _writable(self) -> BinaryIO:
        if self._file is None or self._size >= self.segment_bytes:
            if self._file is not None:
                self._file.close()
            self._active = self.directory / f"{self._next_seq:020d}.wal"
            self._file = self._active.open("ab")
            self._size = 0
            self._live[self._active] = set()
            _fsync_dir(self.directory)
            self._drop_empty()
        return self._file

    def _drop_empty(self) -> None:
        """Delete the oldest segments while they hold nothing live (see the module doc)."""
        for path in sorted(self._live):
            if self._live[path] or path == self._active:
                return
            path.unlink(missing_ok=True)
            del self._live[path]


def _frame(kind: str, body: bytes) -> bytes:
    name = kind.encode()
    payload = _KIND.pack(len(name)) + name + body
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _read_segment(path: Path, first: int) -> tuple[list[InboundRecord], set[int]]:
    """The segment's records and the seqs its marks retire."""
    data = path.read_bytes()
    records: list[InboundRecord] = []
    marks: set[int] = set()
    pos = 0
    while pos + _HEADER.size <= len(data):
        length, crc = _HEADER.unpack_from(data, pos)
        payload = data[pos + _HEADER.size : pos + _HEADER.size + length]
        if len(payload) < length or zlib.crc32(payload) != crc or length < _KIND.size:
            break  # a torn write: it was never acknowledged
        (name_len,) = _KIND.unpack_from(payload)
        kind = payload[_KIND.size : _KIND.size + name_len].decode()
        body = payload[_KIND.size + name_len :]
        if kind == RETIRED:
            marks.update(seq for (seq,) in _SEQ.iter_unpack(body))
        else:
            records.append(InboundRecord(first + len(records), kind, body))
        pos += _HEADER.size + length
    if pos < len(data):
        with path.open("r+b") as file:  # cut the torn tail, so nothing is ever after it
            file.truncate(pos)
            os.fsync(file.fileno())
    return records, marks


def _fsync_dir(directory: Path) -> None:
    """Make a new segment's name durable, not only its bytes."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
