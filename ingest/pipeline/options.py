"""What the pipeline is told: a plain, frozen value object.

The fields name the environment variable each is read from, but nothing in ``ingest``
reads the environment: :class:`trajwatch.settings.Settings` (which extends this class
with what only the composition root needs) does, in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from models.errors import ConfigError


def env(name: str) -> dict[str, Any]:
    """Field metadata naming the environment variable a setting is read from."""
    return {"env": name}


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineOptions:
    session_attribute: str | None = field(default=None, metadata=env("TRAJWATCH_SESSION_ATTRIBUTE"))
    """Span attribute naming the session, read after gen_ai.conversation.id and session.id."""
    lateness_ms: int = field(default=10_000, metadata=env("TRAJWATCH_LATENESS_MS"))
    """How far behind the newest event time a step may arrive and still be put in order."""
    settle_idle_ms: int = field(default=300_000, metadata=env("TRAJWATCH_SETTLE_IDLE_MS"))
    """A session with a late step (placed behind its last) is judged again in event-time
    order when it settles: at its end, at the end of the input, or once its last step is
    this far (event time) behind the newest any partition has seen."""
    max_attribute_bytes: int = field(default=1 << 20, metadata=env("TRAJWATCH_MAX_ATTRIBUTE_BYTES"))
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
    checkpoint_steps: int = field(default=256, metadata=env("TRAJWATCH_CHECKPOINT_STEPS"))
    """A session's analysis (detectors, features) is checkpointed in the store once this
    many of its steps were placed since the last checkpoint (and at its end, and at the end
    of a replay or a service's drain); a session reopened from the store is rolled forward
    through at most this many stored steps. The cursor and session facts are written with
    every commit. 1: a checkpoint at every commit that places a step."""

    silence_first_ms: int = field(default=300_000, metadata=env("TRAJWATCH_SILENCE_FIRST_MS"))
    """A session that has not ended and has been silent this long while its partition's
    event time moved on gets a ``silence`` step (:mod:`ingest.pipeline.silence`); again at
    each doubling of the silence..."""
    silence_last_ms: int = field(default=86_400_000, metadata=env("TRAJWATCH_SILENCE_LAST_MS"))
    """...up to this long (then no more: at most ~log2(last / first) + 1 a silence)."""

    def check(self, flags: Mapping[str, str] | None = None) -> None:
        """Raise ConfigError for the first value out of range, named as the user gave it:
        its flag from ``flags`` (field name → flag), else its environment variable."""
        for name, allowed, ok in self._rules():
            value = getattr(self, name)
            if not ok(value):
                given = (flags or {}).get(name) or self.__dataclass_fields__[name].metadata["env"]
                raise ConfigError(f"{given} must be {allowed}, got {value}; give a value {allowed}")

    def _rules(self) -> tuple[tuple[str, str, Callable[[Any], bool]], ...]:
        """Each numeric setting's allowed range, as said to the user and as checked."""
        return _RULES


_RULES: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    ("lateness_ms", ">= 0", lambda v: v >= 0),
    ("settle_idle_ms", ">= 0", lambda v: v >= 0),
    ("compaction_drop", "in (0, 1)", lambda v: 0 < v < 1),
    ("max_attribute_bytes", ">= 1", lambda v: v >= 1),
    ("compaction_min_tokens", ">= 1", lambda v: v >= 1),
    ("max_traces", ">= 1", lambda v: v >= 1),
    ("max_sessions", ">= 1", lambda v: v >= 1),
    ("checkpoint_steps", ">= 1", lambda v: v >= 1),
    ("silence_first_ms", ">= 0 (0: no silence steps)", lambda v: v >= 0),
    ("silence_last_ms", ">= 1", lambda v: v >= 1),
)
