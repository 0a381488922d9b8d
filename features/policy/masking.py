"""Rules about masking personal data before it is written or sent: "mask IBANs (keep last
4) and national id numbers as *** before writing anything to a shared sheet", "redact
emails before posting", "never write full card numbers to the ticket".

:func:`masking_rule` reads one sentence into a ``require_masked`` table
(:mod:`features.policy.format`): the *kinds* of data it names (each a kind of
:mod:`features.text.data_kinds`, recognised in a call by its shape and checksum, never by
the sentence's words) and the *destination* when it names one ("to a shared sheet":
calls whose text names a sheet). Two shapes, each marked by closed-class words:

- a masking verb (mask, redact, anonymise, obfuscate, hide …) and "before" a verb of
  writing or sending (write, send, post, share, upload, paste, append, export …);
- a prohibition (:data:`features.policy.lexicon.NEG_RE`) of writing or sending a kind
  ("never write full card numbers to the ticket"): a masked value is not the number.

Pure; bounded regexes over at most 600 characters.

>>> masking_rule("Redact emails before posting.")
{'kinds': ['email']}
>>> masking_rule("Never write full card numbers to the ticket.")
{'kinds': ['card'], 'within': '(?i)ticket'}
>>> masking_rule("Post the summary to the channel.") is None
True
"""

from __future__ import annotations

import re
from typing import Any

from features.policy.lexicon import BEFORE_RE, NEG_RE

__all__ = ["masking_rule"]

_KIND_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("iban", re.compile(r"\bibans?\b|\bbank\s+account\s+numbers?\b")),
    (
        "card",
        re.compile(
            r"\b(?:(?:credit|debit|payment)\s+)?cards?(?:\s+numbers?|\s+details)?\b|\bpans?\b"
            r"|\bkartennummern?\b|\btarjetas?\b"
        ),
    ),
    ("email", re.compile(r"\be-?mails?(?:\s+addresses)?\b|\bemail\s+addresses\b")),
    ("phone", re.compile(r"\b(?:phone|telephone|mobile)(?:\s+numbers?)?\b|\btel[eé]fonos?\b")),
    (
        "national_id",
        re.compile(r"\bnational\s+id(?:entity)?(?:\s+numbers?)?\b|\bdnis?\b|\bnies?\b|\bnif\b"),
    ),
)
"""The words naming each kind of :data:`features.text.data_kinds.KINDS` (content classes
with their common English, German and Spanish forms)."""

_MASK_RE = re.compile(
    r"\b(?:mask\w*|redact\w*|anonymi[sz]\w*|pseudonymi[sz]\w*|obfuscat\w*|hide|hiding"
    r"|blank\s+out|star\s+out|x\s+out|maskier\w*|enmascar\w*|ofusc\w*)\b"
)
_WRITE_RE = re.compile(
    r"\b(?:writ\w*|wrote|send\w*|sent|post\w*|shar\w*|upload\w*|past(?:e|es|ed|ing)|append\w*"
    r"|export\w*|publish\w*|put|putting|enter\w*|add\w*|log|logging|sav(?:e|es|ed|ing)"
    r"|copy\w*|include\w*|schreib\w*|escrib\w*|envi\w*|publica\w*)\b"
)
_DEST_RE = re.compile(
    r"\b(?:to|into|in|on|onto)\s+(?:(?:a|an|the|any|our|your|their|this|that)\s+)?"
    r"((?:[a-z][\w-]{1,30}\s+){0,2}[a-z][\w-]{1,30})"
)
_VALUE_NOUN_RE = re.compile(r"\b(?:numbers?|address(?:es)?|ibans?|details|dnis?|nies?)\b")
"""A prohibition names values, not messages ("card numbers", "e-mail addresses")."""
_NOT_DESTINATIONS = frozenset(
    [
        "anyone",
        "anybody",
        "it",
        "them",
        "anything",
        "everything",
        "disk",
        "output",
        "logs",
        "plain",
        "text",
        "full",
        "clear",
        "last",
        "first",
        "order",
    ]
)


def _kinds(low: str) -> list[str]:
    return [kind for kind, words in _KIND_WORDS if words.search(low)]


def _destination(low: str, after: int) -> str | None:
    """The head noun of the place a write goes ("to a shared sheet": sheet), stemmed."""
    m = _DEST_RE.search(low, after)
    if m is None:
        return None
    head = m[1].split()[-1]
    if head in _NOT_DESTINATIONS or len(head) < 3:
        return None
    return head[:-1] if head.endswith("s") and len(head) > 4 else head


def masking_rule(sentence: str) -> dict[str, Any] | None:
    """The ``require_masked`` table a sentence states (see the module docstring), None when
    it states none."""
    low = " ".join(sentence[:600].casefold().split())
    kinds = _kinds(low)
    if not kinds:
        return None
    write = _WRITE_RE.search(low)
    if write is None:
        return None
    mask = _MASK_RE.search(low)
    before = BEFORE_RE.search(low)
    if mask and before and mask.start() < before.start() <= write.start():
        pass  # mask X before writing
    elif NEG_RE.search(low[: write.start()]) and not mask and _VALUE_NOUN_RE.search(low):
        pass  # never write X (X named as values: "card numbers", not "e-mails" as messages)
    else:
        return None
    out: dict[str, Any] = {"kinds": kinds}
    dest = _destination(low, write.end())
    if dest:
        out["within"] = f"(?i){re.escape(dest)}"
    return out
