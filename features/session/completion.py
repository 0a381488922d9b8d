"""Whether an agent claims to be done: from the runtime's record, a final-answer tool or
its last message — never from a span's status.

An OTel span's status OK says no exception was raised; a conversation of many turns has
an agent span per turn whose end is the end of that turn, not of the session. So an END
step claims completion only when

- the runtime records it: ``detail["claimed_done"]`` true (a ``session_end`` event); a
  recorded false is no claim whatever else the turn said;
- the agent called a final-answer tool in that turn (:func:`final_answer_tool`: the
  tool whose call *is* the answer in the runtimes that have one); or
- the agent's last message before the end says so (:func:`claims_done`).

Contract: pure functions of their arguments, bounded (a message is read up to
:data:`CLAIM_CHARS` characters), no I/O.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["CLAIM_CHARS", "claims_done", "final_answer_tool"]

CLAIM_CHARS = 2_000
"""Characters of a last message read for a claim: summaries put the verdict up front or
at the end, so the first and the last ``CLAIM_CHARS // 2`` are read."""

# The tools whose call ends the run with an answer: smolagents' ``final_answer``, Cline's
# ``attempt_completion``, SWE-agent's ``submit``, OpenHands' ``finish``, and the common
# spellings of the same idea in custom agents.
_FINAL_TOOL_RE = re.compile(
    r"(?i)^(?:final_answer|attempt_completion|submit(?:_answer|_solution|_result)?|finish"
    r"|task_complete|complete_task|mark_(?:task_)?(?:done|complete)|done)$"
)

# A message that says the work is done: fixed, resolved, implemented, passing, complete.
_DONE_RE = re.compile(
    r"(?i)\b(?:"
    r"(?:all|the)\s+(?:\w+\s+){0,2}tests?\s+(?:now\s+)?pass(?:es|ing)?"
    r"|tests?\s+(?:are\s+|is\s+)?(?:now\s+)?(?:all\s+)?(?:pass|passing|green)"
    r"|(?:is|are|has\s+been|have\s+been)\s+(?:now\s+)?(?:fixed|resolved|implemented|complete[d]?|done)"
    r"|i(?:'ve|\s+have)\s+(?:now\s+)?(?:fixed|resolved|implemented|completed|finished)"
    r"|(?:task|work|fix|implementation|change)s?\s+(?:is\s+|are\s+)?(?:now\s+)?(?:complete[d]?|done|finished)"
    r"|successfully\s+(?:fixed|implemented|completed|resolved|updated|added)"
    r")\b"
)
# ... unless it reports what is still wrong or hands the decision back: then the turn
# ends on a status report or a question, which claims nothing.
_NOT_DONE_RE = re.compile(
    r"(?i)\b(?:still\s+(?:fail|broken|error|not)|not\s+(?:yet\s+)?(?:pass|work|fixed|resolved|done)"
    r"|(?:is|are)\s+(?:still\s+)?failing|fails?\b|failed\b|unable\s+to|could\s*(?:n't|\s+not)"
    r"|can(?:'t|not)\s|would\s+you\s+like|shall\s+i|should\s+i|do\s+you\s+want|next\s+step)"
)


@lru_cache(maxsize=256)
def final_answer_tool(tool: str | None) -> bool:
    """A tool whose call is the agent's final answer.

    >>> final_answer_tool("final_answer"), final_answer_tool("attempt_completion")
    (True, True)
    >>> final_answer_tool("submit_form"), final_answer_tool("bash")
    (False, False)
    """
    return bool(tool and _FINAL_TOOL_RE.match(tool.strip()))


def claims_done(text: str | None) -> bool:
    """Whether a last message claims the work is done, and reports nothing still wrong
    nor asks what to do next.

    >>> claims_done("The bug is fixed and all tests now pass.")
    True
    >>> claims_done("I fixed the parser, but test_dates still fails. Should I look at tz?")
    False
    >>> claims_done("Here is what I found in the logs."), claims_done(None)
    (False, False)
    """
    if not text:
        return False
    half = CLAIM_CHARS // 2
    read = text if len(text) <= CLAIM_CHARS else f"{text[:half]}\n{text[-half:]}"
    return _DONE_RE.search(read) is not None and _NOT_DONE_RE.search(read) is None
