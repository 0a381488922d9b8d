"""Where a call goes, as :mod:`detectors.intent_drift.weigh` weighs it: the hosts it contacts
and the paths it reads or changes.

- :func:`hosts_weight` — a host from nowhere, one a result named, one in scope (and a
  page continuing the stretch), polling and tooling hosts;
- :func:`paths_weight` — reads (exploration, what comes within reach before the first
  edit, folders a result named) and edits (within reach, new files, a file only read
  whose change is not about the task: :func:`edit_about_task`).

Pure functions of their arguments (the detector's tables, passed in), except that
:func:`paths_weight` extends the reads and the files within reach it is given, as it
walks. No I/O, no clock.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from detectors.base import remember
from detectors.intent_drift.reasons import step_ref
from detectors.intent_drift.scope import file_reached, inherited, inside, relative
from features.calls.vectors import CONTENT_DROP, directory_of, tokenize
from models.records import Step

__all__ = [
    "MAX_FILES",
    "MAX_READS",
    "changes_existing",
    "edit_about_task",
    "hosts_weight",
    "paths_weight",
]

_EXISTING_RE = re.compile(r'"old\w*"\s*:|\*\*\* Update File:')


def changes_existing(arguments: str | None) -> bool:
    """Whether an edit's arguments change a file that exists: they carry the text it
    replaces (``old``, ``old_string``, ``old_str``) or a patch updates it.

    >>> changes_existing('{"path": "a.py", "old_string": "x", "new_string": "y"}')
    True
    >>> changes_existing('{"path": "notes.md", "content": "x"}')
    False
    """
    return arguments is not None and bool(_EXISTING_RE.search(arguments[:4_000]))


MAX_FILES = 512
"""Files in reach for edits the detector keeps."""
MAX_READS = 32
"""Recent reads (path -> the read step) the detector keeps."""


def hosts_weight(
    hosts: Iterable[str],
    words: Collection[str],
    *,
    neutral: Callable[[str], bool],
    named: Callable[[str], bool] = lambda h: False,
    own_repo: bool,
    scope_hosts: Collection[str],
    scope_words: Collection[str],
    goal_words: Collection[str],
    stretch: bool,
    stretch_words: Collection[str],
    stretch_max: float,
    followed: float,
    contacted: Collection[str],
    reached: Mapping[str, float],
    sends: bool,
    on_topic: bool,
    last_weight: float,
    last_blind: bool,
) -> tuple[float, list[str], bool]:
    """(weight, labels, judged) of the hosts a call contacts.

    Neutral: registry/docs hosts, any host of a call naming the task's repository
    (``own_repo``), a host contacted before. In scope (or ``named`` by the task's
    words: :func:`detectors.intent_drift.scope.host_named`): on task, unless the call's new
    words continue the current ``stretch`` (its weight) or it follows a hit of a foreign
    stretch (``followed``). A host a result named (``reached``) carries that result's
    call weight, except for a data-carrying request (``sends``: egress_gaming's). A host
    from nowhere: the last call's weight when its result was invisible, else 0.5 for an
    on-topic or sending call, 1 otherwise.

    >>> kw = dict(neutral=lambda h: False, own_repo=False, scope_hosts=(), scope_words=(),
    ...           goal_words=(), stretch=False, stretch_words=(), stretch_max=0.0,
    ...           followed=0.0, contacted=(), reached={}, sends=False, on_topic=False,
    ...           last_weight=0.0, last_blind=False)
    >>> hosts_weight(["evil.example"], {"tulip"}, **kw)
    (1.0, ['evil.example'], True)
    >>> hosts_weight(["evil.example"], {"tulip"}, **{**kw, "contacted": {"evil.example"}})
    (0.0, [], False)
    """
    weight, labels, judged = 0.0, [], False
    for h in hosts:
        if neutral(h) or own_repo:
            continue
        if h in scope_hosts or named(h):  # in scope, or named by the task's words
            judged = True
            novel = [w for w in words if w not in scope_words and w not in goal_words]
            if stretch and novel and all(w in stretch_words for w in novel):
                weight = max(weight, stretch_max)  # a page that continues the stretch
            weight = max(weight, followed)
            continue
        if h in contacted:
            continue  # repeated contact (polling) is neutral
        judged = True
        via = reached.get(h)
        if via is not None:
            if sends:
                continue  # data to an address a result named: egress_gaming's
            if max(via, followed) > 0:
                weight = max(weight, via, followed)
                labels.append(h)
            continue
        # a result not visible: taken as reached from the call before (its weight)
        via = last_weight if last_blind else 0.5 if on_topic or sends else 1.0
        if via:
            weight = max(weight, via)
            labels.append(h)
    return weight, labels, judged


def edit_about_task(
    path: str,
    words: set[str],
    arguments: str,
    *,
    goal_words: Collection[str],
    goal_refs: Iterable[str],
) -> bool:
    """Whether the change a call makes to ``path`` is about the task (a follow-up in
    another file): its words other than the path's own hold a goal word of four letters
    or more, or its arguments cite an issue the goal cites (``#5843``).

    >>> edit_about_task("src/util.py", {"src", "util", "parser"}, "", goal_words={"parser"},
    ...                 goal_refs=())
    True
    >>> edit_about_task("src/parser.py", {"src", "parser"}, "", goal_words={"parser"},
    ...                 goal_refs=())
    False
    """
    content = words.difference(tokenize(path, drop=CONTENT_DROP))
    return any(len(w) > 3 and w in goal_words for w in content) or any(
        ref in arguments for ref in goal_refs
    )


def paths_weight(
    paths: Iterable[str],
    targets: Collection[str],
    words: set[str],
    step: Step,
    *,
    net: bool,
    workspace: str,
    files: dict[str, None],
    reads: dict[str, dict[str, Any]],
    reached: Mapping[str, float],
    goal_words: Collection[str],
    goal_refs: Iterable[str],
    names: Collection[str],
    edits: int,
    named: Collection[str] = (),
    cited: Collection[str] = (),
) -> tuple[float, list[str], dict[str, Any] | None, bool, int]:
    """(weight, labels, the read an off-task edit continues, judged, edits so far) of the
    paths a call names; ``targets`` are the ones it changes.

    An edit of a file within reach (:func:`detectors.intent_drift.scope.file_reached`) is on
    task and counted; of a file never read, writing output (notes, an answer); of a file
    read before whose change is not about the task (:func:`edit_about_task`), 1 - the
    read is the onset. A read is remembered (``reads``), and before the first edit a
    read inside the workspace puts the file within reach (``files``); a read outside it
    that ``net`` (the call also names hosts or repositories) does not cover inherits the
    weight of the call whose result named it (:func:`detectors.intent_drift.scope.inherited`).
    The workspace itself (a ``cwd``) is neutral.

    >>> from detectors.testing import Session
    >>> call, _ = Session().tool("write_file", {"path": "/w/src/other.py", "content": "x"})
    >>> reads = {"src/other.py": {"seq": 3}}
    >>> paths_weight(["/w/src/other.py"], {"/w/src/other.py"}, set(), call, net=False,
    ...              workspace="/w", files={}, reads=reads, reached={}, goal_words=set(),
    ...              goal_refs=(), names=(), edits=0)
    (1.0, ['src/'], {'seq': 3}, True, 0)
    """
    weight, labels, judged = 0.0, [], False
    pending: dict[str, Any] | None = None
    for p in paths:
        rel = relative(p, workspace)
        if p.rstrip("/") == workspace:
            continue  # the working directory (a ``cwd``/``workdir``): neutral
        if p in targets:
            judged = True
            if file_reached(rel, files, goal_words, names, named) or file_reached(
                rel, (), (), (), cited
            ):
                remember(files, rel, None, MAX_FILES)
                edits += 1
                continue
            read = reads.get(rel)
            if read is None:
                if changes_existing(step.arguments) and not edit_about_task(
                    p, words, step.arguments or "", goal_words=goal_words, goal_refs=goal_refs
                ):
                    # an existing file changed unseen: nothing on-task read it, named it
                    # or led to it - a sweep of the agent's own (0.5 a file)
                    weight = max(weight, 0.5)
                    labels.append(f"{directory_of(rel) or rel}/")
                continue  # a new file (notes, an answer): writing output is work
            if edit_about_task(
                p, words, step.arguments or "", goal_words=goal_words, goal_refs=goal_refs
            ):
                continue  # the change is about the task (a follow-up in another file)
            weight = max(weight, 1.0)
            pending = read
            labels.append(f"{directory_of(rel) or rel}/")
            continue
        remember(reads, rel, step_ref(step), MAX_READS)
        if not edits and inside(p, workspace):
            # what the agent read to understand the task, before its first change, is
            # within reach (and stands for a search's hits when results are not recorded)
            remember(files, rel, None, MAX_FILES)
        if net:
            continue
        judged = True
        if not inside(p, workspace):
            via = inherited(p, reached)
            if via:
                weight = max(weight, via)
                labels.append(directory_of(p) or p)
    return weight, labels, pending, judged, edits
