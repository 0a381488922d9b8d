"""Each detector's score and thresholds after every step, as the pipeline computed them.

The explorer draws every detector's :attr:`~detectors.base.Detector.score` over a
session's steps, with its :attr:`~detectors.base.Detector.thresholds`. Those are the
detectors' state, so without a record of them the only way to draw them is to replay the
stored steps through fresh detectors (0.16–0.65 s for a 5,000-step session, depending on
the machine, at every look). The pipeline has them at hand when it judges a step, so it
records them (:class:`ScoreRecorder`, a float append per detector per step) and stores
them with each analysis checkpoint, in the same transaction, as one chunk per session per
checkpoint (:func:`encode_chunk`): the scores of the steps since the previous checkpoint.

A chunk is column-major and compact: per detector, its scores as float64 (NaN at a step
where it raised: the pipeline dead-letters that and the step has no score) and its
thresholds only where they change (once at the chunk's first scored step, then at each
step that reads differently; most detectors' lines never change, and say so:
:attr:`~detectors.base.Detector.thresholds_fixed`). 5,000 steps of eight
detectors are 320 KB raw, ~2 KB compressed (bench_explorer's session: scores repeat).

>>> from detectors.budget_overrun import BudgetOverrun
>>> from detectors.testing import Session
>>> s = Session("series", budget={"tool_calls": 4})
>>> detectors = [BudgetOverrun()]
>>> recorder = ScoreRecorder(detectors, start=0)
>>> alerts = []
>>> for step in [s.start(), *s.tool("bash", {"command": "make"})]:
...     recorder.judge(step, alerts, failed=print)
>>> chunk = decode_chunk(encode_chunk(recorder.take(upto=3)))
>>> chunk.start, chunk.end, list(chunk.scores["budget_overrun"])
(0, 3, [0.0, 0.25, 0.25])
>>> chunk.lines["budget_overrun"]
[(0, {'warn': 0.8, 'critical': 1.0})]
"""

from __future__ import annotations

import json
import math
import sys
import zlib
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from detectors.base import Detector
from models.records import Alert, Step

FORMAT = 1
"""Bumped when the layout of :func:`encode_chunk` changes; a chunk of another format
reads as absent (:func:`decode_chunk` gives None), so a reader falls back to a replay."""

_NAN = math.nan


@dataclass(frozen=True, slots=True)
class ScoreChunk:
    """The scores of a session's steps ``start`` to ``end - 1``."""

    start: int
    end: int
    scores: dict[str, array[float]]
    """Detector name → its score after each step (``array('d')``, ``end - start`` long;
    NaN where it raised)."""
    lines: dict[str, list[tuple[int, dict[str, float]]]]
    """Detector name → ``(seq, thresholds)`` at its first scored step of the chunk and
    where they change from the step scored before."""


class ScoreRecorder:
    """What a session's detectors report after every step, since the last checkpoint.

    :meth:`judge` feeds a step to every detector and records what each reports;
    :meth:`take` hands over the chunk and starts the next one. :meth:`judge` is the
    pipeline's hot path: each score is read by a C-level getter right after its update
    (the object is still in cache), and the lines only of the detectors whose lines may
    change (the others', :attr:`~detectors.base.Detector.thresholds_fixed`, once a
    chunk)."""

    __slots__ = ("_detectors", "_getters", "_lines", "_scores", "_varying", "count", "start")

    def __init__(self, detectors: Sequence[Detector], *, start: int) -> None:
        self._detectors = list(detectors)
        # the base class's ``score`` property returns ``_score``: read the attribute (a
        # C-level getter, ~3x cheaper than the property)
        self._getters = [
            (attrgetter("_score" if type(d).score is Detector.score else "score"), d)
            for d in detectors
        ]
        self._varying = [i for i, d in enumerate(detectors) if not d.thresholds_fixed]
        self.start = start
        """The seq of the first step of the chunk being recorded."""
        self.count = 0
        """Steps recorded since :attr:`start`."""
        self._reset()

    def _reset(self) -> None:
        self._scores = array("d")
        """Row-major: a row of every detector's score per step."""
        self._lines: list[list[tuple[int, dict[str, float]]]] = [[] for _ in self._detectors]

    def judge(
        self,
        step: Step,
        alerts: list[Alert],
        failed: Callable[[Detector, Exception], object],
    ) -> None:
        """Feed ``step`` to every detector in order, as the pipeline judges a step: their
        alerts extend ``alerts``; a detector that raises is handed to ``failed`` and
        skipped. Then record what each reports: its score read right after its update
        (NaN if it raised, or if reading it does), its lines if they may change."""
        append = self._scores.append
        for get, detector in self._getters:
            try:
                found = detector.update(step)
                if found:  # most steps raise nothing: no call to extend by nothing
                    alerts.extend(found)
            except Exception as error:  # a detector bug must not cost the batch
                failed(detector, error)
                append(_NAN)
                continue
            try:
                append(get(detector))
            except Exception:  # as replay_detectors: a failure of the detector
                append(_NAN)
        if self._varying:
            self._read_lines()
        self.count += 1

    def _read_lines(self) -> None:
        """The lines of the detectors whose lines may change, after the step just scored."""
        seq = self.start + self.count
        row = len(self._scores) - len(self._detectors)
        for index in self._varying:
            if self._scores[row + index] != self._scores[row + index]:  # NaN: it failed
                continue
            try:
                marks = self._detectors[index].thresholds
            except Exception:
                self._scores[row + index] = _NAN
                continue
            lines = self._lines[index]
            if not lines or marks != lines[-1][1]:
                lines.append((seq, dict(marks)))

    def take(self, *, upto: int) -> ScoreChunk | None:
        """The chunk of the steps from :attr:`start` to ``upto`` (the checkpoint's), and
        a new one from ``upto``; None when no step was recorded, or when the steps
        recorded are not exactly those (a state restored without the scores since its
        checkpoint: the chunk would have a hole, so none is kept)."""
        chunk = None
        if self.count and self.start + self.count == upto:
            size = len(self._detectors)
            scores = {d.name: self._scores[i::size] for i, d in enumerate(self._detectors)}
            lines = dict(zip(scores, self._lines, strict=True))
            for index, detector in enumerate(self._detectors):
                if index in self._varying:
                    continue
                column = scores[detector.name]
                first = next((k for k, v in enumerate(column) if v == v), None)  # not NaN
                try:
                    if first is not None:  # its lines where replay_detectors reads them first
                        lines[detector.name] = [(self.start + first, dict(detector.thresholds))]
                except Exception:
                    pass
            chunk = ScoreChunk(start=self.start, end=upto, scores=scores, lines=lines)
        self.start, self.count = upto, 0
        self._reset()
        return chunk


def _little(values: array[float]) -> array[float]:
    """``values`` in little-endian order (the stored one), whatever the machine's."""
    if sys.byteorder == "little":
        return values
    swapped = array("d", values)
    swapped.byteswap()
    return swapped


def encode_chunk(chunk: ScoreChunk) -> bytes:
    """The bytes stored for ``chunk``: a JSON head (format, range, detectors, lines), a
    newline, then each detector's float64 scores, compressed."""
    names = list(chunk.scores)
    head = {
        "format": FORMAT,
        "start": chunk.start,
        "end": chunk.end,
        "detectors": names,
        "lines": {name: [[seq, marks] for seq, marks in chunk.lines[name]] for name in names},
    }
    body = b"".join(_little(chunk.scores[name]).tobytes() for name in names)
    return zlib.compress(json.dumps(head, separators=(",", ":")).encode() + b"\n" + body, 1)


def decode_chunk(data: bytes) -> ScoreChunk | None:
    """What :func:`encode_chunk` wrote; None for a chunk of another format or whose
    scores do not fill its range (never written so: a damaged row reads as absent)."""
    raw = zlib.decompress(data)
    newline = raw.index(b"\n")
    head = json.loads(raw[:newline])
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        return None
    start, end, names = int(head["start"]), int(head["end"]), list(head["detectors"])
    values = array("d")
    values.frombytes(raw[newline + 1 :])
    values = _little(values)
    size = end - start
    if len(values) != size * len(names):
        return None
    return ScoreChunk(
        start=start,
        end=end,
        scores={name: values[i * size : (i + 1) * size] for i, name in enumerate(names)},
        lines={
            name: [(int(seq), {k: float(v) for k, v in marks.items()}) for seq, marks in found]
            for name, found in head["lines"].items()
        },
    )
