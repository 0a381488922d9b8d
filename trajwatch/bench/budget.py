"""The stage budget: µs of CPU a stored step each stage of the per-step path may spend.

The budget is a committed TOML file (:data:`BUDGET_FILE`, ``benchmarks/stage_budget.toml``):
a ``[stages]`` table of stage id (:mod:`trajwatch.bench.attribution`'s:
``decode``, ``normalise``, ``features.terms``, ``detector.runaway_loop``, …) to µs a step,
and ``total``, the whole replay's, on the reference machine; ``calibration_s`` is what
:func:`calibration` took there. A run scales the budget by its own machine's
:func:`calibration` over that (a slower or busier machine gets a larger budget), and
:func:`stage_table` prints the attributed figures beside it, naming every stage over
its budget; a stage the file does not list has no budget (``-``, never over).
"""

from __future__ import annotations

import json
import re
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["BUDGET_FILE", "Budget", "calibration", "load_budget", "over_budget", "stage_table"]

BUDGET_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "stage_budget.toml"
"""The committed budget, in a checkout (``trajwatch bench`` runs from one: its spans
need the test extra)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """µs of CPU a step per stage id, and for the whole replay."""

    stages: Mapping[str, float]
    total: float | None
    calibration_s: float | None = None
    """:func:`calibration` on the machine the figures were set on (None: not scaled)."""
    scale: float = 1.0
    """The factor the figures were scaled by (:meth:`scaled`)."""

    def scaled(self, calibration_s: float) -> Budget:
        """The budget for a machine whose :func:`calibration` is ``calibration_s``."""
        if self.calibration_s is None:
            return self
        k = calibration_s / self.calibration_s
        stages = {stage: us * k for stage, us in self.stages.items()}
        total = self.total * k if self.total is not None else None
        return replace(self, stages=stages, total=total, scale=k)


_WORDS = re.compile(r"[a-z_]+")
_CALL = {"tool": "bash", "arguments": {"command": "pytest -q tests/unit -k parse_offset"}}


def calibration(repeat: int = 7, rounds: int = 8_000) -> float:
    """CPU seconds of a fixed piece of pure-Python work like the per-step path's
    (JSON, a regex, dicts, strings, small objects): the least of ``repeat`` runs, the
    one least disturbed by the machine's other work."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        counts: dict[str, int] = {}
        for i in range(rounds):
            text = json.dumps({**_CALL, "i": i}, sort_keys=True)
            for word in _WORDS.findall(json.loads(text)["arguments"]["command"]):
                counts[word] = counts.get(word, 0) + 1
            counts[f"{text[:12]}{i % 97}".lower()] = len(text)
        best = min(best, time.process_time() - start)
    return best


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
    total, calibration_s = data.get("total"), data.get("calibration_s")
    return Budget(
        stages={k: float(v) for k, v in stages.items()},
        total=float(total) if total is not None else None,
        calibration_s=float(calibration_s) if calibration_s is not None else None,
    )


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
      µs/step   budget        stage
         12.0     10.0  OVER  decode
          4.0      5.0        store_steps
         16.0     20.0        all of it
    over budget: decode
    """
    descriptions = descriptions or {}
    lines = ["  µs/step   budget        stage"]
    over = over_budget(us, budget)
    for stage, value in sorted(us.items(), key=lambda kv: -kv[1]):
        limit = budget.stages.get(stage) if budget else None
        cell = f"{limit:8.1f}" if limit is not None else f"{'-':>8}"
        what = descriptions.get(stage)
        flag = "OVER" if stage in over else ""
        lines.append(f"{value:9.1f} {cell} {flag:>5}  {stage:<30} {what or ''}".rstrip())
    whole = sum(us.values()) if total is None else total
    limit = budget.total if budget else None
    cell = f"{limit:8.1f}" if limit is not None else f"{'-':>8}"
    flag = "OVER" if "total" in over else ""
    lines.append(f"{whole:9.1f} {cell} {flag:>5}  all of it")
    lines.append("over budget: " + (", ".join(over) if over else "none"))
    if budget is not None and budget.scale != 1.0:
        lines.append(f"(budget scaled ×{budget.scale:.2f} to this machine by its calibration)")
    return lines
