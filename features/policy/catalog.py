"""A config's policies by id: compiled once, and the one a session runs under.

:func:`compile_policies` turns the configured ``policies`` (id → table, as parsed from
TOML) into :class:`features.policy.check.Policy` objects, shared between equal configs;
:func:`resolve_policy_id` picks, on a session's first step, which of them it runs under;
a session none names may run under the rules of its own instructions
(:func:`instructions_of`, :func:`derived_policy`; see :mod:`features.policy.instructions`).
Pure: no I/O, no wall clock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from features.calls.step_features import features_of
from features.policy.check import Policy
from features.policy.instructions import derive, derived_policy_id
from features.text.frozen import freeze, thaw
from models.records import Step, StepKind

__all__ = [
    "DERIVED_MODES",
    "compile_policies",
    "derived_policy",
    "instructions_of",
    "project_rules_call",
    "project_rules_read",
    "resolve_policy_id",
    "rule_sentences",
    "task_of",
]

DERIVED_MODES = ("off", "warn", "enforce")
"""What a session with no policy attached runs under: nothing (``off``), the rules of its
own instructions reported as warnings until a person confirms them by attaching them as a
policy file (``warn``, the default), or those rules at their full severity (``enforce``)."""


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


def instructions_of(step: Step) -> str | None:
    """The instructions a step carries, where the rules of a session are written: the
    system instructions of its start or of a model call (``detail["system_instructions"]``:
    the GenAI ``gen_ai.system_instructions``, a session log's ``system_instructions``, an
    AgentDojo system message, a Codex rollout's ``AGENTS.md``). Redacted and bounded by the
    decoders."""
    if step.kind not in (StepKind.START, StepKind.MODEL_CALL):
        return None
    detail = step.detail
    is_map = type(detail) is dict or isinstance(detail, Mapping)
    text = detail.get("system_instructions") if is_map else None
    return text if isinstance(text, str) and text.strip() else None


_PROJECT_RULES_RE = re.compile(
    r"(?<![\w.-])(?:AGENTS|CLAUDE|GEMINI)\.md(?![\w.-])|(?<![\w-])\.cursorrules(?![\w.-])"
    r"|(?<![\w.-])copilot-instructions\.md(?![\w.-])"
)
"""The files agent runtimes load as a project's standing instructions: ``AGENTS.md``
(Codex and the agents.md convention), ``CLAUDE.md``, ``GEMINI.md``, ``.cursorrules``,
``.github/copilot-instructions.md``."""
PROJECT_RULES_CHARS = 8_000
"""Characters of a project's instructions file read for rules (they are a few KB)."""
PROJECT_READS = 8
"""Ids (step and call) of calls reading a project's instructions file whose result is
awaited: a list :func:`project_rules_read` keeps stops growing here."""


def project_rules_call(step: Step) -> bool:
    """Whether a tool call reads a project's instructions file (:data:`_PROJECT_RULES_RE`):
    what the agent reads there binds it as its system instructions do (a transcript
    records the read, not the system prompt the runtime built from it). A call that
    changes the file is no read of its rules.

    >>> from detectors.testing import Session
    >>> s = Session()
    >>> [project_rules_call(s.tool(t, a)[0]) for t, a in (
    ...     ("Read", {"file_path": "/src/app/CLAUDE.md"}),
    ...     ("bash", {"command": "cat AGENTS.md"}),
    ...     ("Edit", {"file_path": "CLAUDE.md", "old_string": "a", "new_string": "b"}),
    ...     ("Read", {"file_path": "docs/MY_AGENTS.md.bak"}))]
    [True, True, False, False]
    """
    arguments = step.arguments
    if step.kind != StepKind.TOOL_CALL or not arguments:
        return False
    head = arguments[:2_000]
    # every name the pattern finds holds ".md" or "cursorrules": most calls hold neither
    if ".md" not in head and "cursorrules" not in head:
        return False
    if _PROJECT_RULES_RE.search(head) is None:
        return False
    effect, mutation = features_of(step).effect
    return effect is None and not mutation


def project_rules_read(pending: list[str], step: Step) -> str | None:
    """The text of a project's instructions file (its first :data:`PROJECT_RULES_CHARS`
    characters) on the result of a call that read it (:func:`project_rules_call`); None on
    any other step. ``pending`` is the caller's list of the reading calls' ids, extended
    here as they come (up to :data:`PROJECT_READS`).

    >>> from detectors.testing import Session
    >>> pending: list[str] = []
    >>> call, result = Session().tool("bash", {"command": "cat AGENTS.md"}, result="Use x.")
    >>> project_rules_read(pending, call), project_rules_read(pending, result)
    (None, 'Use x.')
    """
    kind = step.kind
    if kind == StepKind.TOOL_CALL:
        if project_rules_call(step) and len(pending) < PROJECT_READS:
            pending += [k for k in (step.step_id, step.call_id) if k]
        return None
    if kind != StepKind.TOOL_RESULT or not pending or not step.result:
        return None
    if (step.parent_step_id or step.call_id) not in pending:
        return None
    return step.result[:PROJECT_RULES_CHARS]


def task_of(step: Step) -> str | None:
    """The person's request a step carries, where rules are written too ("… Never book or
    pay for anything without my explicit confirmation."): a top-level start's goal, or a
    model call's user message. The policy detectors read the first one of a session."""
    detail = step.detail if isinstance(step.detail, Mapping) else {}
    if step.kind == StepKind.START:
        if detail.get("subagent") or detail.get("turn"):
            return None
        text = step.text
    elif step.kind == StepKind.MODEL_CALL:
        text = detail.get("user_message")
    else:
        return None
    return text if isinstance(text, str) and text.strip() else None


@lru_cache(maxsize=64)
def derived_policy(text: str) -> Policy | None:
    """The policy of the rules stated in ``text`` (:func:`features.policy.instructions.derive`),
    None when it states none. Derived patterns are escaped text or fixed regexes, so they
    compile; were one not to, the session would go unchecked rather than the detector fail."""
    mapping = derive(text).mapping(derived_policy_id(text))
    if len(mapping) == 1:
        return None
    try:
        return Policy.from_mapping(mapping["policy_id"], mapping)
    except ValueError:
        return None


@lru_cache(maxsize=64)
def rule_sentences(text: str) -> dict[str, str]:
    """Rule name (:attr:`features.policy.check.Violation.rule`) → the sentence of ``text`` it
    was derived from, for alert reasons."""
    out: dict[str, str] = {}
    for rule in derive(text).rules:
        if rule.key == "require_before":
            name = f"require_before `{rule.value['action']}` needs `{rule.value['requires']}`"
        elif rule.key == "forbidden_actions":
            until = f" until {rule.value['until']}" if rule.value.get("until") else ""
            name = f"forbidden_actions `{rule.value['action']}`{until}"
        elif rule.key == "require_masked":
            where = f" in `{rule.value['within']}`" if rule.value.get("within") else ""
            name = f"require_masked {'/'.join(rule.value['kinds'])}{where}"
        elif rule.key in ("allowed_egress_hosts", "allowed_write_paths", "network_scope"):
            name = rule.key
        else:
            name = f"{rule.key} `{rule.value}`"
        out.setdefault(name, rule.sentence)
    return out
