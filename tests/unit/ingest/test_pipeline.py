"""The pipeline end to end on a real store: ordering, identity, sessions, compaction."""

from __future__ import annotations

import json
import random
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.formats.otlp_json import to_otlp_json
from ingest.pipeline.engine import Pipeline
from models.records import StepKind
from models.store import Store
from trajwatch.settings import Settings

T0 = 1_767_000_000_000_000_000
SEC = 1_000_000_000


def event(seq: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "session_id": "s1", "seq": seq, "ts": (T0 + seq * SEC) / 1e9, **fields}


def coding_session() -> list[dict[str, Any]]:
    events = [
        event(
            0,
            "session_start",
            goal="Fix the flaky test in tests/test_io.py",
            policy_id="coding-default",
            workspace="/work/repo",
        )
    ]
    seq = 1
    tokens = 20_000
    for i in range(6):
        tokens += 9_000
        events.append(
            event(
                seq, "model_call", model="m", tokens_in=tokens, tokens_out=300, response_id=f"r{i}"
            )
        )
        events.append(
            event(
                seq + 1,
                "tool_call",
                tool="bash",
                call_id=f"c{i}",
                arguments={"command": f"pytest tests/test_io.py -k case{i}"},
            )
        )
        events.append(event(seq + 2, "tool_result", call_id=f"c{i}", ok=i % 2 == 0))
        seq += 3
    # the context is compacted without an explicit event: input tokens fall from 74k to 12k
    events.append(
        event(seq, "model_call", model="m", tokens_in=12_000, tokens_out=200, response_id="r-after")
    )
    events.append(event(seq + 1, "session_end", status="success", claimed_done=True))
    return events


def run(store: Store, events: list[dict[str, Any]], *, lateness_ms: int = 10_000) -> Pipeline:
    pipeline = Pipeline(store, settings=Settings(lateness_ms=lateness_ms))
    for i, e in enumerate(events):
        pipeline.feed_event(json.dumps(e).encode(), source="test", location=f"l{i}", partition="p")
    pipeline.close()
    return pipeline


def test_events_become_ordered_steps_with_inferred_compaction(store: Store) -> None:
    run(store, coding_session())
    steps = store.steps("s1")
    assert [s.seq for s in steps] == list(range(len(steps)))
    assert [s.ts for s in steps] == sorted(s.ts for s in steps)
    compactions = [s for s in steps if s.kind == StepKind.COMPACTION]
    assert len(compactions) == 1
    (compaction,) = compactions
    assert compaction.detail["inferred"] is True
    assert (
        compaction.detail["tokens_before"] == 74_000 and compaction.detail["tokens_after"] == 12_000
    )
    after = steps[compaction.seq + 1]
    assert after.kind == StepKind.MODEL_CALL and after.model_session == 1
    assert all(s.model_session == 0 for s in steps[: compaction.seq])
    calls = [s for s in steps if s.kind == StepKind.TOOL_CALL]
    # Every tool call gets its action cluster and the sub-goal graph's progress.
    assert len({s.detail["cluster"] for s in calls}) == 1  # six runs of the same test file
    assert all(0.0 <= s.detail["progress"] <= 1.0 for s in calls)
    (info,) = store.sessions(["s1"])
    assert info.goal == "Fix the flaky test in tests/test_io.py"
    assert info.policy_id == "coding-default" and info.claimed_done is True


def test_shuffled_and_duplicated_delivery_stores_each_step_once_in_order(store: Store) -> None:
    in_order = coding_session()
    run(store, in_order)
    # The same session delivered shuffled (within the lateness window) and twice over.
    renamed = [{**e, "session_id": "s2"} for e in in_order]
    shuffled = random.Random(7).sample(renamed, len(renamed)) * 2
    pipeline = run(store, shuffled, lateness_ms=60_000)

    def shape(session: str) -> list[tuple[object, ...]]:
        return [
            (s.seq, s.kind, s.call_id, s.ts, s.step_id.removeprefix(session))
            for s in store.steps(session)
        ]

    assert shape("s2") == shape("s1")
    assert (
        pipeline.stats.duplicates == len(shape("s1")) - 1
    )  # the inferred compaction is derived once
    assert not any(s.detail.get("late") for s in store.steps("s2"))


def test_replaying_twice_stores_nothing_twice(store: Store) -> None:
    first = run(store, coding_session())
    counts = {t: store.count(t) for t in ("sessions", "steps", "alerts", "dead_letters")}
    second = run(store, [*coding_session(), {"type": "nonsense"}])
    run(store, [*coding_session(), {"type": "nonsense"}])
    assert store.count("steps") == counts["steps"]
    assert store.count("dead_letters") == counts["dead_letters"] + 1  # the same bad record: once
    assert second.stats.new_steps == 0
    assert second.stats.duplicates == first.stats.steps


def test_late_event_behind_the_watermark_takes_its_place_when_the_session_settles(
    store: Store,
) -> None:
    events = coding_session()
    late = events.pop(5)  # a tool_call that arrives after everything else
    pipeline = run(store, [*events, late], lateness_ms=0)
    steps = store.steps("s1")
    assert pipeline.stats.rejudged == 1
    assert [s.ts for s in steps] == sorted(s.ts for s in steps)
    (placed,) = [s for s in steps if s.call_id == late["call_id"] and s.kind == StepKind.TOOL_CALL]
    assert placed.seq == 5 and not any(s.detail.get("late") for s in steps)


def _otlp_batches() -> list[bytes]:
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def span(
        span_id: int,
        parent: int | None,
        name: str,
        start: int,
        end: int,
        attrs: dict[str, Any],
        kind: int = 1,
    ) -> Span:
        s = Span(
            trace_id=bytes.fromhex("ab" * 16),
            span_id=span_id.to_bytes(8, "big"),
            name=name,
            kind=kind,
            start_time_unix_nano=T0 + start * SEC,
            end_time_unix_nano=T0 + end * SEC,
        )
        if parent:
            s.parent_span_id = parent.to_bytes(8, "big")
        for key, value in attrs.items():
            kv = s.attributes.add()
            kv.key = key
            if isinstance(value, int):
                kv.value.int_value = value
            else:
                kv.value.string_value = value
        return s

    root = span(
        1,
        None,
        "invoke_agent a",
        0,
        100,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": "conv-9",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "content": "Summarise the logs"}]
            ),
        },
    )
    tool = span(
        2,
        1,
        "execute_tool fetch",
        10,
        20,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "fetch",
            "gen_ai.tool.call.id": "t1",
            "gen_ai.tool.call.arguments": '{"url": "https://example.org/a"}',
        },
    )
    http = span(
        3,
        2,
        "GET",
        11,
        12,
        {"http.request.method": "GET", "url.full": "https://example.org/a"},
        kind=3,
    )
    batches = []
    # children first, the root (the only span naming the session) last,
    # as a BatchSpanProcessor sends them
    for group in ([http, tool], [root]):
        request = ExportTraceServiceRequest()
        request.resource_spans.add().scope_spans.add().spans.extend(group)
        batches.append(request.SerializeToString())
    return batches


def test_children_first_batches_resolve_session_and_egress_parent(store: Store) -> None:
    pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000))
    for i, data in enumerate(_otlp_batches()):
        pipeline.feed_otlp_proto(data, source="kafka", location=f"otlp_spans/0@{i}", partition="0")
    pipeline.close()
    steps = store.steps("conv-9")
    assert [s.kind for s in steps] == ["start", "tool_call", "egress", "tool_result", "end"]
    egress = steps[2]
    assert egress.parent_step_id == "conv-9/tool_call/t1" == steps[1].step_id
    assert egress.egress_host == "example.org"
    assert steps[3].parent_step_id == steps[1].step_id
    assert store.count("steps") == 5


def test_json_and_protobuf_deliveries_of_the_same_batch_are_one_set_of_steps(store: Store) -> None:
    pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000))
    for i, data in enumerate(_otlp_batches()):
        pipeline.feed_otlp_proto(data, source="kafka", location=f"p@{i}", partition="0")
        doc = to_otlp_json(ExportTraceServiceRequest.FromString(data))
        pipeline.feed_otlp_json(json.dumps(doc), source="http", location=f"j@{i}", partition="0")
    pipeline.close()
    assert store.count("steps") == 5
    assert pipeline.stats.duplicates == 5


def test_a_step_seen_by_two_sources_keeps_the_facts_of_both(store: Store) -> None:
    pipeline = Pipeline(store, settings=Settings(lateness_ms=1_000_000))
    for i, data in enumerate(_otlp_batches()):
        pipeline.feed_otlp_proto(data, source="kafka", location=f"p@{i}", partition="0")
    # The runtime's log says what the span does not: the policy and the budget.
    start = {
        "type": "session_start",
        "session_id": "conv-9",
        "seq": 0,
        "ts": (T0 + SEC) / 1e9,
        "goal": "Summarise the logs",
        "policy_id": "ops-v1",
        "budget": {"tokens": 1000},
    }
    pipeline.feed_event(start, source="events", location="e@0", partition="0")
    pipeline.close()
    first = store.steps("conv-9")[0]
    assert first.kind == "start" and first.source == "otlp"  # the span's start came first
    assert first.detail["policy_id"] == "ops-v1" and first.detail["budget"] == {"tokens": 1000}
    (info,) = store.sessions(["conv-9"])
    assert info.policy_id == "ops-v1"


def test_a_release_reads_what_it_needs_from_the_store_before_it_sequences(
    store: Store, monkeypatch: Any
) -> None:
    """Every store read of a release (cursors, the steps a reopened session rolls forward
    through, turn sources, existing ids) comes before its first step is sequenced
    (:mod:`ingest.pipeline.lookups`)."""
    import ingest.pipeline.engine
    from models.store import StoreUnit

    log: list[str] = []

    def logged(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            log.append(name)
            return fn(*args, **kwargs)

        return wrapper

    for name in ("session_cursors", "steps", "step_sources", "existing_step_ids"):
        monkeypatch.setattr(StoreUnit, name, logged(name, getattr(StoreUnit, name)))
    sequence = ingest.pipeline.engine.sequence
    monkeypatch.setattr(ingest.pipeline.engine, "sequence", logged("sequence", sequence))
    pipeline = Pipeline(store, settings=Settings(max_sessions=1, checkpoint_steps=1_000))

    def commit(events: list[dict[str, Any]]) -> list[str]:
        for i, e in enumerate(events):
            pipeline.feed_event(e, source="test", location=f"l{i}", partition="p")
        pipeline.end_partition("p")
        log.clear()
        pipeline.commit()
        return list(log)

    events = coding_session()
    commit(events[:4])
    commit([{**e, "session_id": "s2"} for e in events[:2]])  # s1 is evicted after this
    # s2 (live) sequenced first, then s1 reopened: rolled forward through its stored steps
    reads = commit([{**events[2], "session_id": "s2"}, *events[4:]])
    assert "steps" in reads and "sequence" in reads
    first = reads.index("sequence")
    assert set(reads[first:]) == {"sequence"}
