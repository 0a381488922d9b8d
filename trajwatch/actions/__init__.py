"""Actions: what trajwatch does about an alert — a signed webhook to a circuit breaker.

- :mod:`~trajwatch.actions.policy`: which alerts lead to notify / kill / rollback, shadow
  mode and the per-session cooldown (pure decisions, no I/O);
- :mod:`~trajwatch.actions.sink`: the transactional outbox, written with the alerts;
- :mod:`~trajwatch.actions.dispatcher`: sends it (Standard Webhooks, retries, 410, SSRF);
- :mod:`~trajwatch.actions.backtest`: a candidate policy over the stored history.

:func:`start` wires a sink and its dispatcher for a process that runs the pipeline
(``serve``, ``worker``, ``replay --deliver``).
"""

from __future__ import annotations

from trajwatch.actions.dispatcher import Dispatcher
from trajwatch.actions.endpoints import ActionsConfig
from trajwatch.actions.sink import ActionSink

__all__ = ["ActionSink", "ActionsConfig", "Dispatcher", "start"]


def start(
    db_url: str, config: ActionsConfig, **dispatcher_options: object
) -> tuple[ActionSink, Dispatcher]:
    """A running dispatcher on the store at ``db_url`` and the sink that wakes it; give
    the sink to the :class:`~ingest.pipeline.engine.Pipeline`, stop the dispatcher at shutdown."""
    dispatcher = Dispatcher(db_url, config, **dispatcher_options).start()  # type: ignore[arg-type]
    return ActionSink(config, dispatcher), dispatcher
