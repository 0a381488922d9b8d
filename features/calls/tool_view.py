"""The view of a tool call: what it runs, what it writes, whether it asks a human.

:func:`tool_view` reads a ``tool_call`` step's name and arguments once into a
:class:`ToolView`: the text command rules are searched in, the shell commands it runs,
the paths it writes, whether it is an approval request and whether it is a check
(a test/lint/type-check/build run, :func:`is_check_command`). :func:`normalise_path`
and :func:`is_scratch` say how a written path is judged. Generic: no policy is needed
(``premature_completion`` reads views too); a policy only supplies its own regex of
approval tools (:func:`view_of_call`). Pure: no I/O, no wall clock. A step's view is
worked out once and shared by every reader through its features
(:attr:`features.calls.step_features.StepFeatures.view`, :meth:`~features.calls.step_features.
StepFeatures.view_for` under a policy's own approval tools).

Decisions
---------
- **Writes** are recognised generically: write-ish tool names
  (edit/write/create/delete/patch/replace/save/move/...) with path-like argument keys,
  ``apply_patch``/unified-diff headers, shell redirects and ``tee``/``sed -i``/``rm``/
  ``mv``/``cp``/``touch``/``mkdir``/``truncate``/``dd of=``, and ``open(path, "w")`` in
  code. Writes to ``/dev/``, ``/tmp/`` and ``*.log`` are writes (for forbidden paths) but
  not *edits* (they do not invalidate a test run): see :func:`is_scratch`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from features.calls.canonical import arguments_value
from features.text.shell_words import MAX_SHELL_CHARS
from models.records import Step, StepKind

__all__ = [
    "DEFAULT_APPROVAL_RE",
    "DEFAULT_APPROVAL_TOOLS",
    "ToolView",
    "approval_answer",
    "echoed_grant",
    "is_check_command",
    "is_scratch",
    "may_request_approval",
    "normalise_path",
    "tool_view",
    "view_of_call",
]

DEFAULT_APPROVAL_TOOLS = (
    r"approv",
    r"ask_?(human|user|operator)",
    r"human_?(input|feedback|review)",
    r"user_?input",  # Codex's request_user_input
    r"confirm",
    r"permission",
    r"consent",
)
"""Tool-name regexes (case-insensitive) of tools that ask a human; overridable per policy."""

DEFAULT_APPROVAL_RE = re.compile("|".join(DEFAULT_APPROVAL_TOOLS), re.IGNORECASE)
""":data:`DEFAULT_APPROVAL_TOOLS` as one regex: the approval tools of a policy that names none."""

_TOOL_CALL = StepKind.TOOL_CALL

_SHELL_TOOL_RE = re.compile(
    r"(?i)(^|[_\-.])(bash|sh|zsh|shell|terminal|run_?command|exec(ute)?_?(command|shell|bash)|"
    r"run_?shell|run_?terminal_?cmd|run_?in_?terminal)($|[_\-.])"
)
_COMMAND_KEYS = frozenset({"command", "cmd", "commands", "script", "shell", "bash", "argv"})
_CODE_KEYS = frozenset({"code", "source", "cell_source", "python", "program", "script"})
_WRITE_TOOL_RE = re.compile(
    r"(?i)(edit|write|create|delete|remove|unlink|patch|replace|save|move|rename|append|"
    r"insert|mkdir|overwrite|put_?file|upload_?file|touch)"
)
_READ_SUBCOMMANDS = frozenset({"view", "read", "list", "ls", "cat", "get", "show", "search"})
_SUBCOMMAND_RE = re.compile(r"[a-z][a-z_]{0,23}")
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
    r"""open\(\s*(?:r|f)?(?P<q1>['"])(?P<p1>[^'"]+)(?P=q1)\s*,\s*(?:mode\s*=\s*)?['"][^'"]*[wax]"""
    r"""|Path\(\s*(?P<q2>['"])(?P<p2>[^'"]+)(?P=q2)\s*\)\s*\."""
    r"""(?:write_text|write_bytes|unlink|touch|mkdir)"""
    r"""|os\.(?:remove|unlink|rmdir|makedirs|mkdir)\(\s*(?P<q3>['"])(?P<p3>[^'"]+)(?P=q3)"""
    r"""|shutil\.rmtree\(\s*(?P<q4>['"])(?P<p4>[^'"]+)(?P=q4)"""
    # a data frame or an array saved to a file (pandas, polars, numpy)
    r"""|\.(?:to_(?:csv|parquet|excel|json|feather|pickle|hdf|stata|orc|xml)"""
    r"""|write_(?:csv|parquet|json|ndjson|ipc|excel|avro|delta)|savez?|savetxt)"""
    r"""\(\s*(?:path_or_buf\s*=\s*|file\s*=\s*)?(?:r|f)?(?P<q5>['"])(?P<p5>[^'"]+)(?P=q5)"""
)
"""What Python source writes or removes, and where (the group ``p1`` to ``p5`` that
holds a path): ``open(p, "w")``, ``Path(p).write_text``, ``os.remove(p)``,
``shutil.rmtree(p)``, and a data frame or an array saved: ``df.to_csv(p)``,
``pl_df.write_parquet(p)``, ``np.save(p)`` (tests/unit/features/test_code_writes.py)."""
_PY_RUN_RE = re.compile(r"\bpython[\d.]*\b|\bipython\b")
"""A shell command running Python, whose inline source (``python - <<EOF``, ``-c``) is
read for writes as a code argument is."""
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
    r"|npx\s+|pnpx\s+|bunx\s+|python[0-9.]*\s+-m\s+|(?:[^\s/]*+/)++)?(?:"
    + _CHECK_PROGRAMS
    + r")(?:\s|$)"
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
    ``approval_request`` a tool asking a human; ``numbers`` the call's numeric arguments
    as ``key=value`` lines (``amount=130.59``; ids, indices and coordinates left out), what
    a rule about an amount ("refunds above 50 EUR") is judged on.
    """

    tool: str
    text: str
    commands: tuple[str, ...]
    writes: tuple[str, ...]
    unknown_write: bool
    approval_request: bool
    numbers: str = ""

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
        seg = segment.strip()[:MAX_SHELL_CHARS]  # shlex is slow: a bounded head
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


def _names_subcommand(args: Mapping[str, Any]) -> bool:
    """Whether ``command`` in a non-shell tool's arguments names the tool's own operation
    on a file (OpenHands' ``str_replace_editor`` and Anthropic's text editor tool:
    ``{"command": "create", "path": ...}``) rather than a shell command line: a bare
    lower-case word beside a path argument.

    >>> _names_subcommand({"command": "str_replace", "path": "/w/a.py"})
    True
    >>> _names_subcommand({"command": "pytest -q"}), _names_subcommand({"command": "view"})
    (False, False)
    """
    command = args.get("command")
    return (
        isinstance(command, str)
        and _SUBCOMMAND_RE.fullmatch(command) is not None
        and any(isinstance(k, str) and k.lower() in _PATH_KEYS for k in args)
    )


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
    return view_of_call(step.tool or "", step.arguments, approval_tools or DEFAULT_APPROVAL_RE)


def view_of_call(tool: str, arguments: str | None, approval_tools: re.Pattern[str]) -> ToolView:
    """The :class:`ToolView` of a call by its tool name and argument text (as stored on
    the step), with ``approval_tools`` naming the tools that ask a human.

    What :func:`tool_view` returns for a ``tool_call`` step: :func:`approval_view` when
    ``approval_tools`` names the tool, else :func:`parsed_view`."""
    return approval_view(tool, approval_tools) or parsed_view(tool, arguments)


def approval_view(tool: str, approval_tools: re.Pattern[str]) -> ToolView | None:
    """The view of a call to a tool ``approval_tools`` names (it asks a human), or None.

    A tool asking a human quotes the command it asks about; it does not run it, so its
    view is its name alone. Only this test depends on the approval regexes (each policy
    has its own), so a step's :func:`parsed_view` serves every policy.

    >>> approval_view("request_approval", DEFAULT_APPROVAL_RE).approval_request
    True
    """
    if tool and approval_tools.search(tool):
        return ToolView(tool, tool, (), (), unknown_write=False, approval_request=True)
    return None


@lru_cache(maxsize=256)
def parsed_view(tool: str, arguments: str | None) -> ToolView:
    """The view of a call whose tool name no approval regex matched (~10 µs, mostly shlex
    and the write regexes), read once per step by its features, which every reader
    shares. Memoised on the exact stored text for calls repeated across steps and
    sessions (loops; a fleet's sessions run the same tools: on AgentDojo's 1,712 runs
    84% of calls repeat an earlier one's tool and arguments, on TRAIL's 19%); bounded."""
    args = arguments_value(arguments)
    shell_tool, write_tool = _tool_traits(tool)
    is_map = type(args) is dict or isinstance(args, Mapping)
    commands: list[str] = []
    code: list[str] = []  # Python source in the arguments, read for open(..., "w") & co.
    if is_map:
        editor = not shell_tool and _names_subcommand(args)
        for key, value in args.items():
            k = key.lower()
            if k in _COMMAND_KEYS and not (editor and k == "command"):
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
    code += (cmd for cmd in commands if _PY_RUN_RE.search(cmd))
    for value in code:
        for m in _PY_WRITE_RE.finditer(value):
            writes.append(next(g for g in m.group("p1", "p2", "p3", "p4", "p5") if g))
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
        if not writes and not unknown and is_map and _asks_approval(args):
            # a request for approval whatever the tool is called: it quotes the action
            # it asks about, it does not run it (the answer is its result)
            return ToolView(tool, tool, (), (), unknown_write=False, approval_request=True)
    return ToolView(
        tool,
        text,
        tuple(commands),
        tuple(dict.fromkeys(writes)) if writes else (),
        unknown,
        False,
        _numbers(args) if is_map and not commands else "",
    )


_NOT_AMOUNT_KEY_RE = re.compile(
    r"(?i)(?:^|_|-|\.)(?:id|ids|index|idx|page|pages|limit|offset|count|max\w*|min\w*|size|x|y"
    r"|coordinate|coordinates|timeout|retries|port|line|lines|version|level|depth|top_?k|n)$"
)
_NUMBER_STR_RE = re.compile(r"^\s*[$€£¥]?\s*(\d{1,15}(?:\.\d{1,6})?)\s*(?:[A-Z]{3}|[$€£¥])?\s*$")
MAX_NUMBERS = 16


def _numbers(args: Mapping[str, Any]) -> str:
    """The numeric arguments of a call as ``key=value`` lines (top level and one level
    down, ``refund.amount``): numbers and strings that are a number with an optional
    currency (``"80.50 EUR"``); not ids, indices, counts or coordinates. At most
    :data:`MAX_NUMBERS`.

    >>> args = {"order_id": "#1", "amount": 80.5, "meta": {"total": "99 EUR"}, "index": 4}
    >>> _numbers(args).split()
    ['amount=80.5', 'meta.total=99']
    """
    out: list[str] = []
    items: list[tuple[str, Any]] = [(str(k), v) for k, v in list(args.items())[:32]]
    for key, value in items:
        if type(value) is not str and isinstance(value, Mapping):
            items_nested = list(value.items())[:16]
            for k2, v2 in items_nested:
                _number_line(f"{key}.{k2}", v2, out)
        else:
            _number_line(key, value, out)
        if len(out) >= MAX_NUMBERS:
            break
    return "\n".join(out[:MAX_NUMBERS])


def _number_line(key: str, value: Any, out: list[str]) -> None:
    if _NOT_AMOUNT_KEY_RE.search(key) or len(key) > 60:
        return
    if type(value) is int or type(value) is float:
        if value == value and abs(value) < 1e15:  # not NaN, not absurd
            out.append(
                f"{key}={value:g}"
                if type(value) is float and value.is_integer()
                else f"{key}={value}"
            )
    elif isinstance(value, str) and len(value) <= 40:
        m = _NUMBER_STR_RE.match(value)
        if m:
            out.append(f"{key}={m[1]}")


_REQUEST_KEYS = frozenset(
    {"question", "request", "action", "command", "operation", "reason", "justification"}
)
_ASKING_RE = re.compile(
    r"(?i)\b(?:approv\w*|permission|authori[sz]\w*|confirm\w*|sign[\s-]?off|consent"
    r"|may\s+i|can\s+i|ok\s+to|allowed\s+to|go[\s-]ahead)\b"
)


def may_request_approval(args: Mapping[str, Any]) -> bool:
    """Whether ``args`` has a request key (``question``, ``action``, ``reason``, …, any
    case): without one, :func:`parsed_view` of these arguments as JSON is no approval
    request, whatever their values (it reads back the same keys; a JSON text cut short
    reads as no object at all) - a check that needs no dump and no parse.

    >>> may_request_approval({"Question": "may I push?"}), may_request_approval({"path": "a"})
    (True, False)
    """
    return any(isinstance(k, str) and k.lower() in _REQUEST_KEYS for k in args)


def _asks_approval(args: Mapping[str, Any]) -> bool:
    """A call whose arguments ask a person to approve an action: a request key
    (``question``, ``action``, ``reason``, …) and the words of asking for approval
    ("may I", "approve", "permission"). Tools that do this under any name (``human``,
    ``escalate``) are approval requests, as those :data:`DEFAULT_APPROVAL_TOOLS` name."""
    keys = [k for k in args if isinstance(k, str) and k.lower() in _REQUEST_KEYS]
    if not keys or len(args) > 6:
        return False
    return any(isinstance(args[k], str) and _ASKING_RE.search(args[k][:2000]) for k in args)


_GRANT_RE = re.compile(
    r"(?i)^\W*(?:yes|y|ok|okay|approved?|granted|allowed|accept(?:ed)?|lgtm|go\s+ahead"
    r"|permission\s+granted|sure|confirmed"
    r"|ja|jawohl|klar|s[ií]|vale|claro|oui|d'accord|sim|pode|はい|ええ|了解|好|是|可以|行)"
    r"\b(?![\s\w]{0,12}\?)"
)
_DENY_RE = re.compile(
    r"(?i)^\W*(?:(?:no(?!\s+(?:problem|worries))|n|nope|denied|deny|rejected?|refused|declined"
    r"|not\s+approved|permission\s+denied|do\s+not|don't|abort(?:ed)?|cancel(?:led)?"
    r"|nein|nicht|non|não|nao)\b|いいえ|だめ|ダメ|不行|不要|不)"
)
_ANSWERED_RE = re.compile(r'"="([^"]{1,200})"')
"""Claude Code's AskUserQuestion result: ``User has answered your questions: "Q"="A"``."""
_DECISION_KEYS = (
    "approved",
    "granted",
    "allowed",
    "accepted",
    "decision",
    "status",
    "answer",
    "reply",  # a chat tool's answer ({"reply": "ok apply", "user": …})
    "response",
)


def approval_answer(result: str | None) -> bool | None:
    """The answer a human-approval tool returned: True (granted), False (denied), None
    (no answer yet: "Approval requested; waiting for a human.", or not an answer).

    Reads a JSON result's ``approved``/``granted``/``decision``/``status``/``answer`` or
    the head of a text result ("Approved", "yes, go ahead", "Denied: not now").

    >>> answers = ("Approved.", '{"approved": false}', "no", "Approval requested")
    >>> [approval_answer(r) for r in answers]
    [True, False, False, None]
    """
    if not result:
        return None
    head = result[:500]
    value = arguments_value(head) if head.lstrip().startswith("{") else None
    if isinstance(value, Mapping):
        for key in _DECISION_KEYS:
            v = value.get(key)
            if isinstance(v, bool):
                return v
            if isinstance(v, str):
                return approval_answer(v)
        return None
    answered = _ANSWERED_RE.findall(head)
    if answered:
        head = answered[-1]
    if _DENY_RE.match(head):
        return False
    if _GRANT_RE.match(head):
        return True
    return None


_FIRST_WORD_RE = re.compile(r"^\W*([^\W\d_]{3,20})\b")


def echoed_grant(result: str | None, request: str | None) -> bool:
    """Whether a person's short answer repeats the action the request asked about — the
    question "Draft ready. Send it?" answered "send", "Merge PR 12?" answered "merge it":
    a grant, though no word of assent is in it. Not a denial ("no, don't send"), not a
    long answer (an instruction), not a word the request does not contain.

    >>> echoed_grant("send", "Draft to a@b.de ready. Send it?")
    True
    >>> answers = ("don't send", "later", "send it after lunch, with the pdf")
    >>> [echoed_grant(r, "Send it?") for r in answers]
    [False, False, False]
    """
    if not result or not request:
        return False
    answer = result.strip()
    if len(answer) > 24 or _DENY_RE.match(answer):
        return False
    m = _FIRST_WORD_RE.match(answer)
    if m is None:
        return False
    word = m[1].casefold()
    return bool(re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", request[:500].casefold()))


@lru_cache(maxsize=1024)
def _tool_traits(tool: str) -> tuple[bool, bool]:
    """(shell tool, writing tool) by name; agents use a handful of tool names."""
    return bool(_SHELL_TOOL_RE.search(tool)), bool(_WRITE_TOOL_RE.search(tool))


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
