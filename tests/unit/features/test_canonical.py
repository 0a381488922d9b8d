"""Canonical action signatures and canonical argument JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from features.calls.canonical import canonical_action, canonical_json


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # temp dirs
        ({"command": "cat /tmp/tmpab12cd34/out.txt"}, {"command": "cat /tmp/tmpzz99yy00/out.txt"}),
        (
            {"command": "pytest /tmp/pytest-of-ci/pytest-7/test_a0/x.py"},
            {"command": "pytest /tmp/pytest-of-bob/pytest-12/test_a0/x.py"},
        ),
        (
            {"path": "/private/var/folders/x1/abc123/T/build/log.txt"},
            {"path": "/var/folders/qq/zz9/T/build/log.txt"},
        ),
        # timestamps, ids, hashes, uuids
        ({"q": "since 2024-05-01T10:00:00Z"}, {"q": "since 2024-06-11T23:59:01.123+02:00"}),
        ({"reply_to": "call_Ab12cd34Ef"}, {"reply_to": "call_Zz98yx76Wv"}),
        ({"command": "git show 9fceb02d0ae5"}, {"command": "git show 1a2b3c4d5e6f7a8b"}),
        (
            {"id": "123e4567-e89b-12d3-a456-426614174000"},
            {"id": "00000000-0000-4000-8000-000000000abc"},
        ),
        (
            {"command": "curl -H 'X-Request-Id: req-8f3a9b2c1d' u"},
            {"command": "curl -H 'X-Request-Id: req-0a1b2c3d4e' u"},
        ),
        # numbers: timeouts, retries, sleeps
        (
            {"command": "sleep 5 && make test", "timeout": 30},
            {"command": "sleep 10 && make test", "timeout": 600},
        ),
        # whitespace
        ({"command": "ls   -la\n"}, {"command": "ls -la"}),
    ],
)
def test_volatile_variations_are_the_same_action(
    a: dict[str, object], b: dict[str, object]
) -> None:
    assert canonical_action("bash", a) == canonical_action("bash", b)


def test_forms_of_the_same_call() -> None:
    as_dict = {"path": "src/app.py", "command": "view"}
    as_json = json.dumps({"command": "view", "path": "src/app.py"})
    reordered = {"command": "view", "path": "src/app.py"}
    sig = canonical_action("editor", as_dict)
    assert sig == canonical_action("editor", as_json) == canonical_action("editor", reordered)
    assert sig == 'editor(command="view",path="src/app.py")'


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"path": "src/a.py"}, {"path": "src/b.py"}),
        ({"command": "pytest -x"}, {"command": "ruff check"}),
        ({"url": "https://api.github.com/x"}, {"url": "https://api.gitlab.com/x"}),
        ({"command": "ssh 10.0.0.5"}, {"command": "ssh 10.0.0.6"}),
        # line ranges are progress through a file, not noise
        ({"command": "sed -n 10,20p app.py"}, {"command": "sed -n 30,40p app.py"}),
        ({"path": "app.py", "view_range": [1, 50]}, {"path": "app.py", "view_range": [51, 100]}),
        ({"path": "app.py", "offset": 0}, {"path": "app.py", "offset": 200}),
        ({"text": "x" * 300 + "A"}, {"text": "x" * 300 + "B"}),
        ({"a": 1}, {"a": "1"}),
        ({"a": True}, {"a": "true"}),
    ],
)
def test_different_actions_differ(a: dict[str, object], b: dict[str, object]) -> None:
    assert canonical_action("bash", a) != canonical_action("bash", b)


def test_tools_differ_and_none_tool_is_marked() -> None:
    assert canonical_action("read", {"p": "a"}) != canonical_action("write", {"p": "a"})
    assert canonical_action(None, None) == "?()"
    assert canonical_action("bash", "ls -la") == 'bash("ls -la")'


def test_long_strings_are_shortened_stably() -> None:
    long = "echo " + "word " * 200
    sig = canonical_action("bash", {"command": long})
    assert len(sig) < 200
    assert sig == canonical_action("bash", {"command": long})  # pinned: no hash() seed


def test_signature_is_pinned_across_processes() -> None:
    # An exact value: a change here changes every stored signature (and loop detection).
    sig = canonical_action("bash", {"command": "y " * 100, "timeout": 5})
    assert sig == 'bash(command="' + "y " * 60 + '…#9dd8f02af3a2",timeout=<n>)'


def test_canonical_json() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'
    assert canonical_json('{"b": 1, "a": "ü"}') == '{"a":"ü","b":1}'
    assert canonical_json({"args": '{"x": 1}'}) == '{"args":{"x":1}}'
    assert canonical_json({"cmd": "[ -f x ] && y", "n": float("nan")}) == (
        '{"cmd":"[ -f x ] && y","n":"nan"}'
    )
    assert canonical_json({1: (1, 2), "s": {3}}) == '{"1":[1,2],"s":[3]}'
    assert canonical_json("plain text") == '"plain text"'


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=20)), json_like)
def test_deterministic_and_total(tool: str | None, arguments: object) -> None:
    sig = canonical_action(tool, arguments)
    assert sig == canonical_action(tool, arguments)
    text = canonical_json(arguments)
    assert text == canonical_json(arguments)
    assert canonical_json(json.loads(text)) == text  # stable under a storage round trip
    if isinstance(arguments, dict):
        assert canonical_action(tool, text) == sig  # JSON-string form gives the same action
