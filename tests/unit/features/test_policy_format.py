"""The policy file format (features/policy/format.py): the fixture drafts load, and a bad
table fails naming the policy and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from features.policy.catalog import compile_policies
from features.policy.check import Policy
from tests.support.paths import ROOT

POLICIES = ROOT / "fixtures" / "policies"


@pytest.mark.parametrize("path", sorted(POLICIES.glob("*.toml")), ids=lambda p: p.stem)
def test_fixture_drafts_load(path: Path) -> None:
    with path.open("rb") as f:
        raw = tomllib.load(f)
    policy = Policy.from_mapping(path.stem, raw)
    assert policy.policy_id == path.stem
    assert len(policy.forbidden_commands) == len(raw["forbidden_commands"])


@pytest.mark.parametrize(
    ("mapping", "key"),
    [
        ({"forbiden_commands": []}, "forbiden_commands"),
        ({"forbidden_commands": ["(unclosed"]}, "forbidden_commands[0]"),
        ({"forbidden_commands": "rm -rf /"}, "forbidden_commands"),
        ({"require_before": [{"action": "git commit"}]}, "require_before[0].requires"),
        ({"require_before": [{"action": "a", "requires": "b", "since": "x"}]}, "since"),
        ({"require_before": [{"action": "a", "requires": "b", "extra": 1}]}, "extra"),
        ({"budget": {"tokens": -5}}, "budget.tokens"),
        ({"budget": {"dollars": 5}}, "budget.dollars"),
        ({"policy_id": "other"}, "policy_id"),
        ({"allow_loopback_egress": "yes"}, "allow_loopback_egress"),
    ],
)
def test_bad_policies_name_the_key(mapping: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("]", r"\]")):
        Policy.from_mapping("p", mapping)


def test_compile_policies_fails_on_the_first_bad_one() -> None:
    with pytest.raises(ValueError, match="'bad'"):
        compile_policies({"ok": {}, "bad": {"forbidden_tools": [3]}})
