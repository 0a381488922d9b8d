"""``serve``'s HTTP edge attacked on loopback, each case failing on the receiver as it was:
a gzip body of two members (only the first was stored), what a body decodes to
(390,000 tiny spans a request took ``serve`` to 1.1 GB), headers without bound (2,000,000
of them: 97 -> 344 MB before the 401) and connections that never finish a request (they
stayed open for ever)."""

from __future__ import annotations

import gzip
import os
import socket
import threading
import time
import zlib
from typing import Any

import pytest
import requests

from ingest.sources.otlp_http import varint
from tests.integration.serve.test_serve import metric, service, settled
from tests.support.wait import wait_until
from trajwatch.service.http_protocol import LINGER_S

__all__ = ["service"]  # the fixture, imported from test_serve

PROTO = {"Content-Type": "application/x-protobuf"}


def spans_request(count: int, trace: int = 1, *, damaged: bool = False) -> bytes:
    """An ``ExportTraceServiceRequest`` of ``count`` tiny valid spans of one trace, built
    on the wire (the SDK would take seconds for 390,000); ``damaged``: a byte upb refuses
    at its end (the salvage path reads the spans before it)."""
    trace_id = trace.to_bytes(16, "big")
    spans = []
    for i in range(count):
        span = b"\x0a\x10" + trace_id + b"\x12\x08" + (i + 1).to_bytes(8, "big") + b"\x2a\x01x"
        spans.append(b"\x12" + varint(len(span)) + span)
    scope = b"".join(spans)
    resource = b"\x12" + varint(len(scope)) + scope
    body = b"\x0a" + varint(len(resource)) + resource
    return body + b"\x0a\xff" if damaged else body


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def test_a_gzip_body_of_two_members_is_read_whole_and_trailing_bytes_are_refused(
    service: Any,
) -> None:
    running = service()
    url = f"{running.base}/v1/traces"
    gz = {**PROTO, "Content-Encoding": "gzip"}
    first, second = spans_request(3, trace=1), spans_request(4, trace=2)
    both = requests.post(url, data=gzip.compress(first) + gzip.compress(second), headers=gz)
    assert both.status_code == 200
    wait_until(lambda: settled(running.base), 10, "the spans to be stored")
    assert metric(running.base, "trajwatch_spans_received_total") == 7, "both requests"
    garbage = requests.post(url, data=gzip.compress(first) + b"trailing", headers=gz)
    assert garbage.status_code == 400
    deflated = requests.post(
        url, data=zlib.compress(first) + b"x", headers={**PROTO, "Content-Encoding": "deflate"}
    )
    assert deflated.status_code == 400 and b"after the end" in deflated.content
    truncated = requests.post(url, data=gzip.compress(first)[:-4], headers=gz)
    assert truncated.status_code == 400
    assert metric(running.base, "trajwatch_spans_received_total") == 7
    running.stop()


def test_a_request_carrying_more_than_the_item_cap_is_refused_before_decoding(
    service: Any,
) -> None:
    running = service(max_request_items=1_000)
    url = f"{running.base}/v1/traces"
    assert requests.post(url, data=spans_request(1_000), headers=PROTO).status_code == 200
    over = requests.post(url, data=spans_request(1_001), headers=PROTO)
    assert over.status_code == 413 and b"TRAJWATCH_MAX_REQUEST_ITEMS" in over.content
    damaged = requests.post(url, data=spans_request(5_000, damaged=True), headers=PROTO)
    assert damaged.status_code == 413, "counted on the wire when upb refuses it"
    json_spans = '{"resourceSpans": [{"scopeSpans": [{"spans": [' + ",".join(["{}"] * 1_001)
    objects = requests.post(
        url, data=json_spans + "]}]}]}", headers={"Content-Type": "application/json"}
    )
    assert objects.status_code == 413
    wait_until(lambda: settled(running.base), 10, "the spans to be stored")
    assert metric(running.base, "trajwatch_spans_received_total") == 1_000
    running.stop()


def test_three_huge_requests_at_once_cost_little_memory(service: Any) -> None:
    """The attack as found: three concurrent requests of 390,000 spans each, under the
    16 MiB body cap (33 bytes a span here, 40 then)."""
    running = service()
    body = spans_request(390_000)
    assert len(body) < 16 << 20
    before = rss_mb()
    answers: list[int] = []

    def send() -> None:
        answers.append(
            requests.post(
                f"{running.base}/v1/traces", data=body, headers=PROTO, timeout=60
            ).status_code
        )

    senders = [threading.Thread(target=send) for _ in range(3)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    assert answers == [413, 413, 413]
    assert rss_mb() - before < 300, "three bodies and their counts, not 1.2M decoded spans"
    running.stop()


def test_the_in_flight_budget_answers_503_with_retry_after(service: Any) -> None:
    # the pipeline thread is not started: what is accepted stays in flight
    running = service(ingest=False, max_request_items=1_500, max_inflight_items=2_000)
    url = f"{running.base}/v1/traces"
    first: list[requests.Response] = []
    waiting = threading.Thread(
        target=lambda: first.append(requests.post(url, data=spans_request(1_200), headers=PROTO))
    )
    waiting.start()
    wait_until(
        lambda: metric(running.base, "trajwatch_inflight_items") == 1_200, 5, "the first request"
    )
    refused = requests.post(url, data=spans_request(1_200, trace=2), headers=PROTO, timeout=5)
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
    running.service.ingest.start()
    waiting.join(timeout=15)
    assert first[0].status_code == 200
    wait_until(lambda: metric(running.base, "trajwatch_inflight_items") == 0, 10, "the feed")
    again = requests.post(url, data=spans_request(1_200, trace=2), headers=PROTO, timeout=10)
    assert again.status_code == 200


def raw(port: int, data: bytes, *, timeout: float = 5.0) -> bytes:
    """Send ``data`` on a fresh connection; everything the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
        return received


def test_header_count_and_size_are_bounded(service: Any) -> None:
    running = service(auth_token="edge-token-0123456789abcdef")
    port = int(running.base.rsplit(":", 1)[1])
    many = b"".join(b"x-h%d: v\r\n" % i for i in range(10_000))
    answer = raw(port, b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:100]
    huge = b"x-big: " + b"v" * (100 << 10) + b"\r\n"
    answer = raw(port, b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n" + huge + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:100]
    long_url = b"GET /healthz?" + b"q" * (100 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    assert raw(port, long_url).startswith(b"HTTP/1.1 431")
    # an ordinary request is answered as before
    assert requests.get(f"{running.base}/healthz", timeout=5).status_code == 200
    running.stop()


def test_a_refused_client_still_sending_gets_its_431_and_is_closed_after_the_linger(
    service: Any,
) -> None:
    running = service()
    port = int(running.base.rsplit(":", 1)[1])
    many = b"".join(b"x-h%d: v\r\n" % i for i in range(10_000))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n" + many)
        answer = b""
        while chunk := conn.recv(65536):  # the answer, then the server's FIN
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 431"), answer[:100]
        started = time.monotonic()
        with pytest.raises(OSError):  # what it goes on sending is dropped, then refused
            while time.monotonic() - started < 10:
                conn.sendall(b"x-more: v\r\n" * 100)
                time.sleep(0.05)
        assert time.monotonic() - started < LINGER_S + 2
    assert requests.get(f"{running.base}/healthz", timeout=5).status_code == 200
    running.stop()


@pytest.mark.parametrize("partial", [b"", b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n"])
def test_connections_that_never_finish_their_headers_are_closed(
    service: Any, partial: bytes
) -> None:
    running = service(http_header_timeout_ms=500)
    port = int(running.base.rsplit(":", 1)[1])
    slow = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(50)]
    started = time.monotonic()
    try:
        for conn in slow:
            conn.sendall(partial)
        for conn in slow:  # each is answered 408 (or just closed) and then closed
            received = b""
            while chunk := conn.recv(4096):
                received += chunk
            assert received == b"" or received.startswith(b"HTTP/1.1 408"), received[:100]
        assert time.monotonic() - started < 4
    finally:
        for conn in slow:
            conn.close()
    assert requests.get(f"{running.base}/healthz", timeout=5).status_code == 200
    running.stop()


def test_a_body_that_never_arrives_whole_is_timed_out(service: Any) -> None:
    running = service(http_body_timeout_ms=500)
    port = int(running.base.rsplit(":", 1)[1])
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 1000\r\n\r\n" + b"\x00" * 10
    )
    started = time.monotonic()
    answer = raw(port, head)
    assert time.monotonic() - started < 4
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    running.stop()


def test_tool_arguments_nested_deep_do_not_stop_the_pipeline(service: Any) -> None:
    """A tool span whose arguments nest 600 levels made the memo's ``thaw`` raise
    RecursionError out of the pipeline thread: ``serve`` stopped, and the span, in the
    write-ahead log, stopped every restart too."""
    running = service()
    arguments = '{"a": ' * 600 + '"curl https://x.io"' + "}" * 600
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "bash",
        "gen_ai.tool.call.arguments": arguments,
        "gen_ai.conversation.id": "deep",
    }
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "execute_tool bash",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    assert requests.post(f"{running.base}/v1/traces", json=doc, timeout=10).status_code == 200
    wait_until(lambda: settled(running.base), 10, "the span to be stored")
    assert running.service.ingest.failed is None
    assert requests.get(f"{running.base}/healthz", timeout=5).status_code == 200
    assert metric(running.base, "trajwatch_steps_total") >= 1
    running.stop()
