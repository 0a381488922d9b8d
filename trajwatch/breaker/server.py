"""``trajwatch breaker``: a reference circuit breaker for trajwatch's webhooks.

The agent it stops is the adversary: it runs shell commands on the same host, so every
endpoint that changes or shows state is authenticated (:mod:`trajwatch.breaker.auth`), and
the hook never fails open (:mod:`trajwatch.breaker.hook`).

- ``POST /v1/webhooks`` (Standard Webhooks signature): a delivery from trajwatch's
  dispatcher, verified with ``standardwebhooks`` (signature and timestamp tolerance; the
  ``whsec_`` secrets, space-separated during a rotation) and applied once per
  ``webhook-id`` (a retry that re-sends an id answers 200 and changes nothing). A
  ``trajwatch.kill`` or ``trajwatch.rollback`` opens the session's breaker and the
  agent's; a ``trajwatch.alert`` (notify) opens a *half-open* breaker (one on trial) and is
  otherwise only recorded. With *effects* (``--langgraph-url``:
  :class:`~trajwatch.breaker.langgraph.LangGraphCanceller`) each verified webhook is also
  handed to them, once per ``webhook-id`` and effect: the effect is recorded only once it
  succeeded, so a failed one answers 503 and runs again on the sender's retry.
- ``POST /v1/breakers/{key}/close`` (operator token; ``trajwatch breaker close SESSION``):
  the explicit re-enable of a session's breaker, or with ``?scope=agent`` (``close --agent
  NAME``) an agent's; ``?trial=1`` makes it half-open instead; ``?by=WHO`` (the CLI's
  ``--by``) goes into the audit trail beside the token's name. A key no webhook opened
  is 404 with ``known`` (the scope's latest keys) and ``closest`` (the likeliest meant).
  ``GET /v1/breakers[/{key}]`` (operator token; ``?scope=agent``): state and audit trail.
- ``POST /v1/hooks/claude-code/pre-tool-use[?agent=NAME]`` (hook token): the Claude Code
  ``PreToolUse`` HTTP hook. Deny, with the alert's reason shown to the agent, when the
  session's breaker is open — or, opt-in, the agent's when the hook's URL names the agent
  (an agent whose breaker is open is then stopped in all its sessions, until a person
  closes it); else ask ``serve``'s ``/v1/check`` when a check client is given (its
  ``deny``/``ask`` is passed on); else no decision (the user's own permission rules
  apply). Any failure on the way is a decision of the failure policy, never a 500.
- ``GET /healthz`` (open): ``{"status": "ok", "state_file": "reachable"}``, 503 when the
  state file is not. ``GET /metrics`` (open): Prometheus counters — hook decisions,
  hook failures by cause and decision, refused requests, webhooks.

Logs (logger ``trajwatch.breaker``): each webhook applied, each breaker closed and by whom,
each hook decision other than "no decision" with its reason, each failure (session, tool,
cause, decision), each refused request.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from standardwebhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from trajwatch.breaker.auth import Credentials, Tokens
from trajwatch.breaker.check import CheckClient
from trajwatch.breaker.hook import (
    MAX_BODY_BYTES,
    MAX_DEPTH,
    decision_of,
    parse,
    read_capped,
    session_of,
    tool_of,
)
from trajwatch.breaker.state import OPEN, SCOPES, Breakers, UnknownBreaker
from trajwatch.check_failure import CheckFailure, FailurePolicy, hook_answer, shown
from trajwatch.service.listen import bind

log = logging.getLogger("trajwatch.breaker")
_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer realm="trajwatch breaker"'}
MAX_BY_CHARS = 200
"""``?by=``, who closed a breaker, as kept in the audit trail."""


class Effect(Protocol):
    """Something a verified webhook makes happen beside the breaker's state (cancel a
    LangGraph run): returns what it did, or None when the webhook asks nothing of it;
    raises when it should be tried again (the breaker answers 503, the sender retries)."""

    name: str

    def __call__(self, payload: dict[str, Any]) -> str | None: ...

    def close(self) -> None: ...


class BreakerMetrics:
    """The breaker's Prometheus counters, in a registry of their own (``GET /metrics``)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.decisions = Counter(
            "trajwatch_breaker_hook_decisions",
            "Hook answers by decision (none: no decision)",
            ["decision"],
            registry=r,
        )
        self.failures = Counter(
            "trajwatch_breaker_hook_failures",
            "Hook calls the breaker could not judge as designed, by cause and the decision "
            "the failure policy made",
            ["cause", "decision"],
            registry=r,
        )
        self.refused = Counter(
            "trajwatch_breaker_refused",
            "Requests refused for a missing or wrong token or webhook signature",
            ["endpoint"],
            registry=r,
        )
        self.webhooks = Counter(
            "trajwatch_breaker_webhooks",
            "Verified webhooks, by type and whether they were new",
            ["type", "applied"],
            registry=r,
        )


def create_app(
    breakers: Breakers,
    credentials: Credentials,
    *,
    check: CheckClient | None = None,
    policy: FailurePolicy | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_depth: int = MAX_DEPTH,
    effects: Sequence[Effect] = (),
    metrics: BreakerMetrics | None = None,
) -> Starlette:
    """The breaker as an ASGI app. ``check`` (closed with the app) asks ``serve``;
    ``policy`` decides what a failure means (default: deny what is not read-only, ask
    otherwise)."""
    verifiers = [Webhook(s) for s in credentials.webhook_secrets]
    policy = policy or FailurePolicy()
    metrics = metrics or BreakerMetrics()

    def authenticated(request: Request, tokens: Tokens | None, endpoint: str) -> str | None:
        """The caller's token name (``"-"`` when ``tokens`` is None: no token required),
        or None, logged and counted."""
        if tokens is None:
            return "-"
        name = tokens.match(request.headers.getlist("authorization"))
        if name is None:
            metrics.refused.labels(endpoint).inc()
            client = request.client.host if request.client else "?"
            log.warning(
                "refused %s %s from %s: missing or wrong bearer token",
                request.method,
                shown(request.url.path),
                client,
            )
        return name

    def refused() -> JSONResponse:
        return JSONResponse({"error": "missing or wrong bearer token"}, 401, _UNAUTHORIZED)

    async def webhook(request: Request) -> JSONResponse:
        try:
            body = await read_capped(
                request.stream(), request.headers.get("content-length"), max_body_bytes
            )
        except CheckFailure as too_large:
            return JSONResponse({"error": too_large.detail}, 413)
        headers = {k.lower(): v for k, v in request.headers.items()}
        payload = None
        for verifier in verifiers:
            try:
                payload = verifier.verify(body, headers)  # signature and timestamp tolerance
                break
            except WebhookVerificationError:
                continue
        if payload is None:
            metrics.refused.labels("webhooks").inc()
            log.warning("refused a webhook: bad signature or timestamp")
            return JSONResponse({"error": "bad signature or timestamp"}, 401)
        webhook_id = headers["webhook-id"]
        fresh = await run_in_threadpool(breakers.apply, webhook_id, payload)
        data = payload.get("data") or {}
        kind = str(payload.get("type"))
        metrics.webhooks.labels(kind[:40], "new" if fresh else "repeat").inc()
        log.info(
            "webhook %s: type=%s session=%s agent=%s alert=%s id=%s",
            "applied" if fresh else "repeated (applied before, nothing changed)",
            shown(kind),
            shown(data.get("session_id")),
            shown(data.get("agent")),
            shown(data.get("alert_id")),
            shown(webhook_id),
        )
        reply: dict[str, Any] = {"applied": fresh}
        session = data.get("session_id")
        for effect in effects:
            try:
                _, reply[effect.name] = await run_in_threadpool(
                    breakers.once,
                    f"{effect.name}:{webhook_id}",
                    functools.partial(effect, payload),
                    session=str(session) if session else None,
                )
            except Exception as exc:  # the effect's failure: the sender retries this id
                error = f"{effect.name}: {type(exc).__name__}: {exc}"[:500]
                log.error("webhook %s: %s (answered 503: retried)", shown(webhook_id), error)
                return JSONResponse({**reply, "error": error}, 503)
        return JSONResponse(reply)

    async def close(request: Request) -> JSONResponse:
        name = authenticated(request, credentials.operators, "close")
        if name is None:
            return refused()
        trial = request.query_params.get("trial") in ("1", "true")
        scope = request.query_params.get("scope", "session")
        if scope not in SCOPES:
            return JSONResponse({"error": f"scope must be one of {', '.join(SCOPES)}"}, 400)
        key = request.path_params["key"]
        by = "".join(c for c in request.query_params.get("by", "") if c.isprintable())
        source = f"close by {name}" + (f" ({by[:MAX_BY_CHARS]})" if by else "")
        try:
            state = await run_in_threadpool(
                breakers.close, key, scope=scope, trial=trial, source=source
            )
        except UnknownBreaker as unknown:
            log.warning("close of %s %s refused: no breaker for it", scope, shown(key))
            return JSONResponse(
                {
                    "error": f"no breaker for {scope} {key!r}: none was ever opened for it",
                    "known": unknown.known,
                    "closest": unknown.closest,
                },
                404,
            )
        log.info("breaker of %s %s now %s: %s", scope, shown(key), state, source)
        return JSONResponse({scope: key, "state": state, "by": source})

    async def show(request: Request) -> JSONResponse:
        if authenticated(request, credentials.operators, "breakers") is None:
            return refused()
        scope = request.query_params.get("scope", "session")
        listing = await run_in_threadpool(breakers.listing, request.path_params.get("key"), scope)
        return JSONResponse(listing)

    async def judged(session: str, body: bytes, agent: str | None) -> dict[str, Any]:
        """The hook's answer for a well-formed call: an open breaker denies, else the
        check answers (raising :class:`~trajwatch.check_failure.CheckFailure`), else no decision."""
        state, reason = await run_in_threadpool(breakers.state, "session", session)
        if state == OPEN:
            return hook_answer("deny", f"trajwatch breaker open for this session: {reason}")
        if agent:
            state, reason = await run_in_threadpool(breakers.state, "agent", agent)
            if state == OPEN:
                return hook_answer("deny", f"trajwatch breaker open for agent {agent}: {reason}")
        if check is None:
            return hook_answer(None, "")
        return await check.ask(body)

    async def pre_tool_use(request: Request) -> JSONResponse:
        if authenticated(request, credentials.hooks, "hook") is None:
            return refused()
        session: str | None = None
        tool: str | None = None
        try:
            try:
                body = await read_capped(
                    request.stream(), request.headers.get("content-length"), max_body_bytes
                )
                parsed = parse(body, max_depth)
                tool = tool_of(parsed)
                session = session_of(parsed)
                reply = await judged(session, body, request.query_params.get("agent"))
            except CheckFailure:
                raise
            except ClientDisconnect:
                raise CheckFailure("bad_input", "the caller went away mid-body") from None
            except Exception as exc:  # a bug must still be a decision, never a 500
                log.exception("hook: %s", type(exc).__name__)
                raise CheckFailure("internal", f"{type(exc).__name__} in the breaker") from exc
        except CheckFailure as failure:
            decision, reason = policy.judge(tool, failure)
            reply = hook_answer(decision, reason)
            metrics.failures.labels(failure.cause, decision).inc()
            log.warning(
                "hook failure: session=%s tool=%s cause=%s (%s) decision=%s",
                shown(session),
                shown(tool),
                failure.cause,
                failure.detail,
                decision,
            )
        else:
            decision = decision_of(reply) or "none"
            if decision != "none":
                reason = reply["hookSpecificOutput"].get("permissionDecisionReason")
                log.info(
                    "hook %s: session=%s tool=%s reason=%s",
                    decision,
                    shown(session),
                    shown(tool),
                    shown(reason, 300),
                )
        metrics.decisions.labels(decision_of(reply) or "none").inc()
        return JSONResponse(reply)

    async def healthz(request: Request) -> JSONResponse:
        reachable = await run_in_threadpool(breakers.reachable)
        return JSONResponse(
            {
                "status": "ok" if reachable else "error",
                "state_file": "reachable" if reachable else "unreachable",
            },
            200 if reachable else 503,
        )

    async def prometheus(request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if check is not None:
            check.close()

    return Starlette(
        routes=[
            Route("/v1/webhooks", webhook, methods=["POST"]),
            Route("/v1/breakers", show, methods=["GET"]),
            Route("/v1/breakers/{key}", show, methods=["GET"]),
            Route("/v1/breakers/{key}/close", close, methods=["POST"]),
            Route("/v1/hooks/claude-code/pre-tool-use", pre_tool_use, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", prometheus, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def run(
    *,
    host: str,
    port: int,
    state: str,
    credentials: Credentials,
    check: CheckClient | None = None,
    policy: FailurePolicy | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_depth: int = MAX_DEPTH,
    langgraph_url: str | None = None,
) -> int:
    """Serve the breaker until interrupted; its start is logged (address, state file, the
    check, the failure policy, the token configuration without a token in it)."""
    import uvicorn

    sock = bind(host, port, command="breaker")  # a taken port: one line, before anything starts
    policy = policy or FailurePolicy()
    effects: list[Effect] = []
    if langgraph_url:
        from trajwatch.breaker.langgraph import LangGraphCanceller

        effects.append(LangGraphCanceller(langgraph_url))
    breakers = Breakers(state)
    app = create_app(
        breakers,
        credentials,
        check=check,
        policy=policy,
        max_body_bytes=max_body_bytes,
        max_depth=max_depth,
        effects=effects,
    )
    log.info(
        "listening on http://%s:%d, state %s, check %s, on a check failure: %s for tools that "
        "are not read-only, %s for %s; body cap %d bytes, depth %d; %s%s",
        host,
        port,
        state,
        f"{check.url} ({check.timeout:g} s)" if check else "none (a closed breaker: no decision)",
        policy.dangerous,
        policy.other,
        ",".join(sorted(policy.read_only_tools)) or "none",
        max_body_bytes,
        max_depth,
        credentials.describe(),
        f", LangGraph {langgraph_url}" if langgraph_url else "",
    )
    if breakers.shared():
        log.warning(
            "the state file %s is open to other users: chmod 600 it (the agent must not "
            "read or write the breakers)",
            state,
        )
    if credentials.hooks is None:
        log.warning("--hook-without-token: the hook answers any caller on this host")
    if check is not None and not credentials.check_token:
        log.warning(
            "no TRAJWATCH_AUTH_TOKEN: the check is sent without a token; a serve that "
            "requires one refuses each check (a failure, decided by the failure policy)"
        )
    try:
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        for effect in effects:
            effect.close()
    return 0
