"""The dispatcher's Prometheus metrics: what was delivered and what was not.

A kill nobody received looks, from the pipeline's side, exactly like a kill delivered:
these counters are how an alerting rule tells them apart, e.g.
``increase(trajwatch_deliveries_failed_total{action=~"kill|rollback"}[5m]) > 0``.
``serve`` registers them in the registry its ``/metrics`` serves; a dispatcher on its own
(``trajwatch dispatch``, tests) keeps a registry of its own.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

FAILURES = ("refused", "dead", "disabled", "unconfigured")
"""Why a delivery failed for good: the SSRF guard refused its destination, every attempt
failed, its endpoint answered 410 and is disabled (held), or its endpoint is no longer
configured."""


class DeliveryMetrics:
    """Counters of deliveries that reached an outcome, by endpoint and action."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.delivered = Counter(
            "trajwatch_deliveries_delivered",
            "Webhook deliveries a receiver accepted (2xx)",
            ["endpoint", "action"],
            registry=self.registry,
        )
        self.failed = Counter(
            "trajwatch_deliveries_failed",
            "Webhook deliveries that will not be sent without an operator "
            f"(reason: {', '.join(FAILURES)})",
            ["endpoint", "action", "reason"],
            registry=self.registry,
        )
        self.retried = Counter(
            "trajwatch_delivery_attempts_failed",
            "Failed webhook attempts that will be retried",
            ["endpoint", "action"],
            registry=self.registry,
        )
