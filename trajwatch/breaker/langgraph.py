"""Cancel a LangGraph run on trajwatch's kill and rollback webhooks
(``trajwatch breaker --langgraph-url URL``; needs ``pip install 'trajwatch[langgraph]'``).

:class:`LangGraphCanceller` is an effect of the breaker
(:func:`trajwatch.breaker.server.create_app`):
the breaker verifies the webhook and applies each ``webhook-id`` once, then the canceller
calls the LangGraph API server's ``runs.cancel`` — ``action="interrupt"`` on a
``trajwatch.kill`` (the run stops, its checkpoints so far are kept, the thread can be
resumed), ``action="rollback"`` on a ``trajwatch.rollback`` (LangGraph deletes the run and
the checkpoints it wrote: the thread is as it was before the run). A notify does nothing.

**Which thread.** The alert's session *is* the LangGraph thread: LangGraph copies
``configurable.thread_id`` into every run's metadata, LangSmith's OTel export writes it
as ``langsmith.metadata.thread_id`` and OpenLLMetry as
``traceloop.association.properties.thread_id``; trajwatch reads both as the session
(``ingest.semconv.spans.SESSION_ATTRIBUTES``).

**Which run.** An alert names a session, not a run, so every active run of the thread is
cancelled: ``runs.list(thread, status=...)``, the pending ones first (else cancelling the
running one would start the next queued run), then the running one.

**Waiting.** Each cancel waits for the run to end (``wait=True``): LangGraph then
subscribes to the run before cancelling it, so its worker stops the run and only then
deletes it with its checkpoints. Without the wait the in-memory runtime (0.36) deletes a
running run nobody streams at once, and a superstep still in flight checkpoints after
the delete: the thread keeps part of the rolled-back run (seen in
``tests/integration/breaker/test_langgraph_breaker.py``), and stays "busy".

**Failures.** A thread LangGraph does not know (404, or 422 for a session id that is not a
thread id) or a run that ended meanwhile is an outcome, answered 200 and recorded: a
retry would find the same. Anything else (server down — after the SDK's own ~8 s of
connection retries —, 5xx, timeout) raises, the breaker answers 503 and does not record
the effect, so the dispatcher's retry, under the same ``webhook-id``, cancels then.
"""

from __future__ import annotations

from typing import Any, Literal

from models.errors import ConfigError

CANCEL_ACTIONS: dict[str, Literal["interrupt", "rollback"]] = {
    "trajwatch.kill": "interrupt",
    "trajwatch.rollback": "rollback",
}
"""The webhook type → LangGraph's ``runs.cancel`` action."""
ACTIVE: tuple[Literal["pending", "running"], ...] = ("pending", "running")  # pending first
PERMANENT = (404, 409, 422)
"""LangGraph's answers that a retry would get again: no such thread or run, run ended."""


class LangGraphCanceller:
    """``runs.cancel`` on the LangGraph API server at ``url`` for each kill or rollback.

    The API key, when the server needs one, is the SDK's own: ``LANGGRAPH_API_KEY`` or
    ``LANGSMITH_API_KEY`` in the environment."""

    name = "langgraph"

    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        try:
            from langgraph_sdk import get_sync_client
        except ImportError:
            raise ConfigError(
                "--langgraph-url needs the LangGraph SDK: pip install 'trajwatch[langgraph]'"
            ) from None
        self.url = url
        self.timeout_s = timeout_s
        self._client = get_sync_client(url=url, timeout=timeout_s)

    def __call__(self, payload: dict[str, Any]) -> str | None:
        """Cancel the session's active runs as the webhook says; what was done, or None
        for a webhook that asks for nothing (a notify)."""
        action = CANCEL_ACTIONS.get(str(payload.get("type")))
        if action is None:
            return None
        thread = (payload.get("data") or {}).get("session_id")
        if not thread:
            return "langgraph: the webhook names no session"
        thread = str(thread)
        runs = self._client.runs
        active: list[str] = []
        try:
            for status in ACTIVE:
                active += [str(r["run_id"]) for r in runs.list(thread, status=status, limit=100)]
        except Exception as exc:
            if _status(exc) in PERMANENT:
                return f"langgraph: no thread {thread} ({_status(exc)})"
            raise
        if not active:
            return f"langgraph: no active run on thread {thread}"
        done, ended = [], []
        for run_id in active:
            try:
                runs.cancel(thread, run_id, action=action, wait=True)
                done.append(run_id)
            except Exception as exc:
                if _status(exc) not in PERMANENT:
                    raise
                ended.append(run_id)  # it ended between the listing and the cancel
        outcome = f"langgraph: {action} run {', '.join(done) or '-'} on thread {thread}"
        return outcome + (f" (ended before: {', '.join(ended)})" if ended else "")

    def close(self) -> None:
        self._client.close()


def _status(exc: BaseException) -> int | None:
    """The HTTP status of the SDK's error (an ``httpx.HTTPStatusError``), if it has one."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None
