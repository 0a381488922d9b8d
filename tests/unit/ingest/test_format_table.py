"""The format table is the one dispatch: the OTLP/HTTP receiver and the Kafka worker name a
record's format by the table's recognisers and decode it with the table's ``decode``."""

from __future__ import annotations

from ingest.formats.table import FORMATS, HTTP_KINDS, KAFKA_ENCODINGS, RawRecord, decode
from ingest.sources.files import read_file
from ingest.sources.kafka import ENCODINGS, KafkaOptions, decode_message
from ingest.sources.otlp_http import decode_body
from tests.support.paths import ROOT

BATCHES = sorted((ROOT / "fixtures" / "recorded").glob("*.otlp.binpb*"))


def test_every_wire_name_is_a_format_of_the_table() -> None:
    assert set(HTTP_KINDS) == {"traces/proto", "traces/json", "logs/proto", "logs/json"}
    assert ENCODINGS == ("otlp_proto", "otlp_json")
    assert all(name in FORMATS for name in (*HTTP_KINDS.values(), *KAFKA_ENCODINGS.values()))


def test_a_kafka_topic_carries_the_format_of_its_encoding() -> None:
    for encoding in ENCODINGS:
        options = KafkaOptions(spans_encoding=encoding)
        assert options.topic_format(options.spans_topic) == KAFKA_ENCODINGS[encoding]
        assert options.topic_format(options.events_topic) == "event"


def test_the_receiver_and_the_worker_decode_a_batch_alike() -> None:
    batch = next(read_file(BATCHES[0], "p")).payload
    http = decode_body("traces/proto", batch, location="/v1/traces", max_attribute_bytes=1 << 20)
    kafka = decode_message(KafkaOptions(), "otlp_spans", 0, 7, batch, max_attribute_bytes=1 << 20)
    assert http.spans and [s.span_id for s in http.spans] == [s.span_id for s in kafka.spans]
    assert http.records == kafka.records == len(http.spans)


def test_a_record_no_decoder_can_read_is_one_dead_letter_of_its_source() -> None:
    record = RawRecord("invalid", {"x": 1}, "here", "p", "not JSON", source="kafka")
    decoded = decode(record, max_attribute_bytes=1 << 20)
    assert [(d.source, d.location, d.reason) for d in decoded.rejects] == [
        ("kafka", "here", "not JSON")
    ]
    assert not decoded.spans and not decoded.drafts
