"""The one settings object. Each field names its environment variable; nothing
else in trajwatch reads ``os.environ``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
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

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        flags: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Defaults, then environment variables, then ``overrides`` (e.g. CLI flags).

        ``flags`` names how the user gave each override (``{"lateness_ms":
        "--lateness-ms"}``), so that an error names what the user actually used: the
        flag, else the environment variable."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = f.metadata["env"]
            if name in environ and environ[name] != "":
                values[f.name] = _convert(name, environ[name], f.default)
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        settings = cls(**values)
        settings.check({k: v for k, v in (flags or {}).items() if k in given})
        return settings

    @classmethod
    def origin(
        cls,
        name: str,
        *,
        flags: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> str:
        """How the user set field ``name``: its flag (from ``flags``), else its environment
        variable if set, else ``"default"``."""
        environ = os.environ if environ is None else environ
        if flags and name in flags:
            return flags[name]
        env = cls.__dataclass_fields__[name].metadata["env"]
        return env if environ.get(env) else "default"

    def check(self, flags: Mapping[str, str] | None = None) -> None:
        """Raise ConfigError for the first value out of range, named as the user gave it:
        its flag from ``flags`` (field name → flag), else its environment variable."""
        for name, allowed, ok in _RULES:
            value = getattr(self, name)
            if not ok(value):
                given = (flags or {}).get(name) or self.__dataclass_fields__[name].metadata["env"]
                raise ConfigError(f"{given} must be {allowed}, got {value}; give a value {allowed}")


_RULES: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    ("lateness_ms", ">= 0", lambda v: v >= 0),
    ("compaction_drop", "in (0, 1)", lambda v: 0 < v < 1),
    ("max_attribute_bytes", ">= 1", lambda v: v >= 1),
    ("compaction_min_tokens", ">= 1", lambda v: v >= 1),
    ("max_traces", ">= 1", lambda v: v >= 1),
    ("max_sessions", ">= 1", lambda v: v >= 1),
    ("commit_every", ">= 1", lambda v: v >= 1),
)
"""Each numeric setting's allowed range, as said to the user and as checked."""


def _convert(env: str, raw: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            return raw.lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError as exc:
        kind = "an integer" if isinstance(default, int) else "a number"
        raise ConfigError(f"{env}={raw!r} is not {kind}; set {env} to {kind} or unset it") from exc
    return raw
