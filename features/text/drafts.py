"""A draft is not a send: one reading of a tool's name, for every check that asks.

A draft stays in the sender's own mailbox (or the platform's) until something sends it:
``create_draft``, ``draft_email``, ``save_draft``, ``create_reply_draft`` send nothing
yet; ``send_draft``, ``drafts.send``, ``publish_draft`` do. The egress features (who a
call sends data to) and the instruction reader's mail rules ("never send mail without
approval") use this one definition, so they cannot disagree about the same call.
"""

from __future__ import annotations

import re

DRAFT_WORD = "draft"
"""The word (in a lower-cased tool name) that says the call drafts."""
SEND_VERBS = "send|post|publish|submit|forward"
"""Alternatives (a regular expression's) that say a drafting tool sends its draft."""

_DRAFT = re.compile(DRAFT_WORD)
_SEND = re.compile(SEND_VERBS)


def drafts_only(tool: str | None) -> bool:
    """Whether the tool's name says it drafts and names no send.

    >>> [drafts_only(t) for t in ("create_draft", "Gmail.DraftEmail", "send_draft",
    ...                           "drafts.send", "send_email", None)]
    [True, True, False, False, False, False]
    """
    name = (tool or "").lower()
    return bool(_DRAFT.search(name)) and not _SEND.search(name)


def not_drafting_lookahead(span: int = 80) -> str:
    """A regular-expression lookahead, at the start of a tool's name (made of
    ``[\\w.:-]``, case-insensitive), that fails exactly where :func:`drafts_only` holds.

    >>> p = re.compile("(?i)^" + not_drafting_lookahead() + r"\\S+")
    >>> [bool(p.match(t)) for t in ("create_draft", "send_draft", "send_email")]
    [False, True, True]
    """
    name = rf"[\w.:-]{{0,{span}}}?"
    return rf"(?:(?!{name}{DRAFT_WORD})|(?={name}(?:{SEND_VERBS})))"
