"""The task's scope as :mod:`detectors.intent_drift.detector` keeps it: one state object and the
functions that grow it.

:class:`TaskState` holds what the task is about - the goal (its words, 5+-letter stems
and ticket references), the workspace and the task's repository - and what on-task work
has added to it since: the vocabulary of on-task arguments, the files in reach, the hosts
in scope and contacted, the repositories, the items and pages results named (with the
weight of the call that led to them) and the recent reads. The functions here change
only the :class:`TaskState` they are given, read nothing else and keep every table
capped, so the state stays bounded whatever the session sends.

:meth:`TaskState.scope` is the read-only view :func:`detectors.intent_drift.weigh.weigh_call`
weighs a call against (the tables shared, not copied).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from detectors.base import remember, remember_all
from detectors.intent_drift.language import written_in_english
from detectors.intent_drift.places import MAX_FILES
from detectors.intent_drift.scope import (
    failure_names,
    goal_words,
    inside,
    neutral_host,
    relative,
    start_anchor,
    subject_of,
    task_identifiers,
    task_names,
    working_root,
)
from detectors.intent_drift.weigh import Scope
from features.calls.vectors import CONTENT_DROP, StepTerms, step_terms, tokenize
from models.records import Step, StepKind

MAX_WORDS = 1_024
MAX_GOAL_WORDS = 256
MAX_GOAL_STEMS = 1_024
"""Goal stems are the prefixes of 5 characters or more of the goal's words (of at most
:data:`detectors.intent_drift.scope.MAX_WORD_CHARS`), at most 1,024 of them: a goal of one 16 KB
word once made 134 MB of stems, pickled at every commit of its session."""
MAX_HOSTS = 128
MAX_REACHED = 512
MAX_PAGES = 256
MAX_REPOS = 32
MAX_TURNS = 64
MAX_NAMED = 128
MAX_IDENTS = 32
MAX_CITED = 256
_REF_RE = re.compile(r"#\d{2,}\b")


@dataclass(slots=True)
class TaskState:
    """The task's scope: its anchors and everything on-task work brought into reach."""

    goal: str = ""  # short, for the reason
    goal_words: set[str] = field(default_factory=set)
    goal_stems: set[str] = field(default_factory=set)
    goal_refs: set[str] = field(default_factory=set)  # issue / ticket references (``#5843``)
    words: dict[str, None] = field(default_factory=dict)  # on-task arguments' vocabulary
    workspace: str = ""
    task_repo: str = ""
    names: set[str] = field(default_factory=set)  # workspace / repository names
    named: dict[str, None] = field(default_factory=dict)  # names the requests are written with
    files: dict[str, None] = field(default_factory=dict)  # files in reach for edits
    hosts: dict[str, None] = field(default_factory=dict)  # hosts in scope
    contacted: dict[str, None] = field(default_factory=dict)  # every host contacted
    repos: dict[str, None] = field(default_factory=dict)
    reached: dict[str, float] = field(default_factory=dict)  # item a result named → weight
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)  # recent reads: path → ref
    pages: dict[str, float] = field(default_factory=dict)  # page a result linked → weight
    turns: dict[int, None] = field(default_factory=dict)  # user turns read (their hashes)
    idents: dict[str, None] = field(default_factory=dict)  # entities the requests name
    cited: dict[str, None] = field(default_factory=dict)  # names failures of the work cited
    rules_reads: list[str] = field(default_factory=list)  # calls reading CLAUDE.md / AGENTS.md
    # (features.policy.catalog.project_rules_read keeps it)

    def rel(self, path: str) -> str:
        """``path`` relative to the workspace (as the files in reach are kept)."""
        return relative(path, self.workspace)

    def requested(self, word: str) -> bool:
        """Whether ``word`` is the requests' own: a goal word or a 5+-letter stem of one
        (not a word on-task work brought into scope)."""
        return word in self.goal_words or word in self.goal_stems

    def scope(
        self,
        results: Iterable[tuple[str, int, float, str]],
        *,
        neutral_hosts: tuple[str, ...],
        topic_share: float,
        min_words: int,
        authored: Collection[str] = (),
        objects: Collection[str] = (),
        foreign: Collection[int] = (),
    ) -> Scope:
        """The view a call is weighed against, with the recent ``results``, the words
        the agent's earlier calls wrote (``authored``) and the objects on-task work
        touched (``objects``: a call on one is on task, as on an entity the requests
        name), and whether the goal is written in English
        (:func:`detectors.intent_drift.language.written_in_english`)."""
        return Scope(
            self.workspace,
            self.task_repo,
            self.names,
            self.goal_words,
            self.goal_stems,
            self.goal_refs,
            self.words,
            self.files,
            self.hosts,
            self.contacted,
            self.repos,
            self.reached,
            self.reads,
            results,
            self.pages,
            neutral_hosts,
            topic_share,
            min_words,
            (*self.idents, *objects) if objects else self.idents,
            self.named,
            self.cited,
            authored,
            self.goal,
            foreign,
            written_in_english(self.goal) if self.goal else True,
        )


def set_goal(task: TaskState, text: str) -> None:
    """Add the goal's ``text`` (a start step's, or the first user message's) to the task:
    it may arrive after the opening calls have seeded the scope. The first text names the
    goal (:attr:`TaskState.goal`); later ones (a further turn) add their words."""
    words = goal_words(text, MAX_GOAL_WORDS - len(task.goal_words))
    task.goal_words.update(words)
    # stems of the goal's longer words: ``charter`` is about a goal's ``chartered``
    # (bounded: every prefix of every word would be quadratic in a word's length)
    for w in words:
        if len(task.goal_stems) >= MAX_GOAL_STEMS:
            break
        task.goal_stems.update(w[:n] for n in range(5, len(w)))
    task.goal_refs.update(_REF_RE.findall(text)[:8])
    for name in task_names(text, MAX_NAMED):
        remember(task.named, name, None, MAX_NAMED)
    for ident in task_identifiers(text, MAX_IDENTS):
        remember(task.idents, ident, None, MAX_IDENTS)
    task.goal = task.goal or " ".join(text.split())[:100]  # the first request names it
    fake = Step(step_id="goal", session_id="", kind=StepKind.MODEL_CALL, ts=0, text=text)
    terms = step_terms(fake)
    for p in terms.paths:
        rel = task.rel(p)
        # a folder the request names (no extension) covers its files: kept with its "/"
        folder = "." not in rel.rsplit("/", 1)[-1] and "/" in rel.strip("/")
        remember(task.files, rel.rstrip("/") + "/" if folder else rel, None, MAX_FILES)
    for h in terms.hosts:
        remember(task.hosts, h, None, MAX_HOSTS)
    for r in terms.repos:
        remember(task.repos, r, None, MAX_REPOS)


def new_turn(task: TaskState, text: str) -> bool:
    """Whether the user turn ``text`` is new to the task (recorded as read): a runtime
    that repeats the request on every model call adds it once. Keyed by a CRC of the
    text, not Python's ``hash``: a replay in another process must decide the same."""
    key = zlib.crc32(text.encode("utf-8", "replace"))
    if key in task.turns:
        return False
    remember(task.turns, key, None, MAX_TURNS)
    return True


def anchor_start(task: TaskState, detail: Mapping[str, Any]) -> None:
    """Anchor the task at a start step's ``detail``: its workspace, host and repository
    (:func:`detectors.intent_drift.scope.start_anchor`); the goal is :func:`set_goal`'s."""
    workspace, name, host, repo = start_anchor(detail)
    if workspace is not None and name is not None:
        task.workspace = workspace
        task.names.add(name)
    if host is not None:
        remember(task.hosts, host, None, MAX_HOSTS)
    if repo:
        task.names.add(repo.rsplit("/", 1)[-1])
        task.task_repo = repo
    for name in list(task.names):  # as the goal's words are: ``attrs`` -> ``attr``
        task.names.update(tokenize(name, drop=CONTENT_DROP))


def find_workspace(
    task: TaskState, arguments: Mapping[str, Any] | None, paths: Iterable[str]
) -> None:
    """When no start step named the workspace, take it from where an opening call works
    (:func:`detectors.intent_drift.scope.working_root`): its files are then the task's,
    as a start step's would be."""
    if task.workspace:
        return
    root = working_root(arguments, paths, task.named.keys() | task.names)
    if root:
        task.workspace = root
        name = root.rsplit("/", 1)[-1].lower()
        task.names.add(name)
        task.names.update(tokenize(name, drop=CONTENT_DROP))


def learn_words(task: TaskState, words: Iterable[str]) -> None:
    """Widen the scope's vocabulary with a call's ``words``."""
    # sorted: which words the bounded vocabulary keeps must not follow the string
    # hash seed, or a replay in another process could judge differently
    remember_all(task.words, sorted(words), None, MAX_WORDS)


def learn(task: TaskState, terms: StepTerms, words: set[str], neutral_hosts: Iterable[str]) -> None:
    """Widen the scope with an on-task call's ``words``, hosts (registries and docs
    aside) and repositories."""
    learn_words(task, words)
    for h in terms.hosts:
        if not neutral_host(h, neutral_hosts):
            remember(task.hosts, h, None, MAX_HOSTS)
            remember(task.contacted, h, None, MAX_HOSTS)
    for r in terms.repos:
        remember(task.repos, r, None, MAX_REPOS)


def learn_links(
    task: TaskState,
    weight: float,
    paths: Iterable[str],
    hosts: Iterable[str],
    pages: Iterable[str],
    own: set[str],
) -> None:
    """What a result of a call of ``weight`` named: its ``pages`` and items inherit the
    call's weight (the lightest call that reached an item decides); an on-task result's
    relative paths come within reach for edits (``own``: the paths its call named, no
    news)."""
    for page in pages:  # the newest listing decides: a hit of an off-task search
        remember(task.pages, page, weight, MAX_PAGES)
    paths = tuple(paths)
    for item in (*paths, *hosts):
        old = task.reached.get(item)
        remember(task.reached, item, weight if old is None else min(old, weight), MAX_REACHED)
    if weight == 0.0:
        for p in paths:
            rel = task.rel(p)
            if not p.startswith("/") and rel not in own:
                remember(task.files, rel, None, MAX_FILES)
                subject = subject_of(rel)  # a failing test's file is the work's
                if subject:
                    remember(task.files, subject, None, MAX_FILES)


def addresses(task: TaskState) -> list[str]:
    """The addresses the requests name - the identifiers with a dot: a page
    (``www.todo.example/bob``), a file (``landlord-notices.txt``); not a service or a
    branch (``api-gateway``, ``fix/day``). A call on one reads what the user pointed
    the agent at: its result is the task's own text (a to-do list), where any other
    document's text is data."""
    return [i for i in task.idents if "." in i.strip(".")]


def learn_failure(task: TaskState, text: str | None) -> None:
    """A failure of on-task work (a test run, a build) cites what must change: the
    names it holds (:func:`detectors.intent_drift.scope.failure_names`) bring the files
    so named within reach for edits."""
    for name in failure_names(text, MAX_CITED):
        remember(task.cited, name, None, MAX_CITED)


def note_off_task(task: TaskState, terms: StepTerms, weight: float) -> None:
    """An off-task call's hosts count as contacted; where a foreign clone (weight 2)
    lands outside the workspace stays off task."""
    for h in terms.hosts:
        remember(task.contacted, h, None, MAX_HOSTS)
    for p in terms.paths[:4]:
        if weight >= 2.0 and not inside(p, task.workspace):
            remember(task.reached, p, weight, MAX_REACHED)
