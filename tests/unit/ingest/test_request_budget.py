"""``ingest.sources.request_budget``: what a body will decode to, counted before it is, and
the in-flight budget shared by the event loop and the pipeline thread."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.sources.request_budget import InFlight, OverBudget, _walk, count_items


def traces(*per_scope: int) -> bytes:
    request = ExportTraceServiceRequest()
    for n in per_scope:
        scope = request.resource_spans.add().scope_spans.add()
        for i in range(n):
            scope.spans.add(name=f"s{i}")  # invalid ids: dead letters cost as much
    return request.SerializeToString()


def logs(*per_scope: int) -> bytes:
    request = ExportLogsServiceRequest()
    resource = request.resource_logs.add()
    for n in per_scope:
        scope = resource.scope_logs.add()
        for _ in range(n):
            scope.log_records.add().body.string_value = "x"
    return request.SerializeToString()


def test_protobuf_bodies_count_their_spans_and_log_records_valid_or_damaged() -> None:
    body = traces(3, 0, 5)
    assert count_items("traces/proto", body, 100) == 8
    assert _walk(memoryview(body), 100) == 8  # the wire walk agrees with upb
    assert count_items("logs/proto", logs(2, 7), 100) == 9
    damaged = body + b"\x0a\xff"  # a length past the end: upb refuses the whole
    assert count_items("traces/proto", damaged, 100) == 8
    assert count_items("traces/proto", traces(500) + b"\x0a\xff", 10) == 11, "stops past it"


def test_json_bodies_count_their_containers() -> None:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{}, {"attributes": []}]}]}]}
    assert count_items("traces/json", json.dumps(doc).encode(), 100) == 9  # 5 { and 4 [


def test_the_in_flight_budget_takes_all_or_nothing_and_gives_back_once() -> None:
    budget = InFlight(max_bytes=100, max_items=10)
    first, second = budget.reserve(), budget.reserve()
    first.add(bytes=60, items=4)
    with pytest.raises(OverBudget):
        second.add(bytes=50)
    second.add(bytes=40, items=6)
    with pytest.raises(OverBudget):
        second.add(items=1)
    assert (budget.bytes, budget.items) == (100, 10)
    first.release()
    first.release()
    assert (budget.bytes, budget.items) == (40, 6)
    second.release()
    assert (budget.bytes, budget.items) == (0, 0)
