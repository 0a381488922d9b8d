"""Where actions go and how hard the dispatcher tries: endpoints, retries, the guard's
settings.

An :class:`Endpoint` is a name (what the outbox rows and ``trajwatch deliveries`` show),
a URL and its signing secrets. Where a URL may lead is the SSRF guard's to say
(:mod:`trajwatch.actions.ssrf`): ``allow_private`` (``TRAJWATCH_WEBHOOK_ALLOW_PRIVATE=1``
or ``[actions] allow_private = true``) lets webhooks reach loopback and private networks,
never cloud metadata; ``allow_addresses`` names exact addresses allowed whatever their
class. The guard runs before every attempt, so a name that starts resolving inward is
caught then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from standardwebhooks import Webhook

from trajwatch.actions.policy import ActionPolicy
from trajwatch.actions.ssrf import IPAddress


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    url: str
    signers: Sequence[Webhook] = field(repr=False, default=())


MAX_RETRY_AFTER_S = 6 * 3600.0
"""The longest ``Retry-After`` honoured: a receiver asking for days still gets a retry."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Exponential backoff with jitter: attempt ``n`` (1-based) that failed waits
    ``backoff_s * 2**(n-1)`` (at most ``max_backoff_s``) times a random factor in
    [0.5, 1], or the receiver's ``Retry-After`` when that is longer (up to
    :data:`MAX_RETRY_AFTER_S`); after
    ``max_attempts`` attempts the delivery is dead."""

    max_attempts: int = 12
    backoff_s: float = 2.0
    max_backoff_s: float = 3600.0
    timeout_s: float = 15.0
    lease_s: float = 60.0
    """A claimed delivery is due again after this long if its dispatcher died mid-send;
    must exceed ``timeout_s``."""

    def delay_s(self, attempt: int, jitter: float, retry_after_s: float | None = None) -> float:
        """The wait after failed attempt ``attempt``; ``jitter`` in [0, 1).

        >>> RetryPolicy(backoff_s=1.0).delay_s(3, 0.0)
        2.0
        >>> RetryPolicy(backoff_s=1.0).delay_s(1, 0.0, retry_after_s=30)
        30.0
        """
        backoff = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        wait = backoff * (0.5 + 0.5 * jitter)
        if retry_after_s is not None:
            wait = max(wait, min(retry_after_s, MAX_RETRY_AFTER_S))
        return float(wait)


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionsConfig:
    """Everything the actions need, from the config file and the settings."""

    policy: ActionPolicy = field(default_factory=ActionPolicy)
    endpoints: Mapping[str, Endpoint] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    allow_private: bool = False
    allow_addresses: frozenset[IPAddress] = field(default_factory=frozenset)
    explorer_url: str | None = None
