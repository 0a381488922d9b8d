"""The policy file format: what a policy's table may say, validated and compiled.

A policy is data (TOML files read by the composition root, handed here as dicts);
:func:`policy_arguments` validates one table and compiles its values (regexes, globs,
the joined screen regex, budgets) into the keyword arguments of
:class:`features.policy.check.Policy`, which :meth:`~features.policy.check.Policy.from_mapping`
builds. A bad table raises ``ValueError`` naming the policy and the key. The format is
documented for users in ``docs/policies.md``. Pure: no I/O, no wall clock.

Rules (keys of the mapping; all optional)
-----------------------------------------
- ``forbidden_commands``: regexes searched in a tool call's command text (the shell
  command for shell tools; tool name plus argument strings for other tools, except the
  *content* of file writes, so writing docs that mention ``sudo`` is not running it).
- ``forbidden_tools``: tool names (``fnmatch`` globs, case-insensitive).
- ``forbidden_write_paths``: globs over the paths a call writes (see
  :func:`features.calls.tool_view.tool_view`).
  A glob not starting with ``/`` or ``~`` is relative to the workspace and matches at any
  directory depth (``package-lock.json``, ``.github/workflows/**``, ``**/*.lock``).
- ``allowed_egress_hosts`` (``*`` = any, ``*.example.com`` = subdomains) and
  ``denied_egress_hosts`` (a denied name also denies its subdomains; deny wins).
  Loopback (``localhost``, ``127.0.0.0/8``, ``::1``) is exempt unless
  ``allow_loopback_egress = false``: it is the agent's own machine. MCP client spans
  (``egress`` steps with ``detail["mcp_method"]``) are not checked: they reach the
  configured tool server; where the tool goes is read from the call's arguments.
- ``require_approval_for``: regexes over tool name and command text; a matching call
  needs an approved ``approval`` step since the previous matching call.
- ``require_approval_answer`` (default ``true``): with ``false``, an earlier approval
  request naming the call whose answer is not seen (approved out of band) is enough;
  a denial still is not.
- ``[[require_before]]``: ``action`` regex needs an earlier ``requires`` regex call
  since the last edit (``since = "edit"``, default) or since the start
  (``since = "start"``); with ``must_pass = true`` (default) that call must not have
  failed (status ``error``). A call the runtime cancelled before it ran (status
  ``cancelled``) is no run: the one before it counts.
- ``approval_tools``: regexes naming tools that *ask* for approval (their arguments quote
  the guarded command, so they are neither the action nor a violation). Default
  :data:`features.calls.tool_view.DEFAULT_APPROVAL_TOOLS`.
- ``budget``: ``tokens`` (billed: input + output of every model call), ``cost_usd``,
  ``tool_calls``, ``wall_seconds``; reported once each when first exceeded.
- ``policy_id`` (must equal the id given), ``description``, ``version``: informational.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from features.calls.tool_view import DEFAULT_APPROVAL_TOOLS

__all__ = [
    "BUDGET_KEYS",
    "KNOWN_KEYS",
    "Budget",
    "RequireBefore",
    "compile_globs",
    "joined_screen",
    "policy_arguments",
]

KNOWN_KEYS = frozenset(
    {
        "policy_id",
        "description",
        "version",
        "forbidden_commands",
        "forbidden_tools",
        "forbidden_write_paths",
        "allowed_egress_hosts",
        "denied_egress_hosts",
        "allow_loopback_egress",
        "require_approval_for",
        "require_approval_answer",
        "require_before",
        "approval_tools",
        "budget",
    }
)
BUDGET_KEYS = ("tokens", "cost_usd", "tool_calls", "wall_seconds")


@dataclass(frozen=True, slots=True)
class RequireBefore:
    """``action`` needs an earlier ``requires`` call (since the last edit, or the start)."""

    action: re.Pattern[str]
    requires: re.Pattern[str]
    must_pass: bool = True
    since: str = "edit"

    @property
    def rule(self) -> str:
        return f"require_before `{self.action.pattern}` needs `{self.requires.pattern}`"


@dataclass(frozen=True, slots=True)
class Budget:
    """A policy's spending limits (``budget``), in :data:`BUDGET_KEYS` order; None = none."""

    tokens: float | None = None
    cost_usd: float | None = None
    tool_calls: float | None = None
    wall_seconds: float | None = None


def policy_arguments(policy_id: str, mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :class:`features.policy.check.Policy` for ``mapping`` (as parsed
    from TOML): validated and compiled. Raises ``ValueError`` naming the policy and the
    bad key. Pure: reads nothing else."""
    if not isinstance(policy_id, str) or not policy_id:
        raise ValueError(f"policy id must be a non-empty string, got {policy_id!r}")
    if not isinstance(mapping, Mapping):
        raise ValueError(f"policy {policy_id!r} must be a table, got {type(mapping).__name__}")
    unknown = sorted(set(mapping) - KNOWN_KEYS)
    if unknown:
        raise ValueError(
            f"policy {policy_id!r}: unknown key {unknown[0]!r}; known: {sorted(KNOWN_KEYS)}"
        )
    declared = mapping.get("policy_id", policy_id)
    if declared != policy_id:
        raise ValueError(f"policy {policy_id!r}: policy_id says {declared!r}")
    description = mapping.get("description", "")
    if not isinstance(description, str):
        raise ValueError(f"policy {policy_id!r}: description must be a string")
    loopback = mapping.get("allow_loopback_egress", True)
    if not isinstance(loopback, bool):
        raise ValueError(f"policy {policy_id!r}: allow_loopback_egress must be true or false")
    answer = mapping.get("require_approval_answer", True)
    if not isinstance(answer, bool):
        raise ValueError(f"policy {policy_id!r}: require_approval_answer must be true or false")
    globs = _str_list(policy_id, mapping, "forbidden_write_paths")
    rb = mapping.get("require_before", ())
    if isinstance(rb, Mapping):
        rb = [rb]
    if not isinstance(rb, Sequence) or isinstance(rb, str):
        raise ValueError(f"policy {policy_id!r}: require_before must be a list of tables")
    rules = []
    for i, item in enumerate(rb):
        where = f"policy {policy_id!r}: require_before[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{where} must be a table with action and requires")
        extra = sorted(set(item) - {"action", "requires", "must_pass", "since"})
        if extra:
            raise ValueError(f"{where}: unknown key {extra[0]!r}")
        for k in ("action", "requires"):
            if not isinstance(item.get(k), str) or not item[k]:
                raise ValueError(f"{where}.{k} must be a non-empty regex string")
        must_pass = item.get("must_pass", True)
        since = item.get("since", "edit")
        if not isinstance(must_pass, bool):
            raise ValueError(f"{where}.must_pass must be true or false")
        if since not in ("edit", "start"):
            raise ValueError(f"{where}.since must be 'edit' or 'start', got {since!r}")
        action, requires = _regexes(
            policy_id, f"require_before[{i}]", (item["action"], item["requires"])
        )
        rules.append(RequireBefore(action, requires, must_pass, since))
    budget_map = mapping.get("budget", {})
    if not isinstance(budget_map, Mapping):
        raise ValueError(f"policy {policy_id!r}: budget must be a table")
    budget_extra = sorted(set(budget_map) - set(BUDGET_KEYS))
    if budget_extra:
        raise ValueError(f"policy {policy_id!r}: unknown key budget.{budget_extra[0]}")
    for k, v in budget_map.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0 or math.isinf(v):
            raise ValueError(f"policy {policy_id!r}: budget.{k} must be a positive number")
    approval_patterns = _str_list(policy_id, mapping, "approval_tools") or DEFAULT_APPROVAL_TOOLS
    hosts = {}
    for key in ("allowed_egress_hosts", "denied_egress_hosts"):
        hosts[key] = tuple(h.lower().rstrip(".") for h in _str_list(policy_id, mapping, key))
    return dict(
        policy_id=policy_id,
        description=description,
        forbidden_commands=_regexes(
            policy_id, "forbidden_commands", _str_list(policy_id, mapping, "forbidden_commands")
        ),
        forbidden_tools=tuple(t.lower() for t in _str_list(policy_id, mapping, "forbidden_tools")),
        forbidden_write_paths=globs,
        allowed_egress_hosts=hosts["allowed_egress_hosts"]
        if "allowed_egress_hosts" in mapping
        else ("*",),
        denied_egress_hosts=hosts["denied_egress_hosts"],
        allow_loopback_egress=loopback,
        require_approval_for=_regexes(
            policy_id,
            "require_approval_for",
            _str_list(policy_id, mapping, "require_approval_for"),
        ),
        require_before=tuple(rules),
        require_approval_answer=answer,
        approval_tools=re.compile("|".join(f"(?:{p})" for p in approval_patterns), re.IGNORECASE),
        budget=Budget(**{k: float(v) for k, v in budget_map.items()}),
        _write_re=compile_globs(globs),
        _write_res=tuple(c for g in globs if (c := compile_globs([g])) is not None),
    )


def _str_list(policy_id: str, mapping: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = mapping.get(key, ())
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"policy {policy_id!r}: {key} must be a list of strings, got {value!r}")
    for i, v in enumerate(value):
        if not isinstance(v, str) or not v:
            raise ValueError(f"policy {policy_id!r}: {key}[{i}] must be a non-empty string")
    return tuple(value)


def _regexes(
    policy_id: str, key: str, patterns: Iterable[str], flags: int = 0
) -> tuple[re.Pattern[str], ...]:
    out = []
    for i, p in enumerate(patterns):
        try:
            out.append(re.compile(p, flags))
        except re.error as e:
            raise ValueError(f"policy {policy_id!r}: {key}[{i}] {p!r} is not a regex: {e}") from e
    return tuple(out)


def _glob_regex(glob: str) -> str:
    """A path glob as a regex body: ``**`` any depth, ``*``/``?`` within a component."""
    i, out = 0, []
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("(?:/.*)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = glob.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = glob[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def compile_globs(globs: Sequence[str]) -> re.Pattern[str] | None:
    """One regex matching a path if any glob matches it. Relative globs match at any
    directory depth (the workspace may be unknown, or paths absolute)."""
    if not globs:
        return None
    parts = []
    for g in globs:
        body = _glob_regex(g.rstrip("/") if g not in ("/",) else g)
        parts.append(body if g.startswith(("/", "~")) else f"(?:.*/)?{body}")
    return re.compile("(?:" + "|".join(parts) + ")")


_DEFAULT_FLAGS = re.compile("").flags
_GROUP_REFERENCE = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")


def joined_screen(patterns: Sequence[re.Pattern[str]]) -> re.Pattern[str] | None:
    """One regex that finds a match wherever one of ``patterns`` would (a screen: when
    it finds nothing, none of them does). None when there is nothing to screen or the
    patterns cannot be joined as they are: global flags of their own, or references to
    groups by number or name, which would point elsewhere in the joined pattern."""
    if not patterns:
        return None
    for p in patterns:
        if p.flags != _DEFAULT_FLAGS or _GROUP_REFERENCE.search(p.pattern):
            return None
    try:
        return re.compile("|".join(f"(?:{p.pattern})" for p in patterns))
    except re.error:  # e.g. the same group name in two patterns
        return None
