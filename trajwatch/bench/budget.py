"""The stage budget: µs of CPU a stored step each stage of the per-step path may spend.

The budget is a committed TOML file (:data:`BUDGET_FILE`, ``benchmarks/stage_budget.toml``):
a ``[stages]`` table of stage id (:mod:`trajwatch.bench.attribution`'s:
``decode``, ``normalise``, ``features.terms``, ``detector.runaway_loop``, …) to µs a step,
and ``total``, the whole replay's. :func:`stage_table` prints an attributed replay's
figures beside it and names every stage over its budget; a stage the file does not
list has no budget (shown as ``-``, never over).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BUDGET_FILE", "Budget", "load_budget", "over_budget", "stage_table"]

BUDGET_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "stage_budget.toml"
"""The committed budget, in a checkout (``trajwatch bench`` runs from one: its spans
need the test extra)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """µs of CPU a step per stage id, and for the whole replay."""

    stages: Mapping[str, float]
    total: float | None


def load_budget(path: Path = BUDGET_FILE) -> Budget | None:
    """The budget at ``path``; None when there is no such file (an installed package)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return None
    stages = data.get("stages", {})
    bad = [k for k, v in stages.items() if not isinstance(v, (int, float)) or v < 0]
    if bad:
        raise ValueError(f"{path}: [stages] {', '.join(bad)}: give µs a step as a number >= 0")
    total = data.get("total")
    return Budget(stages={k: float(v) for k, v in stages.items()}, total=total)


def over_budget(us: Mapping[str, float], budget: Budget | None) -> list[str]:
    """The stages of ``us`` (stage id → µs a step) over their budget, largest excess
    first; ``"total"`` when the sum is over the whole replay's."""
    if budget is None:
        return []
    over = [
        (value - budget.stages[stage], stage)
        for stage, value in us.items()
        if stage in budget.stages and value > budget.stages[stage]
    ]
    names = [stage for _, stage in sorted(over, reverse=True)]
    if budget.total is not None and sum(us.values()) > budget.total:
        names.append("total")
    return names


def stage_table(
    us: Mapping[str, float],
    budget: Budget | None,
    descriptions: Mapping[str, str] | None = None,
    *,
    total: float | None = None,
) -> list[str]:
    """Lines of a plain-text table: each stage's µs a step (largest first), its budget
    and ``OVER`` when it is over, what it covers; then the total, and a last line
    naming the stages over budget (or saying none is).

    >>> b = Budget(stages={"decode": 10.0, "store_steps": 5.0}, total=20.0)
    >>> print("\\n".join(stage_table({"decode": 12.0, "store_steps": 4.0}, b)))
      µs/step   budget  stage
         12.0     10.0  decode  OVER
          4.0      5.0  store_steps
         16.0     20.0  all of it
    over budget: decode
    """
    descriptions = descriptions or {}
    lines = ["  µs/step   budget  stage"]
    over = over_budget(us, budget)
    for stage, value in sorted(us.items(), key=lambda kv: -kv[1]):
        limit = budget.stages.get(stage) if budget else None
        cell = f"{limit:8.1f}" if limit is not None else f"{'-':>8}"
        what = descriptions.get(stage)
        flag = "  OVER" if stage in over else ""
        lines.append(f"{value:9.1f} {cell}  {stage + flag:<24} {what or ''}".rstrip())
    whole = sum(us.values()) if total is None else total
    limit = budget.total if budget else None
    cell = f"{limit:8.1f}" if limit is not None else f"{'-':>8}"
    lines.append(f"{whole:9.1f} {cell}  all of it" + ("  OVER" if "total" in over else ""))
    lines.append("over budget: " + (", ".join(over) if over else "none"))
    return lines
