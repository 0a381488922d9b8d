"""The run a session continues: a resumed or forked run that runs as a new session.

A worker that died mid-call is resumed by starting the work again (``stalled_run``
recommends it: the ``resume`` action); a runtime may fork a conversation into a new
session. Either way the new session re-issues what the old one had done unless told: a
completed side effect executed twice (``duplicate_side_effect``). The new session names
the old one as its *predecessor*, and a start step's ``detail`` carries it under
:data:`PREDECESSOR`, whatever the input (docs/inputs.md, "The run a session continues"):

- session events: ``session_start.predecessor_session_id``;
- OTLP: the agent span's (or its resource's) ``trajwatch.predecessor.session_id``, what an
  orchestrator echoes of a ``trajwatch.resume`` webhook's ``data.session_id``;
- Codex rollouts: ``session_meta.forked_from_id`` (not a sub-agent's: that is its parent);
- Claude Code transcripts: a line's ``forkedFrom.sessionId`` (``--fork-session``, and a
  ``--resume`` that opens a new file).

Pure: no I/O, no wall clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from models.records import SessionInfo

__all__ = ["PREDECESSOR", "predecessor_of", "with_predecessor"]

PREDECESSOR = "predecessor"
"""The start ``detail`` key naming the session this one continues."""


def predecessor_of(detail: Mapping[str, Any], session_id: str) -> str | None:
    """The session ``detail`` names as the one ``session_id`` continues: non-empty text
    other than ``session_id`` itself (a run resumed under its own id is no new session),
    else None.

    >>> predecessor_of({"predecessor": " run-7 "}, "run-8")
    'run-7'
    >>> predecessor_of({"predecessor": "run-8"}, "run-8") is None
    True
    """
    value = detail.get(PREDECESSOR)
    if not isinstance(value, str) or not value.strip() or value.strip() == session_id:
        return None
    return value.strip()


def with_predecessor(info: SessionInfo, detail: Mapping[str, Any]) -> SessionInfo:
    """``info`` after a start step with ``detail``: the first predecessor named stays.

    >>> with_predecessor(SessionInfo(session_id="b"), {"predecessor": "a"}).predecessor
    'a'
    """
    if info.predecessor is not None:
        return info
    found = predecessor_of(detail, info.session_id)
    return info if found is None else dataclasses.replace(info, predecessor=found)
