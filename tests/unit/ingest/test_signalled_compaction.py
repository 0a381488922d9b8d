"""Compaction as the GenAI conventions mark it (semantic-conventions-genai PR #162):
``gen_ai.conversation.compacted`` on inference spans, the ``compaction`` message part, and
the compaction spans SDKs emit, each an explicit ``compaction`` step; the token-drop rule
stays the fallback. Also what inference spans keep of their system instructions."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from ingest.pipeline.engine import Pipeline
from models.store import Store
from trajwatch.settings import Settings

T0 = 1_767_000_000_000_000_000
SEC = 1_000_000_000


def _replay(store: Store, calls: list[dict[str, Any]], extra: list[tuple[str, dict]] = ()) -> list:
    """One agent run: a chat span per entry of ``calls`` (its extra attributes), and the
    ``extra`` spans (name, attributes) between the first and the second call."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "coder"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent-runtime", "1.0")
    conv = {"gen_ai.conversation.id": "sess-c"}
    with tracer.start_as_current_span(
        "invoke_agent coder",
        start_time=T0,
        end_on_exit=False,
        attributes={"gen_ai.operation.name": "invoke_agent", **conv},
    ) as root:
        for i, attrs in enumerate(calls):
            t = T0 + (i + 1) * 10 * SEC
            if i == 1:
                for name, span_attrs in extra:
                    s = tracer.start_span(
                        name, start_time=t - 5 * SEC, attributes={**conv, **span_attrs}
                    )
                    s.end(end_time=t - 4 * SEC)
            chat = tracer.start_span(
                "chat m",
                kind=SpanKind.CLIENT,
                start_time=t,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.usage.input_tokens": 5_000 + i,
                    "gen_ai.usage.output_tokens": 10,
                    **conv,
                    **attrs,
                },
            )
            chat.end(end_time=t + SEC)
        root.end(end_time=T0 + 100 * SEC)
    pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000))
    pipeline.feed_otlp_proto(
        encode_spans(exporter.get_finished_spans()).SerializeToString(),
        source="http",
        location="t@0",
        partition="0",
    )
    pipeline.close()
    return store.steps("sess-c")


def _compactions(steps: list) -> list:
    return [s for s in steps if s.kind == "compaction"]


def test_the_compacted_flag_is_one_compaction_before_the_first_marked_call(store: Store) -> None:
    # every call after the compaction carries the flag (the convention's "effective
    # context is a compacted view"): one compaction, not one per call
    flag = {"gen_ai.conversation.compacted": True}
    steps = _replay(store, [{}, {}, flag, flag, flag])
    found = _compactions(steps)
    assert len(found) == 1
    kinds = [s.kind for s in steps]
    at = kinds.index("compaction")
    assert kinds[at + 1] == "model_call" and steps[at + 1].detail["compacted"] is True
    assert found[0].detail["inferred"] is False
    assert found[0].detail["signal"] == "gen_ai.conversation.compacted"
    assert found[0].detail["tokens_before"] == 5_001 and found[0].detail["tokens_after"] == 5_002
    assert steps[at + 1].model_session == 1 and steps[at - 1].model_session == 0


def test_a_flag_on_the_first_call_only_counts_each_time_it_comes_back(store: Store) -> None:
    flag = {"gen_ai.conversation.compacted": "true"}
    steps = _replay(store, [{}, flag, {}, {}, flag, {}])
    assert len(_compactions(steps)) == 2
    assert steps[-1].model_session == 2


def test_each_new_compaction_part_is_a_compaction_with_its_summary(store: Store) -> None:
    def with_part(part_id: str, summary: str) -> dict[str, Any]:
        messages = [
            {
                "role": "assistant",
                "parts": [{"type": "compaction", "id": part_id, "content": summary}],
            },
            {"role": "user", "parts": [{"type": "text", "content": "go on"}]},
        ]
        return {"gen_ai.input.messages": json.dumps(messages)}

    first = with_part("cmp-1", "Fixed the parser; tests pass; next: docs.")
    second = with_part("cmp-2", "Docs written; next: release notes.")
    steps = _replay(store, [{}, first, first, second])
    found = _compactions(steps)
    assert [c.text for c in found] == [
        "Fixed the parser; tests pass; next: docs.",
        "Docs written; next: release notes.",
    ]
    assert all(c.detail["signal"] == "compaction part" for c in found)


def test_a_compaction_span_is_a_compaction_and_explains_the_flag_after_it(store: Store) -> None:
    # pydantic-ai's compact_messages span, then the next call marked compacted: one compaction
    span = (
        "compact_messages",
        {
            "gen_ai.conversation.compacted": True,
            "compaction.strategy": "summary",
            "compaction.tokens_before": 120_000,
            "compaction.tokens_after": 9_000,
        },
    )
    flag = {"gen_ai.conversation.compacted": True}
    steps = _replay(store, [{}, flag, flag], extra=[span])
    found = _compactions(steps)
    assert len(found) == 1
    assert found[0].detail == {"tokens_before": 120_000, "tokens_after": 9_000, "inferred": False}


def test_no_signal_no_compaction(store: Store) -> None:
    steps = _replay(store, [{}, {}, {}])
    assert _compactions(steps) == []
    assert all("compacted" not in s.detail for s in steps if s.kind == "model_call")


def test_system_instructions_on_every_inference_span_are_stored_once(store: Store) -> None:
    rules = json.dumps([{"type": "text", "content": "Never run rm -rf."}])
    other = json.dumps([{"type": "text", "content": "Ask before any git push."}])
    steps = _replay(
        store,
        [{"gen_ai.system_instructions": rules}] * 3 + [{"gen_ai.system_instructions": other}],
    )
    kept = [s.detail.get("system_instructions") for s in steps if s.kind == "model_call"]
    assert kept[1:3] == [None, None]
    assert "Never run rm -rf." in kept[0] and "Ask before any git push." in kept[3]
