"""What :mod:`detectors.egress_gaming.detector` knows of the task and whom it trusts: one state
object and the functions that fill it.

:class:`TaskContext` holds the goal (lower-cased, the first 4 KiB: what the user asked
for is never gaming), the trusted context (goal, system instructions, user messages: an
address in it is the user's or the deployer's, never an attacker's), the task's
repository and the evidence of which repositories are the task's (named by the goal,
by an issue the goal names, by git remotes, by the workspace's branch), the base commit,
the workspace and the session policy's egress hosts. Its read-only methods answer the
rules' questions (:meth:`TaskContext.is_repo`, :meth:`TaskContext.allowed`,
:meth:`TaskContext.trusts`); the functions here change only the context they are given
and keep every table capped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from detectors.base import remember
from detectors.egress_gaming.rules import in_trusted, is_task_repo, short
from features.egress.answer_sources import goal_repositories, repo_id
from features.text.hosts import host_in

MAX_TRUSTED = 8_192
"""Characters of trusted text kept."""
MAX_GOAL = 4_096
"""Characters of the goal kept (and of each trusted text read)."""
MAX_POLICY_HOSTS = 256

Repo = tuple[str, str]


@dataclass(slots=True)
class TaskContext:
    """The task (repository, base, workspace, goal) and the trusted context."""

    goal: str = ""
    trusted: str = ""
    repo: Repo | None = None
    repos: dict[Repo, None] = field(default_factory=dict)  # the goal's repositories
    issue_repos: dict[str, Repo] = field(default_factory=dict)  # fetched issue -> repo
    branch_issues: frozenset[str] = frozenset()  # numbers in the branch's name
    remote_repos: dict[Repo, None] = field(default_factory=dict)  # origin/upstream, clone
    repo_name: str | None = None  # fallback: the workspace directory's name
    base: str | None = None
    workspace: str | None = None
    policy_allowed: tuple[str, ...] = ()
    policy_denied: tuple[str, ...] = ()

    def is_repo(self, owner: str, name: str, *, remotes: bool = True) -> bool:
        """Is ``owner/name`` the task's own repository
        (:func:`detectors.egress_gaming.rules.is_task_repo`)? ``remotes=False`` leaves the
        remotes out: fetching ``origin`` is routine even when it is the project itself."""
        return is_task_repo(
            owner,
            name,
            repo=self.repo,
            repos=self.repos,
            remote_repos=self.remote_repos if remotes else None,
            issue_repos=self.issue_repos,
            branch_issues=self.branch_issues,
            goal=self.goal,
            repo_name=self.repo_name,
        )

    def allowed(self, host: str, allowed_hosts: Iterable[str]) -> bool:
        """Whether ``host`` is among ``allowed_hosts`` or the policy's allowed hosts."""
        hosts = allowed_hosts if isinstance(allowed_hosts, tuple) else tuple(allowed_hosts)
        return _allowed(host, hosts, self.policy_allowed)

    def trusts(self, address: str) -> bool:
        """Whether the trusted context names ``address`` (:func:`in_trusted`)."""
        return in_trusted(address, self.trusted, self.policy_allowed)

    def repo_text(self) -> str:
        """The task's repository, for a reason (`` (owner/name)``, or nothing)."""
        return f" ({self.repo[0]}/{self.repo[1]})" if self.repo else ""

    def base_text(self) -> str:
        """The base commit, for a reason (`` (base 1a2b3c4)``, or nothing)."""
        return f" (base {short(self.base)})" if self.base else ""


@lru_cache(maxsize=4_096)
def _allowed(host: str, allowed_hosts: tuple[str, ...], policy_allowed: tuple[str, ...]) -> bool:
    """:meth:`TaskContext.allowed`, memoised: a session asks of the same few hosts on every
    call and result, and each answer walks the host lists (a pure function of its
    arguments: no state of its own).

    >>> _allowed("files.pythonhosted.org", ("pythonhosted.org",), ())
    True
    >>> _allowed("evil.example", ("pythonhosted.org",), ("*.example",))
    True
    """
    return host_in(host, allowed_hosts) or host_in(host, policy_allowed)


def trust(ctx: TaskContext, text: str, *, goal: bool, cap: int) -> None:
    """Add ``text`` to the trusted context; a goal or user message also to the goal,
    whose repositories become the task's (``cap``: the repositories kept)."""
    low = text[:MAX_GOAL].lower()
    if low in ctx.trusted or len(ctx.trusted) >= MAX_TRUSTED:
        return
    ctx.trusted = (ctx.trusted + "\n" + low)[:MAX_TRUSTED]
    if goal and low not in ctx.goal:
        ctx.goal = (ctx.goal + "\n" + low if ctx.goal else low)[:MAX_GOAL]
        for repo in goal_repositories(low):
            remember(ctx.repos, repo, None, cap)


def anchor_start(
    ctx: TaskContext,
    text: str | None,
    detail: Mapping[str, Any],
    policies: Mapping[str, Mapping[str, Any]] | None,
    *,
    cap: int,
) -> None:
    """A start step (every turn's, and a late root span): its ``text`` and system
    instructions are trusted, its repository, workspace and commit anchor the task, and
    its policy (by ``policy_id`` in ``policies``) gives the allowed and denied hosts."""
    if text:
        trust(ctx, text, goal=True, cap=cap)
    instructions = detail.get("system_instructions")
    if isinstance(instructions, str):
        trust(ctx, instructions, goal=False, cap=cap)
    repo = detail.get("repository")
    if isinstance(repo, str) and repo_id(repo) is not None:
        ctx.repo = repo_id(repo)
    workspace = detail.get("workspace")
    if isinstance(workspace, str) and workspace.strip("/"):
        ctx.workspace = workspace.rstrip("/")
        ctx.repo_name = ctx.workspace.rsplit("/", 1)[-1].lower()
    commit = detail.get("commit")
    if isinstance(commit, str):
        ctx.base = commit.lower()
    policy_id = detail.get("policy_id")
    policy = (policies or {}).get(policy_id) if isinstance(policy_id, str) else None
    if isinstance(policy, Mapping):
        allowed = policy.get("allowed_egress_hosts") or ()
        denied = policy.get("denied_egress_hosts") or ()
        ctx.policy_allowed = tuple(str(h).lower() for h in allowed if h != "*")[:MAX_POLICY_HOSTS]
        ctx.policy_denied = tuple(str(h).lower() for h in denied)[:MAX_POLICY_HOSTS]
