"""Event-time reordering with a bounded lateness: out-of-order in, ordered out.

Spans reach us children-first and batch by batch; session events may be
re-delivered late. A :class:`Reorderer` holds items until the watermark
(the largest event time seen minus ``lateness_ns``) passes them, then releases
them sorted by ``(event time, tie, arrival)``: ``tie`` is a stable key the caller derives
from the item's content (:func:`ingest.pipeline.event_order.tie_key`), so items with one
event time come out in the same order however they were batched; arrival breaks only the
ties the content cannot. Live and replay use the same lateness, so they release the same
items in the same order; an item that arrives behind the watermark is released at once
(the session it joins judges it late).
Memory is bounded by what arrives within one lateness window; :meth:`Reorderer.flush`
releases the rest at the end of a partition's input.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_Entry = tuple[int, object, int, T]
"""``(ts, tie, arrival, item)``: a plain tuple, compared in C (a dataclass's generated
``__lt__`` is a Python call per comparison, ~8 per push and pop); the arrival is unique
within a reorderer, so the item itself is never compared. Every ``tie`` one reorderer is
given must compare with every other (the same type)."""


class Reorderer(Generic[T]):
    """Releases pushed items in event-time order once the watermark passes them.

    >>> r: Reorderer[str] = Reorderer(lateness_ns=10)
    >>> r.push(100, "b"); r.push(95, "a"); r.push(120, "c")
    >>> r.pop_ready()
    ['a', 'b']
    >>> r.flush()
    ['c']
    """

    def __init__(self, *, lateness_ns: int) -> None:
        if lateness_ns < 0:
            raise ValueError(f"lateness_ns must be >= 0, got {lateness_ns}")
        self.lateness_ns = lateness_ns
        self._heap: list[_Entry[T]] = []
        self._arrivals = 0
        self.max_ts: int | None = None

    def __len__(self) -> int:
        return len(self._heap)

    @property
    def watermark(self) -> int | None:
        """Items at or before this event time will be released by the next pop."""
        if self.max_ts is None:
            return None
        return self.max_ts - self.lateness_ns

    def push(self, ts: int, item: T, tie: object = 0) -> None:
        """Hold ``item`` at event time ``ts``; ``tie`` orders it among items of the same
        event time (then arrival)."""
        heapq.heappush(self._heap, (ts, tie, self._arrivals, item))
        self._arrivals += 1
        if self.max_ts is None or ts > self.max_ts:
            self.max_ts = ts

    def items(self) -> list[T]:
        """What is held, in no particular order."""
        return [entry[3] for entry in self._heap]

    def pop_ready(self, *, before: int | None = None) -> list[T]:
        """Items the watermark has passed, in ``(ts, tie, arrival)`` order; with ``before``,
        only those earlier than it (a barrier: something due at ``before`` is not here yet).

        >>> r: Reorderer[str] = Reorderer(lateness_ns=0)
        >>> r.push(1, "a"); r.push(5, "b"); r.push(9, "c")
        >>> r.pop_ready(before=5), r.pop_ready()
        (['a'], ['b', 'c'])
        """
        mark = self.watermark
        if mark is not None and before is not None:
            mark = min(mark, before - 1)
        out: list[T] = []
        while self._heap and mark is not None and self._heap[0][0] <= mark:
            out.append(heapq.heappop(self._heap)[3])
        return out

    def discard(self, drop: Callable[[T], bool]) -> int:
        """Take back the held items ``drop`` selects (the watermark stays where it is);
        returns how many.

        >>> r: Reorderer[str] = Reorderer(lateness_ns=10)
        >>> r.push(1, "a"); r.push(2, "b")
        >>> r.discard(lambda item: item == "a"), r.flush()
        (1, ['b'])
        """
        kept = [entry for entry in self._heap if not drop(entry[3])]
        dropped = len(self._heap) - len(kept)
        if dropped:
            heapq.heapify(kept)
            self._heap = kept
        return dropped

    def flush(self) -> list[T]:
        """Everything still held, in order (end of input)."""
        out = [entry[3] for entry in sorted(self._heap)]
        self._heap.clear()
        return out
