"""The one settings object. Each field names its environment variable; nothing
else in trajwatch reads ``os.environ``.

:class:`Settings` is the pipeline's :class:`~ingest.pipeline.options.PipelineOptions` plus what
only the composition root uses (the store, the config file, replay's commit size).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ingest.pipeline.options import PipelineOptions, env
from models.errors import ConfigError
from trajwatch.check_failure import DECISIONS, READ_ONLY_TOOLS
from trajwatch.service.cpu_placement import AUTO, check_choice

DEFAULT_DB_URL = "sqlite:///trajwatch.db"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings(PipelineOptions):
    db_url: str = field(default=DEFAULT_DB_URL, metadata=env("TRAJWATCH_DB_URL"))
    """SQLAlchemy URL of the store: a SQLite file by default, ``postgresql+psycopg://...``
    in production."""
    config_path: str | None = field(default=None, metadata=env("TRAJWATCH_CONFIG"))
    """The TOML config (detector parameters, policies); ``trajwatch.toml`` in the working
    folder when unset and present."""
    commit_every: int = field(default=5_000, metadata=env("TRAJWATCH_COMMIT_EVERY"))
    """Replay writes to the store after this many input records; a saturated ``serve``
    after at most this many spans and log records."""
    commit_wait_ms: int = field(default=200, metadata=env("TRAJWATCH_COMMIT_WAIT_MS"))
    """``serve``: how long a saturated pipeline may hold fed input before committing it
    (and raising its alerts). With time to spare it commits every cycle, so this wait is
    spent only under sustained full load, where one commit for many requests costs less
    per span than one per request; ``0`` commits every cycle always."""
    inbound_dir: str = field(default="trajwatch-inbound", metadata=env("TRAJWATCH_INBOUND_DIR"))
    """``serve``'s write-ahead log of accepted requests, replayed at restart: a folder of
    its own (made 0700; its files 0600), emptied as soon as its records are committed."""
    inbound_key: str | None = field(default=None, repr=False, metadata=env("TRAJWATCH_INBOUND_KEY"))
    """The secret (16+ characters) that seals the write-ahead log (AES-256-GCM); unset, a
    key file in the log's folder, rotated whenever the log is empty
    (:mod:`ingest.sources.inbound_cipher`)."""
    grpc_port: int = field(default=4317, metadata=env("TRAJWATCH_GRPC_PORT"))
    """``serve``: the OTLP/gRPC port (``--grpc-port``), on the same host as OTLP/HTTP;
    ``0`` serves no gRPC."""
    idle_flush_ms: int = field(default=30_000, metadata=env("TRAJWATCH_IDLE_FLUSH_MS"))
    """``serve``: a trace (or session log) that receives nothing for this long (wall clock)
    is ended, as a recording's end ends it in a replay: longer than an exporter's batch
    delay, so a run's root span arriving last still finds its trace open."""
    max_body_bytes: int = field(default=16 << 20, metadata=env("TRAJWATCH_MAX_BODY_BYTES"))
    """``serve``: the largest request body, counted after decompression (413 beyond)."""
    queue_size: int = field(default=64, metadata=env("TRAJWATCH_QUEUE_SIZE"))
    """``serve``: accepted requests waiting for the pipeline; a full queue answers 503."""
    max_request_items: int = field(default=65_536, metadata=env("TRAJWATCH_MAX_REQUEST_ITEMS"))
    """``serve``: the most spans or log records (protobuf), or JSON objects and arrays
    (OTLP/JSON: ~21 a span of ten attributes) one request may carry (413 beyond): a
    decoded span costs ~1 KB whatever its size on the wire."""
    max_inflight_bytes: int = field(default=64 << 20, metadata=env("TRAJWATCH_MAX_INFLIGHT_BYTES"))
    """``serve``: decompressed bytes of the requests read and not yet fed to the pipeline
    (being read, queued, decoded); past it, 503 with ``Retry-After``. At least
    ``max_body_bytes``."""
    max_inflight_items: int = field(default=131_072, metadata=env("TRAJWATCH_MAX_INFLIGHT_ITEMS"))
    """``serve``: items (as ``max_request_items`` counts them) of those requests; past it,
    503 with ``Retry-After`` (~130 MB of decoded spans). At least ``max_request_items``."""
    max_connections: int = field(default=1_024, metadata=env("TRAJWATCH_MAX_CONNECTIONS"))
    """``serve``: connections and requests at once; beyond, requests are answered 503."""
    http_header_timeout_ms: int = field(
        default=10_000, metadata=env("TRAJWATCH_HTTP_HEADER_TIMEOUT_MS")
    )
    """``serve``: a request's line and headers must arrive within this (from the
    connection's start or the request's first byte), else 408 and the connection closes."""
    http_body_timeout_ms: int = field(
        default=30_000, metadata=env("TRAJWATCH_HTTP_BODY_TIMEOUT_MS")
    )
    """``serve``: a request's body must arrive within this of its headers (an OTel
    exporter gives up after 10 s), else 408 and the connection closes."""
    auth_token: str | None = field(default=None, repr=False, metadata=env("TRAJWATCH_AUTH_TOKEN"))
    """``serve``: when set, every request but ``/healthz`` (OTLP ingest, ``/v1/check``,
    ``/metrics``) must carry ``Authorization: Bearer <token>`` (``docs/security.md``)."""
    check_max_body_bytes: int = field(
        default=1 << 20, metadata=env("TRAJWATCH_CHECK_MAX_BODY_BYTES")
    )
    """``serve``'s ``/v1/check``: the largest body judged (a hook input is the call's
    arguments, kilobytes; as ``trajwatch breaker``'s cap); a larger one gets the failure
    decision for an unknown tool."""
    check_timeout_ms: int = field(default=2_000, metadata=env("TRAJWATCH_CHECK_TIMEOUT_MS"))
    """``serve``'s ``/v1/check``: past this, the failure decision is answered (under the
    breaker's 3 s and the hook's own timeout: a hook that times out lets the call run)."""
    check_failure_dangerous: str = field(
        default="deny", metadata=env("TRAJWATCH_CHECK_FAILURE_DANGEROUS")
    )
    """``serve``'s ``/v1/check``: the decision (``deny``, ``ask``, ``allow`` = none) when a
    check fails for a tool that is not read-only, or an unknown one."""
    check_failure_other: str = field(default="ask", metadata=env("TRAJWATCH_CHECK_FAILURE_OTHER"))
    """...and for a read-only tool."""
    check_read_only_tools: str = field(
        default=",".join(READ_ONLY_TOOLS), metadata=env("TRAJWATCH_CHECK_READ_ONLY_TOOLS")
    )
    """The read-only tools, comma-separated, exact names (Claude Code's by default)."""
    webhook_url: str | None = field(default=None, metadata=env("TRAJWATCH_WEBHOOK_URL"))
    """One webhook endpoint (named ``default``) with nothing else configured; with no
    action policy written, each alert's recommended action is sent to it."""
    webhook_secret: str | None = field(
        default=None, repr=False, metadata=env("TRAJWATCH_WEBHOOK_SECRET")
    )
    """Its ``whsec_`` signing secret; several, space-separated, during a key rotation."""
    webhook_allow_private: bool = field(
        default=False, metadata=env("TRAJWATCH_WEBHOOK_ALLOW_PRIVATE")
    )
    """Send to loopback and private destinations too (the SSRF guard still refuses cloud
    metadata and the shared address space: :mod:`trajwatch.actions.ssrf`)."""
    webhook_allow_addresses: str | None = field(
        default=None, metadata=env("TRAJWATCH_WEBHOOK_ALLOW_ADDRESSES")
    )
    """Exact IP addresses webhooks may reach whatever their class (space- or
    comma-separated), e.g. ``127.0.0.1`` for a breaker on loopback without
    ``TRAJWATCH_WEBHOOK_ALLOW_PRIVATE``."""
    explorer_url: str | None = field(default=None, metadata=env("TRAJWATCH_EXPLORER_URL"))
    """Base URL of the explorer, for the link in each webhook."""
    breaker_secret: str | None = field(
        default=None, repr=False, metadata=env("TRAJWATCH_BREAKER_SECRET")
    )
    """``trajwatch breaker``: the ``whsec_`` secret(s) its webhooks are signed with (else
    ``webhook_secret``: the same secrets, on the sending side)."""
    breaker_token: str | None = field(
        default=None, repr=False, metadata=env("TRAJWATCH_BREAKER_TOKEN")
    )
    """``trajwatch breaker``: the operator token(s), ``[name=]token`` space-separated, that
    re-enable and list breakers (and what ``trajwatch breaker close`` sends). Never in the
    monitored agent's environment."""
    hook_token: str | None = field(default=None, repr=False, metadata=env("TRAJWATCH_HOOK_TOKEN"))
    """``trajwatch breaker``: the token(s) the Claude Code hook sends as ``Authorization:
    Bearer``; the agent can read it, so it opens nothing but the hook."""
    cpu: str = field(default=AUTO, metadata=env("TRAJWATCH_CPU"))
    """Which CPU the process's threads run on (:mod:`trajwatch.service.cpu_placement`): ``auto``
    keeps ``serve``'s on the CPU it started on (its threads take turns on Python's lock:
    on one CPU the same work costs less) and leaves ``worker`` to the OS (several share a
    host); ``all`` never pins; a number pins ``serve`` or a ``worker`` to that CPU."""

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

    def _rules(self) -> tuple[tuple[str, str, Callable[[Any], bool]], ...]:
        # one request must fit in the in-flight budget, or it would be refused for ever
        fits = (
            (
                "max_inflight_bytes",
                f">= max_body_bytes ({self.max_body_bytes})",
                lambda v: v >= self.max_body_bytes,
            ),
            (
                "max_inflight_items",
                f">= max_request_items ({self.max_request_items})",
                lambda v: v >= self.max_request_items,
            ),
        )
        return (*PipelineOptions._rules(self), *_RULES, *fits)


_RULES: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    *(
        (name, ">= 1", lambda v: v >= 1)
        for name in (
            "commit_every",
            "idle_flush_ms",
            "max_body_bytes",
            "queue_size",
            "check_max_body_bytes",
            "check_timeout_ms",
            "max_request_items",
            "max_connections",
            "http_header_timeout_ms",
            "http_body_timeout_ms",
        )
    ),
    *(
        (name, " or ".join(DECISIONS), lambda v: v in DECISIONS)
        for name in ("check_failure_dangerous", "check_failure_other")
    ),
    ("commit_wait_ms", ">= 0", lambda v: v >= 0),
    ("cpu", f"{AUTO}, all or a CPU number", check_choice),
    ("grpc_port", "a port (1-65535), or 0 for none", lambda v: 0 <= v <= 65535),
)


def environment_secrets(names: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The secrets held by the environment variables ``names`` (a config file names the
    variables, never the secrets), each value split on whitespace (a rotation lists the
    new and the old). Raises ConfigError for a variable that is unset or empty."""
    environ = os.environ if environ is None else environ
    secrets: list[str] = []
    for name in names:
        value = environ.get(name, "").split()
        if not value:
            raise ConfigError(
                f"the webhook secret variable {name} is not set; export {name}=whsec_..."
            )
        secrets.extend(value)
    return secrets


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
