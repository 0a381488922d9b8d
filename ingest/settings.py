"""The one settings object. Each field names its environment variable; nothing
else in trajwatch reads ``os.environ``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ingest.errors import ConfigError

DEFAULT_DB_URL = "sqlite:///trajwatch.db"


def _env(name: str) -> dict[str, Any]:
    return {"env": name}


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    db_url: str = field(default=DEFAULT_DB_URL, metadata=_env("TRAJWATCH_DB_URL"))
    """SQLAlchemy URL of the store: a SQLite file by default, ``postgresql+psycopg://...``
    in production."""
    session_attribute: str | None = field(
        default=None, metadata=_env("TRAJWATCH_SESSION_ATTRIBUTE")
    )
    """Span attribute naming the session, read after gen_ai.conversation.id and session.id."""
    lateness_ms: int = field(default=10_000, metadata=_env("TRAJWATCH_LATENESS_MS"))
    """How far behind the newest event time a step may arrive and still be put in order."""
    max_attribute_bytes: int = field(
        default=1 << 20, metadata=_env("TRAJWATCH_MAX_ATTRIBUTE_BYTES")
    )
    """A span with a larger attribute value is dead-lettered."""
    compaction_drop: float = field(default=0.5, metadata=_env("TRAJWATCH_COMPACTION_DROP"))
    """Inferred compaction: the input tokens fall by at least this fraction..."""
    compaction_min_tokens: int = field(
        default=32_000, metadata=_env("TRAJWATCH_COMPACTION_MIN_TOKENS")
    )
    """...from a previous model call of at least this many input tokens."""
    max_traces: int = field(default=10_000, metadata=_env("TRAJWATCH_MAX_TRACES"))
    """Traces whose span tree and session are remembered for resolving late children."""
    max_sessions: int = field(default=10_000, metadata=_env("TRAJWATCH_MAX_SESSIONS"))
    """Sessions kept in memory; older ones are reloaded from the store when they return."""
    config_path: str | None = field(default=None, metadata=_env("TRAJWATCH_CONFIG"))
    """The TOML config (detector parameters, policies); ``trajwatch.toml`` in the working
    folder when unset and present."""
    commit_every: int = field(default=5_000, metadata=_env("TRAJWATCH_COMMIT_EVERY"))
    """Replay writes to the store after this many input records."""
    inbound_dir: str = field(default="trajwatch-inbound", metadata=_env("TRAJWATCH_INBOUND_DIR"))
    """``serve``'s write-ahead log of accepted requests, replayed at restart."""
    idle_flush_ms: int = field(default=30_000, metadata=_env("TRAJWATCH_IDLE_FLUSH_MS"))
    """``serve``: a trace (or session log) that receives nothing for this long (wall clock)
    is ended, as a recording's end ends it in a replay: longer than an exporter's batch
    delay, so a run's root span arriving last still finds its trace open."""
    max_body_bytes: int = field(default=16 << 20, metadata=_env("TRAJWATCH_MAX_BODY_BYTES"))
    """``serve``: the largest request body, counted after decompression (413 beyond)."""
    queue_size: int = field(default=64, metadata=_env("TRAJWATCH_QUEUE_SIZE"))
    """``serve``: accepted requests waiting for the pipeline; a full queue answers 503."""
    auth_token: str | None = field(default=None, metadata=_env("TRAJWATCH_AUTH_TOKEN"))
    """``serve``: when set, requests must carry ``Authorization: Bearer <token>``."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then environment variables, then ``overrides`` (e.g. CLI flags)."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = f.metadata["env"]
            if name in environ and environ[name] != "":
                values[f.name] = _convert(f.name, environ[name], f.default)
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        if self.lateness_ms < 0:
            raise ConfigError(f"TRAJWATCH_LATENESS_MS must be >= 0, got {self.lateness_ms}")
        if not 0 < self.compaction_drop < 1:
            raise ConfigError(
                f"TRAJWATCH_COMPACTION_DROP must be in (0, 1), got {self.compaction_drop}"
            )
        for name in (
            "max_attribute_bytes",
            "compaction_min_tokens",
            "max_traces",
            "max_sessions",
            "commit_every",
            "idle_flush_ms",
            "max_body_bytes",
            "queue_size",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")


def _convert(name: str, raw: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            return raw.lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError as exc:
        raise ConfigError(
            f"setting {name}: cannot read {raw!r} as {type(default).__name__}"
        ) from exc
    return raw
