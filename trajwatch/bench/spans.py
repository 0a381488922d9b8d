"""Realistic agent spans for the benchmarks, made by the real OpenTelemetry SDK and encoded
by its own OTLP encoder (``encode_spans``), so what is measured is what an exporter sends.

A trace is one agent run (one session, ``gen_ai.conversation.id``): a root ``invoke_agent``
span carrying the goal, then rounds of a ``chat`` model call, an ``execute_tool`` call with
about ``args_bytes`` of JSON arguments and its result, and the tool's HTTP ``GET`` child
(``url.full``): 1 + 3 × rounds spans (100 by default). Every ``loop_every``-th run falls,
half way through, into a retry loop — the same failing command again and again — so the
detectors have something to raise and span-to-alert latency can be measured. Spans are
in the order an SDK finishes them (children before parents, the root last), as a
``BatchSpanProcessor`` sends them; :func:`encode_batches` cuts a run into export requests.

Needs ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-common`` (the
``test`` or ``fixtures`` extra), imported when called.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ingest.sources.otlp_http import varint

__all__ = ["BASE_NS", "agent_traces", "encode_batches", "length_delimited"]

BATCH = 20
"""Spans per export request: an agent's ``BatchSpanProcessor`` sends what ended in the
last 5 s — a few to a few dozen spans for one agent."""
BASE_NS = 1_767_000_000_000_000_000
"""Event time of the first run's start (2025-12-29)."""


def agent_traces(
    traces: int,
    *,
    spans_per_trace: int = 100,
    args_bytes: int = 200,
    loop_every: int = 4,
    round_s: float = 1.0,
    prefix: str = "bench",
    first: int = 0,
) -> list[list[Any]]:
    """``traces`` runs, each a list of finished ``ReadableSpan`` in end order. A run's
    rounds are ``round_s`` of event time apart; run ``i`` starts ``i`` seconds after the
    first, so runs overlap as a fleet's do. Session ids are ``{prefix}-{first + i}``."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, Status, StatusCode

    rounds = max(1, (spans_per_trace - 1) // 3)
    step_ns = int(round_s * 1e9)
    out: list[list[Any]] = []
    for i in range(first, first + traces):
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("trajwatch.bench.run")
        session = f"{prefix}-{i}"
        looping = loop_every > 0 and i % loop_every == loop_every - 1
        t = BASE_NS + i * 1_000_000_000
        goal = f"Fix issue #{40 + i % 50}: the parser drops the last record of module m{i % 9}"
        root = tracer.start_span(
            "invoke_agent coder",
            start_time=t,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "coder",
                "gen_ai.conversation.id": session,
                "gen_ai.input.messages": json.dumps([{"role": "user", "content": goal}]),
            },
        )
        with trace.use_span(root, end_on_exit=False):
            for r in range(rounds):
                t += step_ns
                chat = tracer.start_span(
                    "chat m",
                    kind=SpanKind.CLIENT,
                    start_time=t,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "m",
                        "gen_ai.usage.input_tokens": 1000 + 300 * r,
                        "gen_ai.usage.output_tokens": 120,
                        "gen_ai.response.id": f"{session}-r{r}",
                        "gen_ai.conversation.id": session,
                    },
                )
                chat.end(end_time=t + step_ns // 2)
                loop = looping and r >= rounds // 2
                command, url, result = _call(i, 7 if loop else r)
                tool = tracer.start_span(
                    "execute_tool bash",
                    start_time=t + step_ns * 6 // 10,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "bash",
                        "gen_ai.tool.call.id": f"{session}-c{r}",
                        "gen_ai.tool.call.arguments": _arguments(command, r, args_bytes),
                        "gen_ai.tool.call.result": result,
                    },
                )
                with trace.use_span(tool, end_on_exit=False):
                    http = tracer.start_span(
                        "GET",
                        kind=SpanKind.CLIENT,
                        start_time=t + step_ns * 65 // 100,
                        attributes={
                            "http.request.method": "GET",
                            "url.full": url,
                            "server.address": "pypi.org",
                            "http.response.status_code": 200,
                        },
                    )
                    http.end(end_time=t + step_ns * 7 // 10)
                if loop:
                    tool.set_status(Status(StatusCode.ERROR, "exit 1: ModuleNotFoundError: m7"))
                tool.end(end_time=t + step_ns * 9 // 10)
        root.end(end_time=t + step_ns)
        provider.shutdown()
        out.append(list(exporter.get_finished_spans()))
    return out


def _call(run: int, r: int) -> tuple[str, str, str]:
    module = f"m{(run + r) % 9}"
    url = f"https://pypi.org/simple/pkg{r % 11}/"
    command = (
        f"pip download --no-deps -d /tmp/wheels {url} && "
        f"pytest tests/test_{module}.py -k case_{r} -x -q"
    )
    if r == 7:
        return command, url, "ModuleNotFoundError: No module named 'm7'\nexit status 1"
    return command, url, f"collected {12 + r} items\n" + "." * (12 + r) + f" {12 + r} passed"


def _arguments(command: str, r: int, size: int) -> str:
    """The tool call's JSON arguments, padded with a description to about ``size`` bytes."""
    args: dict[str, Any] = {"command": command, "cwd": "/work/repo", "timeout": 120}
    text = json.dumps(args)
    room = size - len(text) - len(', "description": ""')
    if room > 0:
        note = f"round {r}: run the focused test after fetching the wheel; "
        args["description"] = (note * (room // len(note) + 1))[:room]
    return json.dumps(args)


def encode_batches(spans: Sequence[Any], batch: int) -> list[bytes]:
    """``spans`` as OTLP ``ExportTraceServiceRequest`` bodies of ``batch`` spans each."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return [
        encode_spans(spans[i : i + batch]).SerializeToString() for i in range(0, len(spans), batch)
    ]


def length_delimited(bodies: Sequence[bytes]) -> bytes:
    """Bodies as an ``*.otlp.binpb`` recording: a varint length before each message."""
    return b"".join(varint(len(body)) + body for body in bodies)
