"""List prices of model calls, and the cost of a call that did not report its own.

A :class:`Prices` maps a model name to its :class:`Rate` (US dollars per million input
and output tokens). The bundled table (:mod:`features.prices.list_prices`: its source and
date are in its docstring) covers the common OpenAI, Anthropic and Google models; the
config's ``[prices]`` table adds or overrides models (:meth:`Prices.overridden`).

A model name finds the longest key it holds at its start or after a ``/`` or ``.`` (a
provider prefix: ``openai/gpt-4o``, ``models/gemini-2.5-pro``,
``us.anthropic.claude-sonnet-4-5-20250929-v1:0``), followed by its end or one of ``-_:@``
(a date or version suffix): ``gpt-4o-2024-08-06`` is ``gpt-4o``, ``gpt-4o-mini`` is not
``gpt-4o`` unless ``gpt-4o-mini`` is missing, and ``gpt-4.1`` is never ``gpt-4``. A name
no key matches has no price: its cost stays unknown, never 0.

Prices are the first tier at the standard service tier: long-context surcharges, batch
and priority rates and cache discounts are not applied (input tokens are priced as
uncached), so a priced cost is a list-price estimate; a cost the call reported wins.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from features.prices.list_prices import LIST_PRICES
from models.records import Step, StepKind

PER = 1_000_000
"""Rates are per this many tokens."""
_PREFIX_ENDS = "/."
_SUFFIX_STARTS = "-_:@"
_MEMO_MAX = 4096
"""Model names remembered with their rate (cleared when full: names are few)."""


@dataclass(frozen=True, slots=True)
class Rate:
    """US dollars per million input and output tokens."""

    input: float
    output: float

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number of dollars, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """The dollars ``tokens_in`` input and ``tokens_out`` output tokens cost, rounded to
        a millionth of a dollar (as session logs write ``cost_usd``).

        >>> Rate(input=3.0, output=15.0).cost(10_000, 500)
        0.0375
        """
        return round((tokens_in * self.input + tokens_out * self.output) / PER, 6)


class Prices:
    """Model name → :class:`Rate` (see the module docstring for the matching)."""

    def __init__(self, rates: Mapping[str, Rate]) -> None:
        self.rates = {key.lower(): rate for key, rate in rates.items()}
        self._by_length = sorted(self.rates, key=len, reverse=True)
        self._memo: dict[str, Rate | None] = {}

    @staticmethod
    def bundled() -> Prices:
        """The table shipped with trajwatch (:data:`~features.prices.list_prices.LIST_PRICES`)."""
        return _bundled()

    def overridden(self, rates: Mapping[str, Rate]) -> Prices:
        """These prices with ``rates`` added, replacing a model's row where both have one."""
        return Prices({**self.rates, **{k.lower(): v for k, v in rates.items()}})

    def rate(self, model: str | None) -> Rate | None:
        """``model``'s rate, or None when no key matches it.

        >>> prices = Prices({"gpt-4o": Rate(2.5, 10.0), "gpt-4o-mini": Rate(0.15, 0.6)})
        >>> [prices.rate(m) is not None for m in ("gpt-4o-2024-08-06", "openai/gpt-4o", "gpt-4")]
        [True, True, False]
        >>> prices.rate("gpt-4o-mini-2024-07-18").input
        0.15
        """
        if not model:
            return None
        found = self._memo.get(model, False)
        if found is not False:
            return found  # type: ignore[return-value]
        if len(self._memo) >= _MEMO_MAX:
            self._memo.clear()
        name = model.strip().lower()
        rate = next((self.rates[key] for key in self._by_length if holds_model(name, key)), None)
        self._memo[model] = rate
        return rate

    def priced(self, step: Step) -> Step:
        """``step`` with its cost at list price when it is a model call that reported no
        cost, names a model this table prices and counts its tokens; else ``step``."""
        if step.kind != StepKind.MODEL_CALL or step.cost is not None:
            return step
        if step.tokens_in is None and step.tokens_out is None:
            return step
        rate = self.rate(step.model)
        if rate is None:
            return step
        return step.with_(cost=rate.cost(step.tokens_in or 0, step.tokens_out or 0))


@functools.cache
def _bundled() -> Prices:
    return Prices({model: Rate(*rates) for model, rates in LIST_PRICES.items()})


def holds_model(name: str, key: str) -> bool:
    """Whether model name ``name`` (lower case) holds table key ``key`` at a prefix
    boundary, followed by a suffix boundary (the matching the module describes; the
    context-window table matches the same way).

    >>> holds_model("openai/gpt-4o-2024-08-06", "gpt-4o"), holds_model("gpt-4.1", "gpt-4")
    (True, False)
    """
    start = name.find(key)
    while start >= 0:
        end = start + len(key)
        if (start == 0 or name[start - 1] in _PREFIX_ENDS) and (
            end == len(name) or name[end] in _SUFFIX_STARTS
        ):
            return True
        start = name.find(key, start + 1)
    return False


def rates_from(table: Mapping[str, Any], *, where: str) -> dict[str, Rate]:
    """``{"model" = {input = N, output = N}, ...}`` as rates; ValueError naming ``where``
    and the model for a row that is not such a table."""
    rates: dict[str, Rate] = {}
    for model, row in table.items():
        if not isinstance(row, Mapping) or set(row) != {"input", "output"}:
            raise ValueError(
                f"{where}: {model!r} must be {{ input = N, output = N }} (dollars per million "
                f"tokens), got {row!r}"
            )
        try:
            rates[model] = Rate(input=row["input"], output=row["output"])
        except ValueError as exc:
            raise ValueError(f"{where}: {model!r}: {exc}") from None
    return rates
