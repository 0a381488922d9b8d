"""Where actions go and how hard the dispatcher tries: endpoints, retries, the SSRF guard.

An :class:`Endpoint` is a name (what the outbox rows and ``trajwatch deliveries`` show),
a URL and its signing secrets. :func:`refusal` is the SSRF guard: a destination whose
host resolves to a private, loopback, link-local (cloud metadata), multicast, reserved or
unspecified address is refused unless private destinations are allowed
(``TRAJWATCH_WEBHOOK_ALLOW_PRIVATE=1`` or ``[actions] allow_private = true``). The guard
runs before every attempt, so a name that starts resolving inward is caught then.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from standardwebhooks import Webhook

from trajwatch.actions.policy import ActionPolicy


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
    explorer_url: str | None = None


def refusal(url: str, *, allow_private: bool) -> str | None:
    """Why the dispatcher must not send to ``url`` (None: it may).

    >>> refusal("ftp://example.com/x", allow_private=True)
    'only http and https destinations are sent to, not ftp'
    >>> refusal("http://127.0.0.1:9/hook", allow_private=False).split(";")[0]
    'destination 127.0.0.1 is loopback (127.0.0.1)'
    >>> refusal("http://10.0.0.7/hook", allow_private=False).split(";")[0]
    'destination 10.0.0.7 is private (10.0.0.7)'
    >>> refusal("http://169.254.169.254/latest", allow_private=True) is None
    True
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"only http and https destinations are sent to, not {parts.scheme or 'none'}"
    host = parts.hostname
    if not host:
        return "the destination URL names no host"
    if allow_private:
        return None
    try:
        infos = socket.getaddrinfo(host, parts.port or 443, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        return f"destination {host} does not resolve ({exc.strerror or exc})"
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        kind = _inward(address)
        if kind:
            return (
                f"destination {host} is {kind} ({address}); allow private destinations with "
                "TRAJWATCH_WEBHOOK_ALLOW_PRIVATE=1 or [actions] allow_private = true"
            )
    return None


def _inward(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _inward(address.ipv4_mapped)
    for kind, test in (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("unspecified", address.is_unspecified),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if test:
            return kind
    return None
