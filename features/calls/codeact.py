"""Code actions: the tool calls an agent makes by writing code in its model output.

CodeAct agents act by writing code, not by emitting structured tool calls: smolagents'
``CodeAgent`` writes a Python block (```` ```py … ``` ```` then ``<end_code>`` before
1.17, ``<code>…</code>`` since), its interpreter runs it, and tools are plain functions
called from it (``web_search(query=…)``, ``final_answer(…)``, a managed agent as
``search_agent(task=…)``); OpenHands' CodeAct agent writes ``<execute_bash>``,
``<execute_ipython>`` or ``<execute_browse>`` blocks (an unclosed tag runs to the end, as
OpenHands closes it). :func:`code_actions` reads those blocks into :class:`CodeAction`
records; :func:`execution_failure` reads smolagents' report of a failed execution.

Which calls are tool calls (the rule):

- a call whose callee is a plain name in ``tools`` (the trajectory's tool and managed
  agent names: its tool spans, its agent span's tool list, the system prompt's list) is
  a tool call, in source order, arguments as JSON (``literal_eval`` where it can, a
  name bound earlier in the block to a literal is resolved, else the source text);
- with no known tool list, a call of a free name (not a Python builtin, not bound in
  the block: the interpreter allows nothing else to be called) is a tool call;
- everything else is computation: a block with no tool call is one ``python`` action
  with the code as its argument; an ``execute_bash`` block is one ``bash`` action
  (``command``), an ``execute_ipython`` block goes through the same Python reading,
  an ``execute_browse`` block is one ``browse`` action (``task``).

Bounded: at most :data:`MAX_BLOCKS` blocks, :data:`MAX_CODE_CHARS` characters of code
per block parsed (a longer block, a syntax error, or code too deep for the parser is
one ``python`` action with its head as the argument, never an exception) and
:data:`MAX_ACTIONS` actions per output. Pure: no I/O.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CodeAction",
    "Failure",
    "block_action",
    "code_actions",
    "code_blocks",
    "execution_failure",
    "exit_failed",
    "failed_position",
    "prompt_tools",
    "restates_code",
]

MAX_BLOCKS = 8
MAX_CODE_CHARS = 20_000
MAX_ACTIONS = 32
MAX_ARGUMENT_CHARS = 4_096
"""Source text kept for an argument that is not a literal."""

_SMOLAGENTS_BLOCK = re.compile(r"```(?:py|python)?\n(.*?)\n```|<code>(.*?)</code>", re.DOTALL)
"""smolagents' two block formats: ``parse_code_blobs``'s pattern before 1.17, the
default ``code_block_tags`` since."""
_OPENHANDS_BLOCK = re.compile(
    r"<execute_(bash|ipython|browse)>(.*?)(?:</execute_\1>|\Z)", re.DOTALL
)
_FAILED_AT = re.compile(r"Code execution failed at line '(.*?)' due to: ", re.DOTALL)
_EXIT_CODE = re.compile(r"\[Command (?:-?\d+ )?finished with exit code (-?\d+)\]")
"""OpenHands' ``CmdOutputObservation`` footer (``[Command -1 finished …]`` in old releases)."""
_PROMPT_TOOL = re.compile(r"^(?:- ([A-Za-z_]\w*): |def ([A-Za-z_]\w*)\()", re.MULTILINE)
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True, slots=True)
class CodeAction:
    """One action read from code: ``name`` is the tool (or ``python``/``bash``/``browse``
    for a block run as a whole), ``arguments`` a JSON-able dict. ``statement`` is the
    index of the block's top-level statement the call is in (``-1`` for a whole block),
    ``source`` that statement's text (bounded): what smolagents quotes when it fails."""

    name: str
    arguments: dict[str, Any]
    kind: str  # "tool" | "python" | "bash" | "browse"
    block: int
    statement: int = -1
    source: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed execution: the statement smolagents names (or "" when it names none)."""

    statement: str
    message: str


def code_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of each code block of a model output, in order: OpenHands'
    tags when it has any, else smolagents' blocks.

    >>> code_blocks("Thought: x\\nCode:\\n```py\\nprint(1)\\n```<end_code>")
    [('python', 'print(1)')]
    >>> code_blocks("ls first\\n<execute_bash>\\nls -la\\n</execute_bash>")
    [('bash', 'ls -la')]
    >>> code_blocks("<execute_ipython>print(2)")
    [('python', 'print(2)')]
    """
    if not text:
        return []
    blocks: list[tuple[str, str]] = []
    if "<execute_" in text:
        for match in _OPENHANDS_BLOCK.finditer(text):
            lang = "python" if match.group(1) == "ipython" else match.group(1)
            blocks.append((lang, match.group(2).strip()))
            if len(blocks) >= MAX_BLOCKS:
                break
        if blocks:
            return blocks
    for match in _SMOLAGENTS_BLOCK.finditer(text):
        code = match.group(1) if match.group(1) is not None else match.group(2)
        code = code.strip()
        if code:
            blocks.append(("python", code))
        if len(blocks) >= MAX_BLOCKS:
            break
    return blocks


def prompt_tools(system_prompt: str | None) -> frozenset[str]:
    """The tool and team-member names a smolagents system prompt lists: its template
    renders each as ``- name: description`` (before 1.13) or as a ``def name(…)`` stub.

    >>> sorted(prompt_tools("tools:\\n- web_search: Searches.\\n    Takes inputs: {}\\n"
    ...     "def visit_page(url: str) -> str:"))
    ['visit_page', 'web_search']
    """
    if not system_prompt:
        return frozenset()
    return frozenset(a or b for a, b in _PROMPT_TOOL.findall(system_prompt[:200_000]))


def code_actions(text: str, *, tools: Iterable[str] = ()) -> list[CodeAction]:
    """The actions of a model output's code blocks, in order (see the module doc).

    >>> [(a.name, a.arguments) for a in code_actions(
    ...     "Code:\\n```py\\nq = 'cats'\\nr = web_search(query=q)\\nprint(len(r))\\n"
    ...     "final_answer(r)\\n```", tools={"web_search", "final_answer"})]
    [('web_search', {'query': 'cats'}), ('final_answer', {'args': ['r']})]
    >>> [(a.name, a.kind) for a in code_actions("```py\\nx = 2 ** 10\\nprint(x)\\n```")]
    [('python', 'python')]
    """
    known = frozenset(tools)
    actions: list[CodeAction] = []
    for index, (lang, code) in enumerate(code_blocks(text)):
        if lang == "bash":
            found = [CodeAction("bash", {"command": _head(code)}, "bash", index)]
        elif lang == "browse":
            found = [CodeAction("browse", {"task": _head(code)}, "browse", index)]
        else:
            found = _python_actions(code, known, index)
        actions.extend(found)
        if len(actions) >= MAX_ACTIONS:
            return actions[:MAX_ACTIONS]
    return actions


def execution_failure(error: str | None) -> Failure | None:
    """What smolagents says of a failed execution (``AgentExecutionError``: "Code
    execution failed at line '<statement>' due to: <error>"), or None for no error.
    An error that names no statement is a failure of the whole block.

    >>> execution_failure("AgentExecutionError: Code execution failed at line "
    ...     "'x = f(1)' due to: ValueError: no").statement
    'x = f(1)'
    """
    if not error:
        return None
    match = _FAILED_AT.search(error)
    return Failure(statement=match.group(1).strip() if match else "", message=error)


def restates_code(code: str, observation: str | None) -> bool:
    """Whether a smolagents observation of ``code`` (``Execution logs:`` + printed lines,
    ``Last output from code snippet:`` + the last value) holds nothing but text the code
    itself wrote as string literals: the block printed what the model had just written
    (a task it meant to send, a plan) and learnt nothing. Such a block did not act; its
    text is the model's, already in the model call.

    >>> restates_code('task = ("Find the 2011 census " "figures.")\\nprint(task)',
    ...     "Execution logs:\\nFind the 2011 census figures.\\n"
    ...     "Last output from code snippet:\\nNone")
    True
    >>> restates_code("print(6 * 7)", "Execution logs:\\n42\\nLast output from code snippet:\\n")
    False
    """
    if not observation or len(code) > MAX_CODE_CHARS or len(observation) > MAX_CODE_CHARS:
        return False
    logs, _, last = observation.removeprefix("Execution logs:").partition(
        "Last output from code snippet:"
    )
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    written = " ".join(
        " ".join(node.value.split())
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )
    said = [" ".join(line.split()) for line in logs.splitlines()]
    said = [line for line in said if line]
    last = " ".join(last.split())
    if last not in ("", "None"):
        said.append(last)
    return bool(said) and all(line in written for line in said)


def exit_failed(observation: str | None) -> bool:
    """Whether an OpenHands command observation reports a non-zero exit code (its last
    ``[Command finished with exit code N]``); False when it reports none.

    >>> exit_failed("ls: x: No such file\\n[Command finished with exit code 2]")
    True
    >>> exit_failed("ok\\n[Command -1 finished with exit code 0]")
    False
    """
    if not observation:
        return False
    codes = _EXIT_CODE.findall(observation[-4096:])
    return bool(codes) and codes[-1] != "0"


def failed_position(text: str, failure: Failure) -> tuple[int, int] | None:
    """``(block, statement)`` of the top-level statement of ``text``'s Python blocks that
    ``failure`` names (smolagents quotes it whole; else the first one starting with its
    first line), or None when it names none or none matches.

    >>> failed_position("```py\\nx = 1\\ny = f(x)\\nprint(y)\\n```",
    ...     Failure("y = f(x)", "…"))
    (0, 1)
    """
    wanted = failure.statement
    if not wanted:
        return None
    head = wanted.splitlines()[0].strip()
    fallback: tuple[int, int] | None = None
    for block, (lang, code) in enumerate(code_blocks(text)):
        if lang != "python" or len(code) > MAX_CODE_CHARS:
            continue
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for index, statement in enumerate(tree.body):
            source = (ast.get_source_segment(code, statement) or "").strip()
            if source == wanted:
                return block, index
            if fallback is None and head and source.startswith(head):
                fallback = block, index
    return fallback


def block_action(text: str, block: int) -> CodeAction | None:
    """Block ``block`` of ``text`` run as a whole: a ``python``/``bash``/``browse`` action
    (what carries a failure of code outside any tool call)."""
    blocks = code_blocks(text)
    if block >= len(blocks):
        return None
    lang, code = blocks[block]
    key = {"bash": "command", "browse": "task"}.get(lang, "code")
    return CodeAction(lang, {key: _head(code)}, lang, block)


# -- Python -------------------------------------------------------------------------


def _head(code: str) -> str:
    return code if len(code) <= MAX_CODE_CHARS else code[:MAX_CODE_CHARS]


def _python_actions(code: str, known: frozenset[str], block: int) -> list[CodeAction]:
    whole = [CodeAction("python", {"code": _head(code)}, "python", block)]
    if len(code) > MAX_CODE_CHARS:
        return whole
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return whole
    try:
        found = _tool_calls(tree, code, known, block)
    except RecursionError:
        return whole
    return found or whole


def _tool_calls(tree: ast.Module, code: str, known: frozenset[str], block: int) -> list[CodeAction]:
    bound = _bound_names(tree) if not known else frozenset()
    literals: dict[str, Any] = {}
    out: list[CodeAction] = []
    for index, statement in enumerate(tree.body):
        source = ast.get_source_segment(code, statement) or ""
        calls = [
            node
            for node in ast.walk(statement)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        ]
        calls.sort(key=lambda node: (node.lineno, node.col_offset))
        for call in calls:
            name = call.func.id  # type: ignore[attr-defined]
            if known:
                if name not in known:
                    continue
            elif name in _BUILTINS or name in bound:
                continue
            arguments = _arguments(call, code, literals)
            out.append(CodeAction(name, arguments, "tool", block, index, source[:MAX_CODE_CHARS]))
            if len(out) >= MAX_ACTIONS:
                return out
        _learn_literal(statement, literals)
    return out


def _arguments(call: ast.Call, code: str, literals: dict[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    positional = [_value(arg, code, literals) for arg in call.args]
    for keyword in call.keywords:
        key = keyword.arg if keyword.arg is not None else "**"
        arguments[key] = _value(keyword.value, code, literals)
    if positional:
        arguments["args"] = positional
    return arguments


def _value(node: ast.AST, code: str, literals: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name) and node.id in literals:
        return literals[node.id]
    try:
        return _jsonable(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        text = ast.get_source_segment(code, node) or ""
        return text[:MAX_ARGUMENT_CHARS]


def _jsonable(value: Any) -> Any:
    """A literal as JSON can hold it (tuples as lists, sets sorted, bytes and complex
    numbers as their text)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def _learn_literal(statement: ast.stmt, literals: dict[str, Any]) -> None:
    """``name = <literal>`` at the top level: later calls passing ``name`` pass it."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
        value: ast.AST | None = statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        targets, value = [], None
    for target in targets:
        if isinstance(target, ast.Name):
            try:
                literals[target.id] = _jsonable(ast.literal_eval(value))  # type: ignore[arg-type]
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                literals.pop(target.id, None)


def _bound_names(tree: ast.Module) -> frozenset[str]:
    """Names the block binds: assigned, defined, imported, loop and handler targets,
    parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return frozenset(names)
