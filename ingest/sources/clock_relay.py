"""Each input partition's clock, relayed to every repartition partition.

Silence is measured by the clock of the *input* partition a session last spoke from
(:mod:`ingest.pipeline.silence`): in one process, a draft released on partition ``P``
is a clock for every other session last heard on ``P``. Through Kafka the drafts of
``P`` are spread over the repartition partitions (the *lanes*) by session, so a lane
sees only its own sessions' drafts. The ordering stage therefore tells each lane what
``P`` released elsewhere, in ``P``'s release order:

- a draft sent to lane ``k`` carries the newest event time of ``P``'s drafts sent to
  other lanes since the last record of ``P`` on ``k`` (:meth:`ClockRelay.route`);
- at the end of a batch, if the last clock records alone were sent ``every_s`` (wall
  clock) ago or more, every lane with such a time pending gets a record of it alone
  (:meth:`ClockRelay.flush`); until then a lane hears it with its next record of ``P``.

Each clock record sent alone is one more record batch on its lane: one to every lane at
the end of every batch (``every_s = 0``) made a worker's recovery from a broker restart
three times slower (``docs/decisions/silence-through-kafka.md``). Holding a time back
changes no step, only how soon it is placed: a silence step's time is the bound crossed,
not the clock that crossed it, and a session's next draft on the lane carries every time
owed before it. What is held back dies with the process, so the ordering stage commits
no input partition the relay still owes a time (:meth:`ClockRelay.owes`): its next owner
reads again, and relays again, what moved that clock.

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
    """Per input partition, the event time each lane has not been told yet. Memory: one
    integer per input partition and lane.

    ``every_s``: the least time (``clock``, seconds) between two flushes that send
    records of a clock alone (0: every flush sends what is owed)."""

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
        self._sent = -math.inf

    def route(self, partition: str, ts: int, lane: int) -> int | None:
        """A draft of input ``partition`` at event time ``ts`` goes to ``lane``: the clock
        it carries (None: nothing new for that lane); every other lane is owed ``ts``."""
        pending = self._pending.setdefault(partition, {})
        carried = pending.pop(lane, None)
        self._owe(pending, ts, but=lane)
        return carried

    def passed(self, partition: str, ts: int) -> None:
        """A draft of ``partition`` at ``ts`` was released but goes to no lane (a dead
        letter): it still moved the partition's clock, for every lane."""
        self._owe(self._pending.setdefault(partition, {}), ts)

    def _owe(self, pending: dict[int, int], ts: int, *, but: int = -1) -> None:
        """Every lane (``but`` one) is owed ``ts`` unless it is owed a later time."""
        for lane in range(self.lanes):
            if lane != but:
                owed = pending.get(lane)
                if owed is None or ts > owed:
                    pending[lane] = ts

    def owes(self, partition: str) -> bool:
        """Whether some lane has not been told a time ``partition`` released."""
        return bool(self._pending.get(partition))

    def flush(self, *, force: bool = False) -> list[tuple[int, ClockMark]]:
        """``(lane, mark)`` of every clock owed, by partition then lane, and none owed
        after; nothing if the last records were sent less than ``every_s`` ago, unless
        ``force``."""
        now = self._clock()
        if not force and now - self._sent < self.every_s:
            return []
        out = [
            (lane, ClockMark(partition, ts))
            for partition, pending in sorted(self._pending.items())
            for lane, ts in sorted(pending.items())
        ]
        self._pending.clear()
        if out:
            self._sent = now
        return out
