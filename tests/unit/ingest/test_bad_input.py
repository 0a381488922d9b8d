"""Bad input gets a clear error and loses nothing: one dead letter per bad record,
with its reason and location, and the rest of the batch kept."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.formats.claude_code import transcript_drafts
from ingest.formats.codex import rollout_drafts
from ingest.formats.otlp_json import decode_otlp_json, to_otlp_json
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.formats.session_events import decode_event
from ingest.formats.trail import decode_trail
from models.errors import DecodeError

T0 = 1_767_000_000_000_000_000


def batch(n: int = 5, *, names: list[str] | None = None) -> ExportTraceServiceRequest:
    """A batch of ``n`` spans built field by field (so tests can break any field)."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "agent"
    ss = rs.scope_spans.add()
    ss.scope.name = "runtime"
    for i in range(n):
        span = ss.spans.add()
        span.trace_id = bytes([1] * 16)
        span.span_id = bytes([i + 1] * 8)
        span.name = names[i] if names else f"execute_tool t{i}"
        span.kind = 1
        span.start_time_unix_nano = T0 + i
        span.end_time_unix_nano = T0 + i + 1
        attr = span.attributes.add()
        attr.key, attr.value.string_value = "gen_ai.operation.name", "execute_tool"
    return request


def test_invalid_utf8_in_one_span_costs_that_span_only() -> None:
    data = batch(names=["span-a", "span-b", "BADNAME", "span-d", "span-e"]).SerializeToString()
    data = data.replace(b"BADNAME", b"BAD\xff\xfeME")
    decoded = decode_otlp_proto(data, source="kafka", location="otlp_spans/0@17")
    assert [s.name for s in decoded.spans] == ["span-a", "span-b", "span-d", "span-e"]
    (reject,) = decoded.rejects
    assert "UTF-8" in reject.reason
    assert reject.location == "otlp_spans/0@17 resource_spans[0].scope_spans[0].spans[2]"
    assert b"BAD\xff\xfeME" in reject.payload  # the bad span is kept whole


def test_truncated_protobuf_keeps_the_complete_spans() -> None:
    data = batch(5).SerializeToString()
    decoded = decode_otlp_proto(data[: len(data) - 20], source="file", location="x.binpb#0")
    assert [s.name for s in decoded.spans] == [f"execute_tool t{i}" for i in range(4)]
    (reject,) = decoded.rejects
    assert "truncated" in reject.reason
    assert reject.payload  # the unreadable tail is kept


def test_garbage_bytes_are_one_dead_letter() -> None:
    decoded = decode_otlp_proto(b"\xff\xff\xff\xff\xff", source="http", location="/v1/traces")
    assert decoded.spans == []
    assert len(decoded.rejects) == 1 and decoded.rejects[0].payload == b"\xff\xff\xff\xff\xff"


def test_missing_ids_unknown_enum_and_huge_attribute_are_rejected_with_reasons() -> None:
    request = batch(5)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[0].trace_id = b""
    spans[1].span_id = b"\x00" * 8
    spans[2].kind = 99
    big = spans[3].attributes.add()
    big.key, big.value.string_value = "input.value", "x" * (10 * 1024 * 1024)
    decoded = decode_otlp_proto(request.SerializeToString(), source="t")
    assert [s.name for s in decoded.spans] == ["execute_tool t4"]
    reasons = [r.reason for r in decoded.rejects]
    assert "trace_id must be 16 non-zero bytes" in reasons[0]
    assert "span_id must be 8 non-zero bytes" in reasons[1]
    assert "unknown span kind 99" in reasons[2]
    assert "'input.value' is 10485760 bytes" in reasons[3]
    assert len(decoded.rejects[3].payload) > 10 * 1024 * 1024  # nothing lost


def test_json_batch_with_bad_spans_keeps_the_good_ones() -> None:
    doc = to_otlp_json(batch(4))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["traceId"] = "not-hex"
    spans[1]["kind"] = 42
    del spans[2]["spanId"]
    decoded = decode_otlp_json(json.dumps(doc), source="t", location="f.jsonl:3")
    assert [s.name for s in decoded.spans] == ["execute_tool t3"]
    assert [r.location for r in decoded.rejects] == [
        f"f.jsonl:3 resource_spans[0].scope_spans[0].spans[{i}]" for i in range(3)
    ]
    assert "traceId must be 32 hex characters" in decoded.rejects[0].reason
    assert "unknown span kind 42" in decoded.rejects[1].reason
    assert "spanId must be 16 hex characters" in decoded.rejects[2].reason
    assert json.loads(decoded.rejects[1].payload)["kind"] == 42


def test_invalid_json_and_invalid_utf8_json() -> None:
    for payload in (b'{"resourceSpans": [', b'{"resourceSpans": "\xff"}'):
        decoded = decode_otlp_json(payload, source="t", location="l")
        assert decoded.spans == []
        assert decoded.rejects[0].reason.startswith("invalid JSON")
        assert decoded.rejects[0].payload == payload


def test_invalid_session_event_names_the_failing_field() -> None:
    event = {
        "type": "tool_call",
        "session_id": "s",
        "seq": 3,
        "ts": "2026-01-01T00:00:00Z",
        "tool": "bash",
    }
    drafts, dead = decode_event(json.dumps(event).encode(), source="kafka", location="events/1@9")
    assert drafts == [] and dead is not None
    assert "'call_id' is a required property" in dead.reason
    assert dead.location == "events/1@9"
    drafts, dead = decode_event({**event, "call_id": "c1", "seq": -1}, source="f", location="l")
    assert dead is not None and dead.reason.startswith("tool_call.seq:")
    drafts, dead = decode_event(
        {**event, "call_id": "c1", "ts": "yesterday"}, source="f", location="l"
    )
    assert dead is not None and "ts" in dead.reason


# -- nothing crashes the decoders ---------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=400))
def test_protobuf_decoder_never_raises(data: bytes) -> None:
    decoded = decode_otlp_proto(data, source="fuzz")
    assert all(isinstance(r.payload, bytes) and r.reason for r in decoded.rejects)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(min_value=0, max_value=200))
def test_protobuf_decoder_survives_mutations_of_a_valid_batch(noise: bytes, at: int) -> None:
    data = bytearray(batch(3).SerializeToString())
    at = at % len(data)
    data[at : at + len(noise)] = noise
    decode_otlp_proto(bytes(data), source="fuzz")


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_json_decoders_never_raise(value: object) -> None:
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [value]}]}]}
    decode_otlp_json(json.dumps(doc), source="fuzz")
    decode_otlp_json(json.dumps(value), source="fuzz")
    decode_event(json.dumps(value), source="fuzz", location="l")
    if isinstance(value, dict):
        decode_event(
            {"type": "tool_call", "session_id": "s", "seq": 0, "ts": 1, **value},
            source="fuzz",
            location="l",
        )
    decode_trail({"spans": [value]}, source="fuzz")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_event_decoder_never_raises_on_bytes(data: bytes) -> None:
    decode_event(data, source="fuzz", location="l")


event_like = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "session_start",
                "model_call",
                "tool_call",
                "tool_result",
                "approval",
                "checkpoint",
                "compaction",
                "error",
                "session_end",
                "other",
            ]
        ),
        "session_id": st.one_of(st.text(max_size=5), st.integers()),
        "seq": st.one_of(st.integers(min_value=-2, max_value=5), st.text(max_size=2)),
        "ts": st.one_of(st.just("2026-01-01T00:00:00Z"), st.floats(allow_nan=False), st.booleans()),
    },
    optional={
        key: json_values
        for key in (
            "goal",
            "model",
            "tool",
            "call_id",
            "ok",
            "approved",
            "checkpoint_id",
            "message",
            "status",
            "tokens_in",
            "arguments",
            "budget",
            "claimed_done",
        )
    },
)


@settings(max_examples=400, deadline=None)
@given(event_like)
def test_fast_and_reference_validators_agree(event: dict[str, object]) -> None:
    from ingest.formats.session_events import _fast_validator, _validator

    try:
        _fast_validator()(event)
        fast_ok = True
    except Exception:
        fast_ok = False
    assert fast_ok == _validator().is_valid(event)


_transcript_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "id",
                    "name",
                    "input",
                    "content",
                    "text",
                    "tool_use_id",
                    "is_error",
                    "usage",
                    "input_tokens",
                    "output_tokens",
                    "role",
                    "message",
                    "call_id",
                    "arguments",
                    "output",
                    "info",
                    "last_token_usage",
                    "total_token_usage",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=16,
)
_transcript_line = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "user",
                "assistant",
                "system",
                "summary",
                "response_item",
                "event_msg",
                "session_meta",
                "turn_context",
                "compacted",
                "progress",
            ]
        ),
    },
    optional={
        "sessionId": st.text(max_size=4),
        "uuid": st.text(max_size=4),
        "timestamp": st.sampled_from(["2026-02-12T16:02:28.357Z", "yesterday", 3]),
        "message": _transcript_value,
        "payload": st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "id",
                    "name",
                    "call_id",
                    "arguments",
                    "output",
                    "info",
                    "message",
                    "input",
                    "action",
                    "git",
                    "cwd",
                    "model",
                    "role",
                    "content",
                    "tools",
                    "status",
                ]
            ),
            _transcript_value
            | st.sampled_from(
                [
                    "function_call",
                    "token_count",
                    "user_message",
                    "message",
                    "assistant",
                    "reasoning",
                    "agent_message",
                    "task_complete",
                    "local_shell_call",
                    "function_call_output",
                    "custom_tool_call",
                    "web_search_call",
                    "tool_search_call",
                    "tool_search_output",
                    "image_generation_call",
                    "aborted",
                ]
            ),
            max_size=5,
        ),
        "subtype": st.sampled_from(["compact_boundary", "api_error", "other"]),
        "data": st.fixed_dictionaries(  # a 2.1 progress line's sub-agent message
            {"type": st.sampled_from(["agent_progress", "bash_progress"])},
            optional={
                "agentId": st.text(max_size=4) | st.integers(),
                "prompt": st.text(max_size=6) | st.none(),
                "message": st.fixed_dictionaries(
                    {"type": st.sampled_from(["user", "assistant", "system", "progress"])},
                    optional={
                        "message": _transcript_value,
                        "uuid": st.text(max_size=4) | st.none(),
                        "timestamp": st.sampled_from(["2026-02-12T16:02:28.357Z", "x", None]),
                    },
                )
                | _transcript_value,
            },
        ),
        "compactMetadata": _transcript_value,
        "isSidechain": st.booleans(),
        "isCompactSummary": st.booleans(),
        "isApiErrorMessage": st.booleans(),
        "isMeta": st.booleans(),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_transcript_line, max_size=8))
def test_runtime_transcripts_never_raise_on_arbitrary_lines(lines: list[dict]) -> None:
    """Claude Code transcripts and Codex rollouts: a line that cannot be read is a reject
    with a reason, never an exception (a rollout with no session id anywhere is one
    DecodeError for the whole file)."""
    located = [(f"f:{i}", line) for i, line in enumerate(lines)]
    _, rejects = transcript_drafts(located)
    assert all(reason for _, reason, _ in rejects)
    try:
        _, rejects = rollout_drafts(located)
    except DecodeError as exc:
        assert "session" in exc.reason
    else:
        assert all(reason for _, reason, _ in rejects)


def _envelope(kind: str, payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": "2026-05-11T08:27:32.839Z", "type": kind, "payload": payload}


_USAGE = {"input_tokens": 20_292, "cached_input_tokens": 0, "output_tokens": 170}
_TEXT_ONLY_TURN = [
    _envelope("session_meta", {"id": "019e1625-789d-76c0-80ab-3724b5ddb799"}),
    _envelope("event_msg", {"type": "task_started", "turn_id": "t"}),
    _envelope("event_msg", {"type": "user_message", "message": "show tools"}),
    _envelope("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"}),
    _envelope("event_msg", {"type": "agent_message", "message": "Available tools: ..."}),
    _envelope(
        "response_item",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Available tools: ..."}],
        },
    ),
    _envelope(
        "event_msg",
        {
            "type": "token_count",
            "info": {"total_token_usage": _USAGE, "last_token_usage": _USAGE},
        },
    ),
    _envelope("event_msg", {"type": "task_complete", "turn_id": "t"}),
    _envelope(
        "response_item",
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c"},
    ),
    _envelope("response_item", {"type": "function_call_output", "call_id": "c", "output": "ok"}),
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TEXT_ONLY_TURN) | _transcript_line, max_size=14))
def test_rollouts_of_text_only_turns_never_raise(lines: list[dict]) -> None:
    """The lines of a real turn that ends in a text-only reply (the shape that raised
    IndexError), repeated, reordered, dropped and mixed with arbitrary lines: never an
    exception, and the real lines alone are never a dead letter."""
    located = [(f"f:{i}", line) for i, line in enumerate(lines)]
    try:
        drafts, rejects = rollout_drafts(located)
    except DecodeError as exc:
        assert "session" in exc.reason
        return
    assert all(reason for _, reason, _ in rejects)
    real = {id(line) for line in _TEXT_ONLY_TURN}
    assert all(id(line) not in real for _, _, line in rejects)
    replies = sum(1 for line in lines if line is _TEXT_ONLY_TURN[5])
    texts = [d.step.text for d in drafts if d.step.kind == "model_call" and d.step.text]
    assert len(texts) <= replies
