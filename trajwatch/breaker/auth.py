"""Who may call the breaker: secrets from the settings, bearer tokens compared in constant time.

- **Operator tokens** (``TRAJWATCH_BREAKER_TOKEN``): re-enable a breaker
  (``POST /v1/breakers/{key}/close``) and read the breakers (``GET /v1/breakers[/{key}]``).
  One or more, space-separated, each ``name=token`` or a bare token (named ``operator``);
  the name of the token that closed a breaker goes into its audit trail. Required: the
  breaker does not start without one.
- **Hook tokens** (``TRAJWATCH_HOOK_TOKEN``): the Claude Code hook
  (``POST /v1/hooks/claude-code/pre-tool-use``), which sends it from its own environment
  (``headers`` + ``allowedEnvVars``). Required unless the operator starts the breaker with
  ``--hook-without-token``. The agent can read it (it is in Claude Code's environment), so
  it must never be an operator token: the breaker refuses to start if one is both.
- **Webhook secrets** (``TRAJWATCH_BREAKER_SECRET``, else ``TRAJWATCH_WEBHOOK_SECRET``):
  the ``whsec_`` secrets that verify trajwatch's Standard Webhooks signatures.
- **serve's token** (``TRAJWATCH_AUTH_TOKEN``): what the check client sends to ``serve``.

Only ``Authorization: Bearer <token>`` authenticates: no cookie, no query-string token, no
form field. A page in the operator's browser cannot send that header to another origin
without a CORS preflight, which the breaker never answers, so no cross-site request can
close a breaker.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass

from models.errors import ConfigError
from trajwatch.settings import Settings

MIN_TOKEN_CHARS = 16
"""A shorter token is refused at start: the agent on the same host can guess at leisure."""
OPERATOR = "operator"
"""The name of a bare operator token (one given without ``name=``)."""
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.@-]{0,63}")
_GENERATE = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@dataclass(frozen=True, slots=True)
class Tokens:
    """Named bearer tokens. :meth:`match` names the token a request carries, or None."""

    named: tuple[tuple[str, bytes], ...]

    @classmethod
    def parse(cls, text: str | None, *, variable: str, default_name: str = OPERATOR) -> Tokens:
        """The tokens of ``text``: whitespace-separated items, each ``name=token`` (``name``
        a letter, then up to 63 letters, digits or ``_.@-``) or a bare token, named
        ``default_name`` (write ``operator=TOKEN`` for a bare token that holds ``=``).
        ConfigError, naming ``variable``, for a token under :data:`MIN_TOKEN_CHARS`."""
        named: list[tuple[str, bytes]] = []
        for item in (text or "").split():
            name, sep, secret = item.partition("=")
            if not (sep and _NAME.fullmatch(name) and secret.strip("=")):
                name, secret = default_name, item  # a bare token (base64 padding included)
            if len(secret) < MIN_TOKEN_CHARS:
                raise ConfigError(
                    f"{variable}: a token of {len(secret)} characters is too short (at least "
                    f"{MIN_TOKEN_CHARS}); generate one with {_GENERATE}"
                )
            named.append((name, secret.encode()))
        return cls(tuple(named))

    def __bool__(self) -> bool:
        return bool(self.named)

    @property
    def names(self) -> list[str]:
        return sorted({name for name, _ in self.named})

    def first(self) -> str:
        """The first token itself (what ``trajwatch breaker close`` sends)."""
        return self.named[0][1].decode()

    def match(self, authorization: Sequence[str]) -> str | None:
        """The name of the token that the ``Authorization`` header values carry as
        ``Bearer <token>``, or None: no header, several, another scheme, a wrong token.
        Every token is compared (``hmac.compare_digest``), matched or not, so the time
        taken does not say which one was close."""
        if len(authorization) != 1:
            return None
        scheme, _, given = authorization[0].strip().partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return None
        candidate = given.strip().encode("latin-1", "replace")  # headers arrive as latin-1
        found = None
        for name, secret in self.named:
            if hmac.compare_digest(candidate, secret) and found is None:
                found = name
        return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """Everything secret the breaker holds, read from :class:`~trajwatch.settings.Settings`
    (the one place that reads the environment)."""

    webhook_secrets: tuple[str, ...]
    operators: Tokens
    hooks: Tokens | None
    """None: hook calls are not authenticated (``--hook-without-token``)."""
    check_token: str | None = None
    """Sent to ``serve``'s ``/v1/check`` as ``Authorization: Bearer``."""

    @classmethod
    def from_settings(cls, settings: Settings, *, hook_without_token: bool = False) -> Credentials:
        """ConfigError (one line, what to export) when the webhook secret or the operator
        token is missing, when the hook token is missing without ``hook_without_token``,
        or when a token is both an operator's and the hook's."""
        secrets = (settings.breaker_secret or settings.webhook_secret or "").split()
        if not secrets:
            raise ConfigError(
                "the breaker needs the webhook secret: export TRAJWATCH_BREAKER_SECRET=whsec_... "
                "(the same as trajwatch's TRAJWATCH_WEBHOOK_SECRET)"
            )
        operators = Tokens.parse(settings.breaker_token, variable="TRAJWATCH_BREAKER_TOKEN")
        if not operators:
            raise ConfigError(
                "the breaker needs an operator token, to re-enable breakers and list them: "
                f"export TRAJWATCH_BREAKER_TOKEN=$({_GENERATE}) where the breaker runs, never "
                "in the agent's environment"
            )
        hooks = Tokens.parse(
            settings.hook_token, variable="TRAJWATCH_HOOK_TOKEN", default_name="hook"
        )
        if not hooks and not hook_without_token:
            raise ConfigError(
                "the Claude Code hook needs a token: export TRAJWATCH_HOOK_TOKEN=... for the "
                "breaker and give it to the hook (headers + allowedEnvVars), or start the "
                "breaker with --hook-without-token to answer unauthenticated hook calls"
            )
        shared = {s for _, s in operators.named} & {s for _, s in hooks.named}
        if shared:
            raise ConfigError(
                "TRAJWATCH_HOOK_TOKEN holds an operator token (TRAJWATCH_BREAKER_TOKEN): the "
                "agent can read the hook's token, so give the hook a token of its own"
            )
        return cls(
            webhook_secrets=tuple(secrets),
            operators=operators,
            hooks=hooks or None,
            check_token=settings.auth_token,
        )

    def describe(self) -> str:
        """The configuration for the start line, without a secret in it."""
        hook = (
            f"{len(self.hooks.named)} hook token(s)"
            if self.hooks
            else "NO hook token (--hook-without-token: any local caller may use the hook)"
        )
        return (
            f"{len(self.operators.named)} operator token(s) ({', '.join(self.operators.names)}), "
            f"{hook}, {len(self.webhook_secrets)} webhook secret(s), check "
            + ("with serve's token" if self.check_token else "without a token")
        )
