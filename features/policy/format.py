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
- ``allowed_write_paths``: the scope of writes ("only modify files under
  ``services/payments/``"): a write to a path none of these globs matches breaks it
  (scratch paths such as ``/tmp`` are exempt). Unset: no scope.
- ``[[forbidden_actions]]``: a prohibition about one kind of action, judged on what the
  call does: ``action`` regex (searched in the call's text, as ``forbidden_commands``),
  ``within`` regex (optional: the calls of that kind, e.g. any ``kubectl`` against
  ``prod``; one that does not match ``action`` *honours* the rule, which is how
  ``compliance_decay`` knows the rule was kept) and ``until`` (optional, UTC: an ISO
  date and time ``2026-01-21T09:00``, or a time of day ``18:00`` on the day the session
  started: a freeze; after it the rule no longer holds).
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
- ``network_scope``: the network targets a scanner, connection or HTTP client may be
  pointed at (IPv4 addresses and networks, ``10.27.17.0/24``; host names, ``*.corp.example``):
  a call whose target (:func:`features.policy.scope.call_targets`) lies outside all of them
  breaks it. Unset: no scope.
- ``[[require_masked]]``: personal data a write or send must carry masked: ``kinds`` (of
  :data:`features.text.data_kinds.KINDS`: ``iban``, ``card``, ``email``, ``phone``,
  ``national_id``) and ``within`` (optional regex over the call's text: the destination,
  e.g. a tool named for a sheet). A write or send (in ``within``) carrying an unmasked value
  of a kind breaks it; one carrying a masked value (``****5453``) honours it.
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
from features.text.data_kinds import KINDS

__all__ = [
    "BUDGET_KEYS",
    "KNOWN_KEYS",
    "Budget",
    "ForbiddenAction",
    "RequireBefore",
    "RequireMasked",
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
        "allowed_write_paths",
        "forbidden_actions",
        "allowed_egress_hosts",
        "denied_egress_hosts",
        "allow_loopback_egress",
        "require_approval_for",
        "require_approval_answer",
        "require_before",
        "network_scope",
        "require_masked",
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
class RequireMasked:
    """Personal data of ``kinds`` a write or send (matching ``within``, when given) must
    carry masked (``[[require_masked]]``)."""

    kinds: tuple[str, ...]
    within: re.Pattern[str] | None = None

    @property
    def rule(self) -> str:
        where = f" in `{self.within.pattern}`" if self.within is not None else ""
        return f"require_masked {'/'.join(self.kinds)}{where}"


@dataclass(frozen=True, slots=True)
class ForbiddenAction:
    """A prohibition about one kind of action (``[[forbidden_actions]]``): ``action``
    breaks it, a call matching ``within`` (when given) and not ``action`` honours it, and
    ``until`` (None: always) ends it: ``(date_ns, None)`` an instant, ``(None, seconds)``
    a time of day on the session's first day (UTC)."""

    action: re.Pattern[str]
    within: re.Pattern[str] | None = None
    until: tuple[int | None, int | None] | None = None
    until_text: str = ""

    @property
    def rule(self) -> str:
        until = f" until {self.until_text}" if self.until_text else ""
        return f"forbidden_actions `{self.action.pattern}`{until}"


_UNTIL_RE = re.compile(
    r"^(?:(?P<date>\d{4}-\d{2}-\d{2})(?:[T ](?P<time>\d{1,2}:\d{2}(?::\d{2})?))?"
    r"|(?P<tod>\d{1,2}:\d{2}(?::\d{2})?))\s*(?:Z|UTC|\+00:?00)?$"
)


def _clock(text: str) -> int | None:
    """Seconds into the day of ``HH:MM[:SS]``, None when out of range."""
    h, mi, *sec = (int(x) for x in text.split(":"))
    ss = sec[0] if sec else 0
    return h * 3600 + mi * 60 + ss if h < 24 and mi < 60 and ss < 60 else None


def parse_until(text: str) -> tuple[int | None, int | None] | None:
    """``until`` of a forbidden action: ``(instant_ns, None)`` for an ISO date (and time;
    a date alone ends at its midnight), ``(None, seconds)`` for a time of day; None when
    ``text`` is neither. UTC throughout; pure (no clock, no time zone database).

    >>> parse_until("2026-01-21T09:00Z"), parse_until("18:00"), parse_until("soon")
    ((1768986000000000000, None), (None, 64800), None)
    >>> parse_until("2026-01-21T09:00:30Z"), parse_until("18:00:05")
    ((1768986030000000000, None), (None, 64805))
    """
    m = _UNTIL_RE.match(text.strip())
    if m is None:
        return None
    if m["tod"]:
        seconds = _clock(m["tod"])
        return None if seconds is None else (None, seconds)
    y, mo, d = (int(x) for x in m["date"].split("-"))
    seconds = _clock(m["time"] or "0:00")
    if seconds is None or not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    return (_days_from_civil(y, mo, d) * 86400 + seconds) * 10**9, None


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


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
    actions = _forbidden_actions(policy_id, mapping.get("forbidden_actions", ()))
    masked = _require_masked(policy_id, mapping.get("require_masked", ()))
    scope = _str_list(policy_id, mapping, "network_scope")
    for i, entry in enumerate(scope):
        if not _SCOPE_ENTRY_RE.fullmatch(entry.casefold()):
            raise ValueError(
                f"policy {policy_id!r}: network_scope[{i}] {entry!r} is not an IPv4 address, "
                "network or host name"
            )
    allowed_globs = _str_list(policy_id, mapping, "allowed_write_paths")
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
        allowed_write_paths=allowed_globs,
        forbidden_actions=actions,
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
        network_scope=tuple(e.casefold() for e in scope),
        require_masked=masked,
        approval_tools=re.compile("|".join(f"(?:{p})" for p in approval_patterns), re.IGNORECASE),
        budget=Budget(**{k: float(v) for k, v in budget_map.items()}),
        _write_re=compile_globs(globs),
        _write_res=tuple(c for g in globs if (c := compile_globs([g])) is not None),
        _allowed_re=compile_globs(allowed_globs),
    )


def _tables(
    policy_id: str, raw: Any, key: str, keys: set[str], needs: str
) -> list[tuple[int, str, Mapping[str, Any]]]:
    """The tables of a list-of-tables key (one table alone counts as a list), each with its
    index and where it is for errors; raises ``ValueError`` on a non-table or unknown key."""
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ValueError(f"policy {policy_id!r}: {key} must be a list of tables")
    out = []
    for i, item in enumerate(raw):
        where = f"policy {policy_id!r}: {key}[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{where} must be a table with {needs}")
        extra = sorted(set(item) - keys)
        if extra:
            raise ValueError(f"{where}: unknown key {extra[0]!r}")
        out.append((i, where, item))
    return out


def _forbidden_actions(policy_id: str, raw: Any) -> tuple[ForbiddenAction, ...]:
    out = []
    keys = {"action", "within", "until"}
    for i, where, item in _tables(policy_id, raw, "forbidden_actions", keys, "an action regex"):
        if not isinstance(item.get("action"), str) or not item["action"]:
            raise ValueError(f"{where}.action must be a non-empty regex string")
        within = item.get("within")
        if within is not None and (not isinstance(within, str) or not within):
            raise ValueError(f"{where}.within must be a non-empty regex string")
        until_text = item.get("until", "")
        until = None
        if until_text:
            until = parse_until(until_text) if isinstance(until_text, str) else None
            if until is None:
                raise ValueError(
                    f"{where}.until must be an ISO date and time (2026-01-21T09:00) or a "
                    f"time of day (18:00), UTC; got {until_text!r}"
                )
        patterns = [item["action"]] + ([within] if within else [])
        compiled = _regexes(policy_id, f"forbidden_actions[{i}]", patterns)
        out.append(
            ForbiddenAction(compiled[0], compiled[1] if within else None, until, until_text or "")
        )
    return tuple(out)


_SCOPE_ENTRY_RE = re.compile(
    r"\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?|(?:\*\.)?[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,8}"
)


def _require_masked(policy_id: str, raw: Any) -> tuple[RequireMasked, ...]:
    out = []
    for i, where, item in _tables(policy_id, raw, "require_masked", {"kinds", "within"}, "kinds"):
        kinds = item.get("kinds")
        if (
            not isinstance(kinds, Sequence)
            or isinstance(kinds, str)
            or not kinds
            or any(k not in KINDS for k in kinds)
        ):
            raise ValueError(f"{where}.kinds must be a list of {sorted(KINDS)}")
        within = item.get("within")
        if within is not None and (not isinstance(within, str) or not within):
            raise ValueError(f"{where}.within must be a non-empty regex string")
        compiled = _regexes(policy_id, f"require_masked[{i}]", [within]) if within else ()
        out.append(RequireMasked(tuple(kinds), compiled[0] if compiled else None))
    return tuple(out)


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
