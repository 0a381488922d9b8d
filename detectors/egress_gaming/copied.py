"""Content copied verbatim from what tool results showed into what a call sends, as
:mod:`detectors.egress_gaming.detector` judges it.

Taint by content, not by name: a result's text passages (24+ characters, up to 8 per
result, each cut to :data:`PASSAGE_CHARS`) are kept with the step that showed them and
the resource it came from (the ``owner/name`` a call's arguments or URL name). A call
that publishes or sends and whose arguments hold such a passage copies it on. Two
crossings are findings:

- by a data request to a host only a tool result named (``origin``; a message's
  recipients are the injected-address rule's): the session's content leaving
  for an injected recipient, even when the user asked for *a* send (``post the summary
  in #general`` does not ask for a POST to a site a web page named);
- from a resource the task does not name (another repository, found through a result)
  into a publication: private content moved into a public place.

Both are warnings (notify): the copy is evidence of where data went, not proof of
intent. Pure functions; the caller owns the bounded ledger.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from features.egress.answer_sources import repo_id

__all__ = ["PASSAGE_CHARS", "copied_from", "passages", "source_repo"]

PASSAGE_CHARS = 48
_PASSAGE_RE = re.compile(r"[^\n\"\\{}\[\]|]{24,}")
_OWNER_REPO_RE = re.compile(r'"owner"\s*:\s*"([\w.-]+)".*?"repo"\s*:\s*"([\w.-]+)"')


def passages(text: str) -> list[str]:
    """The passages of a result worth following: runs of 24+ characters between line
    breaks, quotes and brackets that hold 4+ words, lower-cased, cut to
    :data:`PASSAGE_CHARS`; at most 8, from the result's first 2,048 characters.

    >>> passages('[{"body": "Payroll export is in the finance drive, pw in 1Password"}]')
    ['payroll export is in the finance drive, pw in 1p']
    """
    out: list[str] = []
    for run in _PASSAGE_RE.findall(text[:2048]):  # strings, not match objects: no group
        passage = run.strip(" :,#*-").lower()
        if len(passage) >= 24 and passage.count(" ") >= 3:
            out.append(passage[:PASSAGE_CHARS])
            if len(out) == 8:
                break
    return out


def source_repo(low: str) -> tuple[str, str] | None:
    """The repository a call reads, from its ``owner``/``repo`` arguments or a URL.

    >>> source_repo('{"owner":"mkolbe","path":"readme.md","repo":"side-startup"}')
    ('mkolbe', 'side-startup')
    """
    m = _OWNER_REPO_RE.search(low)
    if m:
        return m.group(1), m.group(2)
    at = low.find("github.com/")
    return repo_id(low[at:].split('"')[0]) if at >= 0 else None


def copied_from(
    low: str, ledger: Mapping[str, tuple[int, str | None]]
) -> list[tuple[str, int, str | None]]:
    """(passage, seq shown, source repository) of each kept passage the lower-cased
    arguments hold (JSON line breaks undone).

    >>> copied_from('{"body":"- x: client api key rotation pending; contact cfo"}',
    ...             {"client api key rotation pending; contact cfo": (27, "mkolbe/plans")})
    [('client api key rotation pending; contact cfo', 27, 'mkolbe/plans')]
    """
    text = low.replace("\\n", "\n")
    return [(p, seq, src) for p, (seq, src) in ledger.items() if p in text]
