"""Throughput of decode → normalise → store for OTLP protobuf, beside the raw parse.

Builds realistic agent batches with the real OpenTelemetry SDK and OTLP encoder
(:mod:`trajwatch.bench.spans`: model calls, tool calls with ~200-byte arguments, HTTP
children, 100 spans a run; 200 spans a batch), then
times, each as the median of ``--repeat`` runs over the same bytes:

- ``FromString``: upb parsing the batches and nothing else (the floor);
- ``decode``: our decoder to SpanRecords (validation, attribute conversion);
- ``decode+normalise``: plus the span → step mapping (redaction, canonical
  actions, egress extraction);
- ``pipeline (sqlite)``: plus ordering, sequencing, dedup and the store write
  into a fresh SQLite file (what ``trajwatch replay`` does per span).

Run: ``.venv/bin/python benchmarks/bench_decode.py [--spans 20000] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.pipeline.engine import Pipeline
from ingest.semconv.spans import spans_to_drafts
from models.store import Store
from trajwatch.bench.spans import agent_traces, encode_batches
from trajwatch.settings import Settings

BATCH = 200


def make_batches(total_spans: int) -> list[bytes]:
    """``trajwatch bench``'s agent runs (100 spans each), ``BATCH`` spans a request."""
    spans = [s for run in agent_traces(-(-total_spans // 100)) for s in run][:total_spans]
    return encode_batches(spans, BATCH)


def timed(fn: Callable[[], object], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    batches = make_batches(args.spans)
    spans = sum(
        len(ExportTraceServiceRequest.FromString(b).resource_spans[0].scope_spans[0].spans)
        for b in batches
    )

    def raw() -> None:
        for b in batches:
            ExportTraceServiceRequest.FromString(b)

    def decode() -> None:
        for b in batches:
            decode_otlp_proto(b, source="bench")

    def normalise() -> None:
        for b in batches:
            spans_to_drafts(decode_otlp_proto(b, source="bench").spans)

    def pipeline() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            store = Store.open(f"sqlite:///{tmp}/bench.db")
            p = Pipeline(store, settings=Settings(lateness_ms=10_000))
            for i, b in enumerate(batches):
                p.feed_otlp_proto(b, source="bench", location=str(i), partition="0")
                if i % 25 == 24:
                    p.commit()
            p.close()
            store.close()

    print(
        f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cpus, Python {platform.python_version()}"
    )
    print(
        f"input: {spans} spans in {len(batches)} OTLP protobuf batches "
        f"({sum(map(len, batches)) / 1e6:.1f} MB); median of {args.repeat} runs, one core"
    )
    base = None
    for name, fn in (
        ("FromString", raw),
        ("decode", decode),
        ("decode+normalise", normalise),
        ("pipeline (sqlite)", pipeline),
    ):
        seconds = timed(fn, args.repeat)
        rate = spans / seconds
        base = base or rate
        print(
            f"  {name:<20} {rate:>10,.0f} spans/s   {seconds * 1000:8.1f} ms   "
            f"ratio to FromString {rate / base:5.3f}"
        )


if __name__ == "__main__":
    main()
