"""The validators that decide (annotations dropped, type-exclusive ``oneOf`` as ``anyOf``,
one ``then`` per type) accept exactly what the published schema accepts."""

from __future__ import annotations

from typing import Any

import fastjsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest.formats.session_events import (
    _fast_validators_by_type,
    _published_validators_by_type,
    schema,
    validation_error,
)

_TYPES = list(_fast_validators_by_type())
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-2, max_value=2),
    st.sampled_from(["", "x", "2026-01-02T03:04:05Z", "0123456789abcdef", "success", "a" * 12]),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["a", "max_cost_usd"]), st.integers(0, 2), max_size=2),
)
_keys = st.sampled_from(
    sorted(
        {"type", "session_id", "seq", "ts", "goal", "tool", "call_id", "ok", "approved"}
        | set(schema()["properties"])
        | {k for b in schema()["allOf"] for k in b["then"].get("properties", {})}
        | {k for b in schema()["allOf"] for k in b["then"].get("required", [])}
    )
)


def _accepts(validate: Any, event: dict[str, Any]) -> bool:
    try:
        validate(event)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(_TYPES), st.dictionaries(_keys, _values, max_size=10))
def test_decision_validators_accept_what_the_published_schema_accepts(
    kind: str, fields: dict[str, Any]
) -> None:
    event = {"session_id": "s", "seq": 0, "ts": "2026-01-02T03:04:05Z", **fields, "type": kind}
    fast = _accepts(_fast_validators_by_type()[kind], event)
    assert fast == _accepts(_published_validators_by_type()[kind], event)
    assert (validation_error(event) is None) == fast
