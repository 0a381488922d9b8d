"""A config's policies by id: compiled once, and the one a session runs under.

:func:`compile_policies` turns the configured ``policies`` (id → table, as parsed from
TOML) into :class:`features.policy.Policy` objects, shared between equal configs;
:func:`resolve_policy_id` picks, on a session's first step, which of them it runs under.
Pure: no I/O, no wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from features.frozen import freeze, thaw
from features.policy import Policy
from models.records import Step, StepKind

__all__ = ["compile_policies", "resolve_policy_id"]


def compile_policies(policies: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Policy]:
    """Every policy of ``policies`` (id → raw mapping) compiled; ``ValueError`` names the
    first bad one."""
    if policies is None:
        return {}
    if not isinstance(policies, Mapping):
        raise ValueError(f"policies must map policy ids to tables, got {type(policies).__name__}")
    key = freeze(policies)
    if key is None:
        return {pid: Policy.from_mapping(pid, raw) for pid, raw in policies.items()}
    return dict(_compile_frozen(key))


# The policy detectors are cloned per session and each clone compiles its policies
# (~1.2 ms for the shipped config: dozens of regexes and globs), which cost ~20 µs a step
# on a replay of short sessions. A ``Policy`` is frozen and a pure function of the raw
# mapping, so the compiled ones are shared between equal configs. The key is an exact,
# type-tagged frozen copy of plain TOML data (anything else is compiled uncached), so
# equal keys mean equal inputs; failures are not cached, they raise each time.
@lru_cache(maxsize=16)
def _compile_frozen(key: tuple[Any, ...]) -> dict[str, Policy]:
    policies = thaw(key)
    return {pid: Policy.from_mapping(pid, raw) for pid, raw in policies.items()}


def resolve_policy_id(
    step: Step,
    known: Mapping[str, Any],
    agent_policies: Mapping[str, str] | None,
    default_policy: str | None,
) -> str | None:
    """The policy a session runs under, decided on its first step: the START step's
    ``detail["policy_id"]``, else the policy of its agent, else the default — the first
    of these that names a known policy; None when none does."""
    candidates: list[Any] = []
    if step.kind == StepKind.START and isinstance(step.detail, Mapping):
        candidates.append(step.detail.get("policy_id"))
    if agent_policies and step.agent:
        candidates.append(agent_policies.get(step.agent))
    candidates.append(default_policy)
    return next((c for c in candidates if isinstance(c, str) and c in known), None)
