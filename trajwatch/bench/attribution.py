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

LOOP = "replay_loop"
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
        self._ticking = False
        self.elapsed = 0.0
        """CPU seconds inside :meth:`sampling` blocks: what the stages add up to."""

    def _tick(self, signum: int, frame: Any) -> None:
        # CPython runs a pending handler between any two bytecodes, this one's included:
        # a tick landing while another is adding up would overwrite its sum (ticks lost
        # under load). The nested one returns at once; the next tick charges its time.
        if self._ticking:
            return
        self._ticking = True
        try:
            now = time.process_time()
            top = self.stack[-1]
            self.seconds[top] = self.seconds.get(top, 0.0) + now - self._last
            self._last = now
        finally:
            self._ticking = False

    @contextlib.contextmanager
    def sampling(self, interval: float = INTERVAL_S) -> Iterator[None]:
        """Tick every ``interval`` CPU seconds while in the block (main thread only;
        needs ``signal.setitimer``: Linux, macOS)."""
        previous = signal.signal(signal.SIGPROF, self._tick)
        self._last = started = time.process_time()
        signal.setitimer(signal.ITIMER_PROF, interval, interval)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0, 0)
            self._tick(signal.SIGPROF, None)  # the last stretch
            signal.signal(signal.SIGPROF, previous)
            self.elapsed += self._last - started

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


_STAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # (stage id, what it covers, where its parts are looked up: "module:Owner.attr"; the
    # second group of each is 37f6ddb's layout, so one file attributes either tree)
    (
        "decode",
        "protobuf → span records",
        (
            "ingest.formats.table:delivery",
            "ingest.replay:_delivery",
        ),
    ),
    (
        "normalise",
        "span → step drafts (mapping, canonical arguments, egress)",
        (
            "ingest.pipeline.ordering:spans_to_drafts",
            "ingest.pipeline:spans_to_drafts",
        ),
    ),
    (
        "redaction",
        "credentials out of every text field",
        (
            "ingest.pipeline.ordering:redact_step",
            "ingest.semconv:redact",
        ),
    ),
    ("storable_check", "text repair, column limits", ("ingest.pipeline.ordering:make_storable",)),
    (
        "trace_index",
        "span → session",
        (
            "ingest.pipeline.ordering:session_hint",
            "ingest.pipeline.trace_index:TraceIndex.observe_span",
            "ingest.pipeline.trace_index:TraceIndex.observe_draft",
            "ingest.pipeline:session_hint",
        ),
    ),
    (
        "ordering",
        "intake and the lateness buffer",
        (
            "ingest.pipeline.ordering:Ordering.add_drafts",
            "features.session.ordering:Reorderer.push",
            "features.session.ordering:Reorderer.pop_ready",
            "ingest.pipeline:Pipeline.add_drafts",
            "features.ordering:Reorderer.push",
            "features.ordering:Reorderer.pop_ready",
        ),
    ),
    ("resolve", "sessions and egress parents", ("ingest.pipeline.engine:Pipeline.resolve",)),
    (
        "release",
        "ids, dedup, parents, the detector loop",
        (
            "ingest.pipeline.engine:Pipeline._release",
            "ingest.pipeline.engine:key_turns",
            "ingest.pipeline.engine:merge_sources",
            "ingest.pipeline.engine:check_identity",
            "ingest.pipeline:Pipeline._release",
            "ingest.pipeline:_merge_sources",
        ),
    ),
    (
        "session_open",
        "detector clones, restore",
        (
            "ingest.pipeline.engine:Pipeline._session",
            "ingest.pipeline.engine:read_stored",
            "ingest.pipeline:Pipeline._session",
        ),
    ),
    (
        "sequencing",
        "seq, compaction, step copies",
        (
            "ingest.pipeline.engine:sequence",
            "ingest.pipeline.sequencing:place",
            "ingest.pipeline.sequencing:once_per_session_instructions",
            "ingest.pipeline:Pipeline._sequence",
            "ingest.pipeline:Pipeline._place",
        ),
    ),
    (
        "session_facts",
        "the session record's facts",
        (
            "ingest.pipeline.engine:updated_info",
            "ingest.pipeline.sequencing:updated_info",
            "ingest.pipeline:_updated_info",
        ),
    ),
    (
        "analysed_view",
        "the detectors' bounded copy of a step",
        (
            "ingest.pipeline.sequencing:analysed_step",
            "ingest.pipeline.engine:analysed_view",
        ),
    ),
    (
        "features.trajectory",
        "action clusters, sub-goal progress",
        (
            "features.session.trajectory:TrajectoryFeatures.observe",
            "features.trajectory:TrajectoryFeatures.observe",
        ),
    ),
    # the step features, by family: each is worked out by its first reader (a detector,
    # the trajectory) and charged here, not to that reader
    (
        "features.terms",
        "paths, hosts, URLs, repositories, words",
        (
            "features.calls.step_features:StepFeatures.terms",
            "features.calls.step_features:StepFeatures.goal",
        ),
    ),
    (
        "features.action",
        "canonical action key, argument facts, vector",
        (
            "features.calls.step_features:StepFeatures.action",
            "features.calls.step_features:StepFeatures.action_vector",
            "features.calls.step_features:StepFeatures.arguments",
            "features.calls.step_features:StepFeatures.numbers",
            "features.calls.step_features:StepFeatures.unknown_arguments",
        ),
    ),
    (
        "features.tool_view",
        "commands, writes, effects",
        (
            "features.calls.step_features:StepFeatures.view",
            "features.calls.step_features:StepFeatures.view_for",
            "features.calls.step_features:StepFeatures.acts",
            "features.calls.step_features:StepFeatures.effect",
        ),
    ),
    (
        "features.egress",
        "targets, recipients, sends, clones",
        (
            "features.calls.step_features:StepFeatures.call",
            "features.calls.step_features:StepFeatures.target_hosts",
            "features.calls.step_features:StepFeatures.recipients",
            "features.calls.step_features:StepFeatures.sends",
            "features.calls.step_features:StepFeatures.clones",
        ),
    ),
    (
        "features.words",
        "judged words, tool words, mutations, authored text",
        (
            "features.calls.step_features:StepFeatures.judged_words",
            "features.calls.step_features:StepFeatures.tool_words",
            "features.calls.step_features:StepFeatures.mutation_targets",
            "features.calls.step_features:StepFeatures.authored",
        ),
    ),
    (
        "features.result",
        "a result's links, instructions to the agent",
        (
            "features.calls.step_features:StepFeatures.result_links",
            "features.calls.step_features:StepFeatures.instructs_agent",
        ),
    ),
    (
        "store_lookups",
        "existing ids, cursors",
        (
            "models.store:StoreUnit.existing_step_ids",
            "models.store:StoreUnit.step_sources",
            "models.store:StoreUnit.session_cursors",
        ),
    ),
    (
        "store_steps",
        "steps into the store",
        (
            "models.store:StoreUnit.add_storable_steps",
            "models.store:StoreUnit.add_steps",
        ),
    ),
    (
        "store_other",
        "alerts, sessions, offsets, dead letters",
        (
            "models.store:StoreUnit.add_alerts_or_reject",
            "models.store:StoreUnit.add_dead_letters",
            "models.store:StoreUnit.upsert_session",
            "models.store:StoreUnit.set_offset",
            "models.store:StoreUnit.move_offset",
            "models.store:StoreUnit.add_alerts",
        ),
    ),
    ("checkpoints", "detector state pickled", ("ingest.pipeline.session:LiveSession.cursor",)),
    (
        "commit",
        "transaction, sinks",
        (
            "ingest.pipeline.engine:Pipeline.commit",
            "ingest.pipeline:Pipeline.commit",
        ),
    ),
)
"""Every named stage of the per-step path but the detectors (one stage each:
``detector.<name>``), what it covers, and where its parts are."""

DESCRIPTIONS = {
    LOOP: "read and frame the files, merge them in delivery order",
    **{stage: what for stage, what, _ in _STAGES},
}
"""What each stage covers, by stage id (``detector.<name>``: that detector's ``update``)."""


def _resolve(spec: str) -> tuple[Any, str] | None:
    """(owner, attribute) of ``"module:Owner.attr"``, or None when the tree has no such
    part (another layout's)."""
    import importlib

    module_name, _, path = spec.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError:
        return None
    *owners, attr = path.split(".")
    for name in owners:
        owner = getattr(owner, name, None)
        if owner is None:
            return None
    if attr not in vars(owner) and not hasattr(owner, attr):
        return None
    return owner, attr


def _targets(detectors: Any) -> list[tuple[Any, str, str]]:
    """(owner, attribute, stage) for every timed part of the per-step path this tree has."""
    parts: list[tuple[Any, str, str]] = []
    for stage, _, specs in _STAGES:
        for spec in specs:
            found = _resolve(spec)
            if found is not None:
                parts.append((*found, stage))
    for prototype in detectors.prototypes:
        parts.append((type(prototype), "update", f"detector.{prototype.name}"))
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
            elif isinstance(original, property) and original.fget is not None:  # a feature
                wrapped = property(sampler.marked(stage, original.fget), doc=original.__doc__)
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


def _replay_function() -> tuple[Callable[[Path, str, Any], int], Callable[..., Any]]:
    """(replay ``folder`` into ``url`` with ``detectors`` → steps stored, the detector
    set of a config path) of the tree on the path: this one, or 37f6ddb's layout (its
    replay in ``ingest.replay``, its config in ``ingest.config``), so ``bench_speedup``
    attributes both trees with this file."""
    import importlib.util

    if importlib.util.find_spec("ingest.replay") is not None:  # 37f6ddb's layout
        from ingest.config import detector_set as old_set
        from ingest.config import load_config as old_load
        from ingest.replay import replay as old_replay
        from ingest.settings import Settings as OldSettings

        def old(folder: Path, url: str, detectors: Any) -> int:
            settings = OldSettings(db_url=url)
            return int(old_replay([folder], settings=settings, detectors=detectors).steps)

        return old, lambda path: old_set(old_load(path))
    from trajwatch.config import detector_set, load_config
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    def new(folder: Path, url: str, detectors: Any) -> int:
        return replay([folder], settings=Settings(db_url=url), detectors=detectors).steps

    return new, lambda path: detector_set(load_config(path))


def attributed_replay(folder: Path, url: str, detectors: Any) -> dict[str, Any]:
    """Replay ``folder`` into the (new, migrated) store at ``url`` with every stage
    marked: CPU seconds per stage (they add up to the total; 0 for a stage no tick
    fell in), the total, and the steps stored."""
    replay, _ = _replay_function()
    sampler = StageSampler()
    parts = _targets(detectors)
    sampler.seconds = dict.fromkeys([LOOP, *(stage for _, _, stage in parts)], 0.0)
    with _installed(sampler, parts), sampler.sampling():
        steps = replay(folder, url, detectors)
    # the sampled window itself: measured outside it, whatever ran entering or leaving the
    # block counted in the total and in no stage (one loaded CI run: stages 2.2 % short)
    return {"seconds": sampler.seconds, "total_s": sampler.elapsed, "steps": steps}


def main(argv: list[str] | None = None) -> None:
    """``python -m trajwatch.bench.attribution [--runs N] [--config TOML] [--json]
    [FOLDER]``: the attributed replay of ``FOLDER`` (recordings), printed as µs of CPU a
    step beside the stage budget (:mod:`trajwatch.bench.budget`), naming every stage over
    it; ``--json``: the figures as one JSON object instead. Without a folder, ``N`` of the
    bench's runs (20 spans a request, as ``trajwatch bench`` writes them) are written to
    a temporary folder and replayed by a fresh process (here, the garbage and freed
    memory of building them would be charged to the replay's stages).

    Run as a file (``python …/attribution.py --json FOLDER``) with another tree first on
    ``PYTHONPATH``, it attributes that tree's replay (37f6ddb's layout too)."""
    import argparse
    import json
    import os
    import subprocess
    import sys
    import tempfile

    from models.store import Store

    parser = argparse.ArgumentParser(prog="python -m trajwatch.bench.attribution")
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.folder is None:
        from trajwatch.bench.spans import BATCH, agent_traces, encode_batches, length_delimited

        with tempfile.TemporaryDirectory(prefix="trajwatch-attribution-") as tmp:
            folder = Path(tmp) / "recorded"
            folder.mkdir()
            for i, run in enumerate(agent_traces(args.runs, prefix="bench")):
                body = length_delimited(encode_batches(run, BATCH))
                (folder / f"run-{i:05d}.otlp.binpb").write_bytes(body)
            options = ["--config", str(args.config)] if args.config else []
            options += ["--json"] if args.json else []
            command = [sys.executable, "-m", "trajwatch.bench.attribution", *options, str(folder)]
            raise SystemExit(subprocess.run(command, check=False).returncode)
    _, detector_set = _replay_function()
    detectors = detector_set(args.config)
    with tempfile.TemporaryDirectory(prefix="trajwatch-attribution-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'attributed.db'}"
        Store.open(url).close()
        done = attributed_replay(args.folder, url, detectors)
    per = 1e6 / done["steps"]
    us = {name: round(seconds * per, 2) for name, seconds in done["seconds"].items()}
    total = round(done["total_s"] * per, 2)
    if args.json:
        print(json.dumps({"steps": done["steps"], "us_per_step": us, "total": total}))
        return
    from trajwatch.bench.budget import calibration, load_budget, stage_table

    budget = load_budget()
    if budget is not None:
        budget = budget.scaled(calibration())
    print(f"{done['steps']:,} steps; load {os.getloadavg()[0]:.2f}; µs of CPU a step:")
    print("\n".join(stage_table(us, budget, DESCRIPTIONS, total=total)))


if __name__ == "__main__":
    main()
