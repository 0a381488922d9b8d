"""Build a copy of this tree with its per-step modules compiled by mypyc, to time it.

Issue 12's trial of a compiled core (not wired into the build: 1.13x fewer instructions
per replay, 0.98-1.15x CPU time end to end, short of the 1.25x that would pay for the
build step; see docs/decisions/no-compiled-core.md). The copy
(``git ls-files`` of this checkout, into ``--out``) has every module of ``features/``,
``detectors/`` and ``ingest/`` compiled except :data:`SKIP`; each class in a compiled
module is marked ``@mypyc_attr(native_class=False)`` first, so instances keep their
``__dict__``/``__slots__``, pickle as before and stay copyable by
``detectors.state_copy`` (native classes do not: a native frozen dataclass fails to
unpickle, and native classes reject ``__slots__``). The ``.so`` files land beside the
sources in ``--out`` (``build_ext --inplace``); this checkout is not touched.

Then time it against a pure-Python checkout and check its tables::

    python benchmarks/bench_speedup.py --baseline-tree BASE   # run from --out
    python trajwatch/bench/hashes.py --tree OUT --compare base.json ...

Run: ``.venv/bin/python benchmarks/mypyc_trial.py --out /tmp/mypyc-tree`` (mypy, which
ships mypyc, and a C compiler; ~2-3 min on 2 cores).
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = ("features", "detectors", "ingest")

SKIP = {
    # mypyc 2.4 fails on them (internal AssertionError: a closure in a method of a
    # non-native class)
    "detectors/egress_gaming/detector.py": "mypyc internal error",
    "features/session/clusters.py": "mypyc internal error",
    "features/policy/check.py": "mypyc internal error",
    "features/session/subgoals.py": "mypyc internal error",
    "ingest/pipeline/engine.py": "mypyc internal error",
    "ingest/sources/json_stream.py": "surrogate code points in string literals",
    "ingest/formats/otlp_json.py": "surrogate code points in string literals",
    "ingest/sources/otlp_http.py": "async generators are not implemented",
    "detectors/testing.py": "text signature: non-default argument follows default",
    "detectors/duplicate_side_effect.py": "reads a dataclass's __slots__",
    # compiled, they break at run time
    "ingest/formats/claude_code.py": "segfaults at import",
    "ingest/formats/runtime_logs.py": "segfaults at import",
    # their classes are subclassed by uncompiled code, and a compiled method checks
    # type(self) is its class exactly: Settings(PipelineOptions) raised TypeError
    "detectors/base.py": "subclassed by uncompiled detectors",
    "ingest/pipeline/options.py": "subclassed by trajwatch.settings.Settings",
    "ingest/pipeline/sinks.py": "subclassed by trajwatch.service.serve.AlertPrinter",
    # Detector.clone/get_params read inspect.signature(__init__): none for compiled code
    "detectors/budget_overrun.py": "inspect.signature(__init__)",
    "detectors/calibration.py": "inspect.signature(__init__)",
    "detectors/compliance/decay.py": "inspect.signature(__init__)",
    "detectors/intent_drift/detector.py": "inspect.signature(__init__)",
    "detectors/compliance/violation.py": "inspect.signature(__init__)",
    "detectors/premature_completion.py": "inspect.signature(__init__)",
    "detectors/runaway_loop/detector.py": "inspect.signature(__init__)",
    # lazy attributes hold a sentinel object() under a StepTerms/... annotation: a
    # compiled read checks the type and raises TypeError
    "features/calls/step_features.py": "sentinel in typed attributes",
}
"""Modules left as Python, with why (``models/`` stays Python too: ``AnalysedStep``
subclasses ``Step`` and a compiled ``Step`` rejects it the same exact-type way)."""

_KEEP_NATIVE_BASES = {"Enum", "IntEnum", "StrEnum", "NamedTuple", "TypedDict", "Protocol"}
_DECORATOR = "@_mypyc_attr(native_class=False)"
_IMPORT = "from mypy_extensions import mypyc_attr as _mypyc_attr\n"


def mark_non_native(path: Path) -> int:
    """Mark each class of ``path`` non-native (not enums, named tuples, typed dicts,
    protocols: mypyc never makes those native); return how many."""
    source = path.read_text()
    lines = source.splitlines(keepends=True)
    at = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(b).split(".")[-1].split("[")[0] for b in node.bases}
        if bases & _KEEP_NATIVE_BASES:
            continue
        first = min([d.lineno for d in node.decorator_list] + [node.lineno])
        line = lines[first - 1]
        at.append((first, line[: len(line) - len(line.lstrip())]))
    for first, indent in sorted(at, reverse=True):
        lines.insert(first - 1, f"{indent}{_DECORATOR}\n")
    if at:
        future = next(i for i, line in enumerate(lines) if line.startswith("from __future__"))
        lines.insert(future + 1, _IMPORT)
        path.write_text("".join(lines))
    return len(at)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="a new folder for the copy")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    out: Path = args.out.resolve()
    out.mkdir(parents=True)
    files = subprocess.run(
        ["git", "-C", str(here), "ls-files", "-z"], check=True, capture_output=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        target = out / name.decode()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((here / name.decode()).read_bytes())
    modules = sorted(
        str(p.relative_to(out))
        for package in PACKAGES
        for p in (out / package).glob("*.py")
        if p.name != "__init__.py" and str(p.relative_to(out)) not in SKIP
    )
    classes = sum(mark_non_native(out / m) for m in modules)
    build = (
        "from mypyc.build import mypycify\n"
        "from setuptools import setup\n"
        f"setup(name='trajwatch-trial', ext_modules=mypycify({modules!r}, multi_file=True),\n"
        "      script_args=['build_ext', '--inplace', '-j', str(__import__('os').cpu_count())])\n"
    )
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", build],
        cwd=out,
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(out)},
    )
    print(
        f"{len(modules)} modules compiled ({classes} classes marked non-native), "
        f"{len(SKIP)} left as Python, in {time.perf_counter() - started:.0f} s: {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
