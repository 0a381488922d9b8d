"""The mutation fuzzer's pieces, shared by ``tests/unit/ingest/test_pipeline_properties.py``
and ``benchmarks/bench_fuzz.py`` (which runs them for as long as one wants): seeds read
from the recordings, hostile JSON values, byte and JSON mutations, and one input fed
through a fresh pipeline."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.formats.table import FORMATS, feed_record
from ingest.pipeline.engine import Pipeline
from ingest.sources.files import ReadStats, read_json_bytes, read_recordings
from models.store import Store
from tests.support.paths import ROOT

RECORDINGS = (ROOT / "fixtures" / "recorded", ROOT.parent / "shared" / "corpus" / "recordings")
KINDS = ("otlp_proto", "otlp_json", "event")
FILE = "file:"
"""The kind of a seed read whole, followed by its file's name: ``file:rollout-….jsonl``."""

HOSTILE: tuple[Any, ...] = (
    "\ud800",
    "a\udfffb",
    "x\x00y",
    "\x00",
    math.nan,
    math.inf,
    -math.inf,
    -0.0,
    2**63,
    -(2**63) - 1,
    -(2**64),
    2**200,
    10**30 + 0.5,
    "x" * 200_000,
    [[[[[]]]]],
    {"a": {"b": {"c": [1, "\ud83d"]}}},
    [],
    {},
    None,
    True,
    "",
    "2026-13-45T99:99:99Z",
    1e308,
)
"""Values that decode as JSON but can break a store or a clock."""


@dataclass(frozen=True, slots=True)
class Seed:
    kind: str
    records: tuple[bytes, ...]
    origin: str


def load_seeds(roots: tuple[Path, ...] = RECORDINGS) -> list[Seed]:
    """One seed per recorded file of a fuzzable kind: its records as bytes, in order."""
    by_file: dict[tuple[str, str], list[bytes]] = {}
    paths = [root for root in roots if root.exists()]
    for _, files in read_recordings(paths, ReadStats()):
        for records in files:
            for record in records:
                if FORMATS[record.format].whole_file:
                    lines = [_dump_line(obj) for _, obj in record.payload["lines"]]
                    kind = FILE + record.payload["name"]
                    by_file.setdefault((kind, record.location), []).extend(lines)
                    continue
                if record.format not in KINDS:
                    continue
                data = record.payload
                if not isinstance(data, bytes):
                    data = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass")
                origin = record.location.rsplit(":", 1)[0].split("#")[0].split("[")[0]
                by_file.setdefault((record.format, origin), []).append(data)
    return [Seed(kind, tuple(recs), origin) for (kind, origin), recs in sorted(by_file.items())]


def _dump_line(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")


# -- mutations ---------------------------------------------------------------------------


def mutate_bytes(rng: random.Random, data: bytes, other: bytes) -> bytes:
    """One byte-level mutation of ``data`` (``other`` is a splice partner)."""
    buf = bytearray(data)
    op = rng.choice(("flip", "insert", "delete", "truncate", "splice", "overwrite"))
    at = rng.randrange(len(buf) + 1)
    if op == "flip" and buf:
        at = min(at, len(buf) - 1)
        buf[at] ^= 1 << rng.randrange(8)
    elif op == "insert":
        buf[at:at] = rng.randbytes(rng.randint(1, 16))
    elif op == "delete":
        del buf[at : at + rng.randint(1, 64)]
    elif op == "truncate":
        del buf[at:]
    elif op == "splice" and other:
        start = rng.randrange(len(other))
        buf[at:] = other[start : start + rng.randint(1, 512)]
    else:
        buf[at : at + 8] = rng.choice((b"\xff" * 8, b"\x00" * 8, b"\x80" * 8, b'"\\ud800"'))
    return bytes(buf)


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (dict keys and list indexes), root first."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(paths_of(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.extend(paths_of(child, (*prefix, index)))
    return out


def replace_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """``value`` with the value at ``path`` replaced by ``new`` (copies along the path)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replace_at(value[head], rest, new)}
    copy = list(value)
    copy[head] = replace_at(copy[head], rest, new)
    return copy


def dump_json(value: Any) -> bytes:
    """JSON as a hostile producer writes it: NaN/Infinity literals, lone surrogates as
    ``\\udXXX`` escapes (valid JSON text, not valid Unicode)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode("ascii")


def mutate_json(rng: random.Random, data: bytes) -> bytes:
    """``data`` (a JSON document) with one value, anywhere, replaced by a hostile one."""
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    path = rng.choice(paths_of(doc))
    return dump_json(replace_at(doc, path, rng.choice(HOSTILE)))


# -- running -----------------------------------------------------------------------------

FEEDS: dict[str, Callable[..., None]] = {
    "otlp_proto": Pipeline.feed_otlp_proto,
    "otlp_json": Pipeline.feed_otlp_json,
    "event": Pipeline.feed_event,
}


def run_input(store: Store, kind: str, records: list[bytes], detectors: Any) -> Pipeline:
    """Feed ``records`` (all of ``kind``) to a fresh pipeline on ``store`` and close it."""
    pipeline = Pipeline(store, detectors=detectors)
    if kind.startswith(FILE):  # the lines as a file of that name, read as replay reads it
        data = b"\n".join(records)
        for record in read_json_bytes(data, "fuzz", "fuzz", kind.removeprefix(FILE)):
            feed_record(pipeline, record)
        pipeline.close()
        return pipeline
    feed = FEEDS[kind]
    for index, data in enumerate(records):
        feed(pipeline, data, source="fuzz", location=f"fuzz:{index}", partition="fuzz")
    pipeline.close()
    return pipeline
