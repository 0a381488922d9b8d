"""A session's cadence: the gaps between its recent steps, bounded."""

from __future__ import annotations

from collections import deque


class Cadence:
    """The last ``keep`` gaps between consecutive steps (ns); :attr:`longest` is the
    cadence a silence is compared with (a session that often waits minutes for its
    tests is not stalled after one)."""

    def __init__(self, keep: int) -> None:
        self.gaps: deque[int] = deque(maxlen=keep)
        self.last_ts: int | None = None

    def spoke(self, ts: int) -> None:
        if self.last_ts is not None and ts > self.last_ts:
            self.gaps.append(ts - self.last_ts)
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)

    @property
    def longest(self) -> int:
        """The longest recent gap (0 before two steps)."""
        return max(self.gaps, default=0)
