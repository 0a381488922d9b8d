"""The same spans, sent live by the OpenTelemetry SDK and replayed from a file cut into
other batches, settle to the same sessions and the same alerts (issue 27).

Live: every agent run has its own SDK (the fixture generator's ``TracerProvider``: real
spans, timestamps from a simulated clock) with the SDK's ``BatchSpanProcessor`` and its
OTLP/HTTP exporter posting into ``trajwatch serve``, a child process. The batch size is
small and the schedule delay short, so the processor's worker thread cuts the batches as
it wakes: children before their parents, each trace's root span last. Four runs are
built at once in threads (agents sending side by side), and a conversation of three
turns is traced one trace per turn (one SDK per turn, the same ``gen_ai.conversation.id``).

Replay: ``trajwatch replay`` (its API) of one OTLP/JSON file holding the same spans in
the order they ended, cut into batches of 1, 7 and 50 spans in turn, the batches then
moved by up to two minutes of event time (far beyond the 10 s lateness window), or
shuffled outright.

Each settles deterministically: serve at its drain (SIGTERM: the last commit judges every
unsettled session again), the replay at the end of its file. What is compared is what
the store holds after that: every session's step ids in seq order, and the standing
(not superseded) alert ids.

Batches shuffled outright, minutes out of order in the one partition a file is, make
``silence`` steps that serve, whose partitions are traces, does not: a session's later
spans were still to come. The settling re-judgement drops those its event-time order
contradicts (``ingest/pipeline/rejudge.py``): here all of them, as no run of this test
pauses for five minutes (a pause that long in a file of many sessions would keep its
silence: the partition's clock is another matter than order).
"""

from __future__ import annotations

import importlib
import json
import random
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from models.store import Store
from tests.integration.serve.test_serve import CONFIG, _generator, metric, settled, spawn
from tests.support.ports import free_port
from tests.support.wait import wait_until
from trajwatch.config import detector_set, load_config
from trajwatch.service.replay import ReplaySummary, replay
from trajwatch.settings import Settings

SEED = 11
AGENTS = (  # runs that raise alerts (a loop, a push without approval, egress) and one that does not
    "loop_retry_after_npm_install_failure",
    "decay_push_without_approval_explicit",
    "egress_upstream_fix_git_fetch",
    "healthy_plain_coding",
)
TURNS = (  # one conversation: a turn of plain work, then a turn that loops, then a push
    "healthy_plain_coding",
    "loop_retry_after_npm_install_failure",
    "decay_push_without_approval_explicit",
)
CONVERSATION = "conv-sdk-batching-three-turns"
NS = 1_000_000_000
T0 = 1_772_359_200 * NS  # 2026-03-01T10:00:00Z: the agents run side by side from then on
BETWEEN_AGENTS_NS = 13 * NS
BETWEEN_TURNS_NS = 40 * NS  # the user's next message, 40 s after the agent answered
FILE_BATCHES = (1, 7, 50)

pytestmark = pytest.mark.slow  # `trajwatch serve` in a child process

State = tuple[dict[str, list[tuple[int, str]]], list[str]]


class Exporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP exporter, noting the size and the result of each batch it sends."""

    def __init__(self, endpoint: str, sent: list[tuple[int, SpanExportResult]]) -> None:
        super().__init__(endpoint=endpoint, timeout=30)
        self._sent = sent

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = super().export(spans)
        self._sent.append((len(spans), result))
        return result


class Agents:
    """The runs, each built with a ``BatchSpanProcessor`` exporting to ``endpoint``."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.sent: list[tuple[int, SpanExportResult]] = []
        self.spans: list[list[ReadableSpan]] = []
        self._lock = threading.Lock()
        self._gen = _generator()
        self._scenarios = {name: (kind, build) for name, kind, build in self._gen.SCENARIOS}

    def run(
        self, scenario: str, index: int, *, session: str | None = None, start: int | None = None
    ) -> Any:
        def prepare(run: Any) -> None:
            processor = BatchSpanProcessor(
                Exporter(self.endpoint, self.sent),
                max_queue_size=10_000,  # never full: a dropped span would be a false failure
                max_export_batch_size=5,
                schedule_delay_millis=2,
            )
            run.otel.provider.add_span_processor(processor)
            if session is not None:
                run.session_id = session

        kind, build = self._scenarios[scenario]
        run_id = f"run-{index:03d}-sdk"
        # run.end() shuts its provider down: the processor exports what it still holds
        run, _ = self._gen.build_run(
            SEED, scenario, kind, build, index, run_id, start=start, prepare=prepare
        )
        with self._lock:
            self.spans.append(list(run.processor.all_spans))
        return run

    def agent(self, scenario: str, index: int) -> None:
        """An agent's run, starting ``index`` times :data:`BETWEEN_AGENTS_NS` after T0."""
        self.run(scenario, index, start=T0 + index * BETWEEN_AGENTS_NS)

    def conversation(self) -> None:
        """The turns one after another, each its own trace, the next starting after the
        last ended."""
        start = T0 + len(AGENTS) * BETWEEN_AGENTS_NS
        for turn, scenario in enumerate(TURNS):
            run = self.run(scenario, 10 + turn, session=CONVERSATION, start=start)
            start = run.now + BETWEEN_TURNS_NS


def cut(spans: list[ReadableSpan]) -> list[list[ReadableSpan]]:
    """``spans`` in the order they ended, cut into batches of 1, 7 and 50 spans in turn."""
    spans = sorted(spans, key=lambda span: span.end_time or 0)
    batches: list[list[ReadableSpan]] = []
    i = 0
    while i < len(spans):
        size = FILE_BATCHES[len(batches) % len(FILE_BATCHES)]
        batches.append(spans[i : i + size])
        i += size
    return batches


def shuffled_within(
    batches: list[list[ReadableSpan]], window_ns: int, rng: random.Random
) -> list[list[ReadableSpan]]:
    """``batches`` reordered, each moved by less than ``window_ns`` of event time (sorted
    by its first span's end plus a random delay below the window)."""
    return sorted(batches, key=lambda b: (b[0].end_time or 0) + rng.randrange(window_ns))


def write_otlp_json(path: Path, batches: list[list[ReadableSpan]]) -> Path:
    """``batches`` as OTLP/JSON lines, one ``ExportTraceServiceRequest`` a line, as the
    Collector's file exporter writes them."""
    _generator()
    request_to_otlp_json = importlib.import_module("generate.writers").request_to_otlp_json
    with path.open("w") as out:
        for batch in batches:
            out.write(json.dumps(request_to_otlp_json(encode_spans(batch))) + "\n")
    return path


def store_state(url: str) -> State:
    """Every session's (seq, step id) in seq order, and the standing alert ids."""
    with Store.open(url) as store:
        sessions = [info.session_id for info in store.sessions()]
        steps = {s: [(step.seq, step.step_id) for step in store.steps(s)] for s in sessions}
        alerts = sorted(a.alert_id for a in store.alerts(sessions)) if sessions else []
    return steps, alerts


def replayed(spans_file: Path, tmp: Path) -> tuple[State, ReplaySummary]:
    """``trajwatch replay`` (its API, in this process) of ``spans_file`` into a new store."""
    url = f"sqlite:///{tmp / (spans_file.stem + '.db')}"
    summary = replay(
        [spans_file], settings=Settings(db_url=url), detectors=detector_set(load_config(CONFIG))
    )
    return store_state(url), summary


@dataclass(frozen=True)
class Live:
    """What the SDK sent into serve, and what serve's store held once it drained."""

    spans: list[ReadableSpan]
    """Every span, run after run, each run's in the order they ended."""
    batches: list[int]
    """The size of each batch the exporters posted."""
    settled: State


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Live:
    tmp = tmp_path_factory.mktemp("live")
    url = f"sqlite:///{tmp / 'live.db'}"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = spawn(tmp, url, port, idle_ms=300)
    try:
        wait_until(lambda: requests.get(f"{base}/healthz", timeout=1).ok, 30, "serve to start")
        agents = Agents(f"{base}/v1/traces")
        with ThreadPoolExecutor(max_workers=len(AGENTS) + 1) as pool:
            jobs = [pool.submit(agents.agent, s, i) for i, s in enumerate(AGENTS)]
            jobs.append(pool.submit(agents.conversation))
            for job in jobs:
                job.result()
        spans = [span for run in agents.spans for span in run]
        assert {result for _, result in agents.sent} == {SpanExportResult.SUCCESS}
        assert sum(n for n, _ in agents.sent) == len(spans)
        wait_until(lambda: settled(base), 30, "serve to store every span")
        assert metric(base, "trajwatch_spans_received_total") == len(spans)
        serve.send_signal(signal.SIGTERM)  # the drain settles every live session
        assert serve.wait(timeout=30) == 0, (tmp / "serve.log").read_text()
    finally:
        serve.kill()
        serve.wait()
    return Live(spans, [n for n, _ in agents.sent], store_state(url))


def test_sdk_batches_live_and_a_rebatched_file_settle_to_the_same_steps_and_alerts(
    live: Live, tmp_path: Path
) -> None:
    """The file's batches moved by up to two minutes of event time: far beyond the
    lateness window, short of the first silence (five minutes)."""
    batches = shuffled_within(cut(live.spans), 120 * NS, random.Random(SEED))
    assert sorted(live.batches) != sorted(map(len, batches)), "the file cuts other batches"
    (steps, alerts), summary = replayed(
        write_otlp_json(tmp_path / "rebatched.otlp.jsonl", batches), tmp_path
    )
    assert CONVERSATION in steps and len(steps) == len(AGENTS) + 1
    assert len(alerts) >= 3, "the runs should raise alerts"
    assert steps == live.settled[0]
    assert alerts == live.settled[1]
    # not a delivery in order: without the re-judgement, the steps would stand where
    # they arrived
    assert summary.rejudged >= 1


def without_silences(steps: dict[str, list[tuple[int, str]]]) -> dict[str, list[str]]:
    return {s: [i for _, i in placed if "/silence/" not in i] for s, placed in steps.items()}


@pytest.fixture(scope="module")
def fully_shuffled(
    live: Live, tmp_path_factory: pytest.TempPathFactory
) -> tuple[State, ReplaySummary]:
    """The same spans cut into batches of 1, 7 and 50, the batches in any order at all."""
    tmp = tmp_path_factory.mktemp("shuffled")
    batches = cut(live.spans)
    random.Random(SEED).shuffle(batches)
    return replayed(write_otlp_json(tmp / "shuffled.otlp.jsonl", batches), tmp)


def test_a_fully_shuffled_file_settles_to_the_live_alerts_and_steps_but_silences(
    live: Live, fully_shuffled: tuple[State, ReplaySummary]
) -> None:
    (steps, alerts), summary = fully_shuffled
    assert alerts == live.settled[1]
    assert without_silences(steps) == without_silences(live.settled[0])
    assert summary.rejudged >= len(steps)  # every session had steps behind it


def test_a_fully_shuffled_file_settles_to_the_live_steps_silences_included(
    live: Live, fully_shuffled: tuple[State, ReplaySummary]
) -> None:
    (steps, _), _ = fully_shuffled
    assert steps == live.settled[0]
