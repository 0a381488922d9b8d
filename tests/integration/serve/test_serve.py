"""``trajwatch serve`` with real parts: uvicorn on loopback, the OpenTelemetry SDK's own
OTLP/HTTP exporter, SQLite and PostgreSQL, and a process killed with SIGKILL.

The runs are the fixture generator's (the real SDK, batches as ``BatchSpanProcessor``
makes them: children before parents, the root span last). What the service stores must
be what ``ingest.replay.replay`` stores for the same spans: the same alert ids.
"""

from __future__ import annotations

import gzip
import importlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

import trajwatch.service.serve
from models.store import Store
from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.wait import wait_until
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import replay
from trajwatch.service.serve import CommitCadence, Service
from trajwatch.settings import Settings

CONFIG = ROOT / "trajwatch.toml"
SCENARIOS = (
    "loop_retry_after_npm_install_failure",
    "decay_push_without_approval_explicit",
    "egress_upstream_fix_git_fetch",
    "healthy_plain_coding",
)


def _generator() -> Any:
    """The package ``fixtures/generate/``, imported as the scripts beside it import it."""
    if str(ROOT / "fixtures") not in sys.path:
        sys.path.insert(0, str(ROOT / "fixtures"))
    return importlib.import_module("generate")


@pytest.fixture(scope="module")
def runs() -> list[list[list[Any]]]:
    """Each scenario's run as the export batches of its ReadableSpans."""
    gen = _generator()
    by_name = {name: (kind, builder) for name, kind, builder in gen.SCENARIOS}
    out = []
    for index, name in enumerate(SCENARIOS):
        kind, builder = by_name[name]
        run, _ = gen.build_run(11, name, kind, builder, 0, f"run-{index:03d}-serve")
        out.append(run.processor.batches)
    return out


def interleaved(runs: list[list[list[Any]]]) -> list[list[Any]]:
    """The batches as one service receives them from several agents at once."""
    return [b for group in itertools.zip_longest(*runs) for b in group if b is not None]


def replayed_alert_ids(runs: list[list[list[Any]]], tmp: Path) -> set[str]:
    """``trajwatch replay`` of the same spans, one recording per run."""
    paths = []
    for index, batches in enumerate(runs):
        path = tmp / f"run-{index}.otlp.binpb"
        messages = [encode_spans(batch).SerializeToString() for batch in batches]
        path.write_bytes(b"".join(_varint(len(m)) + m for m in messages))
        paths.append(path)
    url = f"sqlite:///{tmp / 'replayed.db'}"
    summary = replay(
        paths, settings=Settings(db_url=url), detectors=detector_set(load_config(CONFIG))
    )
    return {a.alert_id for a in summary.alerts}


def stored_alert_ids(url: str) -> set[str]:
    with Store.open(url) as store:
        sessions = [s.session_id for s in store.sessions()]
        return {a.alert_id for a in store.alerts(sessions)} if sessions else set()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def metric(base: str, name: str, token: str | None = None) -> float:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = requests.get(f"{base}/metrics", headers=headers, timeout=5)
    answer.raise_for_status()
    text = answer.text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def settled(base: str, token: str | None = None) -> bool:
    """Every accepted request is stored and its log records retired."""
    return metric(base, "trajwatch_inbound_records", token) == 0 and (
        metric(base, "trajwatch_pending_steps", token) == 0
    )


# -- in-process service (uvicorn in a thread) --------------------------------------------


class Running:
    def __init__(self, service: Service, port: int) -> None:
        self.service = service
        self.base = f"http://127.0.0.1:{port}"
        # daemon: a test that fails before stopping the service must not hang the run
        self.thread = threading.Thread(target=service.run, daemon=True)

    def start(self, *, ingest: bool = True) -> Running:
        if ingest:
            self.thread.start()
        else:  # the server alone: nothing takes from the queue until start_ingest()
            self.thread = threading.Thread(target=self.service.server.run)
            self.thread.start()
        wait_until(lambda: requests.get(f"{self.base}/healthz", timeout=1).ok, 10, "startup")
        return self

    def stop(self) -> None:
        self.service.shutdown()
        self.thread.join(timeout=20)
        assert not self.thread.is_alive()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Any]:
    started: list[Running] = []

    def start(db_url: str | None = None, *, ingest: bool = True, **overrides: Any) -> Running:
        port = free_port()
        settings = Settings(
            db_url=db_url or f"sqlite:///{tmp_path / 'live.db'}",
            inbound_dir=str(tmp_path / "inbound"),
            **{"idle_flush_ms": 300, **overrides},
        )
        running = Running(
            Service(settings, detector_set(load_config(CONFIG)), host="127.0.0.1", port=port),
            port,
        )
        started.append(running.start(ingest=ingest))
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()


def exporter(base: str, **kwargs: Any) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=f"{base}/v1/traces", **kwargs)


def test_sdk_exporter_into_serve_stores_the_replayed_alerts(
    runs: list[list[list[Any]]], service: Any, db_url: str, tmp_path: Path
) -> None:
    running = service(db_url)
    sdk = exporter(running.base, compression=Compression.Gzip)
    for batch in interleaved(runs):
        assert sdk.export(batch) == SpanExportResult.SUCCESS
    sdk.shutdown()
    wait_until(lambda: settled(running.base), 15, "the traces to go quiet and be stored")
    expected = replayed_alert_ids(runs, tmp_path)
    assert len(expected) >= 2, "the runs should raise alerts"
    assert stored_alert_ids(db_url) == expected
    spans = sum(len(b) for r in runs for b in r)
    assert metric(running.base, "trajwatch_spans_received_total") == spans
    assert metric(running.base, "trajwatch_alerts_total") == len(expected)
    assert metric(running.base, "trajwatch_span_to_alert_seconds_count") == len(expected)
    assert 0 < metric(running.base, "trajwatch_pipeline_busy_ratio") < 1
    running.stop()


def test_a_saturated_pipeline_batches_commits_and_stores_the_replayed_alerts(
    runs: list[list[list[Any]]],
    service: Any,
    db_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as if the pipeline were always saturated: it feeds requests as they come and commits
    # only when none came within the linger (or after commit_wait_ms)
    monkeypatch.setattr(trajwatch.service.serve, "BATCH_WHEN_BUSY", -1.0)
    running = service(db_url, commit_wait_ms=60_000)
    pipeline = running.service.ingest.pipeline
    commits = 0
    commit = pipeline.commit

    def counted(**kwargs: Any) -> Any:
        nonlocal commits
        commits += 1
        return commit(**kwargs)

    pipeline.commit = counted
    shares = [runs[k::3] for k in range(3)]  # three agents' exporters sending at once
    senders = [
        threading.Thread(
            target=lambda share=share: [
                exporter(running.base).export(batch) for batch in interleaved(share)
            ]
        )
        for share in shares
    ]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    wait_until(lambda: settled(running.base), 15, "the traces to go quiet and be stored")
    requests_sent = sum(len(r) for r in runs)
    assert commits < requests_sent, "requests that came together should share a commit"
    assert stored_alert_ids(db_url) == replayed_alert_ids(runs, tmp_path)
    running.stop()


def test_commit_cadence_commits_at_once_with_time_to_spare_and_batches_when_saturated() -> None:
    cadence = CommitCadence(wait_s=0.2, every=1_000, now=0.0)
    cadence.waited(0.0, 1.0)  # a second idle
    cadence.fed(1.0, 20, received=0.99)
    assert cadence.due(1.01, took=True), "with time to spare, each cycle commits"
    assert cadence.committed(1.01) == 0.99
    now = 1.01
    for _ in range(300):  # three seconds of cycles busy 99% of the time
        cadence.waited(now + 0.0099, now + 0.01)
        now += 0.01
    assert cadence.busy > 0.9
    assert cadence.timeout(()) == trajwatch.service.serve.TICK_S
    cadence.fed(now, 20, received=now - 0.002)
    assert not cadence.due(now, took=True), "saturated: feed the next request first"
    assert cadence.timeout(()) == trajwatch.service.serve.LINGER_S
    assert cadence.due(now, took=False), "no request came within the linger"
    assert not cadence.due(now + 0.19, took=True)
    assert cadence.due(now + 0.2, took=True), "held for commit_wait_ms"
    cadence.fed(now + 0.01, 980, received=now)
    assert cadence.due(now + 0.01, took=True), "commit_every records held"
    assert cadence.committed(now + 0.01) == now - 0.002
    assert not cadence.held
    cadence.waited(now + 0.01, now + 2.0)  # the load has gone
    assert cadence.busy < 0.9
    cadence.fed(now + 2.0, 20, received=now + 2.0)
    assert cadence.due(now + 2.0, took=True)


def test_protocol_errors_are_answered_per_the_otlp_spec(service: Any) -> None:
    running = service(max_body_bytes=64 << 10, auth_token="s3cret")
    url = f"{running.base}/v1/traces"
    auth = {"Authorization": "Bearer s3cret"}
    proto = {**auth, "Content-Type": "application/x-protobuf"}

    assert (
        requests.post(url, data=b"", headers={"Content-Type": "application/x-protobuf"}).status_code
        == 401
    )
    wrong = requests.post(url, data=b"", headers={**proto, "Authorization": "Bearer nope"})
    assert wrong.status_code == 401

    unknown = requests.post(url, data=b"x", headers={**auth, "Content-Type": "text/plain"})
    assert unknown.status_code == 415

    bad = requests.post(url, data=b"\xff\xff\xff\x0f not protobuf", headers=proto)
    assert bad.status_code == 400
    assert bad.headers["content-type"] == "application/x-protobuf"
    assert b"corrupt protobuf" in bad.content  # a google.rpc.Status with the reason

    big = requests.post(url, data=b"\x00" * (65 << 10), headers=proto)
    assert big.status_code == 413
    bomb = gzip.compress(b"\x00" * (64 << 20))  # 64 MiB of zeros in ~64 KiB
    assert len(bomb) < 64 << 10
    started = time.monotonic()
    answer = requests.post(url, data=bomb, headers={**proto, "Content-Encoding": "gzip"})
    assert answer.status_code == 413
    assert time.monotonic() - started < 2, "the bomb is cut off at the cap, not inflated"
    odd = requests.post(url, data=b"x", headers={**proto, "Content-Encoding": "br"})
    assert odd.status_code == 415

    # One good span and one with a malformed trace id: 200, partial success, JSON in JSON out.
    good = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
    }
    broken = {**good, "traceId": "not-hex", "spanId": "ef" * 8}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [good, broken]}]}]}
    partial = requests.post(url, json=doc, headers=auth)
    assert partial.status_code == 200
    assert partial.headers["content-type"] == "application/json"
    assert partial.json()["partialSuccess"]["rejectedSpans"] == "1"
    deflated = zlib.compress(json.dumps(doc).encode())
    again = requests.post(
        url,
        data=deflated,
        headers={**auth, "Content-Type": "application/json", "Content-Encoding": "deflate"},
    )
    assert again.status_code == 200
    whole = requests.post(url, data=ExportTraceServiceResponse().SerializeToString(), headers=proto)
    assert whole.status_code == 200
    wait_until(lambda: settled(running.base, "s3cret"), 10, "the requests to be stored")
    running.stop()
    with Store.open(running.service.settings.db_url) as store:
        letters = store.dead_letters()
    # The garbage batch, and the broken span once: its second delivery is the same letter.
    assert sorted(letter.location.split(" ")[0] for letter in letters) == [
        "/v1/traces",
        "/v1/traces",
    ]
    assert any("corrupt protobuf" in letter.reason for letter in letters)


def test_full_queue_answers_503_and_the_sdk_retries_after_it(
    runs: list[list[list[Any]]], service: Any
) -> None:
    running = service(queue_size=1, ingest=False)
    url = f"{running.base}/v1/traces"
    batch = encode_spans(runs[0][0]).SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    first: list[requests.Response] = []
    waiting = threading.Thread(
        target=lambda: first.append(requests.post(url, data=batch, headers=headers))
    )
    waiting.start()
    wait_until(lambda: running.service.inbox.full(), 5, "the queue to fill")
    refused = requests.post(url, data=batch, headers=headers)
    assert refused.status_code == 503
    assert refused.headers["Retry-After"] == "1"

    results: list[SpanExportResult] = []
    sdk = threading.Thread(target=lambda: results.append(exporter(running.base).export(runs[1][0])))
    sdk.start()
    wait_until(
        lambda: metric(running.base, 'trajwatch_requests_total{code="503"') >= 2,
        5,
        "the exporter's first attempt to be refused",
    )
    running.service.ingest.start()  # the pipeline catches up; the SDK's retry gets in
    sdk.join(timeout=15)
    waiting.join(timeout=15)
    assert results == [SpanExportResult.SUCCESS]
    assert first[0].status_code == 200


def test_sdk_log_exporter_carrying_session_events_becomes_steps(service: Any) -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    running = service()
    provider = LoggerProvider()
    provider.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{running.base}/v1/logs"))
    )
    logger = provider.get_logger("agent-runtime")
    events = [
        {
            "type": "session_start",
            "session_id": "logs-1",
            "seq": 0,
            "ts": 1_700_000_000.0,
            "goal": "fix the failing test",
            "agent": "coder",
        },
        {
            "type": "tool_call",
            "session_id": "logs-1",
            "seq": 1,
            "ts": 1_700_000_001.0,
            "call_id": "c1",
            "tool": "bash",
            "arguments": {"command": "pytest"},
        },
    ]
    for event in events:
        logger.emit(body=json.dumps(event), timestamp=int(event["ts"] * 1e9))
    provider.shutdown()
    # OTLP/JSON too, with a session event that breaks its schema (a dead letter: partial
    # success) and a plain application log line (no event of any runtime: skipped).
    doc = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "body": {
                                    "stringValue": json.dumps(
                                        {**events[1], "seq": 2, "call_id": "c2"}
                                    )
                                }
                            },
                            {
                                "body": {
                                    "stringValue": json.dumps(
                                        {"type": "tool_call", "session_id": "logs-1"}
                                    )
                                }
                            },
                            {"body": {"stringValue": "not an event"}},
                        ]
                    }
                ]
            }
        ]
    }
    answer = requests.post(f"{running.base}/v1/logs", json=doc)
    assert answer.status_code == 200
    assert answer.json()["partialSuccess"]["rejectedLogRecords"] == "1"
    wait_until(lambda: settled(running.base), 10, "the session to be stored")
    assert metric(running.base, "trajwatch_log_records_received_total") == 5
    running.stop()
    with Store.open(running.service.settings.db_url) as store:
        steps = store.steps("logs-1")
    assert [(s.kind.value, s.call_id) for s in steps] == [
        ("start", None),
        ("tool_call", "c1"),
        ("tool_call", "c2"),
    ]


# -- the process: SIGTERM and SIGKILL ---------------------------------------------------


def spawn(tmp: Path, url: str, port: int, idle_ms: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRAJWATCH_IDLE_FLUSH_MS": str(idle_ms),
        "TRAJWATCH_INBOUND_DIR": str(tmp / "inbound"),
    }
    with (tmp / "serve.log").open("ab") as log:  # the child keeps its own copy of the fd
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trajwatch.cli.main",
                "serve",
                "--db",
                url,
                "--port",
                str(port),
                "--grpc-port",
                "off",
                "--config",
                str(CONFIG),
            ],
            env=env,
            cwd=tmp,
            stderr=log,
        )


@pytest.mark.slow  # `trajwatch serve` in a child process, started twice
@pytest.mark.parametrize(
    ("dialect", "stop"),
    [
        pytest.param("sqlite", signal.SIGKILL, id="sqlite-sigkill"),
        pytest.param("sqlite", signal.SIGTERM, id="sqlite-sigterm"),
    ],
)
def test_stopped_mid_stream_then_restarted_loses_and_doubles_nothing(
    runs: list[list[list[Any]]], tmp_path: Path, db_url: str, stop: signal.Signals
) -> None:
    """SIGKILL: a crash. SIGTERM: a deploy; the process drains, exits 0, and the traces
    it still held resume from its log in the next process. (SQLite only: each case costs
    two process starts and the exporter's backoff; PostgreSQL is covered by the
    exporter test, and the log that makes this work is the same for both.)"""
    url = db_url
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    batches = interleaved(runs)
    half = len(batches) // 2
    # A long idle time: the first process never ends a trace; all it holds is in its log.
    first = spawn(tmp_path, url, port, idle_ms=600_000)
    try:
        wait_until(lambda: requests.get(f"{base}/healthz", timeout=1).ok, 30, "startup")
        sdk = exporter(base, timeout=30)
        for batch in batches[:half]:
            assert sdk.export(batch) == SpanExportResult.SUCCESS
        assert metric(base, "trajwatch_alerts_total") >= 1, "some alerts before the crash"
        # Killed while the next batch is on its way: before it is read, while it is
        # written, or after it is logged but before it is answered (then the exporter's
        # retry delivers it twice).
        results: list[SpanExportResult] = []
        inflight = threading.Thread(target=lambda: results.append(sdk.export(batches[half])))
        inflight.start()
        first.send_signal(stop)
        status = first.wait(timeout=20)
        if stop == signal.SIGTERM:
            assert status == 0, (tmp_path / "serve.log").read_text()
    finally:
        first.kill()
        first.wait()
    behind = sessions_behind_their_checkpoint(url)
    if stop == signal.SIGKILL:  # the restart must roll them forward from the stored steps
        assert behind, "the crash landed between checkpoints"
    else:
        assert behind == [], "a drain checkpoints every session"
    second = spawn(tmp_path, url, port, idle_ms=1_500)
    try:
        # The exporter finds the port closed and retries until the new process answers.
        inflight.join(timeout=40)
        assert results == [SpanExportResult.SUCCESS]
        for batch in batches[half + 1 :]:
            assert sdk.export(batch) == SpanExportResult.SUCCESS
        sdk.shutdown()
        wait_until(lambda: settled(base), 30, "the traces to go quiet and be stored")
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0, (tmp_path / "serve.log").read_text()
    finally:
        second.kill()
        second.wait()
    assert stored_alert_ids(url) == replayed_alert_ids(runs, tmp_path)


def sessions_behind_their_checkpoint(url: str) -> list[str]:
    """The stored sessions whose detector-state checkpoint is older than their last step."""
    from ingest.pipeline.session_state import load_state

    behind = []
    with Store.open(url) as store:
        for info in store.sessions():
            cursor = store.session_cursor(info.session_id)
            assert cursor is not None
            state = load_state(cursor.state) if cursor.state is not None else None
            if state is not None and state.upto is not None and state.upto < cursor.next_seq:
                behind.append(info.session_id)
    return behind


def test_inbound_log_keeps_what_was_acknowledged_and_cuts_a_torn_tail(tmp_path: Path) -> None:
    from ingest.sources.inbound_log import InboundLog

    # sealed frames: 16 bytes of segment header, 36 of frame header, nonce and tag each
    log = InboundLog(tmp_path, segment_bytes=150)
    seqs = log.append([("traces/proto", b"a" * 40), ("traces/json", b"{}")])
    later = log.append([("logs/json", b"b" * 40)])  # past 150 bytes: a second segment
    log.retire([seqs[0]])
    log.close()
    segments = sorted(tmp_path.glob("*.wal"))
    assert len(segments) == 2
    with segments[-1].open("ab") as torn:  # a crash in the middle of the next append
        torn.write(b"\x40\x00\x00\x00\x01\x02")
    again = InboundLog(tmp_path)
    assert [(r.seq, r.kind) for r in again.recovered] == [
        (seqs[1], "traces/json"),
        (later[0], "logs/json"),
    ]
    next_seqs = again.append([("traces/proto", b"c")])
    again.retire([seqs[1], later[0], *next_seqs])
    again.close()
    final = InboundLog(tmp_path)
    assert final.recovered == []
    assert next_seqs[0] > later[0]
    final.close()


def test_log_syncer_answers_in_order_after_a_sync_and_refuses_when_the_sync_fails(
    tmp_path: Path,
) -> None:
    """The pipeline writes and goes on; each group's answer waits for an fsync begun after
    its write (one fsync may cover several groups), across segment changes; a failed
    fsync answers False and stops the syncer's later answers being True."""
    from ingest.sources.inbound_log import InboundLog, LogSyncer

    events: list[str] = []

    class Watched(InboundLog):
        fail = False

        def sync(self) -> None:
            events.append("sync")
            if self.fail:
                raise OSError(5, "Input/output error")
            super().sync()

    log = Watched(tmp_path, segment_bytes=256)
    syncer = LogSyncer(log)
    written: list[int] = []
    for group in range(30):  # ~1.5 KB: several segments
        written += log.write([("traces/proto", bytes([group]) * 50)])
        syncer.after_sync(lambda durable, g=group: events.append(f"answer {g} {durable}"))
    syncer.close()
    answers = [e for e in events if e.startswith("answer")]
    assert answers == [f"answer {g} True" for g in range(30)]
    assert events[0] == "sync"  # no answer before a sync
    for k, event in enumerate(events):
        if event.startswith("answer"):
            assert "sync" in events[:k]
    log.close()
    again = Watched(tmp_path)
    assert [r.seq for r in again.recovered] == written  # every answered record is there
    again.fail = True
    failing = LogSyncer(again)
    again.write([("traces/proto", b"x")])
    results: list[bool] = []
    failing.after_sync(results.append)
    failing.close()
    assert results == [False]
    assert isinstance(failing.error, OSError)
    again.close()


def test_sessions_evicted_and_reopened_resume_their_detector_state(
    runs: list[list[list[Any]]], tmp_path: Path
) -> None:
    """With room for one session in memory, runs delivered interleaved reopen their
    sessions from the store (their saved state) at every turn, and raise a replay's alerts."""

    from ingest.pipeline.engine import Pipeline

    url = f"sqlite:///{tmp_path / 'evicting.db'}"
    detectors = detector_set(load_config(CONFIG))
    with Store.open(url) as store:
        pipeline = Pipeline(
            store,
            settings=Settings(db_url=url, max_sessions=1),
            detectors=detectors,
        )
        for index, group in enumerate(itertools.zip_longest(*runs)):
            for run, batch in enumerate(group):
                if batch is not None:
                    data = encode_spans(batch).SerializeToString()
                    pipeline.feed_otlp_proto(
                        data, source="test", location=f"{index}", partition=f"run-{run}"
                    )
            pipeline.commit()
        pipeline.close()
    assert stored_alert_ids(url) == replayed_alert_ids(runs, tmp_path)


def test_a_crash_between_checkpoints_rolls_the_sessions_forward(
    runs: list[list[list[Any]]], tmp_path: Path
) -> None:
    """The pipeline as ``serve`` drives it (a partition per run, a commit per round of
    requests) is dropped mid-stream, as a SIGKILL drops it, several commits after its
    sessions' last checkpoints: what the detectors learnt since is in no checkpoint. A
    new pipeline on the same store is fed every request again (what the write-ahead log
    holds: no run had ended). The steps stored are dropped as duplicates before any
    detector sees them, so the sessions' detector state comes from the checkpoint rolled
    forward through the stored steps — and must be what the first pipeline held: the same
    later alerts as a replay, the same state as the live sessions (the pre-execution
    check's probe of a session not in memory reads it the same way)."""
    from ingest.pipeline.engine import Pipeline
    from ingest.pipeline.session_state import load_state
    from trajwatch.bench.hashes import canonical

    url = f"sqlite:///{tmp_path / 'crashed.db'}"
    detectors = detector_set(load_config(CONFIG))
    settings = Settings(db_url=url)
    rounds = list(itertools.zip_longest(*runs))
    crash = len(rounds) // 4  # every run mid-stream, none checkpointed since its start

    def feed(pipeline: Pipeline, count: int) -> list[dict[str, int]]:
        """Feed the first ``count`` rounds, a commit each; each commit's next seqs."""
        seqs = []
        for index, group in enumerate(rounds[:count]):
            for run, batch in enumerate(group):
                if batch is not None:
                    pipeline.feed_otlp_proto(
                        encode_spans(batch).SerializeToString(),
                        source="test",
                        location=f"{index}",
                        partition=f"run-{run}",
                    )
            pipeline.commit()
            seqs.append({sid: s.next_seq for sid, s in pipeline._sessions.items()})
        return seqs

    def analysis(features: Any, detectors: list[Any]) -> Any:
        return canonical([features, *(d.state_dict() for d in detectors)])

    with Store.open(url) as store:
        first = Pipeline(store, settings=settings, detectors=detectors)
        seqs = feed(first, crash)
        behind = {}  # session -> its next seq at the crash, when its checkpoint is older
        for session_id, session in first._sessions.items():
            cursor = store.session_cursor(session_id)
            assert cursor is not None and cursor.state is not None
            state = load_state(cursor.state)
            assert state is not None and state.upto is not None
            assert cursor.next_seq == session.next_seq
            # checkpointed before the steps of at least the last two commits
            if state.upto < seqs[-3].get(session_id, 0) < seqs[-2][session_id] < session.next_seq:
                behind[session_id] = session.next_seq
        assert behind, "the crash must land several commits after a checkpoint"
        for session_id in behind:
            live = first._sessions[session_id]
            restored = Pipeline(store, settings=settings, detectors=detectors).probe(session_id)
            assert restored.next_seq == live.next_seq
            assert analysis(restored.features, restored.detectors) == analysis(
                live.features, live.detectors
            )
        del first  # the crash: what it held in memory is gone
        second = Pipeline(store, settings=settings, detectors=detectors)
        feed(second, len(rounds))
        second.close()
        later = [a for a in store.alerts(list(behind)) if a.onset_seq >= behind[a.session_id]]
    assert later, "alerts raised after the crash by sessions restored from a stale checkpoint"
    assert stored_alert_ids(url) == replayed_alert_ids(runs, tmp_path)
