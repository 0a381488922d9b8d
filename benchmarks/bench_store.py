"""How fast the store takes steps: 50k synthetic steps per run, SQLite file and PostgreSQL.

Each run inserts the steps into an empty database in batches of ``--batch`` (one
``Store.unit()`` per batch, as the pipeline does) and reports rows/s; the median of
``--runs`` runs is printed with the machine it ran on. Then it stores the same steps again,
which must insert nothing (the idempotent path the pipeline takes on redelivery).

    .venv/bin/python benchmarks/bench_store.py            # both databases
    .venv/bin/python benchmarks/bench_store.py --no-postgres
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from models.records import Step, StepKind
from models.store import Store

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
T0 = 1_732_870_800_000_000_000


def synthetic_steps(n: int, per_session: int = 500) -> list[Step]:
    """``n`` realistic tool calls, ``per_session`` per session."""
    steps = []
    for i in range(n):
        session_id = f"sess_bench_{i // per_session:05d}"
        seq = i % per_session
        steps.append(
            Step(
                step_id=f"{session_id}:toolu_{seq:05d}",
                session_id=session_id,
                kind=StepKind.TOOL_CALL,
                ts=T0 + i * 1_000_000,
                seq=seq,
                agent="claude-code",
                tool="bash",
                action="bash(pytest -q tests/<path>)",
                call_id=f"toolu_{seq:05d}",
                arguments='{"command":"pytest -q tests/test_parser.py::test_roundtrip"}',
                result="F.....\n1 failed, 5 passed in 0.42s\n",
                status="error" if i % 7 == 0 else "ok",
                tokens_in=12_000 + i % 500,
                tokens_out=180,
                cost=0.0123,
                source="event",
                source_ref=f"{session_id}#{seq}",
                detail={"workspace": "/home/dev/widgets", "exit_code": 1},
            )
        )
    return steps


@contextmanager
def sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as directory:
        yield f"sqlite:///{Path(directory) / 'bench.db'}"


@contextmanager
def postgres_url() -> Iterator[str]:
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def run(new_url: Callable[[], AbstractContextManager[str]], steps: list[Step], batch: int) -> float:
    """rows/s for inserting ``steps`` into a fresh database."""
    with new_url() as url, Store.open(url) as store:
        start = time.perf_counter()
        for i in range(0, len(steps), batch):
            with store.unit() as unit:
                unit.add_steps(steps[i : i + batch])
        elapsed = time.perf_counter() - start
        assert store.count("steps") == len(steps)
        with store.unit() as unit:
            assert unit.add_steps(steps[:batch]) == 0
    return len(steps) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=5_000, help="steps per unit")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()

    print(
        f"machine: {platform.platform()} | {platform.processor() or platform.machine()} | "
        f"{os.cpu_count()} CPUs | Python {platform.python_version()}"
    )
    steps = synthetic_steps(args.steps)
    targets: dict[str, Callable[[], AbstractContextManager[str]]] = {
        "sqlite (file, WAL)": sqlite_url
    }
    if not args.no_postgres:
        targets["postgresql (psycopg 3)"] = postgres_url
    for name, new_url in targets.items():
        rates = [run(new_url, steps, args.batch) for _ in range(args.runs)]
        print(
            f"{name:24s} {args.steps} steps, batch {args.batch}: "
            f"median {statistics.median(rates):,.0f} rows/s "
            f"(runs: {', '.join(f'{r:,.0f}' for r in rates)})"
        )


if __name__ == "__main__":
    main()
