"""The receiver's write-ahead log: accepted request bodies, durable before they are answered.

The live pipeline holds steps back for ordering (the lateness watermark) and until a
trace goes quiet, so a request's spans are not all stored when it is answered. What
makes the answer honest is this log: a request's body is appended and ``fsync``'d before
the 200, and a restart feeds every record still *live* back through the pipeline in the
order they were accepted. The fsync runs on its own thread (:class:`LogSyncer`: one for
all the requests written meanwhile), so the pipeline goes on while the disk syncs; only
the answers wait for it. A record is retired once everything it fed has been released
and committed; what a re-fed record repeats is dropped by the store's stable step ids.

The bodies are the requests as received, credentials and all (the store keeps only
redacted text): so the log is sealed (:mod:`ingest.sources.inbound_cipher`: AES-256-GCM
under ``TRAJWATCH_INBOUND_KEY``, else under a key file rotated whenever the log is
empty — why encrypted rather than redacted is said there), its folder is created 0700
(tightened if it holds nothing else) and its files 0600, and it is emptied as soon as it
can be: a segment is deleted once its records and every older segment's are retired —
the segment being written too, so a quiet service keeps no segment at all.

On disk: segment files ``<first seq>.wal`` in one folder, each the header
(:data:`~ingest.sources.inbound_cipher.MAGIC` and the key's id) then a run of frames
``[u32 length][u32 crc32][sealed payload]``, the payload ``[u16 kind length][kind][body]``
(little-endian; the crc is of the sealed bytes). A torn frame at the end of a segment (a
crash mid-write, never acknowledged) ends what is read of it; a frame that is whole but
fails authentication (the file was altered) stops the start, named. Segments written
before the log was sealed (no header: plaintext frames) are read as they are, and go once
retired. Retiring appends a mark frame (kind ``retired``, the seqs as u64s; not fsync'd:
a lost mark only means a harmless second feed). A segment is deleted only when every
older one is, so a mark is never deleted before the records it names.

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

import logging
import os
import stat
import struct
import threading
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ingest.sources.inbound_cipher import (
    KEY_FILE,
    MAGIC,
    FrameCipher,
    InvalidTag,
    remove_key_file,
)
from models.errors import ConfigError

__all__ = ["InboundLog", "InboundRecord", "LogSyncer"]

_HEADER = struct.Struct("<II")
_KIND = struct.Struct("<H")
_SEQ = struct.Struct("<Q")
log = logging.getLogger("trajwatch.inbound_log")

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
    """Append, fsync, retire; the records still live at open are in :attr:`recovered`.

    ``cipher`` seals the frames (the composition root's, from ``TRAJWATCH_INBOUND_KEY``);
    without one, the log keeps its own key file in ``directory``. ConfigError at open
    when the segments there were sealed with another key.

    One thread writes (:meth:`append`, :meth:`write`, :meth:`retire`); :meth:`sync` may
    run on another (:class:`LogSyncer`)."""

    def __init__(
        self,
        directory: Path,
        *,
        cipher: FrameCipher | None = None,
        segment_bytes: int = SEGMENT_BYTES,
    ) -> None:
        self.directory = Path(directory)
        _private_folder(self.directory)
        self.segment_bytes = segment_bytes
        segments = sorted(self.directory.glob("*.wal"))
        self._own_key = cipher is None
        if cipher is None and segments:
            cipher = FrameCipher.from_key_file(self.directory, rotate=False)
        self.cipher = cipher
        """None until the first segment of an empty log gets a key file of its own."""
        self.recovered: list[InboundRecord] = []
        self._live: dict[Path, set[int]] = {}
        self._segment_of: dict[int, Path] = {}
        next_seq = 0
        retired: set[int] = set()
        for path in segments:
            os.chmod(path, 0o600)  # a segment written before the log was private
            first = int(path.stem)
            assert cipher is not None
            records, marks = _read_segment(path, first, cipher)
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
        self._file_lock = threading.Lock()
        """Held to swap or close the segment file, and by :meth:`sync` around its fsync."""
        self._size = 0
        self._drop_retired(retired)

    def append(self, records: Iterable[tuple[str, bytes]]) -> list[int]:
        """Write ``(kind, body)`` records and make them durable; returns their seqs."""
        seqs = self.write(records)
        self.sync()
        return seqs

    def write(self, records: Iterable[tuple[str, bytes]]) -> list[int]:
        """Write ``(kind, body)`` records, not yet durable: they are once a :meth:`sync`
        begun after this returned has returned. Returns their seqs."""
        frames = []
        seqs = []
        file = self._writable()
        assert self._active is not None
        live = self._live[self._active]
        for kind, body in records:
            frames.append(self._frame(kind, body))
            seq = self._next_seq
            self._next_seq += 1
            seqs.append(seq)
            live.add(seq)
            self._segment_of[seq] = self._active
        data = b"".join(frames)
        file.write(data)
        file.flush()
        self._size += len(data)
        return seqs

    def sync(self) -> None:
        """Make everything written so far durable (the older segments were synced when
        the newer one started)."""
        with self._file_lock:
            if self._file is not None:
                os.fsync(self._file.fileno())

    def retire(self, seqs: Iterable[int]) -> None:
        """Everything these records fed is committed: they need not be replayed."""
        seqs = [seq for seq in seqs if seq in self._segment_of]
        if not seqs:
            return
        file = self._writable()
        frame = self._frame(RETIRED, b"".join(_SEQ.pack(seq) for seq in seqs))
        file.write(frame)
        file.flush()
        self._size += len(frame)
        self._drop_retired(seqs)

    def _frame(self, kind: str, body: bytes) -> bytes:
        assert self.cipher is not None  # set by _writable, called first
        name = kind.encode()
        sealed = self.cipher.seal(_KIND.pack(len(name)) + name + body)
        return _HEADER.pack(len(sealed), zlib.crc32(sealed)) + sealed

    def _drop_retired(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            path = self._segment_of.pop(seq, None)
            if path is not None:
                self._live[path].discard(seq)
        self._drop_empty()

    def live_count(self) -> int:
        return len(self._segment_of)

    def close(self) -> None:
        """Close the segment file; what was written but not synced may be lost."""
        with self._file_lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _writable(self) -> BinaryIO:
        if self._file is None or self._size >= self.segment_bytes:
            if self._own_key and not self._live:  # an empty log: a key of its own
                self.cipher = FrameCipher.from_key_file(self.directory, rotate=True)
            assert self.cipher is not None
            with self._file_lock:
                if self._file is not None:  # its records may still await a sync
                    os.fsync(self._file.fileno())
                    self._file.close()
                self._active = self.directory / f"{self._next_seq:020d}.wal"
                fd = os.open(self._active, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                self._file = os.fdopen(fd, "ab")
                self._size = os.fstat(fd).st_size
                if self._size == 0:
                    self._file.write(self.cipher.header)
                    self._size = len(self.cipher.header)
            self._live[self._active] = set()
            _fsync_dir(self.directory)
        return self._file

    def _drop_empty(self) -> None:
        """Delete the oldest segments while they hold nothing live (see the module doc),
        the one being written too; forget the key file's key once none is left."""
        for path in sorted(self._live):
            if self._live[path]:
                return
            if path == self._active:
                self.close()
                self._active = None
                self._size = 0
            path.unlink(missing_ok=True)
            del self._live[path]
        if self._own_key and self._active is None and self.cipher is not None:
            remove_key_file(self.directory)
            self.cipher = None


class LogSyncer:
    """Group commit for an :class:`InboundLog`, off the writer's thread.

    The writer :meth:`~InboundLog.write`s records and hands :meth:`after_sync` what must
    wait until they are durable (answering the requests); it goes on working while this
    thread fsyncs: one fsync for everything handed over since the last one, then each
    callback in the order handed over, with ``True``. If the fsync fails, the callbacks
    get ``False`` (nothing they wait for is known to be durable) and :attr:`error` holds
    the error for the writer to stop on; later callbacks get ``False`` without a sync.
    """

    def __init__(self, log: InboundLog) -> None:
        self._log = log
        self._waiting: list[Callable[[bool], None]] = []
        self._changed = threading.Condition()
        self._closing = False
        self.error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="trajwatch-log-sync", daemon=True)
        self._thread.start()

    def after_sync(self, done: Callable[[bool], None]) -> None:
        """Call ``done(durable)`` on this syncer's thread once everything written to the
        log before this call is durable (or known not to be)."""
        with self._changed:
            self._waiting.append(done)
            self._changed.notify()

    def close(self) -> None:
        """Sync and call back everything handed over; then stop the thread."""
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._closing:
                    self._changed.wait()
                if not self._waiting:
                    return
                waiting, self._waiting = self._waiting, []
            if self.error is None:
                try:
                    self._log.sync()
                except OSError as error:
                    self.error = error
            for done in waiting:
                try:
                    done(self.error is None)
                except Exception:  # one callback's bug must not strand the others
                    log.exception("a callback after the inbound log's sync failed")


def _read_segment(
    path: Path, first: int, cipher: FrameCipher
) -> tuple[list[InboundRecord], set[int]]:
    """The segment's records and the seqs its marks retire."""
    data = path.read_bytes()
    records: list[InboundRecord] = []
    marks: set[int] = set()
    pos = 0
    if len(data) < len(cipher.header) and data[: len(MAGIC)] == MAGIC[: len(data)]:
        data = b""  # a header torn at creation: nothing was written after it
    sealed = data[: len(MAGIC)] == MAGIC
    if sealed:
        if data[len(MAGIC) : len(cipher.header)] != cipher.key_id:
            raise ConfigError(
                f"the inbound log's segment {path} was sealed with another key than "
                f"{cipher.source}'s; give serve the key it was written with "
                "(TRAJWATCH_INBOUND_KEY, or the folder's inbound.key), or move the folder "
                "away to start without the requests it holds"
            )
        pos = len(cipher.header)
    while pos + _HEADER.size <= len(data):
        length, crc = _HEADER.unpack_from(data, pos)
        payload = data[pos + _HEADER.size : pos + _HEADER.size + length]
        if len(payload) < length or zlib.crc32(payload) != crc:
            break  # a torn write: it was never acknowledged
        if sealed:
            try:
                payload = cipher.open(payload)
            except InvalidTag:
                raise ConfigError(
                    f"the inbound log's segment {path} was altered (the frame at byte {pos} "
                    "fails authentication); move the folder away to start without it"
                ) from None
        if len(payload) < _KIND.size:
            break
        (name_len,) = _KIND.unpack_from(payload)
        kind = payload[_KIND.size : _KIND.size + name_len].decode()
        body = payload[_KIND.size + name_len :]
        if kind == RETIRED:
            marks.update(seq for (seq,) in _SEQ.iter_unpack(body))
        else:
            records.append(InboundRecord(first + len(records), kind, body))
        pos += _HEADER.size + length
    if pos < path.stat().st_size:
        with path.open("r+b") as file:  # cut the torn tail, so nothing is ever after it
            file.truncate(pos)
            os.fsync(file.fileno())
    return records, marks


def _private_folder(directory: Path) -> None:
    """Create ``directory`` 0700; tighten it if it holds nothing but the log's files."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = stat.S_IMODE(directory.stat().st_mode)
    if not mode & 0o077:
        return
    names = {KEY_FILE, KEY_FILE + ".new"}
    if all(p.suffix == ".wal" or p.name in names for p in directory.iterdir()):
        os.chmod(directory, 0o700)
    else:
        log.warning(
            "%s is open to other users (mode %o) and holds other files than the inbound "
            "log's: its files are 0600, but give the log a folder of its own "
            "(TRAJWATCH_INBOUND_DIR)",
            directory,
            mode,
        )


def _fsync_dir(directory: Path) -> None:
    """Make a new segment's name durable, not only its bytes."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
