"""Where a replay's CPU goes, by named stage: ``trajwatch bench``'s attribution.

:func:`attributed_replay` replays recordings once more with a CPU clock around the
pipeline's parts (decode, normalise, redaction, the storable check, ordering, session
resolution, sequencing, features, each detector, store lookups and writes, checkpoints,
the commit), each charged its *own* time (a stage's inner stages are charged to them),
so the parts add up to the whole replay; what no named part covers (reading and
framing the files, merging them in delivery order) is ``replay loop``. The wrappers are
installed on the classes and module names the pipeline looks up for this one replay and
removed after it, so the normal path carries no timer; their own cost (a few µs a step)
shows as the difference between this replay's total and the plain one's.

This complements the stages timed on their own (:func:`trajwatch.bench._stages`): those
price each part alone on the same data; this one shows what the rest is.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["StageClock", "attributed_replay"]

LOOP = "replay loop (read, frame, merge files)"
"""The stage charged for whatever no named stage covers."""


class StageClock:
    """Exclusive CPU seconds per stage: entering a stage stops the clock of the stage
    it was entered from; leaving it restarts that one."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        """Per stage, how many times it was entered."""
        self.entered_from: dict[str, int] = {}
        """Per stage, how many times another stage was entered from it."""
        self._stack = [LOOP]
        self._mark = time.process_time()

    def enter(self, name: str) -> None:
        now = time.process_time()
        top = self._stack[-1]
        self.seconds[top] = self.seconds.get(top, 0.0) + now - self._mark
        self.calls[name] = self.calls.get(name, 0) + 1
        self.entered_from[top] = self.entered_from.get(top, 0) + 1
        self._stack.append(name)
        self._mark = now

    def leave(self) -> None:
        now = time.process_time()
        top = self._stack.pop()
        self.seconds[top] = self.seconds.get(top, 0.0) + now - self._mark
        self._mark = now

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` charging its own time to ``name``; a generator function is charged for
        each item it makes (its work happens as it is iterated)."""
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
                items = fn(*args, **kwargs)
                while True:
                    self.enter(name)
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                    finally:
                        self.leave()
                    yield item

            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.enter(name)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()

        return wrapper


def timer_cost(calls: int = 20_000) -> tuple[float, float]:
    """CPU seconds one timed call adds to the stage it is made from, and to its own
    stage, measured on a timed no-op called from a timed stage (the corrections
    :func:`attributed_replay` applies)."""
    clock = StageClock()
    noop = clock.timed("child", lambda: None)

    def parent() -> None:
        for _ in range(calls):
            noop()

    bare = time.process_time()
    for _ in range(calls):
        (lambda: None)()
    bare = time.process_time() - bare
    clock.timed("parent", parent)()
    clock.leave()
    to_parent = max(0.0, clock.seconds.get("parent", 0.0) - bare) / calls
    return to_parent, clock.seconds.get("child", 0.0) / calls


def _targets(detectors: Any) -> list[tuple[Any, str, str]]:
    """(owner, attribute, stage) for every timed part of the per-step path."""
    import features.ordering
    import features.trajectory
    import ingest.formats
    import ingest.pipeline as pipeline
    import ingest.trace_index
    import models.store

    P, U = pipeline.Pipeline, models.store.StoreUnit
    parts: list[tuple[Any, str, str]] = [
        (ingest.formats, "delivery", "decode (protobuf → span records)"),
        (pipeline, "spans_to_drafts", "normalise (span → step drafts)"),
        (pipeline, "redact_step", "redaction"),
        (pipeline, "_make_storable", "storable check (text repair, column limits)"),
        (pipeline, "session_hint", "trace index (span → session)"),
        (ingest.trace_index.TraceIndex, "observe_span", "trace index (span → session)"),
        (ingest.trace_index.TraceIndex, "observe_draft", "trace index (span → session)"),
        (P, "_add_drafts", "intake and ordering (lateness buffer)"),
        (features.ordering.Reorderer, "push", "intake and ordering (lateness buffer)"),
        (features.ordering.Reorderer, "pop_ready", "intake and ordering (lateness buffer)"),
        (P, "resolve", "resolve sessions and egress parents"),
        (P, "_release", "release (ids, dedup, parents, detector loop)"),
        (P, "_key_turns", "release (ids, dedup, parents, detector loop)"),
        (pipeline, "_merge_sources", "release (ids, dedup, parents, detector loop)"),
        (pipeline, "_check_identity", "release (ids, dedup, parents, detector loop)"),
        (P, "_session", "session open (detector clones, restore)"),
        (P, "_sequence", "sequencing (seq, compaction, step copies)"),
        (P, "_place", "sequencing (seq, compaction, step copies)"),
        (pipeline, "_once_per_session_instructions", "sequencing (seq, compaction, step copies)"),
        (pipeline, "_updated_info", "session facts"),
        (pipeline, "analysed_step", "features (the per-step feature pass)"),
        (pipeline, "analysed_view", "features (the per-step feature pass)"),
        (features.trajectory.TrajectoryFeatures, "observe", "features (the per-step feature pass)"),
        (U, "existing_step_ids", "store lookups (existing ids, cursors)"),
        (U, "step_sources", "store lookups (existing ids, cursors)"),
        (U, "session_cursors", "store lookups (existing ids, cursors)"),
        (U, "add_steps_or_reject", "store writes (steps)"),
        (U, "add_alerts_or_reject", "store writes (alerts, sessions, offsets)"),
        (U, "add_dead_letters", "store writes (alerts, sessions, offsets)"),
        (U, "upsert_session", "store writes (alerts, sessions, offsets)"),
        (U, "set_offset", "store writes (alerts, sessions, offsets)"),
        (U, "move_offset", "store writes (alerts, sessions, offsets)"),
        (pipeline._Session, "cursor", "checkpoints (detector state pickled)"),
        (P, "commit", "commit (transaction, sinks)"),
    ]
    for prototype in detectors.prototypes:
        parts.append((type(prototype), "update", f"detector `{prototype.name}`"))
    return parts


@contextlib.contextmanager
def _installed(clock: StageClock, parts: list[tuple[Any, str, str]]) -> Iterator[None]:
    saved: list[tuple[Any, str, Any, bool]] = []
    done: set[tuple[int, str]] = set()
    try:
        for owner, attr, stage in parts:
            if (id(owner), attr) in done:  # two detectors of one class: timed once
                continue
            done.add((id(owner), attr))
            own = attr in vars(owner)  # a class's inherited method: delete, not restore
            original = vars(owner)[attr] if own else getattr(owner, attr)
            if isinstance(original, staticmethod):
                wrapped: Any = staticmethod(clock.timed(stage, original.__func__))
            else:
                wrapped = clock.timed(stage, original)
            saved.append((owner, attr, original, own))
            setattr(owner, attr, wrapped)
        yield
    finally:
        for owner, attr, original, own in reversed(saved):
            if own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)


def attributed_replay(folder: Path, url: str, detectors: Any) -> dict[str, Any]:
    """Replay ``folder`` into the (new, migrated) store at ``url`` with every stage
    timed: CPU seconds per stage (the timers' own cost, from :func:`timer_cost`, taken
    off each stage and its callers), the total with timers, and the steps stored."""
    from trajwatch.replay import replay
    from trajwatch.settings import Settings

    clock = StageClock()
    parts = _targets(detectors)
    with _installed(clock, parts):
        clock.seconds.clear()
        start = time.process_time()
        clock._mark = start
        summary = replay([folder], settings=Settings(db_url=url), detectors=detectors)
        total = time.process_time() - start
        clock.leave()  # the loop's last stretch
    to_parent, to_child = timer_cost()
    seconds = {
        name: max(
            0.0,
            spent
            - clock.calls.get(name, 0) * to_child
            - clock.entered_from.get(name, 0) * to_parent,
        )
        for name, spent in clock.seconds.items()
    }
    return {
        "seconds": seconds,
        "total_s": total,
        "timers_s": total - sum(seconds.values()),
        "steps": summary.steps,
    }
