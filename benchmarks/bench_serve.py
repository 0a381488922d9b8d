"""Throughput and span-to-alert latency of ``trajwatch serve`` with the SDK's exporter.

Starts the service in this process (uvicorn on a free loopback port, a fresh SQLite
store, every detector as ``trajwatch.toml`` configures them), builds every fixture
scenario's run with the fixture generator (the real OpenTelemetry SDK; batches as
``BatchSpanProcessor`` makes them), and sends the runs' batches through ``--exporters``
``OTLPSpanExporter`` instances at once (gzip). Prints when every request was
acknowledged (durable), when every step was stored (traces ended after 500 ms of
quiet), and the mean of ``trajwatch_span_to_alert_seconds``.

Run: ``.venv/bin/python benchmarks/bench_serve.py [--exporters 4] [--db URL]``
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402
from opentelemetry.exporter.otlp.proto.http import Compression  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402

from trajwatch.config import detector_set, load_config  # noqa: E402
from trajwatch.serve import Service  # noqa: E402
from trajwatch.settings import Settings  # noqa: E402


def fixture_runs() -> list[list[list[Any]]]:
    """Each fixture scenario's run as its export batches of ReadableSpans."""
    spec = importlib.util.spec_from_file_location(
        "fixtures_generate", ROOT / "fixtures/generate.py"
    )
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gen
    spec.loader.exec_module(gen)
    runs = []
    for i, (name, kind, builder) in enumerate(gen.SCENARIOS):
        run, _ = gen.build_run(3, name, kind, builder, 0, f"run-{i:03d}-bench")
        runs.append(run.processor.batches)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exporters", type=int, default=4)
    ap.add_argument("--db", help="store URL (default: a fresh SQLite file)")
    args = ap.parse_args()
    runs = fixture_runs()
    spans = sum(len(b) for r in runs for b in r)
    requests_sent = sum(len(r) for r in runs)
    tmp = Path(tempfile.mkdtemp())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    settings = Settings(
        db_url=args.db or f"sqlite:///{tmp / 'bench.db'}",
        inbound_dir=str(tmp / "inbound"),
        idle_flush_ms=500,
    )
    service = Service(
        settings, detector_set(load_config(ROOT / "trajwatch.toml")), host="127.0.0.1", port=port
    )
    server = threading.Thread(target=service.run)
    server.start()
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if requests.get(f"{base}/healthz", timeout=1).ok:
                break
        except requests.ConnectionError:
            time.sleep(0.05)

    def send(chunk: list[list[list[Any]]]) -> None:
        """One agent process's exporter: its runs' batches in order, interleaved."""
        exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", compression=Compression.Gzip)
        for batch in itertools.chain(*itertools.zip_longest(*chunk)):
            if batch is not None:
                exporter.export(batch)

    start = time.monotonic()
    n = args.exporters
    senders = [threading.Thread(target=send, args=(runs[i::n],)) for i in range(n)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    acked = time.monotonic() - start
    while service.ingest.log.live_count() or service.ingest.pipeline.pending():
        time.sleep(0.05)
    stored = time.monotonic() - start
    stats = service.ingest.pipeline.stats
    latency = service.metrics.alert_latency.collect()[0].samples
    total = {s.name: s.value for s in latency}
    count = total.get("trajwatch_span_to_alert_seconds_count", 0)
    mean = total.get("trajwatch_span_to_alert_seconds_sum", 0) / count if count else 0
    service.shutdown()
    server.join()
    print(
        f"{requests_sent} requests, {spans} spans from {n} exporters: acknowledged in "
        f"{acked:.2f} s ({spans / acked:.0f} spans/s); all stored in {stored:.2f} s; "
        f"{stats.new_steps} steps, {stats.new_alerts} alerts, mean span-to-alert "
        f"{mean * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
