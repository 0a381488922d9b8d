"""Throughput of decode → normalise → store for OTLP protobuf, beside the raw parse.

Builds realistic agent batches with the real OpenTelemetry SDK and OTLP encoder
(model calls, tool calls with arguments, HTTP children; 200 spans a batch), then
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
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind

from ingest.otlp_proto import decode_otlp_proto
from ingest.pipeline import Pipeline
from ingest.semconv import spans_to_drafts
from models.store import Store
from trajwatch.settings import Settings

BATCH = 200


def make_batches(total_spans: int) -> list[bytes]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    t = 1_767_000_000_000_000_000
    made = 0
    session = 0
    while made < total_spans:
        session += 1
        with tracer.start_as_current_span(
            "invoke_agent coder",
            start_time=t,
            end_on_exit=False,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": f"s{session}",
                "gen_ai.input.messages": json.dumps([{"role": "user", "content": "Fix bug 42"}]),
            },
        ) as root:
            for i in range(30):
                t += 1_000_000_000
                chat = tracer.start_span(
                    "chat m",
                    kind=SpanKind.CLIENT,
                    start_time=t,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "m",
                        "gen_ai.usage.input_tokens": 1000 + 500 * i,
                        "gen_ai.usage.output_tokens": 120,
                        "gen_ai.response.id": f"s{session}-r{i}",
                        "gen_ai.conversation.id": f"s{session}",
                    },
                )
                chat.end(end_time=t + 500_000_000)
                tool = tracer.start_span(
                    "execute_tool bash",
                    start_time=t + 600_000_000,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "bash",
                        "gen_ai.tool.call.id": f"s{session}-c{i}",
                        "gen_ai.tool.call.arguments": json.dumps(
                            {
                                "command": f"curl -s https://pypi.org/simple/pkg{i}/ && "
                                f"pytest tests/test_mod{i % 7}.py -k case_{i}"
                            }
                        ),
                        "gen_ai.tool.call.result": "collected 12 items ... 12 passed" * 4,
                    },
                )
                with trace.use_span(tool, end_on_exit=False):
                    http = tracer.start_span(
                        "GET",
                        kind=SpanKind.CLIENT,
                        start_time=t + 650_000_000,
                        attributes={
                            "http.request.method": "GET",
                            "url.full": f"https://pypi.org/simple/pkg{i}/",
                            "server.address": "pypi.org",
                            "http.response.status_code": 200,
                        },
                    )
                    http.end(end_time=t + 700_000_000)
                tool.end(end_time=t + 900_000_000)
                made += 3
            root.end(end_time=t + 1_000_000_000)
            made += 1
    spans = list(exporter.get_finished_spans())[:total_spans]
    return [
        encode_spans(spans[i : i + BATCH]).SerializeToString() for i in range(0, len(spans), BATCH)
    ]


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
