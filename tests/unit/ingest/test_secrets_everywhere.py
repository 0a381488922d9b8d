"""No credential reaches any stored column: secrets of 40+ providers go through the real
pipeline (session events, OTLP spans, dead letters) into a real store, and every column
of every row of every table (read from the metadata, not listed here) is scanned for the
secrets and for distinctive pieces of them. Look-alikes must come out unchanged.

Secret values are made up and assembled at runtime (tests/unit/features/test_redact.py).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import create_engine, select

from detectors.registry import DetectorSet, load_builtin
from ingest.pipeline.engine import Pipeline
from models.store import Store
from models.tables import Base
from tests.unit.features.test_redact import (
    CONTEXT_SECRETS,
    LOOK_ALIKES,
    PROVIDER_TOKENS,
    needles,
    provider_secret,
)
from trajwatch.settings import Settings

T0 = 1_767_000_000.0


def _carriers() -> list[tuple[str, str]]:
    """(text to feed, secret it holds) for every provider and context secret."""
    out = [(provider_secret(k), provider_secret(k)) for k in sorted(PROVIDER_TOKENS)]
    out += [(t.format(s=s), s) for t, s in (CONTEXT_SECRETS[k] for k in sorted(CONTEXT_SECRETS))]
    return out


def _escaped(text: str) -> str:
    """``text`` as a JSON string literal whose first character is a ``\\u`` escape: the
    redactor sees the escape, decoding yields the secret."""
    return f'"\\u{ord(text[0]):04x}' + json.dumps(text)[2:]


def _session_events(session: str, text: str, look_alike: str) -> list[str | bytes]:
    def ev(seq: int, kind: str, **fields: Any) -> str:
        return json.dumps(
            {"type": kind, "session_id": session, "seq": seq, "ts": T0 + seq, **fields}
        )

    shell = f"curl -s -H 'X-Trace: {text}' https://api.example.com/v1/{text} # {look_alike}"
    events: list[str | bytes] = [
        ev(
            0,
            "session_start",
            goal=f"Rotate the key {text} for {look_alike}",
            workspace=f"/work/{text}",
            repository=f"https://github.com/acme/app?ref={text}",
            policy_id="coding-default",
            system_instructions=f"use {text}",
        ),
        ev(
            1,
            "model_call",
            model="m",
            tokens_in=100,
            tokens_out=5,
            output_text=f"I will use {text}",
        ),
    ]
    seq = 2
    for i in range(8):  # a loop of the same call: runaway_loop's alert quotes the action
        events.append(
            ev(
                seq,
                "tool_call",
                tool="bash",
                call_id=f"c{i}",
                arguments={"command": shell, "env": {"X_NOTE": text}, "look": look_alike},
                idempotency_key=f"retry {text}",
            )
        )
        events.append(
            ev(
                seq + 1,
                "tool_result",
                call_id=f"c{i}",
                ok=False,
                error=f"401 for {text}",
                output=f"denied {text}",
            )
        )
        seq += 2
    # arguments as a JSON text in which only decoding reveals the secret
    encoded = (
        '{"url": '
        + _escaped(f"https://hooks.example.com/in/{text}")
        + ', "body": '
        + (_escaped(text) + "}")
    )
    events += [
        ev(seq, "tool_call", tool="web_fetch", call_id="w1", arguments=encoded),
        ev(seq + 1, "approval", approved=True, reason=f"ok {text}", tool="bash", call_id="c9"),
        ev(seq + 2, "compaction", tokens_before=9000, tokens_after=100, summary=f"kept {text}"),
        ev(seq + 3, "error", message=f"crash: {text}", code="E1"),
        ev(seq + 4, "session_end", status="failure", summary=f"gave up on {text}"),
        # dead letters: not JSON, and JSON that breaks the schema
        f'{{"type": "tool_call", "session_id": "{session}", "arguments": "{text}'.encode(),
        json.dumps({"type": "tool_call", "session_id": session, "seq": "x", "ts": text}),
    ]
    return events


def _otlp(session: str, text: str, n: int) -> dict[str, Any]:
    def attrs(values: dict[str, str]) -> list[dict[str, Any]]:
        return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]

    trace = f"{n + 1:032x}"
    start = int(T0 * 1e9) + 100 * 10**9

    def span(sid: int, parent: int | None, name: str, values: dict[str, str], **extra: Any) -> Any:
        out = {
            "traceId": trace,
            "spanId": f"{sid:016x}",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(start + sid * 10**6),
            "endTimeUnixNano": str(start + sid * 10**6 + 500),
            "attributes": attrs(values),
            **extra,
        }
        if parent:
            out["parentSpanId"] = f"{parent:016x}"
        return out

    spans = [
        span(
            1,
            None,
            "invoke_agent a",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": session + "-otlp",
                "gen_ai.input.messages": json.dumps([{"role": "user", "content": f"do {text}"}]),
            },
        ),
        span(
            2,
            1,
            "execute_tool fetch",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "fetch",
                "gen_ai.tool.call.id": "t1",
                "gen_ai.tool.call.arguments": json.dumps({"url": f"https://x.example.com/{text}"}),
                "gen_ai.tool.call.result": f"body {text}",
            },
            status={"code": 2, "message": f"failed with {text}"},
            events=[
                {
                    "name": "exception",
                    "timeUnixNano": str(start + 2 * 10**6 + 1),
                    "attributes": attrs({"exception.message": f"boom {text}"}),
                }
            ],
        ),
        span(
            3,
            2,
            "GET",
            {"http.request.method": "GET", "url.full": f"https://x.example.com/{text}?q=1"},
            kind=3,
        ),
        span(
            4,
            1,
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": f"said {text}"}]}]
                ),
            },
        ),
    ]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _rows(db_url: str) -> list[tuple[str, str, str]]:
    """(table, column, value as text) for every cell of every table."""
    engine = create_engine(db_url)
    out = []
    try:
        with engine.connect() as connection:
            for table in Base.metadata.sorted_tables:
                for row in connection.execute(select(table)):
                    for column, value in zip(table.columns, row, strict=True):
                        if value is None:
                            continue
                        if isinstance(value, bytes):
                            text = value.decode("latin-1")
                        elif isinstance(value, (dict, list)):
                            text = json.dumps(value, ensure_ascii=False)
                        else:
                            text = str(value)
                        out.append((table.name, column.name, text))
    finally:
        engine.dispose()
    return out


def test_no_secret_in_any_column_of_any_table(store: Store, db_url: str) -> None:
    load_builtin()
    pipeline = Pipeline(
        store, settings=Settings(lateness_ms=0), detectors=DetectorSet.from_config()
    )
    carriers = _carriers()
    assert len(PROVIDER_TOKENS) >= 30
    for n, (text, _) in enumerate(carriers):
        look_alike = LOOK_ALIKES[n % len(LOOK_ALIKES)]
        for i, line in enumerate(_session_events(f"s{n}", text, look_alike)):
            pipeline.feed_event(line, source="events", location=f"e{n}:{i}", partition="e")
        pipeline.feed_otlp_json(
            _otlp(f"s{n}", text, n), source="otlp", location=f"o{n}", partition="o"
        )
    pipeline.close()

    cells = _rows(db_url)
    tables = {t for t, _, _ in cells}
    assert {"steps", "sessions", "alerts", "dead_letters"} <= tables
    leaks = [
        (table, column, needle)
        for _, secret in carriers
        for needle in needles(secret)
        for table, column, value in cells
        if needle in value
    ]
    assert sorted({(t, c, n[:24]) for t, c, n in leaks}) == []
    # the secrets were there to find: markers in the stored content and derived columns
    redacted = {(t, c) for t, c, v in cells if "[REDACTED:" in v}
    for where in (
        ("steps", "action"),
        ("steps", "arguments"),
        ("steps", "egress_url"),
        ("steps", "idempotency_key"),
        ("steps", "text"),
        ("steps", "error"),
        ("steps", "result"),
        ("sessions", "goal"),
        ("sessions", "workspace"),
        ("dead_letters", "payload"),
        ("alerts", "reason"),
    ):
        assert where in redacted, where
    # look-alikes are content, not secrets: stored as they came
    stored = "\n".join(v for t, c, v in cells if (t, c) == ("steps", "arguments"))
    for look_alike in LOOK_ALIKES:
        assert look_alike in stored, look_alike
