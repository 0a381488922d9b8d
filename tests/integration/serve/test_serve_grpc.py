"""``serve``'s OTLP/gRPC receiver with real parts: the OpenTelemetry SDK's own gRPC
exporters (``opentelemetry-exporter-otlp-proto-grpc``), a gRPC channel on loopback, and
the store. The same rules as OTLP/HTTP: what is stored equals a replay of the same spans,
gzip is read and a gzip bomb cut off at the cap, a wrong token is refused, a full queue
asks the exporter to retry and it does."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk.trace.export import SpanExportResult

from ingest.sources.otlp_grpc import GrpcReceiver
from models.errors import ConfigError
from models.store import Store
from tests.integration.serve.test_serve import (
    CONFIG,
    Running,
    interleaved,
    replayed_alert_ids,
    runs,
    stored_alert_ids,
)
from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.wait import wait_until
from trajwatch.config import detector_set, load_config
from trajwatch.service.serve import Service
from trajwatch.settings import Settings

__all__ = ["runs"]  # the fixture, imported from test_serve

TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
TOKEN = "s3cret-token-for-the-grpc-test"


class GrpcRunning(Running):
    """A :class:`Service` with both receivers, run in a thread."""

    def __init__(self, service: Service, port: int, grpc_port: int) -> None:
        super().__init__(service, port)
        self.target = f"127.0.0.1:{grpc_port}"
        self.channel = grpc.insecure_channel(self.target)

    def call(self, method: str, body: bytes, **kwargs: Any) -> bytes:
        """One raw unary call (bytes in, bytes out), as any OTLP/gRPC client makes it."""
        result: bytes = self.channel.unary_unary(method)(body, timeout=10, **kwargs)
        return result

    def count(self, code: str, signal: str = "traces") -> float:
        value = self.service.metrics.registry.get_sample_value(
            "trajwatch_requests_total", {"signal": signal, "code": code}
        )
        return value or 0.0

    def settled(self) -> bool:
        registry = self.service.metrics.registry
        return registry.get_sample_value("trajwatch_inbound_records") == 0 and (
            registry.get_sample_value("trajwatch_pending_steps") == 0
        )

    def stop(self) -> None:
        self.channel.close()
        super().stop()


@pytest.fixture
def grpc_service(tmp_path: Path) -> Iterator[Any]:
    started: list[GrpcRunning] = []

    def start(*, ingest: bool = True, **overrides: Any) -> GrpcRunning:
        port, grpc_port = free_port(), free_port()
        settings = Settings(
            db_url=f"sqlite:///{tmp_path / 'live.db'}",
            inbound_dir=str(tmp_path / "inbound"),
            idle_flush_ms=300,
            **overrides,
        )
        service = Service(
            settings,
            detector_set(load_config(CONFIG)),
            host="127.0.0.1",
            port=port,
            grpc_port=grpc_port,
        )
        running = GrpcRunning(service, port, grpc_port)
        started.append(running)
        if ingest:
            running.start()
        else:  # the gRPC receiver alone: nothing takes from the queue until ingest starts
            service.grpc.start()  # type: ignore[union-attr]
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()
        elif running.service.grpc is not None:  # started alone
            running.service.grpc.stop()
            running.service.ingest.stop()
            running.service.store.close()


def span_request(*spans: Span) -> bytes:
    scope = ScopeSpans(spans=list(spans))
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[scope])]
    ).SerializeToString()


def chat_span(trace: int, span: int) -> Span:
    return Span(
        trace_id=trace.to_bytes(16, "big"),
        span_id=span.to_bytes(8, "big"),
        name="chat gpt-4o",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_000_000_000,
    )


def test_sdk_grpc_exporter_into_serve_stores_the_replayed_alerts(
    runs: list[list[list[Any]]], grpc_service: Any, tmp_path: Path
) -> None:
    running = grpc_service()
    sdk = OTLPSpanExporter(
        endpoint=running.target, insecure=True, compression=grpc.Compression.Gzip
    )
    batches = interleaved(runs)
    for batch in batches:
        assert sdk.export(batch) == SpanExportResult.SUCCESS
    sdk.shutdown()
    wait_until(running.settled, 15, "the traces to go quiet and be stored")
    expected = replayed_alert_ids(runs, tmp_path)
    assert len(expected) >= 2, "the runs should raise alerts"
    assert stored_alert_ids(running.service.settings.db_url) == expected
    registry = running.service.metrics.registry
    spans = sum(len(b) for r in runs for b in r)
    assert registry.get_sample_value("trajwatch_spans_received_total") == spans
    assert running.count("OK") == len(batches)
    running.stop()


def test_grpc_edges_gzip_bomb_corrupt_partial_success_and_a_wrong_token(
    runs: list[list[list[Any]]], grpc_service: Any
) -> None:
    running = grpc_service(auth_token=TOKEN, max_body_bytes=64 << 10)
    auth = (("authorization", f"Bearer {TOKEN}"),)
    good = span_request(chat_span(1, 1))

    with pytest.raises(grpc.RpcError) as refused:
        running.call(TRACES, good)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.RpcError) as wrong:
        running.call(TRACES, good, metadata=(("authorization", "Bearer guessed"),))
    assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # the SDK's exporter with the wrong token: refused, not retried, nothing stored
    sdk = OTLPSpanExporter(
        endpoint=running.target, insecure=True, headers=(("authorization", "Bearer guessed"),)
    )
    assert sdk.export(runs[0][0]) == SpanExportResult.FAILURE
    sdk.shutdown()

    answer = ExportTraceServiceResponse.FromString(
        running.call(TRACES, good, metadata=auth, compression=grpc.Compression.Gzip)
    )
    assert not answer.HasField("partial_success")

    # 64 MiB of zeros in ~64 KiB: over the cap once inflated, cut off there, not inflated
    bomb = gzip.compress(b"\x00" * (64 << 20))
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as big:
        running.call(TRACES, bomb, metadata=auth)  # a client that gzipped it itself
    assert big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "once decompressed" in (big.value.details() or "")
    assert time.monotonic() - started < 2
    with pytest.raises(grpc.RpcError) as wire:  # gRPC's own limit on the wire
        running.call(TRACES, b"\x00" * (65 << 10), metadata=auth)
    assert wire.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(grpc.RpcError) as deflate:
        running.call(TRACES, good, metadata=auth, compression=grpc.Compression.Deflate)
    assert deflate.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as corrupt:
        running.call(TRACES, b"\xff\xff\xff\x0f not protobuf", metadata=auth)
    assert corrupt.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "corrupt protobuf" in (corrupt.value.details() or "")
    with pytest.raises(grpc.RpcError) as truncated:
        running.call(TRACES, gzip.compress(good)[:-12], metadata=auth)
    assert truncated.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    # one good span and one without a trace id: OK, partial success, the other stored
    broken = chat_span(2, 3)
    broken.trace_id = b""
    partial = ExportTraceServiceResponse.FromString(
        running.call(TRACES, span_request(chat_span(2, 2), broken), metadata=auth)
    )
    assert partial.partial_success.rejected_spans == 1
    assert partial.partial_success.error_message
    logs = ExportLogsServiceResponse.FromString(running.call(LOGS, b"", metadata=auth))
    assert not logs.HasField("partial_success")

    assert running.count("UNAUTHENTICATED") >= 3
    assert running.count("OK") == 2
    wait_until(running.settled, 10, "the requests to be stored")
    running.stop()
    with Store.open(running.service.settings.db_url) as store:
        letters = store.dead_letters()
    assert sorted(letter.location.split(" ")[0] for letter in letters) == [
        "/v1/traces",
        "/v1/traces",
    ]


def test_full_queue_answers_resource_exhausted_with_retry_info_and_the_sdk_retries(
    runs: list[list[list[Any]]], grpc_service: Any
) -> None:
    running = grpc_service(queue_size=1, ingest=False)
    batch = encode_spans(runs[0][0]).SerializeToString()
    first = running.channel.unary_unary(TRACES).future(batch, timeout=15)
    wait_until(running.service.inbox.full, 5, "the queue to fill")
    with pytest.raises(grpc.RpcError) as refused:
        running.call(TRACES, batch)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    trailers = dict(refused.value.trailing_metadata())
    status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
    assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    retry = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(retry)
    assert retry.retry_delay.seconds == 1
    assert error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]) == retry

    results: list[SpanExportResult] = []
    sdk = OTLPSpanExporter(endpoint=running.target, insecure=True, timeout=15)
    sending = threading.Thread(target=lambda: results.append(sdk.export(runs[1][0])))
    sending.start()
    wait_until(
        lambda: running.count("RESOURCE_EXHAUSTED") >= 2,
        5,
        "the exporter's first attempt to be refused",
    )
    running.service.ingest.start()  # the pipeline catches up; the SDK's retry gets in
    sending.join(timeout=15)
    assert results == [SpanExportResult.SUCCESS]
    assert ExportTraceServiceResponse.FromString(first.result(timeout=15)) is not None
    sdk.shutdown()


def test_sdk_grpc_log_exporter_carrying_session_events_becomes_steps(grpc_service: Any) -> None:
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    running = grpc_service()
    provider = LoggerProvider()
    exporter = OTLPLogExporter(
        endpoint=running.target, insecure=True, compression=grpc.Compression.Gzip
    )
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("agent-runtime")
    start = {
        "type": "session_start",
        "session_id": "grpc-logs-1",
        "seq": 0,
        "ts": 1_700_000_000.0,
        "goal": "fix the failing test",
        "agent": "coder",
    }
    call = {
        "type": "tool_call",
        "session_id": "grpc-logs-1",
        "seq": 1,
        "ts": 1_700_000_001.0,
        "call_id": "c1",
        "tool": "bash",
        "arguments": {"command": "pytest"},
    }
    for event in (start, call):
        logger.emit(body=json.dumps(event), timestamp=int(event["ts"] * 1e9))
    provider.shutdown()
    wait_until(running.settled, 10, "the session to be stored")
    assert running.count("OK", "logs") == 2
    running.stop()
    with Store.open(running.service.settings.db_url) as store:
        steps = store.steps("grpc-logs-1")
    assert [(s.kind.value, s.call_id) for s in steps] == [("start", None), ("tool_call", "c1")]


def test_a_taken_port_is_one_config_error(grpc_service: Any) -> None:
    running = grpc_service(ingest=False)
    taken = int(running.target.rsplit(":", 1)[1])
    again = GrpcReceiver(
        running.service.inbox, host="127.0.0.1", port=taken, max_body_bytes=1 << 20
    )
    with pytest.raises(ConfigError, match="--grpc-port off"):
        again.start()


def test_the_collector_config_in_docs_sends_what_serve_reads(
    runs: list[list[list[Any]]], grpc_service: Any
) -> None:
    """``docs/collector.yaml``: every pipeline names components it defines, its exporter
    points at serve's default gRPC port; its compression and authorization header, given
    to the SDK's gRPC exporter (no Collector binary is packaged to run here), get a batch
    into a serve that requires the token."""
    config = yaml.safe_load((ROOT / "docs" / "collector.yaml").read_text())
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            assert set(pipeline[kind]) <= set(config[kind])
    exporter = config["exporters"]["otlp_grpc/trajwatch"]
    assert exporter["endpoint"].endswith(f":{Settings().grpc_port}")
    header = exporter["headers"]["authorization"].replace("${env:TRAJWATCH_AUTH_TOKEN}", TOKEN)
    running = grpc_service(auth_token=TOKEN)
    sdk = OTLPSpanExporter(
        endpoint=running.target,
        insecure=exporter["tls"]["insecure"],
        compression={"gzip": grpc.Compression.Gzip}[exporter["compression"]],
        headers=(("authorization", header),),
    )
    assert sdk.export(runs[0][0]) == SpanExportResult.SUCCESS
    sdk.shutdown()
    assert running.count("OK") == 1
