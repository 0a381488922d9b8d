"""The view of a tool call (features/calls/tool_view.py): checks, argv unwrapping, approval
requests, and the shell-write screen."""

from __future__ import annotations

import random
import re

import pytest

from detectors.testing import Session
from features.calls import tool_view as tool_view_module
from features.calls.tool_view import is_check_command, tool_view


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -q", True),
        ("cd web && npm run test:unit", True),
        ("go test ./...", True),
        ("cargo nextest run", True),
        ("uv run mypy src", True),
        ("make check", True),
        ("rg -n test src", False),
        ("cat tests/test_x.py", False),
        ("git commit -m test", False),
    ],
)
def test_check_commands(command: str, expected: bool) -> None:
    assert is_check_command(command) is expected


def test_tool_view_unwraps_argv_and_skips_approval_requests() -> None:
    s = Session()
    call, _ = s.tool("shell", {"command": ["bash", "-lc", "git push origin x"], "workdir": "/w"})
    view = tool_view(call)
    assert view is not None and view.commands == ("git push origin x",)
    ask, _ = s.tool("request_user_approval", {"command": "git push origin x"})
    view = tool_view(ask)
    assert view is not None and view.approval_request and view.commands == ()


def _quoted_commands(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = ["rm", "mv", "cp", "tee", "sed", "dd", "git", "sudo", "env", "-i", "-rf", "of=/o"]
    words += ["a.txt", "/bin/rm", "X=1", "add", "format", "echo", "r", "m", "d"]
    glue = ["", "'", '"', "\\", "''", "/", "="]
    seps = [" ", "\t", " && ", "; ", " | ", "\n", " > ", " 2>> ", "\xa0", "\x0b"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 8)):
            w = rng.choice(words)
            i = rng.randint(0, len(w))
            parts += [w[:i] + rng.choice(glue) + w[i:], rng.choice(seps)]
        out.append("".join(parts))
    return out


def test_shell_write_screen_skips_only_segments_that_cannot_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    commands = [
        "r''m -f a.txt",
        '"/bin/rm" x',
        "git commit -m 'rm a' && git 'rm' b",
        "sudo FOO=1 t\\ee out.log",
        "echo 'unterminated rm x",
        "sed -i s/a/b/ f.py",
        "dd if=a of=b",
        *_quoted_commands(3_000, seed=5),
    ]
    screened = [tool_view_module._shell_writes(c) for c in commands]
    monkeypatch.setattr(tool_view_module, "_WRITER_WORD", re.compile(""))  # tokenise all
    assert screened == [tool_view_module._shell_writes(c) for c in commands]
    assert sum(map(bool, screened)) > 1_000


@pytest.mark.parametrize(
    ("tool", "arguments", "writes", "commands"),
    [
        # OpenHands' editor and Anthropic's text editor tool name their operation in
        # ``command``: it is no shell command line, and only the edits write
        (
            "str_replace_editor",
            {"command": "create", "path": "/w/NOTES.md", "file_text": "x"},
            ("/w/NOTES.md",),
            (),
        ),
        ("str_replace_editor", {"command": "view", "path": "/w/app.py"}, (), ()),
        (
            "str_replace_based_edit_tool",
            {"command": "str_replace", "path": "/w/a.py", "old_str": "rm -rf /", "new_str": "b"},
            ("/w/a.py",),
            (),
        ),
        # a shell tool's ``command`` is a command line, a path beside it or not
        ("bash", {"command": "ls", "path": "/w"}, (), ("ls",)),
        ("execute", {"command": "rm -rf build", "cwd": "/w"}, ("build",), ("rm -rf build",)),
    ],
)
def test_an_editor_s_command_names_its_operation_not_a_shell_line(
    tool: str, arguments: dict[str, str], writes: tuple[str, ...], commands: tuple[str, ...]
) -> None:
    call, _ = Session().tool(tool, arguments)
    view = tool_view(call)
    assert view is not None
    assert view.commands == commands
    assert view.writes == writes
    assert "rm -rf /" not in view.text  # an edit's content is not what the call runs
