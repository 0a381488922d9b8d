"""Where a replay's CPU goes, by named stage: ``trajwatch bench``'s attribution.

:func:`attributed_replay` replays recordings once more with the pipeline's parts
(decode, normalise, redaction, the storable check, ordering, session resolution,
sequencing, features, each detector, store lookups and writes, checkpoints, the commit)
marked: each marks its stage on a stack as it runs (a stage's inner stages mark their
own), and a CPU-time profiling timer (``ITIMER_PROF``, every :data:`INTERVAL_S` of the
process's CPU) charges the CPU spent since its last tick to the stage on top. The parts
so add up to the whole replay's CPU; what no named part covers (reading and framing the
files, merging them in delivery order) is ``replay loop``. A mark is a list append and
pop, no clock read (a CPU clock read is a system call: timing ~25 calls a step with it
cost ~35 µs a step, a fifth of the replay); the marks are installed on the classes and
module names the pipeline looks up for this one replay and removed after it, so the
normal path carries none. Sampled: a stage's figure is good to about one tick over the
steps (a 4 ms tick over 8,000 steps: 0.5 µs a step; a ``--quick``-sized run is too
short to read).

This complements the stages timed on their own (:func:`trajwatch.bench.run._stages`): those
price each part alone on the same data; this one shows what the rest is.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["INTERVAL_S", "StageSampler", "attributed_replay"]

LOOP = "replay loop (read, frame, merge files)"
"""The stage charged for whatever no named stage covers."""
INTERVAL_S = 0.001
"""CPU seconds asked between two ticks of the profiling timer; the kernel rounds it up
to its scheduler tick (4 ms on the 12-02 machine: over 8,000 steps, 0.5 µs a step)."""


class StageSampler:
    """CPU seconds per stage: the stages running form a stack (:meth:`marked`), and each
    tick of the profiling timer charges the CPU since the last tick to the stage on
    top. A tick delayed by a long C call (a signal is handled between bytecodes) still
    charges that call's time, to the stage it ran in."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.stack = [LOOP]
        self._last = 0.0

    def _tick(self, signum: int, frame: Any) -> None:
        now = time.process_time()
        top = self.stack[-1]
        self.seconds[top] = self.seconds.get(top, 0.0) + now - self._last
        self._last = now

    @contextlib.contextmanager
    def sampling(self, interval: float = INTERVAL_S) -> Iterator[None]:
        """Tick every ``interval`` CPU seconds while in the block (main thread only;
        needs ``signal.setitimer``: Linux, macOS)."""
        previous = signal.signal(signal.SIGPROF, self._tick)
        self._last = time.process_time()
        signal.setitimer(signal.ITIMER_PROF, interval, interval)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0, 0)
            self._tick(signal.SIGPROF, None)  # the last stretch
            signal.signal(signal.SIGPROF, previous)

    def marked(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` running as stage ``name``; a generator function is the stage while it
        makes each item (its work happens as it is iterated)."""
        stack = self.stack
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
                items = fn(*args, **kwargs)
                while True:
                    stack.append(name)
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                    finally:
                        stack.pop()
                    yield item

            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            stack.append(name)
            try:
                return fn(*args, **kwargs)
            finally:
                stack.pop()

        return wrapper


def _targets(detectors: Any) -> list[tuple[Any, str, str]]:
    """(owner, attribute, stage) for every timed part of the per-step path."""
    import features.session.ordering
    import features.session.trajectory
    import ingest.formats.table
    import ingest.pipeline.engine as pipeline
    import ingest.pipeline.lookups as lookups
    import ingest.pipeline.ordering as ordering
    import ingest.pipeline.sequencing as sequencing
    import ingest.pipeline.session as session
    import ingest.pipeline.trace_index
    import models.store

    # a module's function is marked where its callers look it up (their module's globals)
    P, U = pipeline.Pipeline, models.store.StoreUnit
    release = "release (ids, dedup, parents, detector loop)"
    opening = "session open (detector clones, restore)"
    sequenced = "sequencing (seq, compaction, step copies)"
    per_step = "features (the per-step feature pass)"
    lookup = "store lookups (existing ids, cursors)"
    parts: list[tuple[Any, str, str]] = [
        (ingest.formats.table, "delivery", "decode (protobuf → span records)"),
        (ordering, "spans_to_drafts", "normalise (span → step drafts)"),
        (ordering, "redact_step", "redaction"),
        (ordering, "make_storable", "storable check (text repair, column limits)"),
        (ordering, "session_hint", "trace index (span → session)"),
        (ingest.pipeline.trace_index.TraceIndex, "observe_span", "trace index (span → session)"),
        (ingest.pipeline.trace_index.TraceIndex, "observe_draft", "trace index (span → session)"),
        (ordering.Ordering, "add_drafts", "intake and ordering (lateness buffer)"),
        (features.session.ordering.Reorderer, "push", "intake and ordering (lateness buffer)"),
        (features.session.ordering.Reorderer, "pop_ready", "intake and ordering (lateness buffer)"),
        (P, "resolve", "resolve sessions and egress parents"),
        (P, "_release", release),
        (pipeline, "key_turns", release),
        (pipeline, "merge_sources", release),
        (pipeline, "check_identity", release),
        (P, "_session", opening),
        (lookups, "read_stored", opening),  # a session's state and steps, read to open it
        (pipeline, "sequence", sequenced),
        (sequencing, "place", sequenced),
        (sequencing, "once_per_session_instructions", sequenced),
        (pipeline, "updated_info", "session facts"),
        (sequencing, "updated_info", "session facts"),
        (sequencing, "analysed_step", per_step),
        (pipeline, "analysed_view", per_step),
        (features.session.trajectory.TrajectoryFeatures, "observe", per_step),
        (U, "existing_step_ids", lookup),
        (U, "step_sources", lookup),
        (U, "session_cursors", lookup),
        (U, "add_storable_steps", "store writes (steps)"),
        (U, "add_alerts_or_reject", "store writes (alerts, sessions, offsets)"),
        (U, "add_dead_letters", "store writes (alerts, sessions, offsets)"),
        (U, "upsert_session", "store writes (alerts, sessions, offsets)"),
        (U, "set_offset", "store writes (alerts, sessions, offsets)"),
        (U, "move_offset", "store writes (alerts, sessions, offsets)"),
        (session.LiveSession, "cursor", "checkpoints (detector state pickled)"),
        (P, "commit", "commit (transaction, sinks)"),
    ]
    for prototype in detectors.prototypes:
        parts.append((type(prototype), "update", f"detector `{prototype.name}`"))
    return parts


@contextlib.contextmanager
def _installed(sampler: StageSampler, parts: list[tuple[Any, str, str]]) -> Iterator[None]:
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
                wrapped: Any = staticmethod(sampler.marked(stage, original.__func__))
            else:
                wrapped = sampler.marked(stage, original)
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
    marked: CPU seconds per stage (they add up to the total; 0 for a stage no tick
    fell in), the total, and the steps stored."""
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    sampler = StageSampler()
    parts = _targets(detectors)
    sampler.seconds = dict.fromkeys([LOOP, *(stage for _, _, stage in parts)], 0.0)
    with _installed(sampler, parts):
        start = time.process_time()
        with sampler.sampling():
            summary = replay([folder], settings=Settings(db_url=url), detectors=detectors)
        total = time.process_time() - start
    return {"seconds": sampler.seconds, "total_s": total, "steps": summary.steps}


def main(argv: list[str] | None = None) -> None:
    """``python -m trajwatch.bench.attribution [--runs N] [--config TOML] [FOLDER]``: the
    attributed replay of ``FOLDER`` (recordings), printed as µs of CPU a step; without
    one, ``N`` of the bench's runs (20 spans a request, as ``trajwatch bench`` writes
    them) are written to a temporary folder and replayed by a fresh process (here, the
    garbage and freed memory of building them would be charged to the replay's stages)."""
    import argparse
    import os
    import subprocess
    import sys
    import tempfile

    from models.store import Store
    from trajwatch.config import detector_set, load_config

    parser = argparse.ArgumentParser(prog="python -m trajwatch.bench.attribution")
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--config", type=Path)
    args = parser.parse_args(argv)
    if args.folder is None:
        from trajwatch.bench.spans import BATCH, agent_traces, encode_batches, length_delimited

        with tempfile.TemporaryDirectory(prefix="trajwatch-attribution-") as tmp:
            folder = Path(tmp) / "recorded"
            folder.mkdir()
            for i, run in enumerate(agent_traces(args.runs, prefix="bench")):
                body = length_delimited(encode_batches(run, BATCH))
                (folder / f"run-{i:05d}.otlp.binpb").write_bytes(body)
            config = ["--config", str(args.config)] if args.config else []
            command = [sys.executable, "-m", "trajwatch.bench.attribution", *config, str(folder)]
            raise SystemExit(subprocess.run(command, check=False).returncode)
    detectors = detector_set(load_config(args.config))
    with tempfile.TemporaryDirectory(prefix="trajwatch-attribution-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'attributed.db'}"
        Store.open(url).close()
        done = attributed_replay(args.folder, url, detectors)
    per = 1e6 / done["steps"]
    print(f"{done['steps']:,} steps; load {os.getloadavg()[0]:.2f}; µs of CPU a step:")
    for name, seconds in sorted(done["seconds"].items(), key=lambda kv: -kv[1]):
        print(f"{seconds * per:8.1f}  {name}")
    print(f"{done['total_s'] * per:8.1f}  all of it")


if __name__ == "__main__":
    main()
