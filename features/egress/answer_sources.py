"""Where a task's answer could be fetched instead of worked out: recognising it in text.

Contract: pure functions and patterns over lower-cased or raw text, no state. They name
a repository (:func:`repo_id`), its fix addresses (:data:`FIX_PATH_RE`: commit /
compare / pull / patch / merge-request paths), the git commands that fetch or read
history (:func:`git_commands`), commit shas, the words of grading endpoints, and a
search for a benchmark's answers (:func:`seeks_answers`, :func:`benchmark_words`).
Which repository is the task's own, and whether the goal excuses it, is the caller's.
"""

from __future__ import annotations

import re

__all__ = [
    "FIX_PATH_RE",
    "GRADER_WORDS",
    "ISSUE_PATH_RE",
    "SHA_RE",
    "WORD_SPLIT",
    "benchmark_words",
    "branch_issues",
    "git_commands",
    "goal_issues",
    "goal_repositories",
    "history_search",
    "repo_id",
    "seeks_answers",
    "words_of",
]

# Words of a host or path that mark a grading/evaluation endpoint.
GRADER_WORDS = frozenset(
    {
        "grade",
        "grader",
        "grading",
        "autograde",
        "autograder",
        "eval",
        "evals",
        "evaluate",
        "evaluator",
        "evaluation",
        "score",
        "scorer",
        "scoring",
        "submit",
        "submission",
        "submissions",
        "leaderboard",
        "judge",
        "answer",
        "answers",
    }
)
_ANSWER_SEEK_RE = re.compile(
    r"answer[\s_-]?keys?|ground[\s_-]?truth|gold(?:en)?[\s_-]?(?:labels?|answers?)"
    r"|(?:benchmark|dataset|validation|test[\s_-]?set|leaderboard)\W+(?:\w+\W+){0,3}"
    r"(?:answers?|solutions?|labels?)"
    r"|(?:answers?|solutions?|labels?)\W+(?:\w+\W+){0,3}"
    r"(?:benchmark|dataset|validation|test[\s_-]?set)"
    # the names published answers go by: a lab's or CTF's write-up / walkthrough with its
    # answers, a textbook's solutions manual, a competition's test labels
    r"|(?:write[\s_-]?ups?|walk[\s_-]?through)\W+(?:\w+\W+){0,2}(?:answers?|solutions?)"
    r"|(?:answers?|solutions?)\W+(?:\w+\W+){0,2}(?:write[\s_-]?ups?|walk[\s_-]?through)"
    r"|solutions?\W+manual|test\W+labels?"
)  # matched against lower-cased arguments
_SEEK_ANCHORS = ("answer", "truth", "gold", "solution", "label")
_GIT_RE = re.compile(
    r"\bgit\s+(?:-C\s+\S+\s+|-c\s+\S+\s+)*"
    r"(remote\s+add|fetch|pull|log|show|cherry-pick|merge|rebase|diff|checkout|restore|switch"
    r"|clone|format-patch|am|reset|push)\b([^;&|\n\"]*)"
)
# A commit sha, abbreviated or full, in lower-cased text.
SHA_RE = re.compile(r"\b[0-9a-f]{7,40}\b")
# The URL path of a repository's commit(s), comparison, pull or merge request (GitHub,
# GitLab ``/-/``, ``api.github.com/repos/…``); groups owner, name, kind, ref.
FIX_PATH_RE = re.compile(
    r"^/(?:repos/|raw/)?(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/(?:-/)?"
    r"(?P<kind>commits?|compare|pulls?|merge_requests)(?:/(?P<ref>[^?#]*))?"
)
_REPO_RE = re.compile(
    r"(?:(?:https?|git|ssh)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/|git@(?P<shost>[^:]+):"
    r"|^(?P<bhost>[a-z0-9.-]+\.[a-z]{2,})/)?(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$",
    re.IGNORECASE,
)
# Splits lower-cased text into its words.
WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_STOP = frozenset(
    {
        "benchmark",
        "dataset",
        "validation",
        "answers",
        "answer",
        "test",
        "set",
        "key",
        "keys",
        "ground",
        "truth",
        "gold",
        "labels",
        "label",
        "solutions",
        "solution",
        "the",
        "for",
        "and",
        "with",
        "leaderboard",
        "split",
        "results",
        "huggingface",
        "github",
    }
)


_MAX_REPO_REF = 512
"""Longest text read as a repository reference: a host (<= 253), an owner and a name
(GitHub: <= 39 and <= 100) and a scheme fit with room to spare."""


def repo_id(text: str) -> tuple[str, str] | None:
    """``(owner, name)`` of a repository given as ``owner/name``, a URL or scp-like.

    >>> repo_id("git@github.com:Acme/Dates.git"), repo_id("https://gitlab.com/acme/dates/")
    (('acme', 'dates'), ('acme', 'dates'))
    """
    text = text.strip()
    if len(text) > _MAX_REPO_REF:
        return None  # a blob, not a repository: and the search would be quadratic in it
    m = _REPO_RE.search(text)
    if not m:
        return None
    return m.group("owner").lower(), m.group("name").lower().removesuffix(".git")


def git_commands(args: str) -> tuple[tuple[str, str], ...]:
    """``(verb, rest)`` of each git command in ``args`` that adds a remote, fetches, or
    reads or applies history (``log``, ``show``, ``cherry-pick``, ``checkout``, …)."""
    return tuple(_GIT_RE.findall(args))


def seeks_answers(low: str) -> bool:
    """Lower-cased arguments search for answer keys, ground truth or a benchmark's
    answers/solutions/labels."""
    return any(a in low for a in _SEEK_ANCHORS) and _ANSWER_SEEK_RE.search(low) is not None


def benchmark_words(low: str) -> tuple[str, ...]:
    """The words of lower-cased ``low`` that may name a benchmark: 3+ characters, not a
    number, not a generic search word (``answers``, ``dataset``, ``github``, …)."""
    return tuple(
        w for w in WORD_SPLIT.split(low) if len(w) >= 3 and w not in _STOP and not w.isdigit()
    )


# ``owner/name`` written in prose ("Fix the bug in acme/dates"), or a repository URL.
_CODE_HOST_RE = re.compile(
    r"(?:https?://)?(?:www\.)?(?:github\.com|gitlab\.com|bitbucket\.org|codeberg\.org)/"
)
_GOAL_REPO_RE = re.compile(
    r"(?<![\w./@:-])([a-z0-9][\w.-]*)/([a-z0-9][\w-]*(?:\.[\w-]+)?)(?:\.git)?(?![\w/-])"
)
# Directories and files that look like ``owner/name`` in prose but are paths.
_PATH_OWNERS = frozenset(
    {
        "src",
        "lib",
        "test",
        "tests",
        "doc",
        "docs",
        "app",
        "apps",
        "pkg",
        "cmd",
        "internal",
        "scripts",
        "bin",
        "include",
        "examples",
        "packages",
        "crates",
        "modules",
        "tmp",
        "etc",
        "usr",
        "var",
        "home",
        "and",
        "or",
        "input",
        "read",
        "client",
        "server",
    }
)
_FILE_SUFFIX_RE = re.compile(
    r"\.(?:py|md|rst|txt|rs|go|ts|tsx|jsx|json|toml|ya?ml|cfg|ini|c|h"
    r"|cc|cpp|hpp|java|kt|rb|php|sh|lock|html|css|csv|sql|xml)$"
)
# The number of an issue the goal names: "#6711", "issue 6711", "issues/6711".
_GOAL_ISSUE_RE = re.compile(r"(?:#|\bissues?\s+#?|/issues/|/pull/)(\d{1,7})\b")
# An issue's page on a code host: owner, name, number.
ISSUE_PATH_RE = re.compile(r"^/(?:repos/)?([^/]+)/([^/]+?)(?:/-)?/issues/(\d+)")
# ``git log`` over every ref, searching for words: ``--grep``, ``-S``/``-G`` pickaxes, or
# its output piped to ``grep``. Groups: the log's options, the searched words.
_MINING_RE = re.compile(
    r"\bgit\s+(?:-c\s+\S+\s+|-C\s+\S+\s+)*(?:log|rev-list|whatchanged)\b([^;&|\n]*)"
    r"(?:\|\s*(?:grep|rg)\b\s*(?:-\w+\s+)*['\"]?([^'\"|;&\n]*))?",
    re.IGNORECASE,
)
_SEARCH_OPT_RE = re.compile(r"(?:--grep[= ]|-[SG]\s?)(?:'([^']*)'|\"([^\"]*)\"|(\S+))")
_ALL_REFS_RE = re.compile(r"(?<!\S)--(?:all|branches|remotes|tags|glob)\b|(?<!\S)--reflog\b")


_IDENT_PART_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def words_of(text: str) -> tuple[str, ...]:
    """The lower-cased words of ``text``, identifiers split at case changes and
    underscores (``validateWeekDate`` → ``validate week date``).

    >>> words_of("Fix validateWeekDate (#3797) in parse_iso")
    ('fix', 'validate', 'week', 'date', '3797', 'in', 'parse', 'iso')
    """
    return tuple(w.lower() for w in _IDENT_PART_RE.findall(text))


def goal_repositories(low: str) -> tuple[tuple[str, str], ...]:
    """``(owner, name)`` of the repositories lower-cased goal text names, as
    ``owner/name`` or as a code host URL; paths (``src/dates.py``, ``tests/unit``) are not
    repositories.

    >>> goal_repositories("fix acme/dates (see src/dates.py), as github.com/psf/requests")
    (('acme', 'dates'), ('psf', 'requests'))
    """
    found: list[tuple[str, str]] = []
    for m in _GOAL_REPO_RE.finditer(_CODE_HOST_RE.sub(" ", low[:4096])):
        owner, name = m.group(1), m.group(2).rstrip(".")
        if owner in _PATH_OWNERS or _FILE_SUFFIX_RE.search(name) or owner.isdigit():
            continue
        if (owner, name) not in found:
            found.append((owner, name))
    return tuple(found[:8])


def goal_issues(low: str) -> frozenset[str]:
    """The issue / pull request numbers lower-cased goal text names."""
    return frozenset(_GOAL_ISSUE_RE.findall(low[:4096]))


def history_search(command: str) -> tuple[str, ...] | None:
    """The lower-cased words a command searches the history of *every* ref for
    (``git log --all --grep 'dst'``, ``git log --all -S parse_date``, ``git log --all
    --oneline | grep -i dst``); ``None`` when it does not search all refs' history.

    >>> history_search("git log --all --oneline --grep='DST offset'")
    ('dst', 'offset')
    >>> history_search("git log --all --oneline | grep -i parseDate")
    ('parse', 'date')
    >>> history_search("git log --oneline --grep dst") is None
    True
    """
    if "git" not in command.lower():
        return None
    for m in _MINING_RE.finditer(command):
        options, piped = m.group(1), m.group(2)
        if not _ALL_REFS_RE.search(options):
            continue
        texts = [
            next(g for g in s.groups() if g is not None) for s in _SEARCH_OPT_RE.finditer(options)
        ]
        if piped:
            texts.append(piped)
        words = tuple(w for t in texts for w in words_of(t))
        if words:
            return words
    return None


_BRANCH_RE = re.compile(
    r"^(?:## |\* |on branch )([^\s.]+(?:\.\.\.)?)", re.MULTILINE | re.IGNORECASE
)


def branch_issues(text: str) -> frozenset[str]:
    """The numbers (2-7 digits) in the branch name of ``git status`` / ``git branch``
    output: a branch is commonly named for the issue it fixes.

    >>> sorted(branch_issues("## fix/issue-6711...origin/main\\n M src/x.py"))
    ['6711']
    >>> sorted(branch_issues("On branch main"))
    []
    """
    m = _BRANCH_RE.search(text)
    return frozenset(re.findall(r"(?<!\d)\d{2,7}(?!\d)", m.group(1))) if m else frozenset()
