"""``models.storable``'s checks, as the store and the pipeline rely on them: a clean
step comes back as the same object, a repair touches only what needs it, and the first
field no column can hold is the one named (the checker is generated code: this pins
that it checks what the tables say, in field order)."""

from __future__ import annotations

import math

import pytest

from models.records import Step, StepKind
from models.storable import Unstorable, clean_json, storable_step


def _step(**fields: object) -> Step:
    return Step(step_id="s/1", session_id="s", kind=StepKind.TOOL_CALL, ts=1, **fields)  # type: ignore[arg-type]


def test_a_clean_step_and_detail_come_back_as_the_same_objects() -> None:
    detail = {"cluster": 2, "progress": 0.5, "egress": [{"host": "pypi.org", "ok": True}]}
    step = _step(tool="bash", arguments='{"cmd":"ls"}', tokens_in=12, detail=detail)
    assert storable_step(step) is step
    assert clean_json(detail) is detail


def test_repairs_touch_only_the_broken_text() -> None:
    detail = {"plain": "ok", "nested": {"cut": "a\ud800b"}, "list": ["x", "n\x00l"]}
    step = _step(tool="ba\x00sh", result="fine", detail=detail)
    fixed = storable_step(step)
    assert fixed.tool == "ba\ufffdsh" and fixed.result is step.result
    assert fixed.detail == {
        "plain": "ok",
        "nested": {"cut": "a\ufffdb"},
        "list": ["x", "n\ufffdl"],
    }
    assert detail["nested"]["cut"] == "a\ud800b"  # the input is not mutated


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"tokens_in": 2**31}, "tokens_in: 2147483648 is outside the column's range"),
        ({"tokens_in": True}, "tokens_in: True is not an integer"),
        ({"cost": math.inf}, "cost: inf is not a finite number"),
        ({"detail": {"a": [1, {"b": math.nan}]}}, "detail.a[1].b: nan is not a finite number"),
        ({"detail": {1: "x"}}, "detail: key 1 is not text"),
        ({"detail": {"a": {1, 2}}}, "detail.a: a set is not JSON"),
        # the first failing field in the step's field order is named
        ({"tokens_in": 2**40, "cost": math.nan}, "tokens_in: 1099511627776 is outside"),
    ],
)
def test_the_first_unstorable_field_is_named(fields: dict[str, object], reason: str) -> None:
    with pytest.raises(Unstorable) as caught:
        storable_step(_step(**fields))
    assert caught.value.reason.startswith(reason)


def test_a_missing_required_field_and_an_overlong_id_are_refused() -> None:
    step = _step()
    object.__setattr__(step, "session_id", None)
    with pytest.raises(Unstorable, match="session_id: missing"):
        storable_step(step)
    with pytest.raises(Unstorable, match=r"step_id: \d+ characters, the column holds at most"):
        storable_step(_step().with_(step_id="x" * 10_000))


def test_nesting_beyond_the_limit_is_refused() -> None:
    deep: object = 1
    for _ in range(70):
        deep = {"d": deep}
    with pytest.raises(Unstorable, match="nested deeper than 64 levels"):
        clean_json(deep, "detail")
