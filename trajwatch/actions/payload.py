"""The webhook body of one decided action: Standard Webhooks' ``{"type", "timestamp",
"data"}`` envelope, compact JSON, at most :data:`MAX_BYTES`.

``type`` is ``trajwatch.kill``, ``trajwatch.rollback``, ``trajwatch.resume`` or
``trajwatch.alert`` (notify); ``timestamp`` the alert's event time (ISO 8601, UTC), so the
body — built once, when the outbox row is written — is the same bytes on every attempt and
every replay. ``data`` carries what a breaker needs to act and a person needs to check: the
alert, the session and agent, the evidence step references, the checkpoint to roll back to
or resume from, for a resume where the session works and the commit to resume at
(``workspace``), and a link into the explorer. Every text in it comes from the stored
(redacted) alert.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import quote

from models.records import Action
from trajwatch.actions.policy import Decision, Workspace

MAX_BYTES = 20_000
"""Bodies stay under this; evidence, then the reason, are cut to fit."""

TYPES = {
    Action.KILL: "trajwatch.kill",
    Action.ROLLBACK: "trajwatch.rollback",
    Action.RESUME: "trajwatch.resume",
}
"""Event type per action; notify is ``trajwatch.alert``."""


def event_type(action: Action) -> str:
    return TYPES.get(action, "trajwatch.alert")


def explorer_link(base: str | None, session_id: str, alert_id: str) -> str | None:
    """The explorer's page of the alert (None without a configured base URL)."""
    if not base:
        return None
    return f"{base.rstrip('/')}/?session={quote(session_id, safe='')}&alert={quote(alert_id)}"


def body(decision: Decision, *, explorer_url: str | None = None) -> str:
    """The JSON body for ``decision`` (which must have an action), under MAX_BYTES."""
    assert decision.action is not None
    alert = decision.alert
    checkpoint = decision.checkpoint
    data: dict[str, Any] = {
        "alert_id": alert.alert_id,
        "action": str(decision.action),
        "session_id": alert.session_id,
        "agent": decision.agent,
        "detector": alert.detector,
        "severity": str(alert.severity),
        "score": alert.score,
        "reason": alert.reason,
        "decision": decision.why,
        "onset_step": alert.onset_seq,
        "onset_step_id": alert.onset_step_id,
        "raised_at_step": alert.raised_seq,
        "evidence": [dict(e) for e in alert.evidence],
        "checkpoint": None
        if checkpoint is None
        else {
            "checkpoint_id": checkpoint.checkpoint_id,
            "commit": checkpoint.commit,
            "step": checkpoint.seq,
        },
        "link": explorer_link(explorer_url, alert.session_id, alert.alert_id),
    }
    if decision.action == Action.RESUME:
        where = decision.workspace or Workspace()
        data["workspace"] = {
            "host": where.host,
            "directory": where.directory,
            "repository": where.repository,
            "branch": where.branch,
            "commit": decision.commit,
        }
    envelope = {
        "type": event_type(decision.action),
        "timestamp": _iso(alert.ts),
        "data": data,
    }
    text = _dumps(envelope)
    while len(text.encode()) >= MAX_BYTES and data["evidence"]:
        data["evidence"] = data["evidence"][: len(data["evidence"]) // 2]
        data["evidence_truncated"] = True
        text = _dumps(envelope)
    if len(text.encode()) >= MAX_BYTES:
        over = len(text.encode()) - MAX_BYTES + 64
        data["reason"] = data["reason"].encode()[: max(0, len(data["reason"].encode()) - over)]
        data["reason"] = data["reason"].decode(errors="ignore") + "…"
        data["decision"] = data["decision"][:200]
        text = _dumps(envelope)
    return text


def _iso(ts_ns: int) -> str:
    moment = dt.datetime.fromtimestamp(ts_ns / 1e9, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
