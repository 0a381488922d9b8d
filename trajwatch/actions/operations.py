"""The operations on the outbox that the command line and the explorer share: one
function each, so a button and a command do the same thing."""

from __future__ import annotations

from collections.abc import Sequence

from models.errors import ConfigError
from models.store import Store


def redeliver(store: Store, ids: Sequence[str], *, dead: bool = False) -> int:
    """``trajwatch deliveries redeliver`` (and the explorer's button): the deliveries
    ``ids``, or with ``dead`` every dead one, due again under the same webhook-id; returns
    how many. Raises ConfigError for an unknown id, or one the policy never fired (shadow,
    suppressed)."""
    outbox = store.outbox()
    if dead == bool(ids):
        raise ConfigError("give delivery ids to resend, or --dead for every dead delivery")
    for delivery_id in ids:
        found = outbox.get(delivery_id)
        if found is None:
            raise ConfigError(
                f"there is no delivery {delivery_id!r}; see `trajwatch deliveries list`"
            )
        if found.status in ("shadow", "suppressed"):
            raise ConfigError(
                f"delivery {delivery_id} was {found.status} by the policy and never fired; "
                "it cannot be resent"
            )
    return outbox.redeliver(list(ids), dead=dead)


def enable(store: Store, endpoint: str) -> int:
    """``trajwatch deliveries enable`` (and the explorer's button): re-enable an endpoint a
    410 disabled; its held deliveries are due again. Returns how many."""
    return store.outbox().enable_endpoint(endpoint)
