"""The check's bounded view (``trajwatch.service.check_input``): what is within the bounds
comes out as ``json.loads`` reads it, what is past them is cut and said so, in linear
time, and the bounds are the detectors' own."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from features.egress import targets
from trajwatch.check_failure import CheckFailure
from trajwatch.service.check_input import (
    CUT,
    MAX_ARGUMENT_LEVELS,
    MAX_NAME_CHARS,
    MAX_NODES,
    bounded_body,
    cut_depth,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='a"\\[]{}\n é'),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='k"[{\\', max_size=3), inner, max_size=4)
    ),
    max_leaves=30,
)


def body(arguments: Any) -> bytes:
    return json.dumps({"session_id": "s", "tool": "t", "arguments": arguments}).encode()


def test_the_depth_bound_is_what_the_egress_walk_reads() -> None:
    # pinned: if the walk reads deeper, the check must keep as much (and no more)
    assert MAX_ARGUMENT_LEVELS == targets._MAX_WALK


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_within_the_bounds_the_view_is_the_body(value: Any) -> None:
    view = bounded_body(body(value))
    assert view.cuts == set()
    assert view.body["arguments"] == value


@settings(max_examples=200, deadline=None)
@given(JSON, st.integers(min_value=1, max_value=4))
def test_cut_depth_keeps_valid_json_and_nothing_deeper(value: Any, levels: int) -> None:
    text, cut = cut_depth(json.dumps(value), levels)
    parsed = json.loads(text)
    assert _depth(parsed) <= levels
    assert cut == (_depth(value) > levels)
    if not cut:
        assert parsed == value


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def test_deep_nesting_is_cut_at_the_bound_in_the_arguments_and_in_strings() -> None:
    deep = "[" * 10_000 + "]" * 10_000
    view = bounded_body(b'{"session_id": "s", "tool": "t", "arguments": ' + deep.encode() + b"}")
    assert view.cuts == {"too_deep"}
    assert json.dumps(view.body["arguments"]).count("[") == MAX_ARGUMENT_LEVELS
    # a string holding JSON is read by the detectors: bounded with the levels left there
    inside = bounded_body(body({"payload": deep}))
    assert inside.cuts == {"too_deep"}
    assert CUT in inside.body["arguments"]["payload"]
    shallow = '{"url": "https://example.org"}'
    kept = bounded_body(body({"payload": shallow}))
    assert kept.cuts == set() and kept.body["arguments"]["payload"] is not None
    assert kept.body["arguments"]["payload"] == shallow  # untouched, not re-encoded


def test_value_count_and_names_are_bounded() -> None:
    many = bounded_body(body(list(range(MAX_NODES + 10))))
    assert many.cuts == {"too_large"} and len(many.body["arguments"]) == MAX_NODES
    named = bounded_body(json.dumps({"session_id": "s" * 4096, "tool_name": "x" * 4096}).encode())
    assert named.cuts == {"too_large"}
    assert len(named.body["session_id"]) == len(named.body["tool_name"]) == MAX_NAME_CHARS


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 1_000_000,
        b'{"arguments": {"a": "' + b"[" * 1_000_000 + b'"}}',
        b'{"arguments": "{' + b'\\"x\\": [' * 100_000 + b'"}',
        b'{"arguments": [' + b'"x",' * 250_000 + b'"x"]}',
    ],
)
def test_a_megabyte_is_read_in_linear_time(data: bytes) -> None:
    started = time.process_time()
    with contextlib.suppress(CheckFailure):
        bounded_body(data)
    assert time.process_time() - started < 1.0
