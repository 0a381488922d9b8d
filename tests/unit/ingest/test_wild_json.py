"""OTLP/JSON as found in the wild: Tempo's API shapes, pre-1.0 keys, base64 ids, documents
back to back, and values that parse as JSON but would break a later stage. Each record
ends as a span (a step) or a dead letter with its reason; nothing vanishes."""

from __future__ import annotations

import base64
import copy
import json
import lzma
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.formats.otlp_json import decode_otlp_json, to_otlp_json
from ingest.formats.otlp_proto import decode_otlp_proto
from ingest.sources.files import read_file
from models.store import Store
from tests.support.paths import CORPUS
from trajwatch.cli.main import main

TEMPO = CORPUS / "recordings/otlp/agentevals-dev__agentevals__tempo_export_with_batches.json.xz"
needs_corpus = pytest.mark.skipif(not TEMPO.exists(), reason="needs ../shared/corpus")
T0 = 1_767_000_000_000_000_000


def batch(n: int = 3, trace: int = 1) -> dict[str, Any]:
    """``n`` tool spans as OTLP/JSON (the spec's current keys, hex ids)."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "agent"
    ss = rs.scope_spans.add()
    ss.scope.name = "runtime"
    for i in range(n):
        span = ss.spans.add()
        span.trace_id = bytes([trace] * 16)
        span.span_id = bytes([i + 1] * 8)
        span.name = f"execute_tool t{i}"
        span.start_time_unix_nano = T0 + i
        span.end_time_unix_nano = T0 + i + 1
        attr = span.attributes.add()
        attr.key, attr.value.string_value = "gen_ai.operation.name", "execute_tool"
    return to_otlp_json(request)


def spans_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"]  # type: ignore[no-any-return]


def legacy(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the pre-1.0 keys an older SDK or Collector writes."""
    out = copy.deepcopy(doc)
    for rs in out["resourceSpans"]:
        rs["instrumentationLibrarySpans"] = rs.pop("scopeSpans")
        for ss in rs["instrumentationLibrarySpans"]:
            ss["instrumentationLibrary"] = ss.pop("scope")
    return out


def decode(doc: Any) -> Any:
    return decode_otlp_json(json.dumps(doc), source="t", location="f")


def seen(decoded: Any) -> list[tuple[str, str, str, int]]:
    return [(s.trace_id, s.span_id, s.scope, s.start_ns) for s in decoded.spans]


# -- the real Tempo export -------------------------------------------------------------


def raw_spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every span in a ``resourceSpans`` or ``batches`` document, walked by hand (both key
    generations)."""
    return [
        span
        for rs in doc.get("batches", []) + doc.get("resourceSpans", [])
        for key in ("scopeSpans", "instrumentationLibrarySpans")
        for ss in rs.get(key, [])
        for span in ss["spans"]
    ]


def is_tool_span(span: dict[str, Any]) -> bool:
    operation = [
        a["value"].get("stringValue")
        for a in span.get("attributes", [])
        if a["key"] == "gen_ai.operation.name"
    ]
    return operation == ["execute_tool"] or span["name"].startswith("execute_tool")


@needs_corpus
def test_tempo_export_decodes_every_span() -> None:
    data = lzma.decompress(TEMPO.read_bytes())
    spans = raw_spans(json.loads(data))
    decoded = decode_otlp_json(data, source="t")
    assert decoded.rejects == []
    assert len(decoded.spans) == len(spans) == 86
    assert {s.span_id for s in decoded.spans} == {s["spanId"] for s in spans}
    assert {s.scope for s in decoded.spans} >= {
        "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
    }


@needs_corpus
def test_tempo_export_replays_its_tool_calls_as_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [
        s for s in raw_spans(json.loads(lzma.decompress(TEMPO.read_bytes()))) if is_tool_span(s)
    ]
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(TEMPO), "--db", db, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["dead_letters"] == 0 and result["sessions"] == 1
    with Store.open(db) as store:
        (info,) = store.sessions()
        steps = store.steps(info.session_id)
    assert tools and len([s for s in steps if s.kind == "tool_call"]) == len(tools)


# -- legacy keys and foreign shapes ----------------------------------------------------


def test_pre_1_0_keys_read_as_the_current_ones() -> None:
    doc = batch()
    expected = seen(decode(doc))
    assert len(expected) == 3 and expected[0][2] == "runtime"
    assert seen(decode(legacy(doc))) == expected
    snake = legacy(doc)
    rs = snake["resourceSpans"][0]
    rs["instrumentation_library_spans"] = rs.pop("instrumentationLibrarySpans")
    assert seen(decode(snake)) == expected
    located = decode(legacy(doc)).spans[0].location
    assert located == "f resource_spans[0].instrumentation_library_spans[0].spans[0]"


def test_tempo_and_jaeger_query_api_shapes() -> None:
    doc = batch()
    expected = seen(decode(doc))
    tempo_v1 = {"batches": legacy(doc)["resourceSpans"]}
    tempo_v2 = {"trace": doc, "metrics": {"inspectedBytes": "1"}, "status": "COMPLETE"}
    jaeger_v3 = {"result": doc}
    for shape in (tempo_v1, tempo_v2, jaeger_v3):
        decoded = decode(shape)
        assert seen(decoded) == expected and decoded.rejects == []
    jaeger_v1 = {"data": [{"traceID": "01" * 16, "spans": [{"operationName": "x"}]}]}
    (dead,) = decode(jaeger_v1).rejects
    assert "Jaeger" in dead.reason and "/api/v3" in dead.reason


def test_a_list_under_an_unknown_key_is_a_dead_letter_naming_it() -> None:
    doc = batch(2)
    rs = doc["resourceSpans"][0]
    rs["instrumentationScopeSpans"] = copy.deepcopy(rs["scopeSpans"])  # a misspelt list
    rs["scopeSpans"][0]["extraSpans"] = [{"spanId": "x"}]
    doc["resourceSpanz"] = [{}]
    decoded = decode(doc)
    assert len(decoded.spans) == 2
    reasons = sorted(r.reason for r in decoded.rejects)
    assert len(reasons) == 3
    assert any("'instrumentationScopeSpans'" in r for r in reasons)
    assert any("'extraSpans'" in r for r in reasons)
    assert any("'resourceSpanz'" in r for r in reasons)


def test_wrongly_typed_containers_are_dead_letters_not_silence() -> None:
    for path, value, reason in (
        (("resourceSpans",), {"x": 1}, "resourceSpans must be a list"),
        (("resourceSpans", 0, "scopeSpans"), "spans", "scopeSpans must be a list"),
        (("resourceSpans", 0, "scopeSpans", 0, "spans"), {"0": {}}, "spans must be a list"),
        (("resourceSpans", 0, "resource"), "agent", "resource must be an object"),
        (("resourceSpans", 0, "resource"), [], "resource must be an object"),
        (("resourceSpans", 0, "scopeSpans", 0, "scope"), "runtime", "scope must be an object"),
    ):
        doc = batch(2)
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        decoded = decode(doc)
        assert any(reason in r.reason for r in decoded.rejects), (path, decoded.rejects)
        kept = path[-1] in ("resource", "scope")  # the spans do not depend on it
        assert len(decoded.spans) == (2 if kept else 0)
    (dead,) = decode({"spans": [{}]}).rejects  # not OTLP: said so, not read as empty
    assert "not an OTLP traces object" in dead.reason and "'spans'" in dead.reason
    assert decode({}).rejects == []  # an empty export request holds nothing


def test_a_document_of_another_signal_is_a_dead_letter() -> None:
    logs = [{"scopeLogs": [{"logRecords": [{}]}]}]
    (dead,) = decode({"resourceLogs": logs}).rejects
    assert "logs are not decoded" in dead.reason and b"logRecords" in dead.payload
    beside = decode({**batch(1), "resourceLogs": logs})  # a traces document that has logs too
    assert len(beside.spans) == 1 and beside.rejects == []


# -- ids -------------------------------------------------------------------------------


def test_base64_ids_read_as_hex_and_a_bad_id_costs_its_span() -> None:
    doc = batch(3)
    expected = seen(decode(doc))
    spans = spans_of(doc)
    spans[0]["traceId"] = "AQEBAQEBAQEBAQEBAQEBAQ=="  # protobuf's JSON: standard base64
    spans[1]["spanId"] = "AgICAgICAgI"  # unpadded
    spans[2]["parentSpanId"] = "AAAAAAAAAAA="  # all zeros: no parent
    assert seen(decode(doc)) == expected
    assert decode(doc).spans[2].parent_span_id is None
    for bad in ("AQEBAQEBAQEBAQEBAQEB", "01" * 15 + "zz", "AQEB!QEBAQE=", "\ud800" * 16):
        broken = batch(3)
        spans_of(broken)[1]["spanId" if len(bad) < 24 else "traceId"] = bad
        decoded = decode(broken)
        assert [s.span_id for s in decoded.spans] == ["01" * 8, "03" * 8]
        (dead,) = decoded.rejects
        assert "hex characters (or base64)" in dead.reason
        assert dead.location == "f resource_spans[0].scope_spans[0].spans[1]"


# -- values that decode but break things -----------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("startTimeUnixNano", float("nan"), "must be an integer"),
        ("startTimeUnixNano", float("inf"), "must be an integer"),
        ("endTimeUnixNano", "-1", "outside 0.."),
        ("endTimeUnixNano", 1 << 63, "outside 0.."),
        ("endTimeUnixNano", str(1 << 70), "outside 0.."),
        ("startTimeUnixNano", "1_000", "must be an integer"),
        ("startTimeUnixNano", 1.5, "must be an integer"),
        ("status", "ERROR", "status must be an object"),
        ("attributes", {"key": "a"}, "attributes must be a list"),
        ("events", {"name": "e"}, "events must be a list"),
        ("name", ["chat"], "name must be a string"),
    ],
)
def test_a_bad_value_costs_its_span_only(field: str, value: Any, reason: str) -> None:
    doc = batch(3)
    spans_of(doc)[1][field] = value
    decoded = decode(doc)
    assert [s.name for s in decoded.spans] == ["execute_tool t0", "execute_tool t2"]
    (dead,) = decoded.rejects
    assert reason in dead.reason, dead.reason


def test_attribute_values_out_of_range_or_too_deep() -> None:
    deep: dict[str, Any] = {"stringValue": "leaf"}
    for _ in range(100):
        deep = {"arrayValue": {"values": [deep]}}
    for value, reason in (
        ({"intValue": str(1 << 63)}, "outside"),
        ({"intValue": 1 << 64}, "outside"),
        ({"intValue": float("nan")}, "must be an integer"),
        (deep, "nested deeper than"),
        ("text", "must be an AnyValue object"),
    ):
        doc = batch(2)
        spans_of(doc)[0]["attributes"].append({"key": "k", "value": value})
        decoded = decode(doc)
        assert [s.name for s in decoded.spans] == ["execute_tool t1"]
        assert reason in decoded.rejects[0].reason


def test_deeply_nested_json_is_one_dead_letter() -> None:
    data = b'{"resourceSpans": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    decoded = decode_otlp_json(data, source="t")
    assert decoded.spans == [] and "invalid JSON" in decoded.rejects[0].reason


def test_lone_surrogates_in_text_become_replacement_characters(tmp_path: Path) -> None:
    doc = batch(2)
    span = spans_of(doc)[0]
    span["name"] = "execute_tool \ud83d"
    span["attributes"].append({"key": "out\udc00", "value": {"stringValue": "a\ud800b\U0001f600"}})
    decoded = decode(doc)  # json.dumps writes them as "\ud83d" escapes, as JS does
    assert decoded.rejects == []
    first = decoded.spans[0]
    assert first.name == "execute_tool \ufffd"
    assert first.attributes["out\ufffd"] == "a\ufffdb\U0001f600"  # a real pair is kept
    # and the whole way through to a store that holds UTF-8
    path = tmp_path / "t.otlp.jsonl"
    path.write_text(json.dumps(doc) + "\n" + json.dumps(batch(1, trace=2)) + "\n")
    db = f"sqlite:///{tmp_path / 'tw.db'}"
    assert main(["replay", str(path), "--db", db, "--json"]) == 0


# -- documents back to back ------------------------------------------------------------


def test_pretty_printed_documents_back_to_back_keep_a_broken_ones_neighbours(
    tmp_path: Path,
) -> None:
    good = [batch(2, trace=1), batch(2, trace=2), batch(3, trace=3)]
    broken = json.dumps(batch(1, trace=9), indent=2)[:-40]  # cut mid-document
    text = (
        "\n".join([json.dumps(good[0], indent=2), broken, json.dumps(good[1], indent=2)])
        + "\n"
        + json.dumps(good[2])
        + json.dumps(good[2])
    )  # two compact ones on a line
    path = tmp_path / "copilot-otel.json"
    path.write_bytes(text.encode())
    records = list(read_file(path, "p"))
    assert [r.format for r in records] == [
        "otlp_json",
        "invalid",
        "otlp_json",
        "otlp_json",
        "otlp_json",
    ]
    lines = [int(r.location.rsplit(":", 1)[1]) for r in records]
    starts = [i + 1 for i, line in enumerate(text.split("\n")) if line.startswith("{")]
    assert lines[:4] == starts and lines[4] == lines[3]
    bad = records[1]
    assert bad.reason.startswith("invalid JSON") and bad.payload == broken.encode()
    assert [r.payload for r in records if r.format == "otlp_json"] == [*good, good[2]]


def test_invalid_utf8_in_one_document_costs_that_document(tmp_path: Path) -> None:
    docs = [json.dumps(batch(1, trace=t), indent=1).encode() for t in (1, 2, 3)]
    docs[1] = docs[1].replace(b"runtime", b"run\xfftime")
    path = tmp_path / "trace.json"
    path.write_bytes(b"\n".join(docs))
    records = list(read_file(path, "p"))
    assert [r.format for r in records] == ["otlp_json", "invalid", "otlp_json"]
    assert "invalid UTF-8 at byte" in records[1].reason and records[1].payload == docs[1]


def test_one_document_and_json_lines_read_as_before(tmp_path: Path) -> None:
    doc = batch(2)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc, indent=2))
    (record,) = read_file(path, "p")
    assert record.location == str(path) and record.payload == doc
    path.write_text(json.dumps([doc, doc]))
    assert [r.location for r in read_file(path, "p")] == [f"{path}[0]", f"{path}[1]"]
    lines = tmp_path / "x.otlp.jsonl"
    lines.write_text(json.dumps(doc) + "\n{broken\n\n" + json.dumps(doc) + "\n")
    got = [(r.format, r.location) for r in read_file(lines, "p")]
    assert got == [
        ("otlp_json", f"{lines}:1"),
        ("invalid", f"{lines}:2"),
        ("otlp_json", f"{lines}:4"),
    ]


# -- nothing crashes, nothing vanishes -------------------------------------------------

awkward = st.sampled_from(
    ["\ud800", "a\udfffb", float("nan"), float("inf"), 1 << 70, -1, "", "AAAAAAAAAAA="]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | awkward,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=12,
)


def real_batch() -> dict[str, Any]:
    """A real OTLP/JSON batch: the Tempo export if the corpus is there, else an SDK-made one
    in both key generations."""
    if TEMPO.exists():
        doc: dict[str, Any] = json.loads(lzma.decompress(TEMPO.read_bytes()))
        return doc
    current = batch(3)
    return {"resourceSpans": current["resourceSpans"] + legacy(batch(2, trace=2))["resourceSpans"]}


BATCH = real_batch()


def paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for key, child in node.items():
            out += paths(child, (*path, key))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            out += paths(child, (*path, i))
    return out


PATHS = paths(BATCH)
SPAN_IDS = [span["spanId"] for span in raw_spans(BATCH)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(PATHS),
    json_values,
    st.sampled_from(["replace", "insert"]),
    st.text(max_size=10),
)
def test_arbitrary_values_anywhere_in_a_real_batch_never_lose_a_span(
    path: tuple[Any, ...], value: Any, how: str, key: str
) -> None:
    doc = copy.deepcopy(BATCH)
    if not path:
        doc = value if how == "replace" else doc
    else:
        node: Any = doc
        for step in path[:-1]:
            node = node[step]
        if how == "replace":
            node[path[-1]] = value
        else:
            target = node[path[-1]]
            if isinstance(target, dict):
                target[key] = value
            elif isinstance(target, list):
                target.insert(len(key) % (len(target) + 1), value)
            else:
                node[path[-1]] = value
    text = json.dumps(doc)
    decoded = decode_otlp_json(text, source="fuzz")
    assert all(r.reason and isinstance(r.payload, bytes) for r in decoded.rejects)
    decoded_ids = {s.span_id for s in decoded.spans}
    for span_id in SPAN_IDS:
        if f'"spanId": "{span_id}"' not in text:
            continue  # the mutation replaced this span (or its id)
        assert span_id in decoded_ids or any(
            span_id.encode() in r.payload for r in decoded.rejects
        ), span_id


def test_protobuf_json_mapping_and_legacy_otlp_json_give_the_same_spans() -> None:
    doc = batch(3)
    mapped = copy.deepcopy(doc)  # protobuf's own JSON mapping writes ids in base64
    for span in spans_of(mapped):
        for key in ("traceId", "spanId"):
            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    proto = ParseDict(mapped, ExportTraceServiceRequest()).SerializeToString()
    assert seen(decode_otlp_proto(proto, source="t")) == seen(decode(legacy(mapped)))


def test_a_broken_first_line_no_longer_costs_the_whole_file(tmp_path: Path) -> None:
    lines = [json.dumps(batch(1, trace=t)) for t in (1, 2, 3)]
    path = tmp_path / "x.otlp.jsonl"
    path.write_text("\n".join([lines[0][:-5], *lines[1:]]) + "\n")
    got = [(r.format, r.location) for r in read_file(path, "p")]
    assert got == [
        ("invalid", f"{path}:1"),
        ("otlp_json", f"{path}:2"),
        ("otlp_json", f"{path}:3"),
    ]
