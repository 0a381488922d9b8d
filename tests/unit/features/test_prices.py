"""List prices and reported costs (issue 25, item 14: every session cost $0.0000, since a
model-call span's cost was never read nor priced)."""

from __future__ import annotations

import pytest

from features.prices.list_prices import LIST_PRICES
from features.prices.reported import REPORTED_COST, reported_cost
from features.prices.table import Prices, Rate
from models.records import Step, StepKind

BUNDLED = Prices.bundled()
T0 = 1_767_000_000 * 10**9


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-mini", "gpt-4.1-mini"),
        ("openai/gpt-5", "gpt-5"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("Claude-Opus-4-1", "claude-opus-4-1"),
        ("models/gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gemini-2.5-pro", "gemini-2.5-pro"),
    ],
)
def test_a_model_name_finds_the_longest_key_at_separators(model: str, key: str) -> None:
    assert BUNDLED.rate(model) == Rate(*LIST_PRICES[key])


@pytest.mark.parametrize("model", ["gpt-4", "gpt-4o1", "llama-3.1-70b", "mygpt-4o", "", None])
def test_a_model_no_key_matches_has_no_price(model: str | None) -> None:
    assert BUNDLED.rate(model) is None


def _call(model: str | None, cost: float | None = None, **tokens: int | None) -> Step:
    return Step(
        step_id="x",
        session_id="s",
        kind=StepKind.MODEL_CALL,
        ts=T0,
        model=model,
        cost=cost,
        tokens_in=tokens.get("tokens_in", 10_000),
        tokens_out=tokens.get("tokens_out", 500),
    )


def test_a_call_without_a_cost_is_priced_and_a_reported_cost_is_kept() -> None:
    assert BUNDLED.priced(_call("claude-sonnet-4-5-20250929")).cost == 0.0375  # 3 and 15 $/M
    assert BUNDLED.priced(_call("gpt-4o", cost=0.5)).cost == 0.5
    assert BUNDLED.priced(_call("unknown-model")).cost is None  # unknown, not $0
    assert BUNDLED.priced(_call("gpt-4o", tokens_in=None, tokens_out=None)).cost is None
    tool = Step(step_id="t", session_id="s", kind=StepKind.TOOL_CALL, ts=T0, model="gpt-4o")
    assert BUNDLED.priced(tool) is tool


def test_the_reported_cost_attributes_in_order() -> None:
    assert reported_cost({name: "0.25" for name in REPORTED_COST}) == 0.25
    assert reported_cost({"operation.cost": 0.01, "llm.cost.total": 0.02}) == 0.02
    assert reported_cost({"gen_ai.usage.cost": "n/a", "operation.cost": 0.003}) == 0.003
    assert reported_cost({"gen_ai.usage.cost": float("nan")}) is None
    assert reported_cost({"gen_ai.usage.cost": True}) is None
