"""The speed-ups that must not change behaviour: memoised pure functions, the per-type
session-event validators and the field-by-field Step copy give exactly what the plain
computation gives."""

from __future__ import annotations

import dataclasses
import itertools

import fastjsonschema
import pytest

from features.calls import actions
from features.policy.catalog import compile_policies
from features.text.frozen import freeze, thaw
from ingest.formats import session_events
from models.records import Step, StepKind

VALID = {
    "session_start": {"goal": "fix the bug", "policy_id": "p", "budget": {"tokens": 10}},
    "model_call": {"model": "m", "tokens_in": 3, "tokens_out": 4},
    "tool_call": {"tool": "bash", "call_id": "c1", "arguments": {"command": "ls"}},
    "tool_result": {"call_id": "c1", "ok": True, "output": "x"},
    "approval": {"approved": True},
    "checkpoint": {"checkpoint_id": "k1"},
    "compaction": {"tokens_before": 10, "tokens_after": 2},
    "error": {"message": "boom"},
    "session_end": {"status": "success", "claimed_done": True},
}
ODD_VALUES = [None, -1, 0, 1.5, True, "", "x", [], {}, "2026-01-01T00:00:00Z"]


def _events() -> list[dict[str, object]]:
    events = []
    keys = sorted({k for fields in VALID.values() for k in fields} | {"type", "seq", "ts"})
    for kind, fields in VALID.items():
        base = {"type": kind, "session_id": "s", "seq": 1, "ts": "2026-01-01T00:00:00Z"}
        events.append({**base, **fields})
        for key, value in itertools.product(keys, ODD_VALUES):
            events.append({**base, **fields, key: value})
        for key in [*base, *fields]:
            events.append({k: v for k, v in {**base, **fields}.items() if k != key})
        for other in VALID:  # another type's fields, or its type with these fields
            events.append({**base, **VALID[other], "type": other})
            events.append({**base, **fields, "type": other})
    return events


def test_per_type_validators_accept_exactly_what_the_whole_schema_accepts() -> None:
    full = session_events._fast_validator()

    def accepted(event: object) -> bool:
        try:
            full(event)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    events = _events()
    assert len(events) > 1000
    verdicts = [(accepted(e), session_events.validation_error(e) is None) for e in events]
    assert all(a == b for a, b in verdicts)
    assert any(a for a, _ in verdicts) and not all(a for a, _ in verdicts)


def test_freeze_tells_types_and_order_apart() -> None:
    assert freeze({"a": 1}) != freeze({"a": 1.0}) != freeze({"a": True})
    assert freeze([1, 2]) != freeze((1, 2))
    assert freeze({"a": 1, "b": 2}) != freeze({"b": 2, "a": 1})
    assert freeze({1: "x"}) is None and freeze({"a": b"x"}) is None
    assert freeze({"a": "x" * 5}, max_chars=4) is None
    value = {"a": [1, 2.5, None, {"b": ("c", False)}], "d": ""}
    key = freeze(value)
    assert key is not None and thaw(key) == value
    assert list(thaw(key)) == ["a", "d"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (
            "bash",
            {"command": "curl -H 'Authorization: Bearer abcdef0123456789abcdef' https://x.io/a"},
        ),
        ("fetch", '{"url": "https://example.com/a?sig=abc123", "method": "POST"}'),
        ("write_file", {"path": "/tmp/tmpab12cd34/x.py", "content": "x" * 5000}),
        ("view", {"path": "a.py", "view_range": [10, 40]}),
        ("noop", None),
    ],
)
def test_tool_call_fields_memo_gives_the_plain_result_in_fresh_dicts(
    tool: str, arguments: object
) -> None:
    plain = actions._fields(tool, arguments)
    first = actions.tool_call_fields(tool, arguments)
    first["detail"]["side_effect"] = True  # the session-event decoder adds to detail
    if "egress" in first["detail"]:
        first["detail"]["egress"][0]["host"] = "changed"
    again = actions.tool_call_fields(tool, arguments)
    assert again == plain


def test_compiled_policies_are_shared_but_bad_ones_still_fail() -> None:
    raw = {"p": {"forbidden_commands": [r"rm\s+-rf"], "budget": {"tokens": 10}}}
    a, b = compile_policies(raw), compile_policies({"p": dict(raw["p"])})
    assert a == b and a is not b
    for _ in range(2):
        with pytest.raises(ValueError, match=r"budget\.tokens"):
            compile_policies({"p": {"budget": {"tokens": -1}}})


def test_step_copy_is_dataclasses_replace() -> None:
    step = Step(step_id="a", session_id="s", kind=StepKind.TOOL_CALL, ts=1, detail={"k": 1})
    changes = {"seq": 3, "model_session": 2, "detail": {"late": True}, "parent_step_id": "p"}
    copy = step.with_(**changes)
    assert copy == dataclasses.replace(step, **changes)
    assert repr(copy) == repr(dataclasses.replace(step, **changes))
    assert step.with_() == step
    with pytest.raises(TypeError, match="no field 'nope'"):
        step.with_(nope=1)
