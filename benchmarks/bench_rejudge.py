"""What event-time order costs: how often a session is judged again, and the CPU of it.

The recorded runs' spans (``fixtures/recorded/*.otlp.jsonl*``) are delivered to one
pipeline (SQLite, every detector of ``trajwatch.toml``) four ways, as the property test
delivers them (``tests/unit/ingest/test_order_properties.py``):

- ``in order``: sorted by end time in one partition (what an exporter sends at best);
- ``as recorded``: the file's export batches, a commit after each;
- ``window``: each span moved by less than half the lateness, cut in random batches
  over two partitions, a third re-delivered;
- ``any order``: shuffled over the whole run, random batches over three partitions, a
  third re-delivered.

For each: CPU seconds (``time.process_time``, median of ``--repeat``, the deliveries
alternated A B C D A B C D), sessions re-judged of all, steps re-judged, and the CPU per
re-judged step (the order's CPU above ``in order``'s, over the steps it re-judged). It
checks the settled steps and standing alert ids of every delivery equal ``in order``'s.

Run: ``.venv/bin/python benchmarks/bench_rejudge.py [--runs 20] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest.decoded import Decoded, SpanRecord  # noqa: E402
from ingest.formats.otlp_json import decode_otlp_json  # noqa: E402
from ingest.pipeline.engine import Pipeline  # noqa: E402
from models.store import Store  # noqa: E402
from trajwatch.bench.run import machine  # noqa: E402
from trajwatch.config import detector_set, load_config  # noqa: E402
from trajwatch.settings import Settings  # noqa: E402

LATENESS_MS = 10_000
Delivery = list[tuple[str, list[SpanRecord]]]


def batches_of(path: Path) -> list[list[SpanRecord]]:
    opener = lzma.open if path.suffix == ".xz" else gzip.open
    with opener(path, "rt") as lines:
        return [
            decode_otlp_json(line, source="bench", location=path.name).spans
            for line in lines
            if line.strip()
        ]


def cut(spans: list[SpanRecord], rng: random.Random) -> list[list[SpanRecord]]:
    out, i = [], 0
    while i < len(spans):
        n = rng.randint(1, 12)
        out.append(spans[i : i + n])
        i += n
    return out


def deliveries(runs: list[list[list[SpanRecord]]], seed: int) -> dict[str, Delivery]:
    rng = random.Random(seed)
    spans = [s for run in runs for batch in run for s in batch]
    window = LATENESS_MS * 1_000_000 // 2
    within = sorted(spans, key=lambda s: s.end_ns + rng.randrange(window))
    near = [(str(rng.randrange(2)), b) for b in cut(within, rng)]
    near += near[: len(near) // 3]
    anyhow = [(str(rng.randrange(3)), b) for b in cut(rng.sample(spans, len(spans)), rng)]
    anyhow += rng.sample(anyhow, len(anyhow) // 3)
    return {
        "in order": [("0", sorted(spans, key=lambda s: s.end_ns))],
        "as recorded": [(str(i), batch) for i, run in enumerate(runs) for batch in run],
        "window": near,
        "any order": anyhow,
    }


def deliver(delivery: Delivery, db: Path, detectors: object) -> dict[str, object]:
    store = Store.open(f"sqlite:///{db}")
    try:
        pipeline = Pipeline(store, settings=Settings(lateness_ms=LATENESS_MS), detectors=detectors)
        cpu = time.process_time()
        for partition, spans in delivery:
            pipeline.feed_decoded(Decoded(spans=list(spans)), partition=partition)
            pipeline.commit()
        pipeline.close()
        cpu = time.process_time() - cpu
        steps = sorted(
            (s.session_id, s.seq, s.step_id)
            for info in store.sessions()
            for s in store.steps(info.session_id)
        )
        alerts = sorted(a.alert_id for a in store.alerts())
        return {
            "cpu": cpu,
            "sessions": len(pipeline.stats.sessions),
            "rejudged": pipeline.stats.rejudged,
            "rejudged_steps": pipeline.stats.rejudged_steps,
            "settled": (steps, alerts),
        }
    finally:
        store.close()
        db.unlink()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="recorded runs (default 20)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args(argv)
    paths = sorted((ROOT / "fixtures/recorded").glob("*.otlp.jsonl*"))[: args.runs]
    runs = [batches_of(path) for path in paths]
    detectors = detector_set(load_config(ROOT / "trajwatch.toml"))
    ways = deliveries(runs, args.seed)
    results: dict[str, list[dict[str, object]]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory(prefix="bench-rejudge-") as tmp:
        for k in range(args.repeat):
            for name, delivery in ways.items():
                db = Path(tmp) / f"{k}-{name.replace(' ', '-')}.db"
                results[name].append(deliver(delivery, db, detectors))
    print(f"machine: {machine()}")
    spans = sum(len(b) for run in runs for b in run)
    print(
        f"{len(paths)} recorded runs, {spans:,} spans, lateness {LATENESS_MS:,} ms, "
        f"median of {args.repeat}, CPU seconds"
    )
    base = statistics.median(r["cpu"] for r in results["in order"])  # type: ignore[misc]
    reference = results["in order"][0]["settled"]
    print(
        f"{'delivery':<12} {'CPU s':>7} {'× in order':>10} {'re-judged':>12} "
        f"{'steps':>7} {'µs/step':>8}  settled = in order"
    )
    for name, rows in results.items():
        cpu = statistics.median(r["cpu"] for r in rows)  # type: ignore[misc]
        first = rows[0]
        steps = first["rejudged_steps"]
        per = (cpu - base) / steps * 1e6 if steps else 0.0  # type: ignore[operator]
        same = all(r["settled"] == reference for r in rows)
        print(
            f"{name:<12} {cpu:7.2f} {cpu / base:10.2f} "
            f"{first['rejudged']:>5}/{first['sessions']:<6} {steps:>7} {per:8.0f}  {same}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
