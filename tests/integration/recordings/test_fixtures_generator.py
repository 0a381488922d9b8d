"""Tests for fixtures/generate/: determinism, schema validity, OTLP JSON == protobuf, labels."""

from __future__ import annotations

import csv
import gzip
import importlib
import itertools
import json
import lzma
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.paths import ROOT

SCRIPT = ROOT / "fixtures" / "generate"  # a package folder, run as `python fixtures/generate`
SCHEMA = ROOT / "ingest" / "schemas" / "session_event.schema.json"


def _load_generator() -> Any:
    """The package ``fixtures/generate/``, imported as ``generate`` the way the scripts beside
    it import it (``fixtures/`` is a script folder, not a package)."""
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    return importlib.import_module("generate")


gen = _load_generator()


def _run_cli(out: Path, policies: Path, seed: int) -> None:
    subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--seed",
            str(seed),
            "--runs-per-scenario",
            "1",
            "--out",
            str(out),
            "--policies-dir",
            str(policies),
        ],
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("fixtures")
    _run_cli(base / "a", base / "policies", seed=7)
    return base


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".xz":
        return lzma.decompress(data)
    return data


def _all_labels(out: Path) -> list[dict[str, str]]:
    with (out / "labels.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _labels(out: Path) -> list[dict[str, str]]:
    """The runs recorded with a session log (OpenInference runs are spans only)."""
    return [r for r in _all_labels(out) if "events.jsonl" in r["files"]]


def _file(out: Path, row: dict[str, str], kind: str) -> Path:
    (name,) = [f for f in row["files"].split(";") if f".{kind}" in f]
    return out / name


def _events(out: Path, row: dict[str, str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _read(_file(out, row, "events.jsonl")).splitlines()]


def _delimited(data: bytes) -> Iterator[bytes]:
    pos = 0
    while pos < len(data):
        length = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        yield data[pos : pos + length]
        pos += length


def _any_value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_any_value(x) for x in v.array_value.values]
    return getattr(v, kind)


def _json_value(v: dict[str, Any]) -> Any:
    ((kind, value),) = v.items()
    if kind == "arrayValue":
        return [_json_value(x) for x in value.get("values", [])]
    if kind == "intValue":
        assert isinstance(value, str)  # int64 as a string in OTLP/JSON
        return int(value)
    return value


def _json_spans(out: Path, row: dict[str, str]) -> list[list[dict[str, Any]]]:
    batches = []
    for line in _read(_file(out, row, "otlp.jsonl")).splitlines():
        doc = json.loads(line)
        batches.append(
            [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]
        )
    return batches


@pytest.mark.slow  # the generator run as a process
def test_same_seed_gives_identical_bytes(generated: Path) -> None:
    _run_cli(generated / "b", generated / "policies_b", seed=7)
    a = sorted(p.relative_to(generated / "a") for p in (generated / "a").rglob("*") if p.is_file())
    b = sorted(p.relative_to(generated / "b") for p in (generated / "b").rglob("*") if p.is_file())
    assert a == b
    for rel in a:
        assert (generated / "a" / rel).read_bytes() == (generated / "b" / rel).read_bytes(), rel


@pytest.mark.slow  # the generator run as a process
def test_other_seed_changes_tasks_and_order(generated: Path) -> None:
    _run_cli(generated / "c", generated / "policies_c", seed=8)
    la, lc = _labels(generated / "a"), _labels(generated / "c")
    assert [r["scenario"] for r in la] != [r["scenario"] for r in lc]
    goals_a = {_events(generated / "a", r)[0]["goal"] for r in la}
    goals_c = {_events(generated / "c", r)[0]["goal"] for r in lc}
    assert {r["session_id"] for r in la}.isdisjoint({r["session_id"] for r in lc})
    assert len(goals_a) >= 8 and goals_a != goals_c


def test_events_validate_against_schema(generated: Path) -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    for row in _labels(generated / "a"):
        events = _events(generated / "a", row)
        assert [e["seq"] for e in events] == list(range(len(events)))
        assert events[0]["type"] == "session_start" and events[-1]["type"] == "session_end"
        assert {e["session_id"] for e in events} == {row["session_id"]}
        for event in events:
            validator.validate(event)
        n_tools = sum(e["type"] == "tool_call" for e in events)
        assert 20 <= n_tools <= 120, (row["run_id"], n_tools)


def test_otlp_json_matches_protobuf(generated: Path) -> None:
    out = generated / "a"
    for row in _labels(out):
        json_batches = _json_spans(out, row)
        pb_batches = [
            ExportTraceServiceRequest.FromString(m)
            for m in _delimited(_read(_file(out, row, "otlp.binpb")))
        ]
        assert len(json_batches) == len(pb_batches) >= 2
        for jspans, req in zip(json_batches, pb_batches, strict=True):
            pspans = [sp for rs in req.resource_spans for ss in rs.scope_spans for sp in ss.spans]
            assert len(jspans) == len(pspans)
            for js, ps in zip(jspans, pspans, strict=True):
                assert js["traceId"] == ps.trace_id.hex() and len(js["traceId"]) == 32
                assert js["spanId"] == ps.span_id.hex() and len(js["spanId"]) == 16
                assert js.get("parentSpanId", "") == ps.parent_span_id.hex()
                assert js["name"] == ps.name and js["kind"] == ps.kind
                assert js["startTimeUnixNano"] == str(ps.start_time_unix_nano)
                assert {a["key"]: _json_value(a["value"]) for a in js["attributes"]} == {
                    a.key: _any_value(a.value) for a in ps.attributes
                }


def test_spans_are_batched_in_end_order_and_tied_to_events(generated: Path) -> None:
    out = generated / "a"
    for row in _labels(out):
        batches = _json_spans(out, row)
        spans = [sp for batch in batches for sp in batch]
        # encode_spans regroups a batch by instrumentation scope, so end order holds between
        # batches, and a parent is never exported in an earlier batch than its children
        batch_of = {sp["spanId"]: i for i, batch in enumerate(batches) for sp in batch}
        for sp in spans:
            if "parentSpanId" in sp:
                assert batch_of[sp["parentSpanId"]] >= batch_of[sp["spanId"]]
        assert len({sp["traceId"] for sp in spans}) == 1
        for earlier, later in itertools.pairwise(batches):
            assert max(int(sp["endTimeUnixNano"]) for sp in earlier) <= min(
                int(sp["endTimeUnixNano"]) for sp in later
            )
        call_ids = set()
        for sp in spans:
            attrs = {a["key"]: _json_value(a["value"]) for a in sp.get("attributes", [])}
            call_ids.add(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id"))
        events = _events(out, row)
        tool_calls = {e["call_id"] for e in events if e["type"] == "tool_call"}
        if "openinference" not in row["convention"]:
            assert tool_calls <= call_ids


def test_labels_point_at_the_onset_tool_call(generated: Path) -> None:
    out = generated / "a"
    for row in _labels(out):
        assert row["failure"] in gen.FAILURES
        if row["failure"] == "none":
            assert row["onset_event_seq"] == row["onset_call_id"] == row["onset_span_id"] == ""
            continue
        event = _events(out, row)[int(row["onset_event_seq"])]
        assert event["type"] == "tool_call" and event["call_id"] == row["onset_call_id"]
        spans = {sp["spanId"]: sp for batch in _json_spans(out, row) for sp in batch}
        span = spans[row["onset_span_id"]]
        attrs = {a["key"]: _json_value(a["value"]) for a in span["attributes"]}
        assert attrs.get("gen_ai.tool.name", attrs.get("tool.name")) == event["tool"]


def test_every_failure_and_hard_case_is_generated(generated: Path) -> None:
    rows = _all_labels(generated / "a")
    spans_only = [r for r in rows if "events.jsonl" not in r["files"]]
    assert spans_only and all(r["convention"].startswith("openinference") for r in spans_only)
    scenarios = {r["scenario"] for r in rows}
    for failure in gen.FAILURES:
        variants = {r["scenario"] for r in rows if r["failure"] == failure}
        assert len(variants) >= 2, failure
    for prefix in gen.HARD_CASES:
        assert sum(s.startswith(prefix) for s in scenarios) >= (1 if prefix[-1] != "_" else 2)
    conventions = {r["convention"].split("+")[0] for r in rows}
    assert conventions == {"genai_current", "genai_deprecated", "openinference"}
    agents = {r["agent"] for r in rows}
    assert agents & set(gen.CODING_AGENTS) and agents & set(gen.RESEARCH_AGENTS)


def test_compaction_markers(generated: Path) -> None:
    out = generated / "a"
    for row in _labels(out):
        events = _events(out, row)
        tokens = [e["tokens_in"] for e in events if e["type"] == "model_call"]
        drops = [b for a, b in itertools.pairwise(tokens) if b < a * 0.5]
        explicit = [e for e in events if e["type"] == "compaction"]
        span_events = [
            ev
            for batch in _json_spans(out, row)
            for sp in batch
            for ev in sp.get("events", [])
            if ev["name"] == "trajwatch.compaction"
        ]
        if row["scenario"].endswith("_explicit"):
            assert len(explicit) == len(span_events) == len(drops) == 1
        elif row["scenario"].endswith("_inferred"):
            assert not explicit and not span_events and len(drops) == 1
            assert tokens[tokens.index(drops[0]) - 1] >= 100_000
        else:
            assert not explicit and not drops


def test_policies_and_bundles(generated: Path) -> None:
    out = generated / "a"
    policies = {
        p.stem: tomllib.loads(p.read_text()) for p in (generated / "policies").glob("*.toml")
    }
    assert all(
        {
            "forbidden_commands",
            "forbidden_write_paths",
            "allowed_egress_hosts",
            "require_approval_for",
            "require_before",
            "budget",
        }
        <= set(p)
        for p in policies.values()
    )
    bundles = 0
    for row in _labels(out):
        events = _events(out, row)
        assert events[0]["policy_id"] in policies
        for name in row["files"].split(";"):
            assert (out / name).exists(), name
        if not any(f.endswith("/") for f in row["files"].split(";")):
            continue
        bundles += 1
        bundle = out / row["run_id"]
        assert (bundle / "session.jsonl").read_bytes() == _read(_file(out, row, "events.jsonl"))
        trace = json.loads((bundle / "trace.json").read_text())
        n_spans = sum(len(ss["spans"]) for rs in trace["resourceSpans"] for ss in rs["scopeSpans"])
        assert n_spans == sum(len(b) for b in _json_spans(out, row))
        with (bundle / "tool_calls.csv").open(newline="") as fh:
            reader = csv.DictReader(fh)
            assert tuple(reader.fieldnames or ()) == gen.TOOL_CSV_COLUMNS
            rows = list(reader)
        assert [r["call_id"] for r in rows] == [
            e["call_id"] for e in events if e["type"] == "tool_call"
        ]
        json.loads(rows[0]["arguments"])
    assert bundles >= 1
