"""The pipeline's output seam: what else happens to a commit besides the store's tables.

A :class:`Sink` sees every commit twice: inside the store transaction
(:meth:`Sink.in_transaction`, to write rows that must be durable together with the
alerts, such as the actions' outbox), and once the transaction is durable
(:meth:`Sink.after_commit`, to wake a dispatcher, print, or count). Sinks are given to
the :class:`~ingest.pipeline.engine.Pipeline` by the composition root; the pipeline knows
nothing of what they do. A sink that raises in ``in_transaction`` rolls the whole
commit back (nothing of it is stored, the input is redelivered); ``after_commit`` is
told only of what is already stored, so a failure there loses nothing durable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.records import Alert, DeadLetter, Step
from models.store import StoreUnit


@dataclass(frozen=True, slots=True)
class Committed:
    """What one commit stored: its new steps, the alerts new to the store (an alert
    raised again on redelivered input is not among them) and its dead letters."""

    steps: Sequence[Step]
    alerts: Sequence[Alert]
    dead_letters: Sequence[DeadLetter]


class Sink:
    """A receiver of the pipeline's output; both hooks do nothing unless overridden."""

    def in_transaction(self, unit: StoreUnit, committed: Committed) -> None:
        """Write what must be durable together with ``committed``, through ``unit``."""

    def after_commit(self, committed: Committed) -> None:
        """``committed`` is durable."""
