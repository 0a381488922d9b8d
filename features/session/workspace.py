"""Where a session works: the facts a start step names and the one key two sessions
sharing a workspace have in common.

A start step's ``detail`` may name, whatever the input: ``workspace`` (the working
directory), ``host`` (the machine), ``repository`` (the remote's URL, or ``owner/name``),
``branch`` and ``commit`` (the revision checked out). Claude Code and Codex files, Gemini
chats, session events (``session_start``) and OTLP spans (:mod:`ingest.semconv.workspace`)
all write these keys; :func:`with_workspace` turns them into the
:class:`~models.records.SessionInfo` fields and :func:`workspace_key` into the key a view
across sessions groups by (``serve`` in memory, Kafka by re-keying).

Pure: no I/O, no DNS (a host alias is not resolved), no wall clock.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from features.text.hosts import SCP_LIKE_RE, clean_host
from models.records import SessionInfo

__all__ = [
    "branch_name",
    "directory_path",
    "remote_name",
    "with_workspace",
    "workspace_key",
]

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_DETACHED = frozenset({"head", "(detached)", "(no branch)"})


def with_workspace(info: SessionInfo, detail: Mapping[str, Any]) -> SessionInfo:
    """``info`` after a start step with ``detail``, for its workspace fields
    (``workspace``, ``repository``, ``branch``, ``host``; ``revision`` from ``commit``):
    each keeps the value it has (the first start that names it
    wins, as for the goal), else takes the detail's text; a value that is not non-empty
    text is not taken. Nothing else of ``info`` changes.

    >>> info = with_workspace(SessionInfo(session_id="s", workspace="/w/a"),
    ...                       {"workspace": "/w/b", "commit": " 9d59409 ", "host": 7})
    >>> info.workspace, info.revision, info.host
    ('/w/a', '9d59409', None)
    """

    def given(key: str) -> str | None:
        value = detail.get(key)
        return (value.strip() or None) if isinstance(value, str) else None

    changed = dataclasses.replace(
        info,
        workspace=info.workspace or given("workspace"),
        repository=info.repository or given("repository"),
        branch=info.branch or given("branch"),
        revision=info.revision or given("commit"),  # as session events and Codex name it
        host=info.host or given("host"),
    )
    return info if changed == info else changed


def workspace_key(
    *,
    host: str | None = None,
    directory: str | None = None,
    repository: str | None = None,
    branch: str | None = None,
) -> str | None:
    """The key of the workspace a session works in, or None when it names too little.

    Contract:

    - the repository and branch, when both are known: ``git:<remote>#<branch>``
      (:func:`remote_name`, :func:`branch_name`) - two clones of one repository on one
      branch, on any hosts, are one workspace (what one pushes, the other overwrites);
    - else the host and directory: ``dir:<host>:<path>`` (:func:`directory_path`; the
      host lower-case) - one checkout on one machine. With no host the host part is empty
      (``dir::/w/app``): files recorded on one machine (Claude Code, Codex) still group,
      but a container path every run uses (``/workspace``, ``/testbed``) is then shared
      by unrelated runs, so a reader should take a host-less key as weaker evidence;
    - else None (a repository without its branch, or no directory: nothing to compare).

    The same inputs give the same key, on any machine and in any process (no DNS, no
    clock). Spellings of one workspace give one key: trailing slashes, ``.git``, case of
    the host and of the repository path, ssh (``git@host:o/r``, ``ssh://git@host:22/o/r``)
    and https remotes with or without credentials, ``refs/heads/`` before a branch.

    >>> workspace_key(repository="git@GitHub.com:Acme/Dates.git", branch="refs/heads/main")
    'git:github.com/acme/dates#main'
    >>> workspace_key(repository="https://token@github.com/acme/dates/", branch="main",
    ...               host="ci-7", directory="/w/x")
    'git:github.com/acme/dates#main'
    >>> workspace_key(host="Build-7", directory="/home/me/dates/", repository="acme/dates")
    'dir:build-7:/home/me/dates'
    >>> workspace_key(directory="/workspace"), workspace_key(repository="acme/dates")
    ('dir::/workspace', None)
    """
    remote = remote_name(repository) if repository else None
    ref = branch_name(branch) if branch else None
    if remote and ref:
        return f"git:{remote}#{ref}"
    path = directory_path(directory) if directory else None
    if path is None:
        return None
    machine = ""
    if host and host.strip():
        machine = clean_host(host, single_label=True) or host.strip().lower()
    return f"dir:{machine}:{path}"


def remote_name(repository: str) -> str | None:
    """A repository's remote as one spelling: ``host/path`` (the host lower-case, without
    user, password or port; the path lower-case, without ``.git`` and slashes at either
    end), or the path alone for ``owner/name`` and local repositories; None for text that
    names no repository.

    Forges that spell one repository differently over ssh and https (Azure DevOps'
    ``ssh.dev.azure.com:v3/...`` against ``dev.azure.com/.../_git/...``) and ssh host
    aliases of ``~/.ssh/config`` are not unified.

    >>> [remote_name(r) for r in ("ssh://git@github.com:22/Acme/Dates.git",
    ...                           "https://github.com/acme/dates", "Acme/Dates.git/")]
    ['github.com/acme/dates', 'github.com/acme/dates', 'acme/dates']
    >>> remote_name("file:///srv/git/dates.git"), remote_name("  ")
    ('/srv/git/dates', None)
    """
    text = repository.strip()
    host = ""
    if "://" in text:
        try:
            parts = urlsplit(text)
            netloc_host = parts.hostname or ""
        except ValueError:
            return None
        if netloc_host:
            host = clean_host(netloc_host, single_label=True) or netloc_host.lower()
            path = parts.path
        else:  # file:///srv/git/x: a local path
            path = parts.path or ""
            return _local(path)
    elif (m := SCP_LIKE_RE.match(text)) and not _WINDOWS_DRIVE.match(text):
        raw = m.group("host").strip("[]")
        host = clean_host(raw, single_label=True) or raw.lower()
        path = text[m.end() :]
    elif text.startswith(("/", "~")) or _WINDOWS_DRIVE.match(text):
        return _local(text)
    else:
        path = text
    path = _repo_path(path)
    if not path:
        return None
    return f"{host}/{path}" if host else path


def branch_name(branch: str) -> str | None:
    """A branch as git names it: without ``refs/heads/``; None for a detached head.
    Case is kept (git's branch names are case-sensitive).

    >>> branch_name("refs/heads/Feature/X"), branch_name("HEAD"), branch_name(" main ")
    ('Feature/X', None, 'main')
    """
    name = branch.strip().removeprefix("refs/heads/")
    if not name or name.lower() in _DETACHED:
        return None
    return name


def directory_path(directory: str) -> str | None:
    """A working directory as one spelling: normalised (``.``, ``..``, repeated and
    trailing slashes gone); a Windows path with forward slashes and lower-case (its file
    system ignores case); None for a relative path, which names no place on its own.

    >>> directory_path("/w//app/./src/../"), directory_path("C:\\\\Users\\\\Me\\\\App\\\\")
    ('/w/app', 'c:/users/me/app')
    >>> directory_path("app"), directory_path("~/app/")
    (None, '~/app')
    """
    text = directory.strip()
    windows = bool(_WINDOWS_DRIVE.match(text))
    if windows:
        text = text.replace("\\", "/").lower()
    elif not text.startswith(("/", "~")):
        return None
    path = posixpath.normpath(text)
    if path.startswith("//"):  # POSIX keeps a leading '//': one place all the same
        path = "/" + path.lstrip("/")
    return path


def _repo_path(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if parts:
        parts[-1] = parts[-1].removesuffix(".git")
    return "/".join(p for p in parts if p).lower()


def _local(path: str) -> str | None:
    where = directory_path(path)
    if where is None:
        return None
    return where.removesuffix(".git") or None
