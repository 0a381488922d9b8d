"""The two stages of the Kafka worker, in one process: what crosses the repartition topic
round-trips exactly, and a session's state survives leaving memory.

No broker here (tests/integration/kafka/test_kafka_worker.py has one): these check the
pieces the worker's equality with a single-process replay rests on, on every recorded
batch.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.pipeline.engine import Pipeline
from ingest.pipeline.resolution import Resolved
from ingest.sources.files import read_file
from ingest.sources.kafka import (
    MAX_RECORD_BYTES,
    KafkaOptions,
    decode_message,
    repartition_records,
    split_by_trace,
)
from ingest.sources.repartition import decode_resolved, encode_resolved
from models.store import Store
from tests.support.paths import ROOT
from trajwatch.config import detector_set, load_config
from trajwatch.settings import Settings

RECORDED = sorted((ROOT / "fixtures" / "recorded").glob("*.otlp.binpb*"))
CONFIG = ROOT / "trajwatch.toml"


def batches(count: int) -> list[bytes]:
    return [
        value
        for path in RECORDED[:count]
        for record in read_file(path, path.name)
        if record.format == "otlp_proto"
        for _, value in split_by_trace(record.payload)
    ]


def feed(pipeline: Pipeline, values: list[bytes], options: KafkaOptions, first: int = 0) -> None:
    for offset, value in enumerate(values, start=first):
        decoded = decode_message(
            options, options.spans_topic, 0, offset, value, max_attribute_bytes=1 << 20
        )
        pipeline.feed_decoded(decoded, partition="p", position=offset)


def test_every_released_draft_round_trips_through_the_repartition_record(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        pipeline = Pipeline(store)
        feed(pipeline, batches(12), KafkaOptions())
        pipeline.end_partition("p")
        released = pipeline.resolve()
    assert len(released) > 500
    assert any(item.egress_parent for item in released)
    assert [decode_resolved(encode_resolved(item)) for item in released] == released


def test_split_by_trace_keeps_every_span_once_keyed_by_its_trace() -> None:
    for path in RECORDED[:5]:
        for record in read_file(path, path.name):
            whole = ExportTraceServiceRequest.FromString(record.payload)
            spans = sorted(
                s.SerializeToString()
                for rs in whole.resource_spans
                for ss in rs.scope_spans
                for s in ss.spans
            )
            parts = split_by_trace(record.payload)
            split = []
            for key, value in parts:
                for rs in ExportTraceServiceRequest.FromString(value).resource_spans:
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            assert s.trace_id.hex().encode() == key
                            split.append(s.SerializeToString())
            assert sorted(split) == spans


def test_otlp_json_messages_decode_to_the_same_drafts_as_otlp_proto(tmp_path: Path) -> None:
    proto = KafkaOptions()
    as_json = KafkaOptions(spans_encoding="otlp_json")
    values = batches(3)
    texts = [
        json_format.MessageToJson(ExportTraceServiceRequest.FromString(v)).encode() for v in values
    ]
    results = []
    for options, payloads in ((proto, values), (as_json, texts)):
        with Store.open(f"sqlite:///{tmp_path / f'{options.spans_encoding}.db'}") as store:
            pipeline = Pipeline(store)
            feed(pipeline, payloads, options)
            pipeline.close()
            results.append([s for info in store.sessions() for s in store.steps(info.session_id)])
    assert results[0] and results[0] == results[1]


def test_sessions_evicted_from_memory_continue_from_their_stored_state(tmp_path: Path) -> None:
    """One commit per batch and room for one live session: every session is reloaded
    from its stored state again and again, and still raises exactly the alerts (and
    stores exactly the steps) of a run that kept them all in memory."""
    detectors = detector_set(load_config(CONFIG))
    values = batches(30)
    outcomes = []
    for name, max_sessions in (("kept", 10_000), ("evicted", 1)):
        settings = Settings(db_url=f"sqlite:///{tmp_path / name}.db", max_sessions=max_sessions)
        with Store.open(settings.db_url) as store:
            pipeline = Pipeline(store, settings=settings, detectors=detectors)
            for offset, value in enumerate(values):
                decoded = decode_message(
                    KafkaOptions(), "otlp_spans", 0, offset, value, max_attribute_bytes=1 << 20
                )
                pipeline.feed_decoded(decoded, partition="p", position=offset)
                pipeline.commit()
            pipeline.close()
            steps = [s for info in store.sessions() for s in store.steps(info.session_id)]
            outcomes.append((steps, [a.alert_id for a in store.alerts()]))
    assert outcomes[0][1], "the input raises alerts: the comparison means something"
    assert outcomes[1] == outcomes[0]


def test_the_sequencing_stage_fed_resolved_drafts_stores_what_one_pipeline_stores(
    tmp_path: Path,
) -> None:
    """The ordering stage's output, serialised and fed to a second pipeline in chunks
    (as the detect stage reads the repartition topic), stores every step and alert the
    one-pipeline run stores when that resolves at the same points (sessions and egress
    causes are resolved from the span tree when a batch is resolved: per message here,
    as per poll in the worker, per commit in replay)."""
    detectors = detector_set(load_config(CONFIG))
    values = batches(20)
    with Store.open(f"sqlite:///{tmp_path / 'one.db'}") as store:
        one = Pipeline(store, detectors=detectors)
        for offset, value in enumerate(values):
            feed(one, [value], KafkaOptions(), first=offset)
            one.commit()
        one.close()
        want = (
            [s for info in store.sessions() for s in store.steps(info.session_id)],
            [a.alert_id for a in store.alerts()],
        )
    with Store.open(f"sqlite:///{tmp_path / 'two.db'}") as store:
        ordering = Pipeline(store)
        sequencing = Pipeline(store, detectors=detectors)
        wire: list[bytes] = []
        for offset, value in enumerate(values):
            feed_one = [value]
            decoded = decode_message(
                KafkaOptions(), "otlp_spans", 0, offset, feed_one[0], max_attribute_bytes=1 << 20
            )
            ordering.feed_decoded(decoded, partition="p", position=offset)
            wire += [encode_resolved(item) for item in ordering.resolve()]
        ordering.end_partition("p")
        wire += [encode_resolved(item) for item in ordering.resolve()]
        for start in range(0, len(wire), 97):
            chunk: list[Resolved] = [decode_resolved(w) for w in wire[start : start + 97]]
            sequencing.feed_resolved(chunk)
            sequencing.commit()
        got = (
            [s for info in store.sessions() for s in store.steps(info.session_id)],
            [a.alert_id for a in store.alerts()],
        )
    assert want[1] and got == want


def test_a_draft_too_large_for_a_record_is_a_dead_letter_and_its_neighbours_go_on(
    tmp_path: Path,
) -> None:
    """A step under the attribute cap can still encode past the brokers' 1 MiB message
    limit (non-ASCII text is escaped six bytes a character): it would never be written
    and would stall its partition, so it is dead-lettered with the reason instead."""
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as store:
        pipeline = Pipeline(store)
        feed(pipeline, batches(1), KafkaOptions())
        pipeline.end_partition("p")
        released = pipeline.resolve()
    big = next(i for i, item in enumerate(released) if item.draft.step.arguments)
    huge_text = "漢字" * 100_000  # 600 KB of UTF-8, 1.2 MB escaped
    step = released[big].draft.step.with_(arguments=huge_text)
    items = [*released[:big], replace(released[big], draft=replace(released[big].draft, step=step))]
    items += released[big + 1 :]
    records, dead = repartition_records("steps", items)
    assert [decode_resolved(r.value) for r in records] == released[:big] + released[big + 1 :]
    assert [r.key for r in records] == [
        i.session_id.encode() for i in released[:big] + released[big + 1 :]
    ]
    assert all(len(r.key) + len(r.value) <= MAX_RECORD_BYTES for r in records)
    (letter,) = dead
    assert "repartition record limit" in letter.reason
    assert step.step_id in letter.location
    assert len(letter.payload) <= 64 * 1024
