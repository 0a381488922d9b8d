"""OTLP decoders against bytes made by the real OpenTelemetry SDK and its OTLP encoder."""

from __future__ import annotations

import json

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from ingest.formats.otlp_json import decode_otlp_json, to_otlp_json
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.semconv.spans import spans_to_drafts

T0 = 1_767_000_000_000_000_000


def sdk_spans() -> list:
    """An agent turn as an instrumented runtime emits it: agent, chat, tool, HTTP child."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "coder"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent-runtime", "1.0")
    with tracer.start_as_current_span(
        "invoke_agent coder",
        start_time=T0,
        end_on_exit=False,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "coder",
            "gen_ai.conversation.id": "sess-1",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Fix the failing test"}]}]
            ),
        },
    ) as root:
        chat = tracer.start_span(
            "chat gpt-5",
            kind=SpanKind.CLIENT,
            start_time=T0 + 1_000,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-5",
                "gen_ai.response.id": "resp-1",
                "gen_ai.usage.input_tokens": 1200,
                "gen_ai.usage.output_tokens": 80,
                "gen_ai.response.finish_reasons": ["tool_call"],
                "gen_ai.conversation.id": "sess-1",
            },
        )
        chat.end(end_time=T0 + 2_000)
        tool = tracer.start_span(
            "execute_tool bash",
            start_time=T0 + 3_000,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "bash",
                "gen_ai.tool.call.id": "call-1",
                "gen_ai.tool.call.arguments": json.dumps(
                    {"command": "curl -s https://pypi.org/simple/x"}
                ),
                "gen_ai.tool.call.result": "ok",
            },
        )
        from opentelemetry import trace

        with trace.use_span(tool, end_on_exit=False):
            http = tracer.start_span(
                "GET",
                kind=SpanKind.CLIENT,
                start_time=T0 + 3_500,
                attributes={
                    "http.request.method": "GET",
                    "url.full": "https://pypi.org/simple/x",
                    "server.address": "pypi.org",
                    "http.response.status_code": 200,
                    "http.response.body.size": 5120,
                },
            )
            http.end(end_time=T0 + 3_900)
        tool.set_status(Status(StatusCode.ERROR, "exit 1"))
        tool.end(end_time=T0 + 4_000)
        root.end(end_time=T0 + 5_000)
    return list(exporter.get_finished_spans())


def encoded() -> tuple[list, ExportTraceServiceRequest]:
    spans = sdk_spans()
    return spans, encode_spans(spans)


def test_sdk_spans_decode_to_the_same_ids_names_and_attributes() -> None:
    spans, request = encoded()
    decoded = decode_otlp_proto(request.SerializeToString(), source="test")
    assert decoded.rejects == []
    by_id = {s.span_id: s for s in decoded.spans}
    assert len(by_id) == len(spans) == 4
    for sdk in spans:
        ours = by_id[format(sdk.context.span_id, "016x")]
        assert ours.trace_id == format(sdk.context.trace_id, "032x")
        assert ours.name == sdk.name
        assert ours.start_ns == sdk.start_time and ours.end_ns == sdk.end_time
        assert ours.parent_span_id == (format(sdk.parent.span_id, "016x") if sdk.parent else None)
        expected = {k: list(v) if isinstance(v, tuple) else v for k, v in sdk.attributes.items()}
        assert dict(ours.attributes) == expected
        assert ours.resource["service.name"] == "coder"
        assert ours.scope == "agent-runtime"


def test_an_attribute_over_the_cap_is_a_dead_letter_whatever_the_batch_size() -> None:
    # The decoder skips the size check when the batch is too small to hold a value over
    # the cap: both sides of that shortcut must reject the same span and keep the rest.
    _, request = encoded()
    request.resource_spans[0].scope_spans[0].spans[0].attributes.add(
        key="big", value={"array_value": {"values": [{"int_value": 1}] * 64}}
    )
    data = request.SerializeToString()
    for cap in (8 * 64 - 1, len(data) * 4 + 1):
        decoded = decode_otlp_proto(data, source="t", max_attribute_bytes=cap)
        if cap > len(data) * 4:
            assert decoded.rejects == [] and len(decoded.spans) == 4
        else:
            assert [r.reason.split(" is ")[0] for r in decoded.rejects] == ["attribute 'big'"]
            assert len(decoded.spans) == 3


def test_traces_data_and_export_request_are_the_same_bytes() -> None:
    _, request = encoded()
    as_traces_data = TracesData.FromString(request.SerializeToString())
    a = decode_otlp_proto(request.SerializeToString(), source="t")
    b = decode_otlp_proto(as_traces_data.SerializeToString(), source="t")
    assert a.spans == b.spans


def test_json_and_protobuf_of_the_same_spans_give_identical_steps() -> None:
    _, request = encoded()
    doc = to_otlp_json(request)
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and int(span["traceId"], 16)  # hex, not base64
    assert isinstance(span["startTimeUnixNano"], str)  # int64 as a string
    from_proto = decode_otlp_proto(request.SerializeToString(), source="t")
    from_json = decode_otlp_json(json.dumps(doc).encode(), source="t")
    assert from_json.rejects == []
    assert from_json.spans == from_proto.spans
    steps_proto = [d.step for d in spans_to_drafts(from_proto.spans)]
    steps_json = [d.step for d in spans_to_drafts(from_json.spans)]
    assert steps_proto == steps_json
    kinds = sorted(s.kind for s in steps_proto)
    assert kinds == ["egress", "end", "model_call", "start", "tool_call", "tool_result"]


def test_semantic_mapping_of_sdk_spans() -> None:
    _, request = encoded()
    drafts = spans_to_drafts(decode_otlp_proto(request.SerializeToString(), source="t").spans)
    by_kind = {d.step.kind: d for d in drafts}
    model = by_kind["model_call"].step
    assert (model.model, model.tokens_in, model.tokens_out, model.finish_reason) == (
        "gpt-5",
        1200,
        80,
        "tool_call",
    )
    assert by_kind["model_call"].natural_key == "model_call/resp-1"
    call = by_kind["tool_call"]
    assert call.step.tool == "bash" and call.step.call_id == "call-1"
    assert call.natural_key == "tool_call/call-1"
    assert call.step.egress_host == "pypi.org"  # from the curl in the arguments
    assert call.session_hint is None  # the tool span carries no session: the pipeline resolves it
    result = by_kind["tool_result"].step
    assert result.status == "error" and result.error == "exit 1"
    egress = by_kind["egress"].step
    assert (egress.egress_host, egress.egress_method, egress.http_status) == (
        "pypi.org",
        "GET",
        200,
    )
    assert egress.detail["response_bytes"] == 5120
    assert by_kind["egress"].parent_span_id == call.span_id
    start = by_kind["start"]
    assert start.step.text == "Fix the failing test" and start.session_hint == "sess-1"


def test_a_workflow_name_is_the_steps_agent_for_policy_attachment() -> None:
    # Policies attach to plain-OTLP sessions by agent name ([policies.agents]); a
    # workflow's name counts as one (the GenAI conventions folded gen_ai.workflow.name
    # into gen_ai.agent.name; OpenLLMetry sends traceloop.workflow.name).
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    named = {
        "a": {"gen_ai.agent.name": "coder", "gen_ai.workflow.name": "nightly-fix"},
        "b": {"gen_ai.workflow.name": "nightly-fix"},
        "c": {"traceloop.workflow.name": "triage"},
        "d": {},
    }
    for call_id, attributes in named.items():
        span = tracer.start_span(
            "execute_tool bash",
            start_time=T0,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "bash",
                "gen_ai.tool.call.id": call_id,
                **attributes,
            },
        )
        span.end(end_time=T0 + 1_000)
    request = encode_spans(exporter.get_finished_spans())
    drafts = spans_to_drafts(decode_otlp_proto(request.SerializeToString(), source="t").spans)
    agents = {d.step.call_id: d.step.agent for d in drafts if d.step.kind == "tool_call"}
    assert agents == {"a": "coder", "b": "nightly-fix", "c": "triage", "d": "svc"}
