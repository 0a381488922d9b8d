"""The OTLP logs decoder against batches made by the real OpenTelemetry SDK logs API and
its OTLP encoder, with records shaped as Claude Code and Codex emit them."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict, ParseDict
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

from ingest.decoded import Decoded, Draft
from ingest.formats.claude_code import transcript_drafts
from ingest.formats.codex import rollout_drafts
from ingest.formats.otlp_logs import decode_otlp_logs_json, decode_otlp_logs_proto
from models.records import StepKind
from models.store import Store
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

CLAUDE_SCOPE = "com.anthropic.claude_code.events"
CODEX_SCOPE = "codex_otel"
SESSION = "5f0c8f6e-1d2a-4c3b-9e8f-0a1b2c3d4e5f"
T0 = 1_767_225_600 * 1_000_000_000  # 2026-01-01T00:00:00Z
SECOND = 1_000_000_000
SECRET = "sk-ant-api03-" + "Zx9" * 30


def sdk_batch(records: list[tuple[Any, dict[str, Any], int]], *, scope: str, service: str) -> bytes:
    """``(body, attributes, time)`` records emitted through the SDK and OTLP-encoded."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": service}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger(scope)
    for body, attributes, ts in records:
        logger.emit(timestamp=ts, body=body, attributes=attributes)
    provider.shutdown()
    return encode_logs(exporter.get_finished_logs()).SerializeToString()


def claude(name: str, seq: int, offset_s: float, **attributes: Any) -> tuple[Any, dict, int]:
    """A Claude Code event: full name in the body, the short one in ``event.name``."""
    ts = T0 + int(offset_s * SECOND)
    stamp = f"2026-01-01T00:00:{offset_s:06.3f}Z"
    attrs = {
        "event.name": name,
        "event.timestamp": stamp,
        "event.sequence": seq,
        "session.id": SESSION,
        "prompt.id": "p-1",
        **attributes,
    }
    return f"claude_code.{name}", attrs, ts


def claude_session() -> bytes:
    return sdk_batch(
        [
            claude(
                "user_prompt",
                1,
                1,
                prompt="Fix the failing test in tests/test_io.py",
                prompt_length="40",
            ),
            claude(
                "api_request",
                2,
                4,
                model="claude-sonnet-4-5",
                input_tokens="12",
                cache_read_tokens="9000",
                cache_creation_tokens="300",
                output_tokens="250",
                cost_usd="0.0123",
                duration_ms="1500",
            ),
            claude(
                "tool_result",
                3,
                7,
                tool_name="Bash",
                tool_use_id="toolu_01",
                success="false",
                duration_ms="2000",
                error=f"Exit code 1\n1 failed; ANTHROPIC_API_KEY={SECRET}",
                decision_type="accept",
                decision_source="config",
                tool_parameters=json.dumps(
                    {
                        "bash_command": "pytest",
                        "full_command": "pytest -q tests/test_io.py",
                        "description": "Run the tests",
                    }
                ),
            ),
            claude(
                "tool_decision",
                4,
                8,
                tool_name="Write",
                tool_use_id="toolu_02",
                decision="reject",
                source="user_reject",
            ),
            claude(
                "api_error",
                5,
                9,
                model="claude-sonnet-4-5",
                error="Overloaded",
                status_code="529",
                attempt="1",
            ),
            claude("user_prompt", 6, 10, prompt="Also update the docs, my key is " + SECRET),
            claude(
                "api_request",
                7,
                12,
                model="claude-sonnet-4-5",
                input_tokens="20",
                output_tokens="10",
                duration_ms="500",
            ),
            claude("permission_mode_changed", 8, 13, mode="plan"),
            ("plain application log line", {"level": "info"}, T0 + 14 * SECOND),
        ],
        scope=CLAUDE_SCOPE,
        service="claude-code",
    )


def steps(decoded: Decoded) -> list[Draft]:
    return sorted(decoded.drafts, key=lambda d: (d.step.ts, d.arrival, d.fallback_id))


def test_a_claude_code_session_from_its_otel_logs() -> None:
    decoded = decode_otlp_logs_proto(claude_session(), source="test", location="http:/v1/logs")
    assert decoded.rejects == []
    assert decoded.skipped == 2  # permission_mode_changed and the plain log line
    drafts = steps(decoded)
    assert [str(d.step.kind) for d in drafts] == [
        "start",
        "model_call",
        "tool_call",
        "tool_result",
        "approval",
        "error",
        "model_call",
    ]
    start = next(d for d in drafts if d.step.kind == StepKind.START)
    assert (
        start.natural_key == "start"
        and start.step.text == "Fix the failing test in tests/test_io.py"
    )
    assert start.session_hint == SESSION and start.step.agent == "claude-code"
    first, second = [d.step for d in drafts if d.step.kind == StepKind.MODEL_CALL]
    # the whole prompt: input + cache read + cache creation; the call started 1.5 s earlier
    assert (first.tokens_in, first.tokens_out, first.cost) == (9312, 250, 0.0123)
    assert (first.ts, first.end_ts) == (T0 + int(2.5 * SECOND), T0 + 4 * SECOND)
    assert first.model == "claude-sonnet-4-5"
    # the first prompt rides on the first call too; the second on the call after it
    assert first.detail["user_message"].startswith("Fix the failing test")
    assert second.detail["user_message"].startswith("Also update the docs")
    assert SECRET not in second.detail["user_message"]
    call = next(d for d in drafts if d.step.kind == StepKind.TOOL_CALL)
    result = next(d for d in drafts if d.step.kind == StepKind.TOOL_RESULT)
    assert call.natural_key == "tool_call/toolu_01" and result.natural_key == "tool_result/toolu_01"
    assert call.step.call_id == result.step.call_id == "toolu_01"
    assert call.step.ts == T0 + 5 * SECOND and result.step.ts == T0 + 7 * SECOND
    assert json.loads(call.step.arguments or "{}")["command"] == "pytest -q tests/test_io.py"
    assert result.step.status == "error" and result.step.error.startswith("Exit code 1")
    assert SECRET not in (result.step.error or "") and "[REDACTED" in (result.step.error or "")
    assert result.step.detail["decision_source"] == "config"
    approval = next(d.step for d in drafts if d.step.kind == StepKind.APPROVAL)
    assert (approval.tool, approval.call_id, approval.status) == ("Write", "toolu_02", "denied")
    assert approval.detail["approved"] is False and approval.detail["approver"] == "user_reject"
    error = next(d.step for d in drafts if d.step.kind == StepKind.ERROR)
    assert error.error == "Overloaded" and error.detail["status_code"] == "529"
    # a re-delivered batch is the same steps: fallback ids come from the event sequence
    again = decode_otlp_logs_proto(claude_session(), source="test")
    assert [d.fallback_id for d in steps(again)] == [d.fallback_id for d in drafts]
    assert call.fallback_id == f"{SESSION}#log:claude_code.tool_result@3:call"


def test_a_tool_call_in_the_logs_is_the_same_step_as_in_the_transcript() -> None:
    line = {
        "type": "assistant",
        "uuid": "u-1",
        "sessionId": SESSION,
        "timestamp": "2026-01-01T00:00:05Z",
        "message": {
            "id": "msg_1",
            "model": "claude-sonnet-4-5",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "Bash",
                    "input": {
                        "command": "pytest -q tests/test_io.py",
                        "description": "Run the tests",
                    },
                }
            ],
        },
    }
    transcript, _ = transcript_drafts([("t.jsonl:1", line)])
    from_transcript = next(d for d in transcript if d.step.kind == StepKind.TOOL_CALL)
    decoded = decode_otlp_logs_proto(claude_session(), source="test")
    from_logs = next(d for d in decoded.drafts if d.step.kind == StepKind.TOOL_CALL)
    assert from_logs.step_id_for(SESSION) == from_transcript.step_id_for(SESSION)
    assert from_logs.step.action == from_transcript.step.action


def codex(name: str, offset_s: float, **attributes: Any) -> tuple[Any, dict, int]:
    ts = T0 + int(offset_s * SECOND)
    attrs = {
        "event.name": name,
        "event.timestamp": f"2026-01-01T00:00:{offset_s:06.3f}Z",
        "conversation.id": SESSION,
        "model": "gpt-5-codex",
        "app.version": "0.50.0",
        **attributes,
    }
    return "", attrs, ts


def codex_session() -> bytes:
    arguments = json.dumps({"command": ["bash", "-lc", "pytest -q"], "workdir": "/w/repo"})
    return sdk_batch(
        [
            codex(
                "codex.conversation_starts",
                0,
                approval_policy="on-request",
                sandbox_policy="workspace-write",
                provider_name="openai",
            ),
            codex("codex.user_prompt", 1, prompt="Make the tests pass", prompt_length="19"),
            codex(
                "codex.api_request",
                1.5,
                duration_ms="300",
                **{"http.response.status_code": "200"},
                attempt="1",
            ),
            codex("codex.sse_event", 2, **{"event.kind": "response.created"}, duration_ms="5"),
            codex(
                "codex.sse_event",
                3,
                **{"event.kind": "response.completed"},
                input_token_count="1200",
                output_token_count="300",
                cached_token_count="1000",
                reasoning_token_count="50",
                tool_token_count="0",
            ),
            codex(
                "codex.tool_decision",
                3.5,
                tool_name="shell",
                call_id="call_abc",
                decision="approved",
                source="user",
            ),
            codex(
                "codex.tool_result",
                5,
                tool_name="shell",
                call_id="call_abc",
                arguments=arguments,
                duration_ms="1000",
                success="false",
                output="Exit code: 1\n2 failed",
                mcp_server="",
            ),
            codex(
                "codex.api_request",
                6,
                duration_ms="30000",
                attempt="2",
                **{"error.message": "stream disconnected"},
            ),
            codex("codex.user_prompt", 7, prompt="[REDACTED]", prompt_length="12"),
        ],
        scope=CODEX_SCOPE,
        service="codex_cli_rs",
    )


def test_a_codex_session_from_its_otel_logs() -> None:
    decoded = decode_otlp_logs_proto(codex_session(), source="test")
    assert decoded.rejects == []
    assert decoded.skipped == 2  # the successful HTTP attempt and response.created
    drafts = steps(decoded)
    assert [str(d.step.kind) for d in drafts] == [
        "start",
        "model_call",
        "approval",
        "tool_call",
        "tool_result",
        "error",
    ]
    start, model, approval, call, result, error = (d.step for d in drafts)
    assert start.text == "Make the tests pass" and start.agent == "codex"
    assert start.detail["approval_policy"] == "on-request"
    assert start.detail["sandbox_policy"] == "workspace-write"
    assert (model.tokens_in, model.tokens_out, model.model) == (1200, 350, "gpt-5-codex")
    assert approval.status == "ok" and approval.call_id == "call_abc"
    assert call.ts == T0 + 4 * SECOND and json.loads(call.arguments or "")["workdir"] == "/w/repo"
    assert (result.status, result.error) == ("error", "Exit code: 1\n2 failed")
    assert error.error == "stream disconnected"
    # the same call ids as a Codex rollout gives its calls
    rollout, _ = rollout_drafts(
        [
            (
                "r.jsonl:1",
                {
                    "timestamp": "2026-01-01T00:00:04Z",
                    "type": "response_item",
                    "payload": {
                        "type": "function_call",
                        "name": "shell",
                        "call_id": "call_abc",
                        "arguments": json.dumps(
                            {"command": ["bash", "-lc", "pytest -q"], "workdir": "/w/repo"}
                        ),
                    },
                },
            )
        ],
        file_name=f"rollout-2026-01-01T00-00-00-{SESSION}.jsonl",
    )
    # (the rollout also makes a model call of the response that holds the call)
    (rollout_call,) = [d for d in rollout if d.step.kind == StepKind.TOOL_CALL]
    assert rollout_call.step_id_for(SESSION) == drafts[3].step_id_for(SESSION)
    assert rollout_call.step.action == call.action


def _json_form(data: bytes) -> dict[str, Any]:
    return MessageToDict(ExportLogsServiceRequest.FromString(data))


def _same(a: Decoded, b: Decoded) -> None:
    assert [d.step for d in steps(a)] == [d.step for d in steps(b)]
    assert [(d.fallback_id, d.natural_key) for d in steps(a)] == [
        (d.fallback_id, d.natural_key) for d in steps(b)
    ]
    assert a.skipped == b.skipped


def test_otlp_json_gives_the_same_steps_as_protobuf() -> None:
    for data in (claude_session(), codex_session()):
        proto = decode_otlp_logs_proto(data, source="test")
        doc = _json_form(data)
        _same(proto, decode_otlp_logs_json(json.dumps(doc), source="test"))
        # the legacy spelling of the scope level
        legacy = json.loads(
            json.dumps(doc)
            .replace('"scopeLogs"', '"instrumentationLibraryLogs"')
            .replace('"scope"', '"instrumentationLibrary"')
        )
        _same(proto, decode_otlp_logs_json(legacy, source="test"))


def test_malformed_input_becomes_dead_letters_and_the_rest_is_kept() -> None:
    assert [r.reason[:12] for r in decode_otlp_logs_json(b"{oops", source="t").rejects] == [
        "invalid JSON"
    ]
    (bad,) = decode_otlp_logs_json({"resourceSpans": []}, source="t").rejects
    assert "resourceLogs" in bad.reason
    # a truncated protobuf batch: the records before the cut are kept
    data = claude_session()
    cut = decode_otlp_logs_proto(data[: len(data) - 40], source="t")
    assert cut.rejects and len(cut.drafts) >= 5
    assert all(r.location.startswith("resource_logs[0]") for r in cut.rejects)
    capped = decode_otlp_logs_proto(data, source="t", max_attribute_bytes=60)
    assert any("over the 60-byte cap" in r.reason for r in capped.rejects)
    assert len(capped.drafts) < len(decode_otlp_logs_proto(data, source="t").drafts)
    garbage = decode_otlp_logs_proto(b"\xff\xff\xff\xff", source="t")
    assert garbage.drafts == [] and len(garbage.rejects) == 1
    # recognised events that cannot be read, one dead letter each, the good one kept
    doc = _json_form(
        sdk_batch(
            [
                ("claude_code.api_request", {"event.name": "api_request", "input_tokens": "3"}, T0),
                claude("tool_result", 2, 2, success="true"),
                claude("tool_decision", 3, 3, tool_name="Bash", decision="maybe"),
                claude("user_prompt", 4, 4, **{"event.timestamp": "yesterday"}),
                claude("api_request", 5, 5, input_tokens="3"),
            ],
            scope=CLAUDE_SCOPE,
            service="claude-code",
        )
    )
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"].append({"attributes": "nope"})
    decoded = decode_otlp_logs_json(doc, source="t")
    reasons = sorted(r.reason for r in decoded.rejects)
    assert len(reasons) == 5
    assert any("session.id is required" in r for r in reasons)
    assert any("tool_name is required" in r for r in reasons)
    assert any("'maybe'" in r for r in reasons)
    assert any("yesterday" in r for r in reasons)
    assert any("attributes must be a list" in r for r in reasons)
    assert [d.step.kind for d in decoded.drafts] == [StepKind.MODEL_CALL]


def test_invalid_utf8_in_one_log_record_costs_that_record_only() -> None:
    good = decode_otlp_logs_proto(claude_session(), source="t")
    data = claude_session().replace(SESSION.encode(), b"\xff\xfe" + SESSION.encode()[2:], 1)
    decoded = decode_otlp_logs_proto(data, source="t", location="otlp_logs/0@3")
    (reject,) = decoded.rejects
    # named by the schema walk whatever the protobuf runtime's wording
    assert "invalid UTF-8 in string field attributes.value.string_value" in reject.reason
    assert reject.location.startswith("otlp_logs/0@3 resource_logs[0]")
    # one record lost, every other one read
    assert decoded.records == good.records - 1 and decoded.skipped == good.skipped


def test_a_session_event_in_a_log_body_is_decoded_as_that_event() -> None:
    event = {
        "type": "tool_call",
        "session_id": "s-7",
        "seq": 3,
        "ts": "2026-01-01T00:00:03Z",
        "tool": "bash",
        "call_id": "c-1",
        "arguments": {"command": "ls"},
    }
    broken = {k: v for k, v in event.items() if k != "call_id"}
    decoded = decode_otlp_logs_proto(
        sdk_batch(
            [(event, {}, T0), (json.dumps(broken), {}, T0 + 1), ({"type": "http"}, {}, T0 + 2)],
            scope="agent",
            service="agent",
        ),
        source="t",
    )
    (draft,) = decoded.drafts
    assert draft.natural_key == "tool_call/c-1" and draft.session_hint == "s-7"
    (dead,) = decoded.rejects
    assert "call_id" in dead.reason
    assert decoded.skipped == 1  # an object that is no session event of ours


_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
_names = st.sampled_from(
    [
        "claude_code.user_prompt",
        "claude_code.api_request",
        "claude_code.api_error",
        "claude_code.tool_result",
        "claude_code.tool_decision",
        "codex.conversation_starts",
        "codex.user_prompt",
        "codex.sse_event",
        "codex.api_request",
        "codex.tool_decision",
        "codex.tool_result",
        "gemini_cli.user_prompt",
        "gemini_cli.api_response",
        "gemini_cli.api_error",
        "gemini_cli.tool_call",
        "gemini_cli.chat_compression",
    ]
)
_keys = st.sampled_from(
    [
        "session.id",
        "conversation.id",
        "event.timestamp",
        "event.sequence",
        "event.kind",
        "tool_name",
        "tool_use_id",
        "call_id",
        "success",
        "duration_ms",
        "decision",
        "tool_parameters",
        "tool_input",
        "arguments",
        "output",
        "error",
        "error.message",
        "http.response.status_code",
        "prompt",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "input_token_count",
        "model",
        "function_name",
        "function_args",
        "thoughts_token_count",
        "tool_token_count",
        "finish_reasons",
        "response_text",
        "role",
        "tokens_before",
        "tokens_after",
    ]
)


def _any_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON AnyValue (the decoder's input when not the SDK's)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {
            "doubleValue": "NaN" if math.isnan(value) else f"{'-' if value < 0 else ''}Infinity"
        }
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {
        "kvlistValue": {"values": [{"key": k, "value": _any_value(v)} for k, v in value.items()]}
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example("claude_code.user_prompt", {"event.timestamp": math.nan}, None, 0)
@example("claude_code.api_request", {"event.timestamp": 1e300}, None, 0)
@example(
    "codex.sse_event",
    {
        "event.kind": "response.completed",
        "input_token_count": 2**63 - 1,
        "output_token_count": "9" * 5000,
        "reasoning_token_count": 2**63 - 1,
    },
    None,
    1,
)
@example("claude_code.tool_result", {"tool_name": "Bash", "duration_ms": 1e14}, None, 5)
@given(_names, st.dictionaries(_keys, _values, max_size=8), _values, st.integers(0, 2**64 - 1))
def test_arbitrary_attribute_values_never_raise(
    name: str, attributes: dict[str, Any], body: Any, time_ns: int
) -> None:
    attributes = {"session.id": "s", "conversation.id": "s", **attributes}
    record = {
        "timeUnixNano": str(time_ns),
        "body": _any_value(body),
        "attributes": [{"key": "event.name", "value": {"stringValue": name}}]
        + [{"key": k, "value": _any_value(v)} for k, v in attributes.items()],
    }
    doc = {
        "resourceLogs": [{"scopeLogs": [{"scope": {"name": CLAUDE_SCOPE}, "logRecords": [record]}]}]
    }
    decoded = decode_otlp_logs_json(doc, source="t")
    # one record: steps, a dead letter with a reason, skipped, or folded into a start's facts
    if decoded.rejects:
        assert decoded.drafts == [] and all(r.reason for r in decoded.rejects)
    for draft in decoded.drafts:
        assert draft.session_hint and 0 <= draft.step.ts < 2**63
        assert draft.step.tokens_in is None or 0 < draft.step.tokens_in < 2**63
    # the protobuf form of the same record decodes alike
    try:
        message = ParseDict(doc, ExportLogsServiceRequest())
    except Exception:  # values protobuf's JSON parser refuses have no proto form
        return
    proto = decode_otlp_logs_proto(message.SerializeToString(), source="t")
    assert len(proto.drafts) == len(decoded.drafts)


def _replayed_kinds(path: Path, db: Path) -> list[str]:
    summary = replay([path], settings=Settings(db_url=f"sqlite:///{db}"))
    assert summary.sessions == [SESSION] and summary.dead_letters == 0
    store = Store.open(f"sqlite:///{db}")
    try:
        return [str(step.kind) for step in store.steps(SESSION)]
    finally:
        store.close()


def test_a_recorded_logs_file_replays_into_the_sessions_steps(tmp_path: Path) -> None:
    """A Collector ``file`` exporter's logs lines replay like its traces lines; log records
    beside spans in one document (as Google ADK writes them) are read too, not dropped."""
    logs = _json_form(claude_session())
    (tmp_path / "claude.otlp.jsonl").write_text(json.dumps(logs) + "\n")
    kinds = _replayed_kinds(tmp_path / "claude.otlp.jsonl", tmp_path / "a.db")
    assert kinds.count("model_call") == 2 and kinds.count("tool_call") == 1

    (tmp_path / "trace.json").write_text(json.dumps({"resourceSpans": [], **logs}))
    assert _replayed_kinds(tmp_path / "trace.json", tmp_path / "b.db") == kinds
