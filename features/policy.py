"""Agent policies: the rules a session runs under, and checking each step against them.

A policy is data (TOML files read by the composition root, handed here as dicts);
:meth:`Policy.from_mapping` validates and precompiles it once, :meth:`Policy.check`
tells which rules one step breaks, given a small :class:`PolicyState` the caller
keeps per session. :class:`ComplianceLedger` adds what the compliance detectors
share: violation rates per *model session* (the stretches between context
compactions) and which rules the agent demonstrably honoured before a compaction,
so ``compliance_decay`` and ``policy_violation`` split the cases the same way.
The format is documented in ``docs/policies.md``. Pure: no I/O, no wall clock.

Rules (keys of the mapping; all optional)
-----------------------------------------
- ``forbidden_commands``: regexes searched in a tool call's command text (the shell
  command for shell tools; tool name plus argument strings for other tools, except the
  *content* of file writes, so writing docs that mention ``sudo`` is not running it).
- ``forbidden_tools``: tool names (``fnmatch`` globs, case-insensitive).
- ``forbidden_write_paths``: globs over the paths a call writes (see :func:`tool_view`).
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
- ``[[require_before]]``: ``action`` regex needs an earlier ``requires`` regex call
  since the last edit (``since = "edit"``, default) or since the start
  (``since = "start"``); with ``must_pass = true`` (default) that call must not have
  failed (status ``error``).
- ``approval_tools``: regexes naming tools that *ask* for approval (their arguments quote
  the guarded command, so they are neither the action nor a violation). Default
  :data:`DEFAULT_APPROVAL_TOOLS`.
- ``budget``: ``tokens`` (billed: input + output of every model call), ``cost_usd``,
  ``tool_calls``, ``wall_seconds``; reported once each when first exceeded.
- ``policy_id`` (must equal the id given), ``description``, ``version``: informational.

Decisions
---------
- **Approvals** are matched by recency, not by tool: runtimes attach the approval to the
  tool that asked (``request_approval``, ``ask_human``), not to ``bash``. An approval
  opens the ``require_approval_for`` rules that the preceding approval request names
  (its arguments match the rule's regex), or all of them when the request names none;
  the next matching call consumes it. A denied approval closes them.
- **Tests before commit**: the ``requires`` call must come after the last edit and, by
  default, must not have failed: "tests ran, failed, committed anyway" is the failure the
  rule exists for. A ``requires`` call whose result has not arrived yet counts as run.
  With no edit at all, the rule holds vacuously (and does not count as honoured).
- **Writes** are recognised generically (:func:`tool_view`): write-ish tool names
  (edit/write/create/delete/patch/replace/save/move/...) with path-like argument keys,
  ``apply_patch``/unified-diff headers, shell redirects and ``tee``/``sed -i``/``rm``/
  ``mv``/``cp``/``touch``/``mkdir``/``truncate``/``dd of=``, and ``open(path, "w")`` in
  code. Writes to ``/dev/``, ``/tmp/`` and ``*.log`` are writes (for forbidden paths) but
  not *edits* (they do not invalidate a test run).
- **Honoured** (:attr:`Violation.scope`): a positive rule (approval, require_before) is
  honoured when its precondition arose and was met; a prohibition family
  (``forbidden_commands``, ``forbidden_tools``, ``forbidden_write_paths``, ``egress``)
  when the agent did that kind of thing (ran a command, wrote a file, reached a host)
  and stayed inside the rule. Budgets are never "honoured": spend is cumulative.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from features.frozen import freeze, thaw
from models.records import Step, StepKind

__all__ = [
    "DEFAULT_APPROVAL_TOOLS",
    "Budget",
    "ComplianceLedger",
    "Finding",
    "Policy",
    "PolicyState",
    "RequireBefore",
    "ToolView",
    "Violation",
    "compile_policies",
    "is_check_command",
    "resolve_policy_id",
    "tool_view",
]

DEFAULT_APPROVAL_TOOLS = (
    r"approv",
    r"ask_?(human|user|operator)",
    r"human_?(input|feedback|review)",
    r"confirm",
    r"permission",
    r"consent",
)
"""Tool-name regexes (case-insensitive) of tools that ask a human; overridable per policy."""

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
        "require_before",
        "approval_tools",
        "budget",
    }
)
BUDGET_KEYS = ("tokens", "cost_usd", "tool_calls", "wall_seconds")

# Violation kinds (= the policy key that was broken).
FORBIDDEN_COMMAND = "forbidden_commands"
FORBIDDEN_TOOL = "forbidden_tools"
FORBIDDEN_WRITE = "forbidden_write_paths"
EGRESS = "egress"
APPROVAL = "require_approval_for"
REQUIRE_BEFORE = "require_before"
BUDGET = "budget"
_POSITIVE = frozenset({APPROVAL, REQUIRE_BEFORE})

_START = StepKind.START
_MODEL_CALL = StepKind.MODEL_CALL
_TOOL_CALL = StepKind.TOOL_CALL
_TOOL_RESULT = StepKind.TOOL_RESULT
_EGRESS = StepKind.EGRESS
_APPROVAL = StepKind.APPROVAL


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule one step broke.

    ``rule`` names the rule as a person reads it (``require_approval_for `git\\s+push```),
    ``kind`` the policy key (``require_approval_for``, ``forbidden_commands``, ...,
    ``egress``, ``budget``), ``step_seq`` the step, ``detail`` what happened.
    """

    rule: str
    kind: str
    step_seq: int
    detail: str

    @property
    def scope(self) -> str:
        """What "honoured before" is judged on: the rule itself for positive rules,
        the family for prohibitions (see the module's Decisions)."""
        return self.rule if self.kind in _POSITIVE else self.kind


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
    tokens: float | None = None
    cost_usd: float | None = None
    tool_calls: float | None = None
    wall_seconds: float | None = None


# ---------------------------------------------------------------------------
# Reading tool calls: command text, writes, approval requests, checks
# ---------------------------------------------------------------------------

_SHELL_TOOL_RE = re.compile(
    r"(?i)(^|[_\-.])(bash|sh|zsh|shell|terminal|run_?command|exec(ute)?_?(command|shell|bash)|"
    r"run_?shell|run_?terminal_?cmd|run_?in_?terminal)($|[_\-.])"
)
_COMMAND_KEYS = frozenset({"command", "cmd", "commands", "script", "shell", "bash", "argv"})
_CODE_KEYS = frozenset({"code", "source", "python", "program", "script"})
_WRITE_TOOL_RE = re.compile(
    r"(?i)(edit|write|create|delete|remove|unlink|patch|replace|save|move|rename|append|"
    r"insert|mkdir|overwrite|put_?file|upload_?file|touch)"
)
_READ_SUBCOMMANDS = frozenset({"view", "read", "list", "ls", "cat", "get", "show", "search"})
_PATH_KEYS = frozenset(
    {
        "path",
        "file",
        "file_path",
        "filepath",
        "filename",
        "file_name",
        "target",
        "target_file",
        "target_path",
        "dest",
        "destination",
        "dst",
        "new_path",
        "old_path",
        "source_path",
        "paths",
        "files",
        "notebook_path",
    }
)
_CONTENT_KEYS = frozenset(
    {
        "content",
        "contents",
        "file_text",
        "text",
        "new_str",
        "old_str",
        "new_text",
        "old_text",
        "new_string",
        "old_string",
        "old",
        "new",
        "body",
        "data",
        "patch",
        "diff",
        "input",
        "edits",
        "insert_text",
    }
)
_PATCH_FILE_RE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
    r"|^\+\+\+ (?:b/)?(\S+)|^--- (?:a/)?(\S+)",
    re.MULTILINE,
)
_PY_WRITE_RE = re.compile(
    r"""open\(\s*(?:r|f)?(['"])(?P<p1>[^'"]+)\1\s*,\s*(?:mode\s*=\s*)?(['"])[^'"]*[wax]"""
    r"""|Path\(\s*(['"])(?P<p2>[^'"]+)\4\s*\)\s*\.(?:write_text|write_bytes|unlink|touch|mkdir)"""
    r"""|os\.(?:remove|unlink|rmdir|makedirs|mkdir)\(\s*(['"])(?P<p3>[^'"]+)\5"""
    r"""|shutil\.rmtree\(\s*(['"])(?P<p4>[^'"]+)\6"""
)
# Quick screen: only commands containing one of these need shell write parsing.
_SHELL_WRITE_SCREEN = re.compile(
    r">|\b(sed|rm|rmdir|unlink|mv|cp|tee|touch|mkdir|truncate|install|ln|dd|git)\b"
)
_SEGMENT_SPLIT = re.compile(r"&&|\|\||[;\n|&]")
_REDIRECT_RE = re.compile(r"(?<![<>&0-9])(?:[0-9]|&)?>>?\|?\s*(?!&)([^\s;&|<>()]+)")
# What makes shlex.split differ from str.split: quotes, backslashes, and blanks other
# than shlex's own four (str.split also splits on \v, \f, \x1c-\x1f, NBSP, ...).
_NEEDS_SHLEX = re.compile(r"['\"\\]|[^\S \t\r\n]")
# A segment writes only if one of its words (as shlex or str.split reads it) is a writing
# program: its first (after `sudo`/`env`/assignments), or the second after `git`. Such a
# word is made of the program's letters with only quotes and backslashes removed, so
# with those removed the segment holds the name as a whole word (maybe after a `/`).
# No such name: no tokenising needed (shlex costs ~5 µs a segment).
_WRITER_WORD = re.compile(
    r"(?:^|[\s/])(?:sed|rm|rmdir|unlink|mv|cp|tee|touch|mkdir|truncate|install|ln|dd)(?=\s|$)"
)
_UNQUOTE = str.maketrans("", "", "'\"\\")
_ALL_ARGS_WRITE = frozenset({"rm", "rmdir", "unlink", "touch", "mkdir", "truncate", "tee", "mv"})
_LAST_ARG_WRITE = frozenset({"cp", "install", "ln"})
_SCRATCH_RE = re.compile(r"^(/dev/|/tmp/|/var/tmp/|/proc/)|\.log$|(^|/)\.git/")
_HOME_RE = re.compile(r"^(?:/root|/home/[^/]+|/Users/[^/]+|\$HOME|\$\{HOME\})(?=/|$)")

_CHECK_PROGRAMS = (
    r"pytest|py\.test|tox|nox|unittest|nosetests|jest|vitest|mocha|karma|ava|jasmine|playwright"
    r"|cypress|ruff|flake8|pylint|mypy|pyright|black\s+--check|eslint|tsc|prettier\s+--check"
    r"|rspec|phpunit|ctest|shellcheck|golangci-lint|hadolint"
    r"|go\s+(?:test|vet|build)|cargo\s+(?:test|nextest|check|build|clippy)"
    r"|(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:test|lint|build|check|typecheck|tsc|ci)[\w:.-]*"
    r"|deno\s+(?:test|lint|check)|make(?:\s+-\S+)*(?:\s+(?:test|check|lint|build|all|ci)\w*)?"
    r"|mvn\w*\s+(?:\S+\s+)*?(?:test|verify|package|install)|\S*gradlew?\s+(?:\S+\s+)*?(?:test|build|check)"
    r"|bazel\w*\s+(?:test|build)|dotnet\s+(?:test|build)|swift\s+(?:test|build)|mix\s+test"
    r"|rake\s+test|bundle\s+exec\s+(?:rspec|rake)|ninja|cmake\s+--build"
)
_CHECK_SEGMENT_RE = re.compile(
    r"^\s*(?:\(\s*)?(?:\w+=\S*\s+)*(?:sudo\s+|time\s+|timeout\s+\S+\s+|nice\s+|env\s+)*"
    r"(?:cd\s+\S+\s*&&\s*)?(?:uv\s+run\s+|poetry\s+run\s+|pipenv\s+run\s+|hatch\s+run\s+|pdm\s+run\s+"
    r"|npx\s+|pnpx\s+|bunx\s+|python[0-9.]*\s+-m\s+|\S*/)?(?:" + _CHECK_PROGRAMS + r")(?:\s|$)"
)
_CHECK_TOOL_RE = re.compile(
    r"(?i)(^|[_\-.])(test|tests|run_?tests|lint|build|check|typecheck|verify)($|[_\-.])"
)


@dataclass(frozen=True, slots=True)
class ToolView:
    """What a tool call does, read from its name and arguments once.

    ``text`` is what command regexes are searched in; ``commands`` the shell commands
    (argv lists joined, ``bash -lc X`` unwrapped to ``X``); ``writes`` the paths written
    (as given); ``unknown_write`` a write whose path could not be read;
    ``approval_request`` a tool asking a human.
    """

    tool: str
    text: str
    commands: tuple[str, ...]
    writes: tuple[str, ...]
    unknown_write: bool
    approval_request: bool

    @property
    def is_check(self) -> bool:
        """A test/lint/build run (see :func:`is_check_command`)."""
        return bool(_CHECK_TOOL_RE.search(self.tool)) or any(
            is_check_command(c) for c in self.commands
        )


def is_check_command(command: str) -> bool:
    """Whether a shell command runs a test, lint, type check or build as one of its
    segments (``pytest -q``, ``cd web && npm test``, ``go test ./...``, ``make check``).

    >>> [is_check_command(c) for c in ("pytest -q", "cd x && cargo test", "rg test src")]
    [True, True, False]
    """
    return any(_CHECK_SEGMENT_RE.match(seg) for seg in _SEGMENT_SPLIT.split(command))


def _parse_arguments(raw: str | None) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # not JSON: the runtime sent plain text


def _strings(value: Any, skip: frozenset[str] = frozenset()) -> list[str]:
    """The strings in ``value`` (parsed arguments), in order; a list of strings counts as
    one, joined by spaces. ``skip`` names keys of the top-level mapping to leave out."""
    out: list[str] = []
    _collect_strings(value, skip, out)
    return out


_NO_SKIP: frozenset[str] = frozenset()


def _collect_strings(value: Any, skip: frozenset[str], out: list[str]) -> None:
    t = type(value)  # exact JSON types first: the ABC checks below cost more
    if t is str:
        out.append(value)
    elif t is dict or (t is not list and isinstance(value, Mapping)):
        for k, v in value.items():
            if k not in skip:
                _collect_strings(v, _NO_SKIP, out)
    elif t is list or isinstance(value, list | tuple):
        if value and all(isinstance(v, str) for v in value):
            out.append(" ".join(value))
        else:
            for v in value:
                _collect_strings(v, skip, out)
    elif isinstance(value, str):
        out.append(value)


def _command_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # ["bash", "-lc", "git push"] → the script is what runs
        if (
            len(value) >= 3
            and value[1] in ("-c", "-lc", "-ic", "-xc", "-ec")
            and value[0].split("/")[-1] in ("bash", "sh", "zsh", "dash")
        ):
            return value[2]
        return " ".join(shlex.quote(v) if " " in v else v for v in value)
    return None


def _shell_writes(command: str) -> list[str]:
    """Paths a shell command writes: redirect targets and the operands of writing
    commands (see the module's Decisions). Best effort: no expansion, no subshells."""
    if not _SHELL_WRITE_SCREEN.search(command):
        return []
    out = [m.group(1) for m in _REDIRECT_RE.finditer(command)] if ">" in command else []
    for segment in _SEGMENT_SPLIT.split(command):
        seg = segment.strip()
        if not seg or not _WRITER_WORD.search(seg.translate(_UNQUOTE)):
            continue
        if _NEEDS_SHLEX.search(seg):
            try:
                words = shlex.split(seg, comments=False)
            except ValueError:
                words = seg.split()
        else:  # no quotes, escapes or odd blanks: shlex would split on the blanks alone
            words = seg.split()
        while words and (
            ("=" in words[0] and not words[0].startswith("-"))
            or words[0] in ("sudo", "env", "time", "nice", "command", "exec")
        ):
            words = words[1:]
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        if prog == "git" and len(words) > 1 and words[1] in ("rm", "mv"):
            prog, words = words[1], words[1:]
        operands = [w for w in words[1:] if not w.startswith("-") and not w.startswith(">")]
        if prog == "sed":
            if not any(w.startswith("-i") or w.startswith("--in-place") for w in words[1:]):
                continue
            has_script_flag = any(w in ("-e", "-f", "--expression", "--file") for w in words)
            out.extend(operands if has_script_flag else operands[1:])
        elif prog in _ALL_ARGS_WRITE:
            out.extend(operands)
        elif prog in _LAST_ARG_WRITE and len(operands) >= 2:
            out.append(operands[-1])
        elif prog == "dd":
            out.extend(w[3:] for w in words[1:] if w.startswith("of="))
    return [p for p in out if p and p not in ("/dev/null", "-")]


def _tool_writes(tool: str, args: Any) -> tuple[list[str], bool]:
    """(paths, unknown_write) of a non-shell tool call."""
    paths: list[str] = []
    if isinstance(args, Mapping):
        sub = args.get("command")
        if isinstance(sub, str) and sub.lower() in _READ_SUBCOMMANDS:
            return [], False
        for key, value in args.items():
            if key.lower() in _PATH_KEYS:
                if isinstance(value, str):
                    paths.append(value)
                elif isinstance(value, list):
                    paths.extend(v for v in value if isinstance(v, str))
        for s in _strings({k: v for k, v in args.items() if k.lower() in _CONTENT_KEYS}):
            if "*** " in s or "+++ " in s:
                for m in _PATCH_FILE_RE.finditer(s):
                    p = next((g for g in m.groups() if g), None)
                    if p and p != "/dev/null":
                        paths.append(p)
    elif isinstance(args, str):
        paths.extend(
            next(g for g in m.groups() if g)
            for m in _PATCH_FILE_RE.finditer(args)
            if any(m.groups())
        )
    return list(dict.fromkeys(paths)), not paths


def tool_view(step: Step, approval_tools: re.Pattern[str] | None = None) -> ToolView | None:
    """The :class:`ToolView` of a ``tool_call`` step, None for other steps.

    >>> from detectors.testing import Session
    >>> call, _ = Session().tool("bash", {"command": "sed -i s/a/b/ src/x.py && pytest -q"})
    >>> v = tool_view(call)
    >>> v.commands, v.writes, v.is_check
    (('sed -i s/a/b/ src/x.py && pytest -q',), ('src/x.py',), True)
    """
    if step.kind != _TOOL_CALL:
        return None
    return _view_of(step.tool or "", step.arguments, approval_tools or _DEFAULT_APPROVAL_RE)


def _view_of(tool: str, arguments: str | None, approval_tools: re.Pattern[str]) -> ToolView:
    # A tool asking a human quotes the command it asks about; it does not run it, so its
    # view is its name alone. Only that test depends on the approval regexes (each policy
    # has its own), so the parsed view below is shared by every caller of one call.
    if tool and approval_tools.search(tool):
        return ToolView(tool, tool, (), (), unknown_write=False, approval_request=True)
    return _tool_view(tool, arguments)


@lru_cache(maxsize=256)
def _tool_view(tool: str, arguments: str | None) -> ToolView:
    """The view of a call that is not an approval request.

    A pure function of immutable text, cached: compliance_decay, policy_violation and
    premature_completion each view every tool call (~10 µs, mostly shlex and the write
    regexes), and loops repeat the same call. Bounded; the key is the stored canonical
    argument text, so a hit is exactly the same call."""
    args = _parse_arguments(arguments)
    shell_tool, write_tool = _tool_traits(tool)
    is_map = type(args) is dict or isinstance(args, Mapping)
    commands: list[str] = []
    code: list[str] = []  # Python source in the arguments, read for open(..., "w") & co.
    if is_map:
        for key, value in args.items():
            k = key.lower()
            if k in _COMMAND_KEYS:
                cmd = _command_of(value)
                if cmd:
                    commands.append(cmd)
            if k in _CODE_KEYS and isinstance(value, str):
                code.append(value)
        if not commands and shell_tool:
            commands.extend(c for c in (_command_of(v) for v in args.values()) if c)
    elif isinstance(args, str | list) and shell_tool:
        cmd = _command_of(args)
        if cmd:
            commands.append(cmd)
    writes: list[str] = []
    unknown = False
    for cmd in commands:
        writes.extend(_shell_writes(cmd))
    for value in code:
        for m in _PY_WRITE_RE.finditer(value):
            writes.append(next(g for g in m.group("p1", "p2", "p3", "p4") if g))
    if not commands and write_tool:
        tw, unknown = _tool_writes(tool, args)
        writes.extend(tw)
    # Command text: the commands for shell tools; else the tool name and its argument
    # strings, minus file content for writing tools (docs *mentioning* a command are fine).
    if commands:
        text = "\n".join(commands)
    else:
        skip = _CONTENT_KEYS if (writes or unknown) else _NO_SKIP
        text = " ".join([tool, *_strings(args, skip)])
    return ToolView(
        tool,
        text,
        tuple(commands),
        tuple(dict.fromkeys(writes)) if writes else (),
        unknown,
        False,
    )


@lru_cache(maxsize=1024)
def _tool_traits(tool: str) -> tuple[bool, bool]:
    """(shell tool, writing tool) by name; agents use a handful of tool names."""
    return bool(_SHELL_TOOL_RE.search(tool)), bool(_WRITE_TOOL_RE.search(tool))


_DEFAULT_APPROVAL_RE = re.compile("|".join(DEFAULT_APPROVAL_TOOLS), re.IGNORECASE)


def normalise_path(path: str, workspace: str | None) -> str:
    """A written path as globs see it: workspace prefix and ``./`` removed, home → ``~``."""
    p = path.strip().strip("'\"")
    if workspace and (p == workspace or p.startswith(workspace.rstrip("/") + "/")):
        p = p[len(workspace.rstrip("/")) + 1 :]
    while p.startswith("./"):
        p = p[2:]
    return _HOME_RE.sub("~", p)


def is_scratch(path: str) -> bool:
    """Temp, device, log and ``.git`` paths: writes there are not edits of the work."""
    return bool(_SCRATCH_RE.search(path))


# ---------------------------------------------------------------------------
# Globs and hosts
# ---------------------------------------------------------------------------


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


def _compile_globs(globs: Sequence[str]) -> re.Pattern[str] | None:
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


def _any_of(patterns: Sequence[re.Pattern[str]]) -> re.Pattern[str] | None:
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


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_matches(host: str, patterns: Sequence[str], *, subdomains: bool) -> str | None:
    for p in patterns:
        if p == "*" or p == host:
            return p
        if p.startswith("*.") and host.endswith(p[1:]):
            return p
        if p.startswith(".") and (host.endswith(p) or host == p[1:]):
            return p
        if subdomains and host.endswith("." + p):
            return p
        if "*" in p[1:] and fnmatch.fnmatchcase(host, p):
            return p
    return None


# ---------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class Policy:
    """A validated, precompiled policy. Build with :meth:`from_mapping`.

    >>> p = Policy.from_mapping("demo", {"require_approval_for": [r"git\\s+push"],
    ...                                   "forbidden_write_paths": [".github/workflows/**"]})
    >>> from detectors.testing import Session
    >>> s, state = Session(), PolicyState()
    >>> push, _ = s.tool("bash", {"command": "git push origin main"})
    >>> [v.rule for v in p.check(push, state)]
    ['require_approval_for `git\\\\s+push`']
    >>> ci, _ = s.tool("write_file", {"path": "/w/.github/workflows/ci.yml", "content": "x"})
    >>> [(v.kind, v.detail) for v in p.check(ci, state)]
    [('forbidden_write_paths', 'wrote /w/.github/workflows/ci.yml (glob .github/workflows/**)')]
    """

    policy_id: str
    description: str = ""
    forbidden_commands: tuple[re.Pattern[str], ...] = ()
    forbidden_tools: tuple[str, ...] = ()
    forbidden_write_paths: tuple[str, ...] = ()
    allowed_egress_hosts: tuple[str, ...] = ("*",)
    denied_egress_hosts: tuple[str, ...] = ()
    allow_loopback_egress: bool = True
    require_approval_for: tuple[re.Pattern[str], ...] = ()
    require_before: tuple[RequireBefore, ...] = ()
    approval_tools: re.Pattern[str] = _DEFAULT_APPROVAL_RE
    budget: Budget = field(default_factory=Budget)
    _write_re: re.Pattern[str] | None = None
    _write_res: tuple[re.Pattern[str], ...] = ()
    # Derived in __post_init__, not compared: the budget limits set (index in BUDGET_KEYS,
    # key, limit), one regex screening all text rules at once (see _any_of), the names of
    # the approval rules, and memos of what this policy says about a tool call and a host
    # (see _call_rules, _host_verdict).
    _limits: tuple[tuple[int, str, float], ...] = field(
        default=(), init=False, compare=False, repr=False
    )
    _text_screen: re.Pattern[str] | None = field(
        default=None, init=False, compare=False, repr=False
    )
    _approval_rules: tuple[str, ...] = field(default=(), init=False, compare=False, repr=False)
    _calls: _Memo[tuple[str, str | None, str | None], _CallRules] = field(
        default_factory=lambda: _Memo(), init=False, compare=False, repr=False
    )
    _hosts: _Memo[str, tuple[str | None, bool] | None] = field(
        default_factory=lambda: _Memo(), init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        limits = tuple(
            (i, k, v)
            for i, k in enumerate(BUDGET_KEYS)
            if (v := getattr(self.budget, k)) is not None
        )
        object.__setattr__(self, "_limits", limits)
        text_rules = (
            *self.forbidden_commands,
            *(r for rule in self.require_before for r in (rule.requires, rule.action)),
            *self.require_approval_for,
        )
        object.__setattr__(self, "_text_screen", _any_of(text_rules))
        object.__setattr__(
            self,
            "_approval_rules",
            tuple(f"require_approval_for `{p.pattern}`" for p in self.require_approval_for),
        )

    @classmethod
    def from_mapping(cls, policy_id: str, mapping: Mapping[str, Any]) -> Policy:
        """Validate and compile ``mapping`` (as parsed from TOML). Raises ``ValueError``
        naming the policy and the bad key. Pure: reads nothing else."""
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
        approval_patterns = (
            _str_list(policy_id, mapping, "approval_tools") or DEFAULT_APPROVAL_TOOLS
        )
        hosts = {}
        for key in ("allowed_egress_hosts", "denied_egress_hosts"):
            hosts[key] = tuple(h.lower().rstrip(".") for h in _str_list(policy_id, mapping, key))
        return cls(
            policy_id=policy_id,
            description=description,
            forbidden_commands=_regexes(
                policy_id, "forbidden_commands", _str_list(policy_id, mapping, "forbidden_commands")
            ),
            forbidden_tools=tuple(
                t.lower() for t in _str_list(policy_id, mapping, "forbidden_tools")
            ),
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
            approval_tools=re.compile(
                "|".join(f"(?:{p})" for p in approval_patterns), re.IGNORECASE
            ),
            budget=Budget(**{k: float(v) for k, v in budget_map.items()}),
            _write_re=_compile_globs(globs),
            _write_res=tuple(c for g in globs if (c := _compile_globs([g])) is not None),
        )

    # -- checking ---------------------------------------------------------

    def check(self, step: Step, history: PolicyState) -> list[Violation]:
        """The rules ``step`` breaks, updating ``history`` (the caller's per-session
        state; feed every step of the session in order)."""
        return self.observe(step, history)[0]

    def observe(self, step: Step, history: PolicyState) -> tuple[list[Violation], list[str]]:
        """:meth:`check` plus the scopes (:attr:`Violation.scope`) this step *honoured*:
        their precondition arose here and the rule held."""
        kind = step.kind
        # Most frequent kinds first; the kinds are bound to module names because looking
        # an enum member up on its class costs more than the comparison.
        if kind == _TOOL_CALL:
            return self._tool_call(step, history)
        if kind == _MODEL_CALL:
            history.tokens += (step.tokens_in or 0) + (step.tokens_out or 0)
            history.cost += step.cost or 0.0
            return self._budget(step, history), []
        if kind == _TOOL_RESULT:
            if history.pending:
                self._tool_result(step, history)
            return [], []
        if kind == _APPROVAL:
            self._approval(step, history)
            return [], []
        if kind == _EGRESS:
            # An MCP `tools/call` span reaches the tool *server* the operator configured,
            # not a destination the agent chose; that destination is in the call's
            # arguments, checked at the tool call.
            if _detail(step).get("mcp_method"):
                return [], []
            if step.egress_host and not (
                step.parent_step_id == history.last_call_step_id
                and step.egress_host in history.last_call_hosts
            ):
                return self._egress(step, (step.egress_host,), history)
            return [], []
        if kind == _START:
            history.start_ts = step.ts
            ws = _detail(step).get("workspace")
            history.workspace = ws if isinstance(ws, str) and ws else None
        return [], []

    def _tool_call(self, step: Step, h: PolicyState) -> tuple[list[Violation], list[str]]:
        h.tool_calls += 1
        h.ensure(self)
        tool, arguments = step.tool or "", step.arguments
        rules = self._calls.get((tool, arguments, h.workspace))
        if rules is None:
            rules = self._rules_of(tool, arguments, h.workspace)
        if rules.view.approval_request:
            h.approval_request = (arguments or "")[:500]
            return [], []
        seq = step.seq
        out = [Violation(rule, kind, seq, detail) for rule, kind, detail in rules.violations]
        honoured = list(rules.honoured)
        if rules.edited:
            h.last_edit_seq = seq
        # egress named in the arguments (HTTP spans of this call are then not re-counted)
        hosts = _hosts_of(step)
        h.last_call_step_id = step.step_id
        h.last_call_hosts = hosts
        if hosts:
            v, hon = self._egress(step, hosts, h)
            out.extend(v)
            honoured.extend(hon)
        # require_before: a `requires` run in this call counts (pending its result)
        for i in rules.requires:
            h.req_seq[i] = seq
            h.pending.append((step.call_id, seq, i))
            del h.pending[:-8]
        for i in rules.actions:
            rule = self.require_before[i]
            ran = h.req_seq[i]
            if rule.since == "edit":
                if h.last_edit_seq < 0:
                    continue  # nothing edited: holds vacuously, proves nothing
                # >=: a call that edits and then tests (`sed -i … && pytest`) verified it
                kept = ran >= h.last_edit_seq
            else:
                kept = ran >= 0
            if kept:
                honoured.append(rule.rule)
                continue
            if h.req_failed_seq[i] >= 0 and (
                rule.since == "start" or h.req_failed_seq[i] >= h.last_edit_seq
            ):
                what = f"the last `{rule.requires.pattern}` run (step {h.req_failed_seq[i]}) failed"
            elif rule.since == "edit":
                what = (
                    f"no `{rule.requires.pattern}` run since the last edit (step {h.last_edit_seq})"
                )
            else:
                what = f"no `{rule.requires.pattern}` run before it"
            out.append(
                Violation(
                    rule.rule, REQUIRE_BEFORE, seq, f"`{_clip(rules.view.text, 80)}` but {what}"
                )
            )
        # approvals
        for i in rules.approvals:
            rule_name = self._approval_rules[i]
            if h.approvals[i]:
                honoured.append(rule_name)
            else:
                out.append(
                    Violation(
                        rule_name,
                        APPROVAL,
                        seq,
                        f"`{_clip(rules.view.text, 80)}` without an approval",
                    )
                )
            h.approvals[i] = False
        out.extend(self._budget(step, h))
        return out, honoured

    def _rules_of(self, tool: str, arguments: str | None, workspace: str | None) -> _CallRules:
        # Both policy detectors check every call against the same (shared, compiled)
        # policy, and loops repeat calls: what the rules say about a call depends only on
        # this policy and the three strings of the key, so it is worked out once.
        # (_tool_call looks the memo up itself first: this is the hot path.)
        key = (tool, arguments, workspace)
        rules = self._calls.get(key)
        if rules is None:
            rules = self._calls.put(key, self._call_rules(tool, arguments, workspace))
        return rules

    def _call_rules(self, tool: str, arguments: str | None, workspace: str | None) -> _CallRules:
        """What this policy says about one tool call whatever the session did before it:
        the prohibitions it breaks (in the order reported) or honours, whether it edits,
        and which history-dependent rules (require_before, approvals) it triggers."""
        view = _view_of(tool, arguments, self.approval_tools)
        if view.approval_request:
            return _CallRules(view, (), (), False, (), (), ())
        out: list[tuple[str, str, str]] = []
        honoured: list[str] = []
        # forbidden tools
        if self.forbidden_tools:
            tool_lower = view.tool.lower()
            hit = next(
                (t for t in self.forbidden_tools if fnmatch.fnmatchcase(tool_lower, t)), None
            )
            if hit:
                out.append((f"forbidden_tools `{hit}`", FORBIDDEN_TOOL, f"called {view.tool}"))
            elif view.tool:
                honoured.append(FORBIDDEN_TOOL)
        text = view.text
        # One search tells whether any text rule can match (most calls match none).
        screened_out = self._text_screen is not None and not self._text_screen.search(text)
        # forbidden commands
        if screened_out:
            if self.forbidden_commands and view.commands:
                honoured.append(FORBIDDEN_COMMAND)
        elif self.forbidden_commands and (view.commands or text.strip()):
            before = len(out)
            for pat in self.forbidden_commands:
                m = pat.search(text)
                if m:
                    out.append(
                        (
                            f"forbidden_commands `{pat.pattern}`",
                            FORBIDDEN_COMMAND,
                            f"ran `{_clip(m.group(0))}` in `{_clip(text, 120)}`",
                        )
                    )
            if len(out) == before and view.commands:
                honoured.append(FORBIDDEN_COMMAND)
        # writes
        edited = False
        if view.writes or view.unknown_write:
            before = len(out)
            for raw in view.writes:
                path = normalise_path(raw, workspace)
                if self._write_re is not None and self._write_re.fullmatch(path):
                    glob = next(
                        (
                            g
                            for g, r in zip(
                                self.forbidden_write_paths, self._write_res, strict=True
                            )
                            if r.fullmatch(path)
                        ),
                        "?",
                    )
                    out.append(
                        (
                            f"forbidden_write_paths `{glob}`",
                            FORBIDDEN_WRITE,
                            f"wrote {raw} (glob {glob})",
                        )
                    )
                if not is_scratch(path):
                    edited = True
            if view.unknown_write:
                edited = True
            if len(out) == before and self.forbidden_write_paths and view.writes:
                honoured.append(FORBIDDEN_WRITE)
        requires: tuple[int, ...] = ()
        actions: tuple[int, ...] = ()
        if self.require_before and not screened_out:
            rb = self.require_before
            requires = tuple(i for i, r in enumerate(rb) if r.requires.search(text))
            actions = tuple(i for i, r in enumerate(rb) if r.action.search(text))
        approvals: tuple[int, ...] = ()
        if self.require_approval_for and not screened_out:
            ra = self.require_approval_for
            approvals = tuple(i for i, p in enumerate(ra) if p.search(text))
        return _CallRules(view, tuple(out), tuple(honoured), edited, requires, actions, approvals)

    def _tool_result(self, step: Step, h: PolicyState) -> None:
        if not h.pending:
            return
        keep = []
        for call_id, seq, i in h.pending:
            if call_id is not None and call_id == step.call_id:
                if step.status == "error" and self.require_before[i].must_pass:
                    h.req_failed_seq[i] = seq
                    if h.req_seq[i] == seq:
                        h.req_seq[i] = -1
            else:
                keep.append((call_id, seq, i))
        h.pending = keep

    def _approval(self, step: Step, h: PolicyState) -> None:
        h.ensure(self)
        approved = _detail(step).get("approved")
        if approved is None:
            approved = step.status == "ok"
        request = h.approval_request or ""
        named = [i for i, p in enumerate(self.require_approval_for) if p.search(request)]
        for i in named or range(len(self.require_approval_for)):
            h.approvals[i] = bool(approved)
        h.approval_request = None

    def _egress(
        self, step: Step, hosts: Sequence[str], h: PolicyState
    ) -> tuple[list[Violation], list[str]]:
        out = []
        clean = False
        for host in hosts:
            verdict = self._hosts.get(host)
            if verdict is None and host not in self._hosts:
                verdict = self._hosts.put(host, self._host_verdict(host))
            if verdict is None:
                continue  # loopback
            denied, allowed = verdict
            if denied:
                out.append(
                    Violation(
                        f"denied_egress_hosts `{denied}`", EGRESS, step.seq, f"contacted {host}"
                    )
                )
            elif not allowed:
                out.append(
                    Violation(
                        "allowed_egress_hosts",
                        EGRESS,
                        step.seq,
                        f"contacted {host}, not in allowed_egress_hosts",
                    )
                )
            else:
                clean = True
        return out, [EGRESS] if clean and not out else []

    def _host_verdict(self, host: str) -> tuple[str | None, bool] | None:
        """(the denying pattern, allowed) for ``host``; None when it is exempt loopback."""
        if self.allow_loopback_egress and _is_loopback(host):
            return None
        denied = _host_matches(host, self.denied_egress_hosts, subdomains=True)
        if denied:
            return denied, False
        return None, _host_matches(host, self.allowed_egress_hosts, subdomains=False) is not None

    def _budget(self, step: Step, h: PolicyState) -> list[Violation]:
        out: list[Violation] = []
        hit = h.budget_hit
        if len(hit) >= len(self._limits):
            return out  # no budget, or every limit already reported (each is, once)
        used = (  # in BUDGET_KEYS order
            h.tokens,
            h.cost,
            float(h.tool_calls),
            (step.ts - h.start_ts) / 1e9 if h.start_ts is not None else 0.0,
        )
        for i, key, limit in self._limits:
            if used[i] > limit and key not in hit:
                hit.append(key)
                out.append(
                    Violation(
                        f"budget.{key}",
                        BUDGET,
                        step.seq,
                        f"{key} {used[i]:,.0f} over the budget of {limit:,.0f}",
                    )
                )
        return out


class _CallRules(NamedTuple):
    """What a policy says about one tool call before looking at the session's history
    (see :meth:`Policy._call_rules`): violations as (rule, kind, detail), honoured scopes,
    and the indices of the require_before/approval rules whose regexes match. A named
    tuple rather than a frozen dataclass: one is built per distinct call, and this is
    a third of the cost."""

    view: ToolView
    violations: tuple[tuple[str, str, str], ...]
    honoured: tuple[str, ...]
    edited: bool
    requires: tuple[int, ...]
    actions: tuple[int, ...]
    approvals: tuple[int, ...]


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Memo(dict[_K, _V]):
    """A bounded memo of a pure function, kept on the frozen object it belongs to.

    Not state: it is emptied when full (a simple bound that stays correct under threads,
    since one dict operation is atomic), left out of comparisons, and pickles empty.
    A ``dict`` itself, so a lookup is ``dict.get``.
    """

    __slots__ = ("maxsize",)

    def __init__(self, maxsize: int = 256) -> None:
        super().__init__()
        self.maxsize = maxsize

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.maxsize,))

    def put(self, key: _K, value: _V) -> _V:
        if len(self) >= self.maxsize:
            self.clear()
        self[key] = value
        return value


def _clip(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _detail(step: Step) -> Mapping[str, Any]:
    """``step.detail``, or an empty mapping when a source put something else there."""
    d = step.detail
    return d if type(d) is dict or isinstance(d, Mapping) else _EMPTY


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _hosts_of(step: Step) -> tuple[str, ...]:
    egress = _detail(step).get("egress")
    if isinstance(egress, list):
        hosts = [e.get("host") for e in egress if isinstance(e, Mapping)]
        return tuple(dict.fromkeys(h for h in hosts if isinstance(h, str) and h))
    return (step.egress_host,) if step.egress_host else ()


@dataclass(slots=True)
class PolicyState:
    """What :meth:`Policy.check` remembers about a session: small and bounded (a few
    scalars, one flag per approval rule, two seqs per require_before rule, at most 8
    pending ``requires`` runs, the hosts of the last tool call)."""

    workspace: str | None = None
    approvals: list[bool] = field(default_factory=list)
    approval_request: str | None = None
    last_edit_seq: int = -1
    req_seq: list[int] = field(default_factory=list)
    req_failed_seq: list[int] = field(default_factory=list)
    pending: list[tuple[str | None, int, int]] = field(default_factory=list)
    last_call_step_id: str | None = None
    last_call_hosts: tuple[str, ...] = ()
    tokens: float = 0.0
    cost: float = 0.0
    tool_calls: int = 0
    start_ts: int | None = None
    budget_hit: list[str] = field(default_factory=list)

    def ensure(self, policy: Policy) -> None:
        """Size the per-rule lists for ``policy`` (a state starts empty)."""
        if len(self.approvals) != len(policy.require_approval_for):
            self.approvals = [False] * len(policy.require_approval_for)
        if len(self.req_seq) != len(policy.require_before):
            self.req_seq = [-1] * len(policy.require_before)
            self.req_failed_seq = [-1] * len(policy.require_before)


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


# ---------------------------------------------------------------------------
# Model sessions: what compliance_decay and policy_violation share
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """A step's violations, classified.

    ``decay`` is ``"honoured"`` when a violated rule was honoured before the latest
    compaction (at least ``min_honoured`` times), ``"rate"`` when the post-compaction
    violation rate is significantly above the earlier one (one-sided Fisher exact test,
    ``p_value``), else None (a plain violation: ``policy_violation``'s case).
    """

    violations: tuple[Violation, ...]
    decay: str | None
    p_value: float
    decayed: tuple[Violation, ...]
    """The violations that made it decay (the honoured rules broken), or all for ``rate``."""


class ComplianceLedger:
    """Per-session counts by model session: actions (tool calls), violating actions, and
    how often each scope was honoured, before the latest compaction and since.

    Bounded: the scope dictionaries hold at most one entry per rule of the policy plus
    the four prohibition families.
    """

    __slots__ = (
        "after_actions",
        "after_bad",
        "before_actions",
        "before_bad",
        "honoured_after",
        "honoured_before",
        "model_session",
    )

    def __init__(self) -> None:
        self.model_session = 0
        self.before_actions = 0
        self.before_bad = 0
        self.after_actions = 0
        self.after_bad = 0
        self.honoured_before: dict[str, int] = {}
        self.honoured_after: dict[str, int] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComplianceLedger) and self.__getstate__() == other.__getstate__()

    def roll(self, model_session: int) -> bool:
        """Move to ``model_session``; True when a compaction happened since the last call."""
        if model_session <= self.model_session:
            return False
        self.model_session = model_session
        self.before_actions += self.after_actions
        self.before_bad += self.after_bad
        for k, n in self.honoured_after.items():
            self.honoured_before[k] = self.honoured_before.get(k, 0) + n
        self.after_actions = self.after_bad = 0
        self.honoured_after = {}
        return True

    def record(
        self,
        step: Step,
        violations: Sequence[Violation],
        honoured: Sequence[str],
        *,
        min_honoured: int,
        alpha: float,
        min_rate_violations: int,
    ) -> Finding | None:
        """Count one step (call :meth:`roll` first); a :class:`Finding` if it violated."""
        behavioural = tuple(v for v in violations if v.kind != BUDGET) if violations else ()
        if step.kind == _TOOL_CALL:
            self.after_actions += 1
            if behavioural:
                self.after_bad += 1
        if honoured:
            after = self.honoured_after
            for scope in honoured:
                after[scope] = after.get(scope, 0) + 1
        if not violations:
            return None
        if self.model_session == 0 or not behavioural:
            return Finding(tuple(violations), None, 1.0, ())
        broken = tuple(
            v for v in behavioural if self.honoured_before.get(v.scope, 0) >= min_honoured
        )
        p = self.p_value()
        if broken:
            return Finding(tuple(violations), "honoured", p, broken)
        if self.after_bad >= min_rate_violations and p < alpha:
            return Finding(tuple(violations), "rate", p, behavioural)
        return Finding(tuple(violations), None, p, ())

    def p_value(self) -> float:
        """One-sided Fisher exact test: are violating actions more frequent since the
        latest compaction than before it? (1.0 when there is nothing to compare.)"""
        if self.after_actions == 0 or self.before_actions == 0:
            return 1.0
        return _fisher_greater(
            self.after_bad, self.after_actions, self.before_bad, self.before_actions
        )


def _fisher_greater(a_bad: int, a_n: int, b_bad: int, b_n: int) -> float:
    """P(X >= a_bad) for X ~ Hypergeometric(population a_n + b_n, successes a_bad + b_bad,
    draws a_n): the one-sided Fisher exact p-value for "rate after > rate before".
    Same value as ``scipy.stats.fisher_exact(..., alternative="greater")``
    (tests/test_policy.py checks it), computed directly in log space because scipy's
    call costs ~100 µs and this runs on the hot path of a violating step."""
    total, bad = a_n + b_n, a_bad + b_bad
    lo, hi = max(0, bad - b_n), min(bad, a_n)
    if a_bad <= lo:
        return 1.0

    def logpmf(k: int) -> float:
        return _lcomb(bad, k) + _lcomb(total - bad, a_n - k) - _lcomb(total, a_n)

    return min(1.0, sum(math.exp(logpmf(k)) for k in range(a_bad, hi + 1)))


def _lcomb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
