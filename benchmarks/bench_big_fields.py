"""Seconds the whole pipeline takes on one big field, per shape.

Each shape of ``tests/support/big_fields.py`` (hex dump, base64, one long word, minified JSON,
deep JSON, thousands of URLs, quotes and backslashes, whitespace runs, prose, a quoted
blob on a ``curl`` line) at 32 KiB, 256 KiB and 1 MiB, as a model output, two tool
arguments and two tool outputs of one session: decode → steps → every detector → commit
into a fresh SQLite store (store creation not timed), in CPU seconds of this process (the
wall time of 1 MiB beside them: on a shared machine it also counts other processes'
turns), best of ``--repeat`` runs.
The target: a 1 MiB field under 1 s, and linear (``tests/unit/ingest/test_big_fields.py``
asserts both).

Run: ``.venv/bin/python benchmarks/bench_big_fields.py [--repeat 2]``
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.big_fields import SHAPES, run_once  # noqa: E402

SIZES = (32 * 1024, 256 * 1024, 1024 * 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(
        f"{platform.python_implementation()} {platform.python_version()} on "
        f"{platform.machine()} {platform.processor() or ''} ({os.cpu_count()} CPUs), "
        f"{platform.platform()}"
    )
    print(f"{'CPU seconds':20s}" + "".join(f"{s // 1024:>10d} KiB" for s in SIZES) + "   1M/32K")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in SHAPES.items():
            times, walls = [], []
            for size in SIZES:
                field = make(size)
                runs = []
                for i in range(args.repeat):
                    cpu, wall, store = run_once(field, Path(tmp) / f"{name}-{size}-{i}")
                    store.close()
                    runs.append((cpu, wall))
                times.append(min(c for c, _ in runs))
                walls.append(min(w for _, w in runs))
            row = "".join(f"{t:12.3f} s" for t in times)
            ratio = times[-1] / times[0]
            print(f"{name:20s}{row}   {ratio:6.1f}x   (wall 1 MiB {walls[-1]:.3f} s)", flush=True)


if __name__ == "__main__":
    main()
