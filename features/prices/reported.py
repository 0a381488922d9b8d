"""The cost a model-call span reports itself, from the attribute its instrumentation uses.

Read first, before any list price (:mod:`features.prices.table`): the provider's or the
instrumentation's own figure (OpenRouter's usage cost, a gateway's, genai-prices' in
pydantic-ai/Logfire) knows the tier, the cache and the discounts a list price does not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

REPORTED_COST = (
    "gen_ai.usage.cost",  # OpenLIT, Langfuse's OTel mapping, LiteLLM
    "gen_ai.usage.cost_usd",
    "llm.cost.total",  # OpenInference
    "llm.usage.cost",
    "operation.cost",  # Logfire / pydantic-ai (genai-prices)
)
"""Span attributes that carry a model call's cost in US dollars, the first present wins."""


def reported_cost(attributes: Mapping[str, Any]) -> float | None:
    """The first of :data:`REPORTED_COST` that holds a finite number >= 0 (a number, or
    text of one), else None.

    >>> reported_cost({"llm.cost.total": "0.0042", "gen_ai.usage.input_tokens": 10})
    0.0042
    >>> reported_cost({"gen_ai.usage.cost": -1}) is None
    True
    """
    for name in REPORTED_COST:
        value = attributes.get(name)
        if value is None or isinstance(value, bool):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number) and number >= 0:
            return number
    return None
