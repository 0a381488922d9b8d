"""What the pipeline is told: a plain, frozen value object.

The fields name the environment variable each is read from, but nothing in ``ingest``
reads the environment: :class:`trajwatch.settings.Settings` (which extends this class
with what only the composition root needs) does, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingest.errors import ConfigError


def env(name: str) -> dict[str, Any]:
    """Field metadata naming the environment variable a setting is read from."""
    return {"env": name}


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineOptions:
    session_attribute: str | None = field(
        default=None, metadata=env("TRAJWATCH_SESSION_ATTRIBUTE")
    )
    """Span attribute naming the session, read after gen_ai.conversation.id and session.id."""
    lateness_ms: int = field(default=10_000, metadata=env("TRAJWATCH_LATENESS_MS"))
    """How far behind the newest event time a step may arrive and still be put in order."""
    max_attribute_bytes: int = field(
        default=1 << 20, metadata=env("TRAJWATCH_MAX_ATTRIBUTE_BYTES")
    )
    """A span with a larger attribute value is dead-lettered."""
    compaction_drop: float = field(default=0.5, metadata=env("TRAJWATCH_COMPACTION_DROP"))
    """Inferred compaction: the input tokens fall by at least this fraction..."""
    compaction_min_tokens: int = field(
        default=32_000, metadata=env("TRAJWATCH_COMPACTION_MIN_TOKENS")
    )
    """...from a previous model call of at least this many input tokens."""
    max_traces: int = field(default=10_000, metadata=env("TRAJWATCH_MAX_TRACES"))
    """Traces whose span tree and session are remembered for resolving late children."""
    max_sessions: int = field(default=10_000, metadata=env("TRAJWATCH_MAX_SESSIONS"))
    """Sessions kept in memory; older ones are reloaded from the store when they return."""

    def check(self) -> None:
        """Raise ConfigError naming the first value out of range."""
        if self.lateness_ms < 0:
            raise ConfigError(f"TRAJWATCH_LATENESS_MS must be >= 0, got {self.lateness_ms}")
        if not 0 < self.compaction_drop < 1:
            raise ConfigError(
                f"TRAJWATCH_COMPACTION_DROP must be in (0, 1), got {self.compaction_drop}"
            )
        for name in ("max_attribute_bytes", "compaction_min_tokens", "max_traces", "max_sessions"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
