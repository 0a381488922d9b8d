"""The compliance ledger (features/policy/ledger.py): its Fisher exact test."""

from __future__ import annotations

import pytest
from scipy.stats import fisher_exact

from features.policy.ledger import _fisher_greater


@pytest.mark.parametrize(
    "table", [(0, 5, 0, 80), (2, 5, 0, 80), (3, 40, 1, 180), (1, 1, 0, 2), (4, 10, 6, 12)]
)
def test_fisher_matches_scipy(table: tuple[int, int, int, int]) -> None:
    a, an, b, bn = table
    expected = fisher_exact([[a, an - a], [b, bn - b]], alternative="greater").pvalue
    assert _fisher_greater(a, an, b, bn) == pytest.approx(expected, rel=1e-9, abs=1e-12)
