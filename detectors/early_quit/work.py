"""What a session's steps say about wrapping up and about work left: pure functions.

- a *note* is a prose file (Markdown, text, reStructuredText, Org, AsciiDoc), written by a
  call: a progress, summary or hand-off file whatever its name or language
  (:func:`is_note`); one the task names (:func:`named_in`) is a deliverable, not a wrap-up;
- a *hand-off* is a call to a tool that passes the work on (:func:`hands_off`);
- work left: unchecked task items in a note (``- [ ]``, :func:`open_items`), a check that
  failed (:func:`check_failed`), an edit no check ran after, the agent's own plan.
"""

from __future__ import annotations

import posixpath
import re

from features.calls.tool_view import is_scratch
from models.records import Step

_NOTE_RE = re.compile(r"(?i)\.(md|markdown|mdown|txt|rst|org|adoc|asciidoc)$")
_HANDOFF_RE = re.compile(r"(?i)(^|[_\-.])(hand_?off|hand_?over|handover|transfer_to_\w+)($|[_\-.])")
_OPEN_ITEM_RE = re.compile(r"(?m)^\+?\s*[-*+]\s+\[ \]")
_FAILED_OUTPUT_RE = re.compile(
    r"(?im)\b[1-9]\d* (failed|failing|errors?)\b|^FAILED\b|^FAIL\b|\bexit (status|code) [1-9]"
)


def is_note(path: str) -> bool:
    """A prose file: what progress, summary and hand-off notes are written as.

    >>> [is_note(p) for p in ("PROGRESS.md", "引き継ぎ.md", "notes.txt", "src/app.py")]
    [True, True, True, False]
    """
    return bool(_NOTE_RE.search(path)) and not is_scratch(path)


def is_code_edit(path: str) -> bool:
    """A write a check can verify: not a note, not scratch (temp, logs, ``.git``)."""
    return not is_note(path) and not is_scratch(path)


def named_in(path: str, text: str | None) -> bool:
    """Whether the task's text names the file (its base name, case ignored): a note the
    task asks for is the work itself.

    >>> named_in("/w/SUMMARY.md", "Fix it and write a short SUMMARY.md of the change")
    True
    >>> named_in("/w/PROGRESS.md", "Implement partial captures")
    False
    """
    if not text:
        return False
    name = posixpath.basename(path.rstrip("/")).lower()
    return bool(name) and name in text.lower()


def hands_off(tool: str | None) -> bool:
    """A tool that passes the work to another worker or session.

    >>> [hands_off(t) for t in ("orchestrator__handoff", "transfer_to_agent", "Read")]
    [True, True, False]
    """
    return bool(tool) and bool(_HANDOFF_RE.search(tool or ""))


def open_items(text: str | None) -> int:
    """Unchecked Markdown task items (``- [ ] …``) in a note's text.

    >>> open_items("## Done\\n- [x] a\\n## Remaining\\n- [ ] b\\n- [ ] c")
    2
    """
    return len(_OPEN_ITEM_RE.findall(text[:65536])) if text else 0


def check_failed(result: Step) -> bool:
    """Whether a check's result reports failure (an error status, or failures in its
    output although the call itself succeeded)."""
    if result.status == "error":
        return True
    return bool(result.result and _FAILED_OUTPUT_RE.search(result.result[:4000]))
