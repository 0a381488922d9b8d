"""Whether a user turn asks for something: the task of a session is its first substantive
request plus what later turns add; "continue", "go on", "yes", "ok, do it" never become it.

A turn is *substantive* when it holds at least one content word: a run of letters of 3
or more (or, in a script written without spaces, CJK/kana/hangul, a run of 2 or more)
that is neither an acknowledgement nor a function word, or a reference (a path, a URL,
an issue number, a figure). The word lists are small and closed (acknowledgements and
the glue around them, in the languages an agent's users most often type); what decides
is the structure: a turn made only of them (and punctuation) asks for nothing new.
Only the first :data:`MAX_CHARS` characters are read: a long turn is substantive anyway.

>>> [substantive(t) for t in ("continue", "Go on.", "yes please", "OK, do it!", "weiter")]
[False, False, False, False, False]
>>> [substantive(t) for t in ("続けて", "продолжай", "Continue with the migration", "Fix #42")]
[False, False, True, True]
>>> substantive("Book a table for two at Nopa")
True
"""

from __future__ import annotations

import re
import unicodedata

MAX_CHARS = 2_000

ACKNOWLEDGEMENTS = frozenset(
    """
    continue continuing proceed carry keep going ahead resume next more again
    yes yeah yep yup sure okay ok fine good great thanks thank cool right correct
    approve approved approval accept accepted agree lgtm confirm confirmed sounds
    please pls go do it that this same done
    weiter fortfahren mach weitermachen bitte danke gut genau
    continua continuar continuer vas allez oui bien merci adelante dale vale claro
    gracias prosegui procedi avanti grazie certo
    продолжай продолжить продолжайте дальше давай хорошо спасибо
    继续 继续吧 好的 好 是的 可以 谢谢 続けて 続き はい お願いします 계속 네 좋아요
    """.split()  # noqa: SIM905 - a word list reads as words
)
"""Words that only say "go on" or "yes", in English and the languages most often typed
to agents (a closed list: what a turn made only of these asks is what was asked before)."""
FUNCTION_WORDS = frozenset(
    """
    the and but you for with all now then just can let lets let's get same way
    und das die der mit und est les avec por que con los las per con che
    """.split()  # noqa: SIM905
)
"""Glue of 3+ letters an acknowledgement is typed with ("go ahead with it", "let's go")."""

_WORD_RE = re.compile(r"[^\W\d_]+", re.UNICODE)
_DENSE_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
"""Kana, CJK ideographs and hangul: scripts a request is written in without spaces."""
_REFERENCE_RE = re.compile(r"(?:https?://|www\.|/[\w.-]+/|#\d+|\b\d{2,}\b|\w\.\w{1,6}\b)")


def _fold(text: str) -> str:
    """``text`` lowercased with its accents dropped ("continúa" is "continua"); kana and
    hangul recomposed."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", kept)


def substantive(text: str | None) -> bool:
    """Whether ``text`` (a user turn) asks for something (the module's rule)."""
    if not text:
        return False
    head = text[:MAX_CHARS]
    if _REFERENCE_RE.search(head):
        return True
    for word in _WORD_RE.findall(_fold(head)):
        short = 2 if _DENSE_RE.search(word) else 3
        if len(word) >= short and word not in _CLOSED:
            return True
    return False


_CLOSED = frozenset(_fold(word) for word in ACKNOWLEDGEMENTS | FUNCTION_WORDS)
"""Both closed lists, folded as the turn's words are."""
