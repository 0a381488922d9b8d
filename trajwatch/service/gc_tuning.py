"""The garbage collector's thresholds for a process that runs the pipeline.

The pipeline keeps a large live heap: the drafts held for ordering, every live session's
detector state and features, the bounded memos of per-call analysis, and (in a replay)
the released steps until the commit. CPython 3.11 runs a full collection, which walks all
of it, after every 10 collections of the middle generation; on the issue-12 bench spans
those full collections were ~5.5% of a replay's CPU (measured with ``gc.callbacks``:
1.07 s of 19.4 s; 9.2% for the collector in all), and waiting 100 middle-generation
collections instead removed them (3.9% in all) at no cost to the young generations.
Nothing in the pipeline depends on when garbage is collected (no finalizers, no weak
references), so this changes its speed, not its results. Cyclic garbage that reaches the
oldest generation lives longer; CPython still collects it (also only when the
old generation has grown by a quarter since the last full collection, as before).
"""

from __future__ import annotations

import gc

__all__ = ["FULL_COLLECTION_EVERY", "tune_gc"]

FULL_COLLECTION_EVERY = 100
"""Middle-generation collections between two full ones (CPython's default: 10)."""


def tune_gc() -> None:
    """Space the full collections out (see the module doc); the young generations keep
    their thresholds. Idempotent; for the composition root of a pipeline process (replay,
    serve, worker), not for a library embedding the pipeline in its own process."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
