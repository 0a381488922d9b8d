"""Whether a request is written in English, the language tool names, commands, code and
most queries an agent writes are in.

Relatedness by shared words (:mod:`detectors.intent_drift`) compares a call's words with
the goal's. A goal written in Portuguese, German or Chinese shares few words with the
English calls that carry it out ("verifique os números" / ``web_search("official
statistics")``): the absence of shared words is then no evidence that a call is off the
task. :func:`written_in_english` tells which case a session is in, from the goal's text
alone: its letters' script and its English function words (the articles, prepositions
and pronouns every English sentence is built with - :data:`features.calls.vectors.STOP_WORDS`),
not a list of topics or phrases. Pure, memoised on the text.
"""

from __future__ import annotations

import re
from functools import lru_cache

from features.calls.vectors import STOP_WORDS

__all__ = ["written_in_english"]

MIN_WORDS = 6
"""A request of fewer words than this says too little to tell: taken as English."""
ENGLISH_SHARE = 0.06
"""Counted are the English function words of three letters or more (``the``, ``and``,
``for``, ``with``), which other Latin-script languages share less by accident than
``a``, ``do``, ``no`` or ``in``. Of the goals of the nine blind sets (seed 20261206),
the English ones have 7% to 44% of them (median ~25%), those in de/es/fr/it/nl/pt 0% to
8% (a quoted English claim: up to 20%)."""
OTHER_SCRIPT_SHARE = 0.3
"""Share of letters outside the Latin script from which a request is in another script
(CJK, kana, hangul, Cyrillic, Greek, Arabic, ...), whatever English names it quotes."""
_WORD_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


@lru_cache(maxsize=64)
def written_in_english(text: str) -> bool:
    """Whether the request ``text`` (its first 2,000 characters; its first paragraph
    when that holds 20 letters or more: instructions may follow it) is written in
    English: mostly Latin letters, and at least :data:`ENGLISH_SHARE` of its words
    English function words; a request of fewer than :data:`MIN_WORDS` words counts as
    English.

    >>> written_in_english("Fix the date parser in src/dates/parse.py and add a test for it")
    True
    >>> written_in_english("Prépare les dossiers d'intégration des 3 nouvelles recrues de lundi")
    False
    >>> written_in_english("处理 FOIA-2025-72376：所有邮件，涵盖全部保管人。涂黑个人电话号码。")
    False
    """
    text = text[:2_000]
    head = text.split("\n\n", 1)[0]
    if sum(1 for c in head if c.isalpha()) >= 20:
        text = head  # the request, not the instructions a runtime appended after it
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    other = sum(1 for c in letters if ord(c) > 0x24F)
    if other >= OTHER_SCRIPT_SHARE * len(letters):
        return False
    words = [w.lower() for w in _WORD_RE.findall(text)]
    if len(words) < MIN_WORDS:
        return True
    return sum(1 for w in words if len(w) >= 3 and w in STOP_WORDS) >= ENGLISH_SHARE * len(words)
