"""Each input partition's clock, relayed to every repartition partition.

Silence is measured by the clock of the *input* partition a session last spoke from
(:mod:`ingest.pipeline.silence`): in one process, a draft released on partition ``P``
is a clock for every other session last heard on ``P``. Through Kafka the drafts of
``P`` are spread over the repartition partitions (the *lanes*) by session, so a lane
sees only its own sessions' drafts. The ordering stage therefore tells each lane what
``P`` released elsewhere, in ``P``'s release order:

- a draft sent to lane ``k`` carries the newest event time of ``P``'s drafts sent to
  other lanes since the last record of ``P`` on ``k`` (:meth:`ClockRelay.route`);
- at the end of each batch, a lane owed such a time by an input partition that has sent
  it nothing for ``every_s`` (wall clock) gets a record of each time it is owed, alone
  (:meth:`ClockRelay.flush`), unless it got such records less than ``every_s`` ago; a
  lane not due hears the time with its next record of ``P``.

A lane busy with ``P``'s drafts thus gets no clock record of ``P``, and a quiet one gets
them at most once every ``every_s``: they are one more record batch on the lane, and at
``every_s = 0`` (one to each lane at the end of every batch) they made a worker's recovery
from a broker restart three times slower (``docs/decisions/silence-through-kafka.md``).
Holding a time back changes no step, only how soon it is placed: a silence step's time is
the bound crossed, not the clock that crossed it, and a session's next draft on the lane
carries every time owed before it.

A silence is due at a bound crossed: the steps placed for one session are those of
every bound below the largest event time released between two of its drafts (the
pipeline ticks at each draft), so a lane handed the largest such time, before the
session's next draft, places exactly the steps one process reading ``P`` places. Only the
order of a lane's records from one input partition matters, and the producer keeps it
(a lane receives a prefix of what it was sent, in order).

>>> relay = ClockRelay(3)
>>> relay.route("p", 10, 0), relay.route("p", 20, 1), relay.route("p", 15, 2)
(None, 10, 20)
>>> relay.route("p", 30, 0)
20
>>> relay.flush()
[(1, ClockMark(partition='p', ts=30)), (2, ClockMark(partition='p', ts=30))]
>>> relay.flush()
[]
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from kafka.partitioner.default import murmur2

from ingest.sources.repartition import ClockMark

__all__ = ["ClockRelay", "lane_of"]


def lane_of(key: bytes, lanes: int) -> int:
    """The partition Kafka's default partitioner (Java's and kafka-python's: murmur2 of
    the key) gives ``key`` among ``lanes``: a record sent there by number lands where
    one sent by key would.

    >>> lane_of(b"session-1", 8) == lane_of(b"session-1", 8) and 0 <= lane_of(b"x", 8) < 8
    True
    """
    if lanes < 1:
        raise ValueError(f"lanes must be >= 1, got {lanes}")
    return (murmur2(key) & 0x7FFFFFFF) % lanes


class ClockRelay:
    """Per input partition, the event time each lane has not been told yet, when each lane
    was last sent a record of it, and the newest time it released. Memory: a few numbers
    per input partition and lane.

    ``every_s``: the least time (``clock``, seconds) between two records of an input
    partition on a lane before :meth:`flush` sends a time alone (0: at every flush)."""

    def __init__(
        self, lanes: int, every_s: float = 0.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if lanes < 1:
            raise ValueError(f"lanes must be >= 1, got {lanes}")
        if every_s < 0:
            raise ValueError(f"every_s must be >= 0, got {every_s}")
        self.lanes = lanes
        self.every_s = every_s
        self._clock = clock
        self._pending: dict[str, dict[int, int]] = {}
        self._told: dict[tuple[str, int], float] = {}
        self._alone: dict[int, float] = {}
        self._newest: dict[str, int] = {}

    def route(self, partition: str, ts: int, lane: int) -> int | None:
        """A draft of input ``partition`` at event time ``ts`` goes to ``lane``: the clock
        it carries (None: nothing new for that lane); every other lane is owed ``ts``."""
        pending = self._pending.setdefault(partition, {})
        carried = pending.pop(lane, None)
        self._told[(partition, lane)] = self._clock()
        self._released(partition, ts)
        for other in range(self.lanes):
            if other != lane:
                owed = pending.get(other)
                if owed is None or ts > owed:
                    pending[other] = ts
        return carried

    def passed(self, partition: str, ts: int) -> None:
        """A draft of ``partition`` at ``ts`` was released but goes to no lane (a dead
        letter), or was released before this relay was made (:meth:`newest` of the one
        it replaces): it moved the partition's clock, for every lane."""
        pending = self._pending.setdefault(partition, {})
        self._released(partition, ts)
        for lane in range(self.lanes):
            owed = pending.get(lane)
            if owed is None or ts > owed:
                pending[lane] = ts

    def newest(self, partition: str) -> int | None:
        """The newest event time released on ``partition`` (routed or passed): telling it
        to every lane is always right, since whatever ``partition`` releases next is
        released after it."""
        return self._newest.get(partition)

    def _released(self, partition: str, ts: int) -> None:
        newest = self._newest.get(partition)
        if newest is None or ts > newest:
            self._newest[partition] = ts

    def flush(self) -> list[tuple[int, ClockMark]]:
        """``(lane, mark)`` of every clock owed to a lane due them, by partition then
        lane: a lane sent no clock alone for ``every_s`` and owed a time by a partition
        that sent it nothing for as long. None owed after to those lanes; the others'
        clocks stay owed."""
        now = self._clock()
        due = {
            lane
            for partition, pending in self._pending.items()
            for lane in pending
            if now - self._told.get((partition, lane), -math.inf) >= self.every_s
            and now - self._alone.get(lane, -math.inf) >= self.every_s
        }
        for lane in due:
            self._alone[lane] = now
        out = []
        for partition, pending in sorted(self._pending.items()):
            for lane in sorted(pending):
                if lane in due:
                    out.append((lane, ClockMark(partition, pending.pop(lane))))
                    self._told[(partition, lane)] = now
        self._pending = {p: pending for p, pending in self._pending.items() if pending}
        return out
