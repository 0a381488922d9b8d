"""What one feature pass per step costs: tokenisation per tool call and detector µs.

For a source tree (``--tree``, default this one; e.g. a ``git worktree add --detach``
checkout of a baseline commit), in this process with that tree first on ``sys.path``:

1. ``tokenize``: ``trajwatch replay`` of every file in ``fixtures/recorded`` (the tree's
   own ``trajwatch.toml``, all detectors, a fresh SQLite file) under cProfile; prints
   the calls of ``features.calls.vectors.tokenize`` per stored tool call and its callers.
   ``--no-memo`` bypasses the memos of step terms and action vectors (every call worked
   out as if no earlier step had the same text: what a stream with no repeats costs).
2. ``detectors``: the stored steps fed to fresh detectors on fresh analysed views (their
   features worked out as the pipeline's are, memos warm), CPU µs per stored step, all
   together and each alone (then it pays for every feature it reads); the minimum of
   ``--repeat`` runs.

Run two trees alternately and compare in the same load: ``nice -n 5 .venv/bin/python
benchmarks/bench_feature_pass.py --tree /tmp/base`` then ``... --tree .``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-memo", action="store_true")
    parser.add_argument("--skip-detectors", action="store_true")
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path.insert(0, str(tree))
    os.chdir(tree)

    import features.calls.step_features as step_features
    import features.calls.vectors as text_vectors
    from features.calls.step_features import analysed_view
    from models.records import StepKind
    from models.store import Store
    from trajwatch.config import detector_set, load_config
    from trajwatch.service.replay import replay
    from trajwatch.settings import Settings

    if not Path(text_vectors.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"imported {text_vectors.__file__}, not from {tree}: unset PYTHONPATH")
    if args.no_memo:
        for module, name in ((text_vectors, "_memo_step_terms"), (step_features, "_action_vector")):
            setattr(module, name, getattr(module, name).__wrapped__)
    config = load_config(tree / "trajwatch.toml")
    files = [p for p in sorted((tree / "fixtures" / "recorded").iterdir()) if p.suffix != ".csv"]
    url = f"sqlite:///{tempfile.mkdtemp()}/replay.db"
    Store.open(url).close()
    profile = cProfile.Profile()
    profile.enable()
    replay(files, settings=Settings(db_url=url), detectors=detector_set(config))
    profile.disable()
    with Store.open(url) as store:
        streams = [store.steps(s.session_id) for s in store.sessions()]
    steps = sum(map(len, streams))
    calls = sum(s.kind == StepKind.TOOL_CALL for stream in streams for s in stream)
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    ncalls, callers = 0, {}
    for (path, _, name), (_, total, _, _, by) in stats.items():
        if name == "tokenize" and path.endswith("text_vectors.py"):
            ncalls = total
            callers = {f"{Path(c[0]).name}:{c[2]}": n[1] for c, n in by.items()}
    print(f"tree {tree}{' (memos bypassed)' if args.no_memo else ''}")
    print(f"replay: {steps} steps, {calls} tool calls, tokenize {ncalls} calls, ", end="")
    print(f"{ncalls / max(calls, 1):.2f} a tool call")
    for caller, n in sorted(callers.items(), key=lambda kv: -kv[1]):
        print(f"  {n:7d}  {caller}")
    if args.skip_detectors:
        return 0
    prototypes = detector_set(config).prototypes

    def run(chosen: list[Any]) -> float:
        views = [[analysed_view(s) for s in stream] for stream in streams]
        start = time.process_time()
        for stream in views:
            live = [p.clone() for p in chosen]
            for view in stream:
                for detector in live:
                    detector.update(view)
        return (time.process_time() - start) * 1e6 / steps

    print(f"detectors, CPU µs a stored step (min of {args.repeat}; load {os.getloadavg()[0]:.1f}):")
    print(f"  {'all together':24s} {min(run(prototypes) for _ in range(args.repeat)):7.2f}")
    for prototype in prototypes:
        alone = min(run([prototype]) for _ in range(args.repeat))
        print(f"  {prototype.name:24s} {alone:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
