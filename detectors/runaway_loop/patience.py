"""Patience: waiting longer each time, for a bounded count, is not a loop.

:func:`patient` judges the deliberate waits (``LoopCall.wait``:
:func:`features.calls.information.wait_seconds`) before a series of retries or polls.
Pure, O(len(waits)).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

__all__ = ["MIN_WAIT", "PATIENT_GROWTH", "patient"]

PATIENT_GROWTH = 1.5
"""A wait this many times the one before it grew (back-off): 2 s, 4 s, 8 s; 10 s, 20 s."""
MIN_WAIT = 1.0
"""Seconds below which a wait is no wait (the runtime's own latency)."""


def patient(waits: Sequence[float], limit: int) -> bool:
    """Whether attempts whose deliberate waits were ``waits`` (in order, seconds; one a
    retry) are patience: fewer than ``limit`` of them, each waiting at least
    :data:`MIN_WAIT`, and the waits growing by :data:`PATIENT_GROWTH` from one to the next
    (a single retry that waited is patient). A growing interval with a bounded count is
    patience; a flat one, or one that never stops, is not.

    >>> patient([4.0, 8.0, 16.0], limit=6), patient([30.0, 30.0, 30.0], limit=6)
    (True, False)
    >>> patient([4.0], limit=6), patient([0.0], limit=6), patient([1, 2, 4, 8, 16, 32], limit=6)
    (True, False, False)
    """
    if not waits or len(waits) >= limit:
        return False
    if any(w < MIN_WAIT for w in waits):
        return False
    return all(b >= PATIENT_GROWTH * a for a, b in itertools.pairwise(waits))
