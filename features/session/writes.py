"""What a tool call writes in its session's workspace: files, the branch, the whole tree.

:func:`step_writes` reads a ``tool_call`` step once into :class:`Write` records, each a
*place* of the workspace and what was done to it:

============  ================  =====================================================
``path``      ``op``            written by
============  ================  =====================================================
a file        ``edit``          edit/write/patch tools, ``apply_patch``, redirections,
                                ``sed -i``/``tee``/``mv``/``cp``/``touch``/``dd of=``
                                (:attr:`features.calls.tool_view.ToolView.writes`);
                                ``git checkout -- FILE``, ``git restore FILE``
a file        ``delete``        ``rm``/``unlink``/``rmdir``/``git rm``
``@head``     ``commit``        ``git commit``/``merge``/``cherry-pick``/``revert``/``am``/
                                ``rebase``/``pull`` (a new commit on the checked-out branch)
``@remote``   ``push``          ``git push`` (the branch as the remote holds it)
``@remote``   ``force_push``    ``git push --force``/``-f``/``--force-with-lease``/``+ref``
``*``         ``reset``         ``git reset --hard``, ``git checkout REV -- .``,
                                ``git checkout .``, ``git restore .``, ``git stash``,
                                ``git clean -f``: every file of the tree; ``target`` is
                                the revision reset to (``git reset --hard 5c16ec3``)
============  ================  =====================================================

File paths are made relative to the session's working directory (``directory``), so
two clones of one repository in different directories name one file alike; a path
outside it (another place, ``/tmp``, the home directory), a scratch path (``/dev``,
``*.log``, ``.git/`` internals: :func:`features.calls.tool_view.is_scratch`) and a
path with a shell expansion in it are not the workspace's and are left out.

Pure: no I/O, no clock; bounded (the tool view reads a bounded head of each command).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from features.calls.step_features import features_of
from features.calls.tool_view import is_scratch
from features.text.shell_words import (
    MAX_SHELL_CHARS,
    operands,
    simple_commands,
    strip_prefixes,
    tokenize,
)
from models.records import Step, StepKind

__all__ = ["HEAD", "REMOTE", "TREE", "Write", "git_writes", "step_writes", "workspace_path"]

HEAD = "@head"
"""The checked-out branch as the workspace holds it (a commit moves it)."""
REMOTE = "@remote"
"""The branch as the remote holds it (a push moves it)."""
TREE = "*"
"""Every file of the workspace (a hard reset, a stash, a clean)."""

_DELETERS = frozenset({"rm", "rmdir", "unlink"})
_COMMITTERS = frozenset({"commit", "merge", "cherry-pick", "revert", "am", "rebase", "pull"})
_GIT_GLOBAL_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_GIT_VALUE = {
    "-m",
    "-F",
    "--message",
    "--file",
    "-C",
    "-c",
    "--author",
    "--date",
    "-o",
    "--repo",
    "--push-option",
    "-s",
    "--strategy",
    "-X",
    "--strategy-option",
}
_HEX_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")
_EXPANSION_RE = re.compile(r"[$`*?\[{]")


@dataclass(frozen=True, slots=True)
class Write:
    """One place a tool call writes: ``path`` (workspace-relative, or :data:`HEAD`,
    :data:`REMOTE`, :data:`TREE`), ``op`` (module table) and, for a reset, the
    revision it resets to (``target``; None when not named or not a revision)."""

    path: str
    op: str
    target: str | None = None


def step_writes(step: Step, directory: str | None = None) -> tuple[Write, ...]:
    """The places ``step`` (a ``tool_call``) writes in the workspace at ``directory``
    (its working directory; None when unknown: absolute paths are then kept as given),
    each once, in order; () for other steps and calls that write nothing.

    >>> from detectors.testing import Session
    >>> s = Session("w")
    >>> call, _ = s.tool("Edit", {"file_path": "/w/app/src/a.py", "old_string": "x",
    ...                           "new_string": "y"})
    >>> step_writes(call, "/w/app")
    (Write(path='src/a.py', op='edit', target=None),)
    >>> call, _ = s.tool("bash", {"command": "echo hi > /tmp/n.md && git add -A && "
    ...                           "git commit -m wip && git push --force origin fix"})
    >>> [(w.path, w.op) for w in step_writes(call, "/w/app")]
    [('@head', 'commit'), ('@remote', 'force_push')]
    """
    if step.kind != StepKind.TOOL_CALL:
        return ()
    view = features_of(step).view
    if view is None:
        return ()
    found: dict[tuple[str, str], Write] = {}
    deleted: set[str] = set()
    for command in view.commands:
        for write in git_writes(command):
            found.setdefault((write.path, write.op), write)
        deleted.update(_deleted(command))
    for raw in view.writes:
        path = workspace_path(raw, directory)
        if path is not None:
            op = "delete" if raw in deleted else "edit"
            found.setdefault((path, op), Write(path, op))
    for write in list(found.values()):  # git checkout -- FILE: a file path as given
        if write.op == "edit" and write.path not in (HEAD, REMOTE, TREE):
            path = workspace_path(write.path, directory)
            if path != write.path:
                del found[(write.path, write.op)]
                if path is not None:
                    found.setdefault((path, "edit"), Write(path, "edit"))
    return tuple(found.values())


def workspace_path(path: str, directory: str | None) -> str | None:
    """``path`` relative to the working directory ``directory`` (normalised), or None
    when it is not a file of the workspace: outside it, scratch, or with an expansion.

    >>> [workspace_path(p, "/w/app") for p in ("./src/a.py", "/w/app/b", "/tmp/x", "../y")]
    ['src/a.py', 'b', None, None]
    >>> workspace_path("/w/app/run.log", "/w/app"), workspace_path("/srv/x", None)
    (None, '/srv/x')
    """
    text = path.strip().strip("'\"")
    if not text or _EXPANSION_RE.search(text) or text.startswith("~") or is_scratch(text):
        return None
    base = directory.rstrip("/") if directory else None
    if text.startswith("/"):
        if base is None:
            return posixpath.normpath(text)
        if text != base and not text.startswith(base + "/"):
            return None
        text = text[len(base) + 1 :]
    rel = posixpath.normpath(text) if text else "."
    if rel in (".", "") or rel.startswith("../") or rel == ".." or is_scratch(rel):
        return None
    return rel


def git_writes(command: str) -> list[Write]:
    """The workspace places the ``git`` commands in a shell ``command`` write
    (module table).

    >>> [(w.path, w.op, w.target) for w in git_writes("git fetch && git reset --hard 5c16ec3")]
    [('*', 'reset', '5c16ec3')]
    >>> [(w.path, w.op) for w in git_writes("git checkout main -- src/a.py; git status")]
    [('src/a.py', 'edit')]
    >>> git_writes("git checkout -b feature/x && git log -3")
    []
    """
    out: list[Write] = []
    if "git" not in command:
        return out
    for words in simple_commands(tokenize(command[:MAX_SHELL_CHARS])):
        _, words = strip_prefixes(words)
        if not words or words[0].rsplit("/", 1)[-1] != "git":
            continue
        i = 1
        while i < len(words) and words[i].startswith("-"):  # global options
            flag = words[i].partition("=")[0]
            i += 2 if flag in _GIT_GLOBAL_VALUE and "=" not in words[i] else 1
        if i >= len(words):
            continue
        out.extend(_git_verb(words[i], words[i + 1 :]))
    return out


def _git_verb(verb: str, args: list[str]) -> list[Write]:
    positional, options = operands(args, _GIT_VALUE)
    if verb in _COMMITTERS:
        if verb == "rebase" and ("--abort" in options or "--quit" in options):
            return []
        return [Write(HEAD, "commit")]
    if verb == "push":
        forced = any(f in options for f in ("--force", "-f", "--force-with-lease", "--mirror"))
        forced = forced or any(p.startswith("+") for p in positional[1:])
        if "--delete" in options or "-d" in options:
            forced = True
        return [Write(REMOTE, "force_push" if forced else "push")]
    if verb == "reset":
        target = positional[0] if positional else None
        if "--hard" in options or "--keep" in options or "--merge" in options:
            return [Write(TREE, "reset", _revision(target))]
        if positional and "--" not in args:  # reset --soft/--mixed REV: moves the branch
            return [Write(HEAD, "commit")]
        return []
    if verb == "stash" and (not positional or positional[0] in ("push", "save")):
        return [Write(TREE, "reset")]
    if verb == "clean" and any(
        a == "--force" or (a.startswith("-") and not a.startswith("--") and "f" in a) for a in args
    ):
        return [Write(TREE, "reset")]
    if verb in ("checkout", "restore"):
        return _checkout(verb, args, positional, options)
    return []


def _checkout(
    verb: str, args: list[str], positional: list[str], options: dict[str, list[str]]
) -> list[Write]:
    """``git checkout``/``restore``: files or the whole tree overwritten from a revision;
    a branch switch (``checkout -b``, ``checkout BRANCH``) writes nothing here (the session
    moves to another workspace key, which its start named)."""
    if any(f in options for f in ("-b", "-B", "--orphan", "--staged")) and verb == "checkout":
        return []
    if "--" in args:
        before = args[: args.index("--")]
        files = args[args.index("--") + 1 :]
        source = next((a for a in before if not a.startswith("-")), None)
    elif verb == "restore":
        files = positional
        given = options.get("--source") or options.get("-s") or []
        source = given[0] if given else None
    else:  # checkout X: a branch or revision switch unless X is "." (no way to tell files)
        files = [p for p in positional if p == "."]
        source = None
    if verb == "restore" and "--staged" in options and "--worktree" not in options:
        return []
    if any(f in (".", "./", ":/") for f in files):
        return [Write(TREE, "reset", _revision(source))]
    return [Write(f, "edit") for f in files if f and not f.startswith("-")]


def _revision(text: str | None) -> str | None:
    """A revision named by its hash (7-40 hex digits, lower-case); None for branch names,
    ``HEAD~n`` and the like (what they point at is not known here)."""
    if text and _HEX_RE.match(text):
        return text.lower()
    return None


def _deleted(command: str) -> set[str]:
    """The operands of ``rm``/``unlink``/``rmdir``/``git rm`` in ``command``."""
    out: set[str] = set()
    if not any(word in command for word in ("rm", "unlink")):
        return out
    for words in simple_commands(tokenize(command[:MAX_SHELL_CHARS])):
        _, words = strip_prefixes(words)
        if words and words[0].rsplit("/", 1)[-1] == "git" and len(words) > 1:
            words = words[1:]
        if words and words[0].rsplit("/", 1)[-1] in _DELETERS:
            out.update(w for w in words[1:] if not w.startswith("-"))
    return out
