"""The places a tool call writes in its workspace (features/session/writes.py)."""

from __future__ import annotations

from typing import Any

import pytest

from detectors.testing import Session
from features.session.writes import HEAD, REMOTE, TREE, step_writes

WORKSPACE = "/home/zoe/work/app"


def writes(tool: str, arguments: Any, directory: str | None = WORKSPACE) -> list[tuple[str, str]]:
    call, _ = Session("w").tool(tool, arguments)
    return [(w.path, w.op) for w in step_writes(call, directory)]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "Edit",
            {"file_path": f"{WORKSPACE}/src/a.py", "old_string": "x", "new_string": "y"},
            [("src/a.py", "edit")],
        ),
        ("Write", {"file_path": "src/new.py", "content": "print(1)"}, [("src/new.py", "edit")]),
        (
            "str_replace_editor",
            {
                "command": "str_replace",
                "path": f"{WORKSPACE}/src/b.ts",
                "old_str": "a",
                "new_str": "b",
            },
            [("src/b.ts", "edit")],
        ),
        (
            "str_replace_editor",
            {"command": "create", "path": "./notes/x.md", "file_text": "x"},
            [("notes/x.md", "edit")],
        ),
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: src/c.go\n@@\n-a\n+b\n*** End Patch"},
            [("src/c.go", "edit")],
        ),
        ("bash", {"command": "echo done > reports/latest.md"}, [("reports/latest.md", "edit")]),
        ("bash", {"command": "rm -f src/old.py"}, [("src/old.py", "delete")]),
        ("bash", {"command": "git add -A && git commit -m wip"}, [(HEAD, "commit")]),
        ("bash", {"command": "git push -u origin fix/x"}, [(REMOTE, "push")]),
        ("bash", {"command": "git push --force-with-lease origin fix/x"}, [(REMOTE, "force_push")]),
        ("bash", {"command": "git push origin +fix/x"}, [(REMOTE, "force_push")]),
        ("bash", {"command": "git reset --hard 6DB0F78"}, [(TREE, "reset")]),
        ("bash", {"command": "git stash"}, [(TREE, "reset")]),
        ("bash", {"command": "git clean -fd"}, [(TREE, "reset")]),
        ("bash", {"command": "git checkout -- ."}, [(TREE, "reset")]),
        ("bash", {"command": "git restore src/a.py"}, [("src/a.py", "edit")]),
        ("bash", {"command": "git pull --rebase origin fix/x"}, [(HEAD, "commit")]),
    ],
)
def test_what_a_call_writes(tool: str, arguments: Any, expected: list[tuple[str, str]]) -> None:
    assert writes(tool, arguments) == expected


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("Read", {"file_path": f"{WORKSPACE}/src/a.py"}),
        ("str_replace_editor", {"command": "view", "path": f"{WORKSPACE}/src/a.py"}),
        ("bash", {"command": "git status --short && git log --oneline -5"}),
        ("bash", {"command": "git diff --stat main...HEAD"}),
        ("bash", {"command": "git checkout -b feature/x"}),
        ("bash", {"command": "git stash list"}),
        ("bash", {"command": "pytest -q > /tmp/review-notes.md"}),  # scratch
        ("bash", {"command": "cat src/a.py | tee ~/notes.md"}),  # home: not the workspace
        ("Write", {"file_path": "/srv/other/app/x.py", "content": "x"}),  # another place
        ("bash", {"command": "npm test 2> test.log"}),  # a log
        ("bash", {"command": "echo x > $OUT/a.md"}),  # an expansion names no known path
    ],
)
def test_reads_and_writes_elsewhere_write_nothing_here(tool: str, arguments: Any) -> None:
    assert writes(tool, arguments) == []


def test_the_reset_target_is_kept_as_a_revision_only_when_it_is_one() -> None:
    call, _ = Session("w").tool("bash", {"command": "git reset --hard 5C16EC3"})
    (write,) = step_writes(call, WORKSPACE)
    assert write.target == "5c16ec3"
    call, _ = Session("w").tool("bash", {"command": "git reset --hard origin/main"})
    assert step_writes(call, WORKSPACE)[0].target is None


def test_paths_are_relative_to_the_working_directory_whatever_the_clone() -> None:
    a = writes(
        "Edit",
        {"file_path": "/home/a/app/src/x.py", "old_string": "", "new_string": "y"},
        "/home/a/app",
    )
    b = writes(
        "Edit",
        {"file_path": "/workspace/src/x.py", "old_string": "", "new_string": "y"},
        "/workspace/",
    )
    assert a == b == [("src/x.py", "edit")]


def test_without_a_known_directory_an_absolute_path_is_kept_as_given() -> None:
    assert writes("Write", {"file_path": "/srv/app/x.py", "content": ""}, None) == [
        ("/srv/app/x.py", "edit")
    ]


def test_other_steps_write_nothing() -> None:
    s = Session("w")
    assert step_writes(s.start(), WORKSPACE) == ()
    _, result = s.tool("bash", {"command": "git commit -m x"})
    assert step_writes(result, WORKSPACE) == ()
