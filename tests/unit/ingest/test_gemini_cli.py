"""Gemini CLI's OpenTelemetry logs, through OTLP and through its ``--telemetry-outfile``.

The events follow ``packages/core/src/telemetry/types.ts`` of google-gemini/gemini-cli
(attribute names and types, the logger ``gemini-cli``, ``session.id`` and
``event.timestamp`` on every event, ``function_args`` as indented JSON text, a
``gen_ai.client.inference.operation.details`` copy beside each API request and response);
the outfile is what its ``FileLogExporter`` writes (``file-exporters.ts``): each SDK
object through ``JSON.stringify(obj, null, 2)``, back to back, log records with the
``LogRecordImpl`` fields (``hrTime``, ``_body``, ``resource._rawAttributes``), spans and
metrics among them. The session itself is made up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from ingest.formats.otlp_logs import decode_js_sdk_records, decode_otlp_logs_proto
from models.store import Store
from tests.unit.ingest.test_bad_input import json_values
from tests.unit.ingest.test_otlp_logs import sdk_batch
from trajwatch.service.replay import replay
from trajwatch.settings import Settings

SESSION = "8f3e2a1c-5b4d-4e6f-9a7b-1c2d3e4f5a6b"
SCOPE = "gemini-cli"
T0 = 1_783_728_000  # seconds
COMMON = {"session.id": SESSION, "installation.id": "inst-1", "interactive": True}


def stamp(offset_ms: int) -> str:
    seconds, ms = divmod(offset_ms, 1000)
    return f"2026-07-11T00:00:{seconds:02d}.{ms:03d}Z"


def event(name: str, offset_ms: int, body: str, **attributes: Any) -> dict[str, Any]:
    return {
        "offset_ms": offset_ms,
        "body": body,
        "attributes": {
            **COMMON,
            "event.name": name,
            "event.timestamp": stamp(offset_ms),
            **attributes,
        },
    }


def args(**values: Any) -> str:
    return json.dumps(values, indent=2)  # safeJsonStringify(args, 2)


def tool_call(
    offset_ms: int, name: str, arguments: str, *, ok: bool, decision: str | None, **more: Any
) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "function_name": name,
        "function_args": arguments,
        "duration_ms": 120,
        "success": ok,
        "prompt_id": "p1",
        "tool_type": "native",
        **more,
    }
    if decision:
        attributes["decision"] = decision
    text = f"Tool call: {name}{f'. Decision: {decision}' if decision else ''}. Success: {ok}."
    return event("gemini_cli.tool_call", offset_ms, text, **attributes)


def response(offset_ms: int, role: str, tokens_in: int, text: str) -> list[dict[str, Any]]:
    usage = {
        "input_token_count": tokens_in,
        "output_token_count": 80,
        "cached_content_token_count": tokens_in // 2,
        "thoughts_token_count": 40,
        "tool_token_count": 0,
        "total_token_count": tokens_in + 120,
    }
    return [
        event(
            "gemini_cli.api_request",
            offset_ms - 900,
            "API request to gemini-2.5-pro.",
            model="gemini-2.5-pro",
            prompt_id="p1",
            role=role,
        ),
        event(
            "gen_ai.client.inference.operation.details",
            offset_ms - 900,
            "GenAI operation request details from gemini-2.5-pro.",
            **{
                "gen_ai.request.model": "gemini-2.5-pro",
                "gen_ai.operation.name": "generate_content",
            },
        ),
        event(
            "gemini_cli.api_response",
            offset_ms,
            "API response from gemini-2.5-pro. Status: 200. Duration: 900ms.",
            model="gemini-2.5-pro",
            duration_ms=900,
            prompt_id="p1",
            auth_type="gemini-api-key",
            status_code=200,
            finish_reasons=["stop"],
            role=role,
            response_text=text,
            **usage,
        ),
        event(
            "gen_ai.client.inference.operation.details",
            offset_ms,
            "GenAI operation details from gemini-2.5-pro.",
            **{"gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": 80},
        ),
    ]


def session() -> list[dict[str, Any]]:
    """One prompt; a routing call; four tool calls (one auto-accepted after an "always",
    one failed, one the person cancelled); a compression; an API error."""
    return [
        event("gemini_cli.config", 0, "CLI configuration loaded.", model="gemini-2.5-pro"),
        event(
            "gemini_cli.user_prompt",
            1_000,
            "User prompt. Length: 41.",
            prompt_length=41,
            prompt_id="p1",
            prompt="Fix the failing date test in tests/dates.py",
        ),
        *response(2_000, "utility_router", 600, '{"model_choice": "pro"}'),
        *response(4_000, "main", 9_000, "I'll read the test first."),
        tool_call(
            4_500, "read_file", args(absolute_path="/w/tests/dates.py"), ok=True, decision=None
        ),
        *response(6_000, "main", 11_000, "Running the tests."),
        tool_call(
            6_500,
            "run_shell_command",
            args(command="pytest tests/dates.py", description="run the tests"),
            ok=False,
            decision="accept",
            error="Command exited with code 1",
            **{"error.message": "Command exited with code 1", "error_type": "shell_error"},
        ),
        tool_call(
            6_800,
            "replace",
            args(file_path="/w/src/dates.py", old_string="a", new_string="b"),
            ok=True,
            decision="auto_accept",
        ),
        tool_call(
            7_000,
            "run_shell_command",
            args(command="git push --force"),
            ok=False,
            decision="reject",
        ),
        event(
            "gemini_cli.chat_compression",
            8_000,
            "Chat compression (Saved 90000 tokens)",
            tokens_before=120_000,
            tokens_after=30_000,
        ),
        event(
            "gemini_cli.api_error",
            9_000,
            "API error for gemini-2.5-pro. Error: quota. Duration: 30ms.",
            model="gemini-2.5-pro",
            error="Resource has been exhausted",
            status_code=429,
            duration_ms=30,
            **{"error.message": "Resource has been exhausted"},
        ),
    ]


def otlp(records: list[dict[str, Any]]) -> bytes:
    """The records through the real OpenTelemetry SDK and its OTLP encoder."""
    return sdk_batch(
        [(r["body"], r["attributes"], (T0 * 1000 + r["offset_ms"]) * 1_000_000) for r in records],
        scope=SCOPE,
        service="gemini-cli",
    )


RESOURCE = {
    "_rawAttributes": [
        ["service.name", "gemini-cli"],
        ["service.version", "v22.17.0"],
        ["session.id", SESSION],
    ],
    "_asyncAttributesPending": False,
    "_memoizedAttributes": {"service.name": "gemini-cli", "session.id": SESSION},
}


def js_log(record: dict[str, Any]) -> dict[str, Any]:
    """A ``LogRecordImpl`` as ``JSON.stringify`` writes it (its own fields only)."""
    seconds, ms = divmod(record["offset_ms"], 1000)
    hr = [T0 + seconds, ms * 1_000_000]
    return {
        "hrTime": hr,
        "hrTimeObserved": hr,
        "resource": RESOURCE,
        "instrumentationScope": {"name": SCOPE},
        "attributes": record["attributes"],
        "_body": record["body"],
        "totalAttributesCount": len(record["attributes"]),
        "_isReadonly": True,
        "_logRecordLimits": {"attributeCountLimit": 128, "attributeValueLengthLimit": None},
    }


JS_SPAN = {  # an HTTP client span of instrumentation-http, as the SDK serialises it
    "resource": RESOURCE,
    "instrumentationScope": {"name": "@opentelemetry/instrumentation-http", "version": "0.203.0"},
    "_spanContext": {"traceId": "a" * 32, "spanId": "b" * 16, "traceFlags": 1},
    "kind": 2,
    "attributes": {"http.url": "https://generativelanguage.googleapis.com/v1beta/models"},
    "links": [],
    "events": [],
    "status": {"code": 0},
    "endTime": [T0 + 4, 0],
    "_ended": True,
    "_duration": [0, 900_000_000],
    "name": "POST",
    "startTime": [T0 + 3, 100_000_000],
}
JS_METRICS = {
    "resource": RESOURCE,
    "scopeMetrics": [
        {
            "scope": {"name": SCOPE, "version": "v1"},
            "metrics": [
                {
                    "descriptor": {"name": "gemini_cli.tool.call.count", "type": "COUNTER"},
                    "aggregationTemporality": 1,
                    "dataPointType": 3,
                    "dataPoints": [
                        {"attributes": {}, "startTime": [T0, 0], "endTime": [T0 + 9, 0], "value": 4}
                    ],
                    "isMonotonic": True,
                }
            ],
        }
    ],
}


def outfile(records: list[dict[str, Any]], extra: str = "") -> str:
    """What ``--telemetry-outfile`` holds: each object indented, one after another."""
    objects = [js_log(r) for r in records]
    objects[3:3] = [JS_SPAN]
    objects.append(JS_METRICS)
    text = "".join(json.dumps(o, indent=2, ensure_ascii=False) + "\n" for o in objects)
    return text + extra


def tool_calls_in(records: list[dict[str, Any]]) -> int:
    return sum(1 for r in records if r["attributes"]["event.name"] == "gemini_cli.tool_call")


def test_a_gemini_cli_session_from_its_otlp_logs() -> None:
    records = session()
    decoded = decode_otlp_logs_proto(otlp(records), source="t")
    assert decoded.rejects == []
    steps = [d.step for d in decoded.drafts]
    kinds = [str(s.kind) for s in steps]
    assert kinds.count("tool_call") == kinds.count("tool_result") == tool_calls_in(records)
    assert kinds.count("model_call") == 3  # the api_responses; requests and copies are none
    assert kinds.count("compaction") == 1 and kinds.count("error") == 1
    (start,) = [s for s in steps if s.kind == "start"]
    assert start.text == "Fix the failing date test in tests/dates.py"
    assert start.agent == "gemini-cli" and start.source == "gemini_cli"
    models = [d for d in decoded.drafts if d.step.kind == "model_call"]
    router, first, _ = models
    assert router.context == "utility_router" and first.context == "main"
    assert first.step.detail["user_message"] == start.text  # the prompt rides on the main call
    assert (first.step.tokens_in, first.step.tokens_out) == (9_000, 120)
    assert first.step.finish_reason == "stop" and first.step.model == "gemini-2.5-pro"
    assert first.step.end_ts - first.step.ts == 900 * 1_000_000
    calls = [s for s in steps if s.kind == "tool_call"]
    assert [c.tool for c in calls] == [
        "read_file",
        "run_shell_command",
        "replace",
        "run_shell_command",
    ]
    assert calls[1].arguments is not None and "pytest tests/dates.py" in calls[1].arguments
    results = {s.call_id: s for s in steps if s.kind == "tool_result"}
    assert [results[c.call_id].status for c in calls] == ["ok", "error", "ok", "cancelled"]
    assert results[calls[1].call_id].error == "Command exited with code 1"
    approvals = [s for s in steps if s.kind == "approval"]
    assert [(a.status, a.detail["decision"]) for a in approvals] == [
        ("ok", "accept"),
        ("ok", "auto_accept"),
        ("denied", "reject"),
    ]
    assert [a.call_id for a in approvals] == [c.call_id for c in calls[1:]]
    assert len({c.call_id for c in calls}) == 4
    (compaction,) = [s for s in steps if s.kind == "compaction"]
    assert (compaction.detail["tokens_before"], compaction.detail["tokens_after"]) == (
        120_000,
        30_000,
    )
    # the configuration, the API requests and the GenAI copies: counted, not steps
    unread = (
        "gemini_cli.config",
        "gemini_cli.api_request",
        "gen_ai.client.inference.operation.details",
    )
    assert decoded.skipped == sum(1 for r in records if r["attributes"]["event.name"] in unread)
    assert decoded.skipped == 10 and decoded.records == len(records)


def test_the_outfile_replays_into_the_same_steps_and_a_broken_object_costs_itself(
    tmp_path: Path,
) -> None:
    records = session()
    broken = json.dumps({**js_log(records[1]), "hrTime": "yesterday"}, indent=2) + "\n"
    path = tmp_path / "telemetry.json"
    path.write_text(outfile(records, extra=broken + '{\n  "hrTime": [1, \n'))
    db = f"sqlite:///{tmp_path / 'g.db'}"
    summary = replay([path], settings=Settings.from_env(db_url=db))
    assert summary.sessions == [SESSION]
    assert summary.dead_letters == 2  # the object with a bad time, the truncated one
    assert not [a for a in summary.alerts if a.action in ("kill", "rollback")]
    with Store.open(db) as store:
        stored = store.steps(SESSION)
        reasons = sorted(letter.reason for letter in store.dead_letters())
    assert sum(1 for s in stored if s.kind == "tool_call") == tool_calls_in(records)
    assert any("hrTime must be [seconds, nanoseconds]" in r for r in reasons)
    # the same events through OTLP (a Collector) are the same steps, by id
    decoded = decode_otlp_logs_proto(otlp(records), source="t")
    otlp_db = f"sqlite:///{tmp_path / 'o.db'}"
    (tmp_path / "o").mkdir()
    doc = MessageToDict(ExportLogsServiceRequest.FromString(otlp(records)))
    (tmp_path / "o" / "logs.otlp.jsonl").write_text(json.dumps(doc) + "\n")
    replay([tmp_path / "o"], settings=Settings.from_env(db_url=otlp_db))
    with Store.open(otlp_db) as store:
        via_otlp = store.steps(SESSION)
    assert len(decoded.drafts) == len(via_otlp)
    assert sorted(s.step_id for s in via_otlp) == sorted(s.step_id for s in stored)


def test_a_collector_metrics_line_is_no_dead_letter(tmp_path: Path) -> None:
    doc = {
        "resourceMetrics": [
            {"scopeMetrics": [{"metrics": [{"name": "gemini_cli.tool.call.count"}]}]}
        ]
    }
    path = tmp_path / "collector.otlp.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    summary = replay([path], settings=Settings.from_env(db_url=f"sqlite:///{tmp_path / 'm.db'}"))
    assert summary.dead_letters == 0 and summary.sessions == []


_log_like = st.fixed_dictionaries(
    {
        "hrTime": st.sampled_from([[T0, 0], [T0, 10**9], [-1, 0], "x", [T0], [1.5, 0]]),
        "attributes": st.dictionaries(
            st.sampled_from(
                [
                    "event.name",
                    "event.timestamp",
                    "session.id",
                    "function_name",
                    "function_args",
                    "success",
                    "duration_ms",
                    "decision",
                    "input_token_count",
                    "finish_reasons",
                    "role",
                    "prompt",
                    "tokens_before",
                ]
            ),
            json_values
            | st.sampled_from(
                [
                    "gemini_cli.tool_call",
                    "gemini_cli.api_response",
                    "gemini_cli.user_prompt",
                    SESSION,
                ]
            ),
            max_size=8,
        ),
    },
    optional={"_body": json_values, "resource": json_values, "_eventName": json_values},
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_log_like | json_values | st.just(JS_SPAN) | st.just(JS_METRICS), max_size=6))
def test_the_outfile_decoder_never_raises(values: list[Any]) -> None:
    """Arbitrary values and log-record-shaped ones with arbitrary attributes: every value
    ends as steps, skipped, or a dead letter with a reason; nothing raises."""
    located = [(f"f:{i}", v) for i, v in enumerate(values)]
    decoded = decode_js_sdk_records(located, source="fuzz")
    assert decoded.records == len(values)
    assert all(r.reason for r in decoded.rejects)
    assert len(decoded.rejects) + decoded.skipped <= len(values)
    for draft in decoded.drafts:
        assert draft.session_hint and 0 <= draft.step.ts < 2**63


def test_an_unreadable_event_is_a_dead_letter_and_the_rest_of_the_batch_is_kept() -> None:
    records = session()
    nameless = tool_call(6_900, "x", args(), ok=True, decision=None)
    del nameless["attributes"]["function_name"]
    no_session = tool_call(6_950, "glob", args(pattern="*"), ok=True, decision=None)
    del no_session["attributes"]["session.id"]
    decoded = decode_otlp_logs_proto(otlp([*records, nameless, no_session]), source="t")
    reasons = sorted(r.reason for r in decoded.rejects)
    assert reasons == [
        "gemini_cli.tool_call: function_name is required",
        "gemini_cli.tool_call: session.id is required (the session the event belongs to)",
    ]
    kinds = [d.step.kind for d in decoded.drafts]
    assert kinds.count("tool_call") == tool_calls_in(records)
