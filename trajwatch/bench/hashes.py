"""Replay folders into fresh SQLite stores with a given source tree; hash every table.

The checker behind "no behaviour change" for performance work: a change that makes the
per-step path cheaper must store the same steps, alerts, sessions and dead letters. For
each folder, ``trajwatch replay`` of ``--tree`` (a checkout, e.g. ``git worktree add
--detach /tmp/base ca4810b``) runs in its own process (``PYTHONPATH=TREE``, cwd ``TREE``
so its ``trajwatch.toml`` applies, the same interpreter) into a new SQLite file; then
every table's rows are hashed in a deterministic order (all columns, in column order,
sorted). Every replay runs with ``PYTHONHASHSEED=0`` (see :data:`HASH_SEED`).

Excluded columns, because they hold the wall clock and differ on every run:
``dead_letters.received_at``, ``deliveries.created``/``updated``/``next_attempt_at``,
``webhook_endpoints.updated``. ``sessions.state`` (the pickled, compressed detector
state) is hashed as stored bytes *and*, as ``sessions.state~decoded``, as its unpickled
content in a canonical form (:func:`decoded_state`: the same for either state layout), so
a difference in pickle layout alone can be told from a difference in state.

Run::

    python trajwatch/bench/hashes.py --tree /tmp/base --out base.json \
        fixtures/recorded ../shared/corpus/trail/traces/gaia ...
    python trajwatch/bench/hashes.py --tree . --compare base.json

With ``--compare`` the folders come from the saved file; exit status 1 names every
table that differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

WALL_CLOCK = {
    "dead_letters": {"received_at"},
    "deliveries": {"created", "updated", "next_attempt_at"},
    "webhook_endpoints": {"updated"},
}
"""Columns that hold the time of the run, not a function of the input."""
HASH_SEED = "0"
"""Every replay runs with this ``PYTHONHASHSEED``: a session's stored state keeps some
sets of strings (``intent_drift``'s bounded word sets), whose iteration order - and so
which words a full set keeps, and the pickle's bytes - follows the string hash seed."""


def canonical(value: Any) -> Any:
    """A picklable object as plain, order-independent, comparable data."""
    if isinstance(value, dict):
        return sorted((repr(canonical(k)), canonical(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return sorted(repr(canonical(v)) for v in value)
    if isinstance(value, (list, tuple)) or type(value).__name__ == "deque":
        return [canonical(v) for v in value]
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return value
    fields: dict[str, Any] = {}
    for klass in type(value).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if hasattr(value, slot):
                fields[slot] = getattr(value, slot)
    fields.update(getattr(value, "__dict__", {}))
    if not fields:
        return repr(value)
    return [type(value).__qualname__, canonical(fields)]


def decoded_state(data: bytes) -> Any:
    """A session's stored state as one dict whatever its layout
    (:mod:`ingest.pipeline.session_state`): version 2 keeps the analysis checkpoint as compressed
    bytes of its own and says which steps it reflects (``upto``); version 1 held the
    analysis inline at every commit. The layout's own keys are left out, so a state that
    reflects the same steps decodes the same in either."""
    payload = pickle.loads(zlib.decompress(data))
    if not isinstance(payload, dict):
        return payload
    payload = {k: v for k, v in payload.items() if k not in ("v", "upto")}
    analysis = payload.pop("analysis", None)
    if isinstance(analysis, bytes):
        payload.update(pickle.loads(zlib.decompress(analysis)))
    return payload


def table_hashes(db: Path) -> dict[str, Any]:
    """``{table: {"rows": n, "sha256": ...}}`` for every table of the SQLite file ``db``."""
    out: dict[str, Any] = {}
    con = sqlite3.connect(db)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                " ORDER BY name"
            )
        ]
        for table in tables:
            columns = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            kept = [c for c in columns if c not in WALL_CLOCK.get(table, set())]
            rows = [
                json.dumps(
                    [v.hex() if isinstance(v, bytes) else v for v in row],
                    ensure_ascii=True,
                )
                for row in con.execute(f"SELECT {', '.join(kept)} FROM {table}")
            ]
            rows.sort()
            digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()
            out[table] = {"rows": len(rows), "sha256": digest}
            if table == "sessions":
                decoded = []
                for sid, state in con.execute("SELECT session_id, state FROM sessions"):
                    content = canonical(decoded_state(state)) if state else None
                    decoded.append(json.dumps([sid, content], default=repr))
                decoded.sort()
                out["sessions.state~decoded"] = {
                    "rows": len(decoded),
                    "sha256": hashlib.sha256("\n".join(decoded).encode()).hexdigest(),
                }
    finally:
        con.close()
    return out


def replay(tree: Path, folder: Path, db: Path) -> float:
    """Replay ``folder`` with the code of ``tree`` into ``db``; seconds of CPU it took."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": HASH_SEED}
    env.pop("TRAJWATCH_DB_URL", None)
    before = os.times()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "trajwatch.cli.main",
            "replay",
            "--json",
            "--db",
            f"sqlite:///{db}",
            str(folder),
        ],
        cwd=tree,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--tree", type=Path, required=True, help="the source tree to run")
    parser.add_argument("--out", type=Path, help="write the hashes here (JSON)")
    parser.add_argument("--compare", type=Path, help="hashes saved by an earlier --out")
    args = parser.parse_args()
    expected: dict[str, Any] = json.loads(args.compare.read_text()) if args.compare else {}
    folders = args.folders or [Path(f) for f in expected]
    if not folders:
        parser.error("give folders, or --compare with a saved file")
    tree = args.tree.resolve()
    result: dict[str, Any] = {}
    differs: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, folder in enumerate(folders):
            db = Path(tmp) / f"{i}.db"
            start = time.perf_counter()
            cpu = replay(tree, folder.resolve(), db)
            hashes = table_hashes(db)
            result[str(folder)] = hashes
            steps = hashes.get("steps", {}).get("rows", 0)
            alerts = hashes.get("alerts", {}).get("rows", 0)
            line = (
                f"{folder}: {steps} steps, {alerts} alerts, {cpu:.1f} s CPU "
                f"({time.perf_counter() - start:.1f} s wall)"
            )
            if expected:
                want = expected.get(str(folder), {})
                bad = sorted(t for t in set(want) | set(hashes) if want.get(t) != hashes.get(t))
                differs += [f"{folder}: {t}" for t in bad]
                line += "  identical" if not bad else f"  DIFFERS: {', '.join(bad)}"
            print(line, flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    if differs:
        print("differs:\n  " + "\n  ".join(differs))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
