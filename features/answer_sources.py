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
    "SHA_RE",
    "WORD_SPLIT",
    "benchmark_words",
    "git_commands",
    "repo_id",
    "seeks_answers",
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
)  # matched against lower-cased arguments
_SEEK_ANCHORS = ("answer", "truth", "gold", "solution", "label")
_GIT_RE = re.compile(
    r"\bgit\s+(?:-C\s+\S+\s+|-c\s+\S+\s+)*"
    r"(remote\s+add|fetch|pull|log|show|cherry-pick|merge|rebase|diff|checkout|restore|switch"
    r"|clone|format-patch|am|reset)\b([^;&|\n\"]*)"
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
