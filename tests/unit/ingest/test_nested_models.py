"""A model call traced twice (a framework's span over the provider SDK's) is one step
whichever of its spans is read first (:mod:`ingest.pipeline.nested_models`).

Found by the order property on Google ADK's exports (``call_llm`` over ``generate_content``
over OpenLLMetry's ``openai.chat``): the inner span, which ends first and so is exported
first, became a model call of its own when it came in another batch than its parent.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from ingest.decoded import Decoded, SpanRecord
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.pipeline.engine import Pipeline
from models.store import Store
from tests.unit.ingest.test_dialects import Run
from trajwatch.settings import Settings

SESSION = {"gen_ai.conversation.id": "nested-1"}


def adk_call() -> list[SpanRecord]:
    """An agent run with one model call traced three times, then a tool call: the
    framework's span, the SDK's under it, the instrumented client's under that."""
    run = Run("adk")
    with run.span("invoke_agent a", {**SESSION, "gen_ai.operation.name": "invoke_agent"}):
        model = {**SESSION, "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 10}
        chat = {**model, "gen_ai.operation.name": "chat"}
        with run.span("call_llm", chat), run.span("generate_content m", chat):
            run.leaf("openai.chat", {**chat, "gen_ai.response.id": "r-1"})
        run.leaf(
            "execute_tool t",
            {**SESSION, "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
        )
    spans = decode_otlp_proto(run.request().SerializeToString(), source="test").spans
    return sorted(spans, key=lambda s: s.end_ns)  # as an exporter sends them


def stored(tmp: Path, name: str, deliveries: list[tuple[str, list[SpanRecord]]]) -> list:
    store = Store.open(f"sqlite:///{tmp / name}.db")
    try:
        pipeline = Pipeline(store, settings=Settings(lateness_ms=10_000))
        for partition, spans in deliveries:
            pipeline.feed_decoded(Decoded(spans=spans), partition=partition)
            pipeline.commit()
        pipeline.close()
        stats = pipeline.stats
        assert stats.drafts == (
            stats.drafts_stepped
            + stats.drafts_duplicate
            + stats.drafts_unstorable
            + stats.drafts_nested
        )
        return [(s.seq, s.step_id, str(s.kind)) for s in store.steps("nested-1")]
    finally:
        store.close()


def test_one_batch_keeps_the_outermost_model_span(tmp_path: Path) -> None:
    spans = adk_call()
    steps = stored(tmp_path, "one", [("0", spans)])
    calls = [step for step in steps if step[2] == "model_call"]
    outer = next(s for s in spans if s.name == "call_llm")
    assert [call[1] for call in calls] == [f"{outer.trace_id}:{outer.span_id}"]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_the_spans_of_one_call_in_any_order_and_batches_are_one_step(
    tmp_path: Path, order: tuple[int, ...]
) -> None:
    """The three model spans one per batch, in every order, on two partitions."""
    spans = adk_call()
    models = [s for s in spans if s.name in ("call_llm", "generate_content m", "openai.chat")]
    rest = [s for s in spans if s not in models]
    deliveries = [(str(i % 2), [models[k]]) for i, k in enumerate(order)] + [("0", rest)]
    assert stored(tmp_path, "split", deliveries) == stored(tmp_path, "one", [("0", spans)])


def test_an_inner_span_released_before_its_parent_came_stays(tmp_path: Path) -> None:
    """The documented limit: past the lateness window, the inner span was judged already."""
    spans = adk_call()
    inner = next(s for s in spans if s.name == "openai.chat")
    later = replace(  # a model call of another run, 60 s on: the window passes the inner one
        inner,
        trace_id="f" * 32,
        span_id="e" * 16,
        parent_span_id=None,
        start_ns=inner.start_ns + 60 * 10**9,
        end_ns=inner.end_ns + 60 * 10**9,
    )
    rest = [s for s in spans if s is not inner]
    steps = stored(tmp_path, "late", [("0", [inner]), ("0", [later]), ("0", rest)])
    assert "nested-1/model_call/r-1" in [step[1] for step in steps]
