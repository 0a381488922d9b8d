"""The run a session continues, read from each input that names it (docs/inputs.md, "The
run a session continues"): OTLP (a resumed run in a new trace and a new conversation, the
resume webhook's session id echoed on its resource), session events, Codex rollouts and
Claude Code transcripts. Over OTLP, replayed into SQLite and PostgreSQL, the resumer that
sends again what its predecessor sent is a duplicate naming that run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext

from detectors.duplicate_side_effect import DuplicateSideEffect
from detectors.registry import DetectorSet
from features.session.lineage import PREDECESSOR
from ingest.formats.claude_code import transcript_drafts
from ingest.formats.codex import rollout_drafts
from ingest.formats.otlp_json import decode_otlp_json, to_otlp_json
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.formats.session_events import decode_event
from ingest.semconv.spans import spans_to_drafts
from models.records import StepKind
from models.store import Store
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

T0 = 1_767_225_600_000_000_000
MAIL = '{"to": "customers@example.com", "template": "incident-4711"}'


def attrs(values: dict[str, str]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]


def run(
    trace: int,
    session: str,
    at: int,
    resource: dict[str, str],
    tools: list[str],
    links: tuple[dict[str, Any], ...] = (),
) -> list[str]:
    """Collector file-exporter lines of a run in its own trace: a send_email tool span per
    result in ``tools``, then the agent span above them (exported last, when it ends),
    with ``links``."""
    trace_id, base = f"{trace:032x}", T0 + at * 10**9
    root = f"{trace:08x}00000001"
    spans = [
        {
            "traceId": trace_id,
            "spanId": root,
            "name": "invoke_agent ops",
            "kind": 1,
            "startTimeUnixNano": str(base),
            "endTimeUnixNano": str(base + 60 * 10**9),
            "attributes": attrs(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "ops",
                    "gen_ai.conversation.id": session,
                }
            ),
            "links": list(links),
        }
    ]
    for i, result in enumerate(tools):
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{trace:08x}0000001{i}",
                "parentSpanId": root,
                "name": "execute_tool send_email",
                "kind": 1,
                "startTimeUnixNano": str(base + (i + 1) * 10**9),
                "endTimeUnixNano": str(base + (i + 1) * 10**9 + 500_000_000),
                "attributes": attrs(
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "send_email",
                        "gen_ai.tool.call.id": f"call_{trace}_{i}",
                        "gen_ai.conversation.id": session,
                        "gen_ai.tool.call.arguments": MAIL,
                        "gen_ai.tool.call.result": result,
                    }
                ),
            }
        )
    resource_attrs = attrs({"service.name": "ops-worker", **resource})
    return [
        json.dumps(
            {
                "resourceSpans": [
                    {
                        "resource": {"attributes": resource_attrs},
                        "scopeSpans": [{"scope": {"name": "t"}, "spans": batch}],
                    }
                ]
            }
        )
        for batch in (spans[1:], spans[:1])
    ]


@pytest.mark.parametrize("lateness_ms", [0, 3_600_000])
def test_a_resumed_run_in_a_new_trace_linked_by_its_resource_is_judged_against_the_dead_run(
    db_url: str, tmp_path: Path, lateness_ms: int
) -> None:
    # lateness 0: each agent span, exported after its tools, is placed late and the run is
    # judged again in event-time order when it settles; an hour: it is placed first
    link = {"trajwatch.predecessor.session_id": "conv-dead"}
    lines = [
        *run(1, "conv-dead", 0, {}, ["sent 120/120 emails"]),
        *run(2, "conv-resumed", 1800, link, ["sent 120/120 emails"]),
        # the same mail from a run that continues nothing: another incident's own mailing
        *run(3, "conv-other", 3600, {}, ["sent 120/120 emails"]),
    ]
    (tmp_path / "spans.otlp.jsonl").write_text("\n".join(lines) + "\n")
    replay(
        [tmp_path],
        settings=Settings(db_url=db_url, lateness_ms=lateness_ms),
        detectors=DetectorSet([DuplicateSideEffect()]),
    )
    with Store.open(db_url) as store:
        infos = {i.session_id: i.predecessor for i in store.sessions()}
        found = [a for a in store.alerts() if a.detector == "duplicate_side_effect"]
    assert infos == {"conv-dead": None, "conv-resumed": "conv-dead", "conv-other": None}
    (alert,) = found
    assert alert.session_id == "conv-resumed"
    assert "session conv-dead" in alert.reason and "sent 120/120 emails" in alert.reason
    assert [r.get("session_id") for r in alert.evidence] == [None, "conv-dead"]


def test_session_events_name_the_predecessor_on_the_start() -> None:
    start = {
        "type": "session_start",
        "session_id": "b",
        "seq": 0,
        "ts": 1_767_225_600,
        "goal": "Continue the work of session a",
        "predecessor_session_id": "a",
    }
    drafts, dead = decode_event(json.dumps(start), source="t", location="l", arrival=0)
    assert dead is None
    assert drafts[0].step.detail[PREDECESSOR] == "a"
    too_long = {**start, "predecessor_session_id": "x" * 513}
    assert decode_event(json.dumps(too_long), source="t", location="l", arrival=0)[1] is not None


def codex_start_detail(meta: dict[str, Any]) -> dict[str, Any]:
    lines = [
        {
            "timestamp": "2026-03-04T10:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": "0199aa00-0000-7000-8000-000000000002", "cwd": "/w", **meta},
        },
        {
            "timestamp": "2026-03-04T10:00:01.000Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Continue the migration"},
        },
    ]
    drafts, rejects = rollout_drafts([(str(i), x) for i, x in enumerate(lines)])
    assert rejects == []
    (start,) = [d.step for d in drafts if d.step.kind == StepKind.START]
    return dict(start.detail)


def test_a_forked_codex_rollout_names_the_thread_it_continues_but_a_sub_agent_does_not() -> None:
    forked = codex_start_detail({"forked_from_id": "0199aa00-0000-7000-8000-000000000001"})
    assert forked[PREDECESSOR] == "0199aa00-0000-7000-8000-000000000001"
    spawned = {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}
    sub = codex_start_detail({"forked_from_id": "p", "source": spawned})
    assert PREDECESSOR not in sub
    assert PREDECESSOR not in codex_start_detail({})


def test_a_claude_code_session_forked_from_another_names_it() -> None:
    line = {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "cwd": "/w",
        "sessionId": "new-session",
        "uuid": "00000000-0000-4000-8000-000000000001",
        "timestamp": "2026-02-12T16:00:00.000Z",
        "forkedFrom": {
            "sessionId": "old-session",
            "messageUuid": "00000000-0000-4000-8000-000000000009",
        },
        "message": {"role": "user", "content": "Pick up where the last run stopped"},
    }
    drafts, rejects = transcript_drafts([("1", line)])
    assert rejects == []
    (start,) = [d.step for d in drafts if d.step.kind == StepKind.START]
    assert start.detail[PREDECESSOR] == "old-session"
    plain = {k: v for k, v in line.items() if k != "forkedFrom"}
    (start,) = [d.step for d in transcript_drafts([("1", plain)])[0]]
    assert PREDECESSOR not in start.detail


def dead_span(**attributes: str) -> dict[str, Any]:
    """A link to the dead run's tool span (trace 1, as :func:`run` names its spans)."""
    return {"traceId": f"{1:032x}", "spanId": f"{1:08x}00000010", "attributes": attrs(attributes)}


@pytest.mark.parametrize(
    "link",
    [dead_span(), dead_span(**{"gen_ai.conversation.id": "conv-dead"})],
    ids=["trace-only", "naming-the-session"],
)
def test_a_resumed_run_whose_agent_span_links_to_the_dead_run_is_judged_against_it(
    db_url: str, tmp_path: Path, link: dict[str, Any]
) -> None:
    lines = [
        *run(1, "conv-dead", 0, {}, ["sent 120/120 emails"]),
        *run(2, "conv-resumed", 1800, {}, ["sent 120/120 emails"], links=(link,)),
    ]
    (tmp_path / "spans.otlp.jsonl").write_text("\n".join(lines) + "\n")
    replay(
        [tmp_path],
        settings=Settings(db_url=db_url),
        detectors=DetectorSet([DuplicateSideEffect()]),
    )
    with Store.open(db_url) as store:
        infos = {i.session_id: i.predecessor for i in store.sessions()}
        found = [a for a in store.alerts() if a.detector == "duplicate_side_effect"]
    assert infos == {"conv-dead": None, "conv-resumed": "conv-dead"}
    (alert,) = found
    assert alert.session_id == "conv-resumed" and "session conv-dead" in alert.reason


def test_a_link_to_a_trace_this_process_never_saw_names_no_predecessor(
    db_url: str, tmp_path: Path
) -> None:
    lines = run(2, "conv-resumed", 1800, {}, ["sent 120/120 emails"], links=(dead_span(),))
    (tmp_path / "spans.otlp.jsonl").write_text("\n".join(lines) + "\n")
    replay([tmp_path], settings=Settings(db_url=db_url))
    with Store.open(db_url) as store:
        assert [i.predecessor for i in store.sessions()] == [None]


def test_an_sdk_span_link_decodes_alike_from_protobuf_and_json() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "ops-worker"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dead = SpanContext(trace_id=1, span_id=16, is_remote=True)
    bad = SpanContext(trace_id=0, span_id=0, is_remote=True)  # invalid: left out
    span = provider.get_tracer("t").start_span(
        "invoke_agent ops",
        links=[Link(dead, {"session.id": "conv-dead"}), Link(bad)],
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "new"},
    )
    span.end()
    request = encode_spans(exporter.get_finished_spans())
    from_proto = decode_otlp_proto(request.SerializeToString(), source="t").spans
    from_json = decode_otlp_json(to_otlp_json(request), source="t").spans
    for (decoded,) in (from_proto, from_json):
        assert [(k.trace_id, k.span_id, dict(k.attributes)) for k in decoded.links] == [
            (f"{1:032x}", f"{16:016x}", {"session.id": "conv-dead"})
        ]
        (start,) = [d.step for d in spans_to_drafts([decoded]) if d.step.kind == StepKind.START]
        assert start.detail[PREDECESSOR] == "conv-dead"
