"""``trajwatch breaker``: a reference circuit breaker for trajwatch's webhooks.

- ``POST /v1/webhooks``: a Standard Webhooks delivery from trajwatch's dispatcher, verified
  with ``standardwebhooks`` (signature and timestamp tolerance; the ``whsec_`` secrets in
  ``TRAJWATCH_BREAKER_SECRET``, space-separated during a rotation) and applied once per
  ``webhook-id`` (a retry that re-sends an id answers 200 and changes nothing). A
  ``trajwatch.kill`` or ``trajwatch.rollback`` opens the session's breaker and the
  agent's; a ``trajwatch.alert`` (notify) opens a *half-open* breaker (one on trial) and is
  otherwise only recorded. With *effects* (``--langgraph-url``:
  :class:`~trajwatch.breaker.langgraph.LangGraphCanceller`) each verified webhook is also
  handed to them, once per ``webhook-id`` and effect: the effect is recorded only once it
  succeeded, so a failed one answers 503 and runs again on the sender's retry.
- ``POST /v1/breakers/{key}/close`` (``trajwatch breaker close SESSION``): the explicit
  re-enable of a session's breaker, or with ``?scope=agent`` (``close --agent NAME``) an
  agent's; ``?trial=1`` makes it half-open instead. ``GET /v1/breakers[/{key}]``
  (``?scope=agent``): state and audit trail.
- ``POST /v1/hooks/claude-code/pre-tool-use[?agent=NAME]``: the Claude Code ``PreToolUse``
  HTTP hook. Deny, with the alert's reason shown to the agent, when the session's breaker
  is open, or the agent's when the hook's URL names the agent (an agent whose breaker is
  open is stopped in its other and new sessions too, until a person closes it); else
  ask ``trajwatch serve``'s ``/v1/check`` when ``--check-url`` is given (its answer, in
  the hook's format, is passed on); else no decision (the user's own permission rules
  apply).

State lives in the breaker's own SQLite file (``--state``): the breaker is a separate
service, usually next to the agents rather than next to trajwatch's store, and must keep
answering when that store is down; small tables (``seen`` webhook ids, ``breakers``,
``audit``, ``effects`` done), one transaction per webhook so the dedupe and the state
change are atomic.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from typing import Any, Protocol

import requests
from standardwebhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from models.errors import ConfigError
from trajwatch.breaker.state import OPEN, SCOPES, Breakers


class Effect(Protocol):
    """Something a verified webhook makes happen beside the breaker's state (cancel a
    LangGraph run): returns what it did, or None when the webhook asks nothing of it;
    raises when it should be tried again (the breaker answers 503, the sender retries)."""

    name: str

    def __call__(self, payload: dict[str, Any]) -> str | None: ...

    def close(self) -> None: ...


def secrets_from_env(environ: dict[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    found = (
        env.get("TRAJWATCH_BREAKER_SECRET") or env.get("TRAJWATCH_WEBHOOK_SECRET") or ""
    ).split()
    if not found:
        raise ConfigError(
            "the breaker needs the webhook secret: export TRAJWATCH_BREAKER_SECRET=whsec_... "
            "(the same as trajwatch's TRAJWATCH_WEBHOOK_SECRET)"
        )
    return found


def create_app(
    breakers: Breakers,
    secrets: Sequence[str],
    *,
    check_url: str | None = None,
    effects: Sequence[Effect] = (),
) -> Starlette:
    verifiers = [Webhook(s) for s in secrets]
    http = requests.Session()
    http.trust_env = False

    async def webhook(request: Request) -> JSONResponse:
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        payload = None
        for verifier in verifiers:
            try:
                payload = verifier.verify(body, headers)  # signature and timestamp tolerance
                break
            except WebhookVerificationError:
                continue
        if payload is None:
            return JSONResponse({"error": "bad signature or timestamp"}, 401)
        webhook_id = headers["webhook-id"]
        fresh = await run_in_threadpool(breakers.apply, webhook_id, payload)
        answer: dict[str, Any] = {"applied": fresh}
        session = (payload.get("data") or {}).get("session_id")
        for effect in effects:
            try:
                _, answer[effect.name] = await run_in_threadpool(
                    breakers.once,
                    f"{effect.name}:{webhook_id}",
                    functools.partial(effect, payload),
                    session=str(session) if session else None,
                )
            except Exception as exc:  # the effect's failure: the sender retries this id
                error = f"{effect.name}: {type(exc).__name__}: {exc}"[:500]
                return JSONResponse({**answer, "error": error}, 503)
        return JSONResponse(answer)

    async def close(request: Request) -> JSONResponse:
        trial = request.query_params.get("trial") in ("1", "true")
        scope = request.query_params.get("scope", "session")
        if scope not in SCOPES:
            return JSONResponse({"error": f"scope must be one of {', '.join(SCOPES)}"}, 400)
        key = request.path_params["key"]
        state = await run_in_threadpool(breakers.close, key, scope=scope, trial=trial)
        return JSONResponse({scope: key, "state": state})

    async def show(request: Request) -> JSONResponse:
        scope = request.query_params.get("scope", "session")
        return JSONResponse(breakers.listing(request.path_params.get("key"), scope))

    async def pre_tool_use(request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body())
            session = str(body["session_id"])
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "expected the PreToolUse hook input"}, 400)
        state, reason = breakers.state("session", session)
        if state == OPEN:
            return JSONResponse(_hook("deny", f"trajwatch breaker open for this session: {reason}"))
        agent = request.query_params.get("agent")
        if agent:
            state, reason = breakers.state("agent", agent)
            if state == OPEN:
                return JSONResponse(
                    _hook("deny", f"trajwatch breaker open for agent {agent}: {reason}")
                )
        if check_url:
            try:
                answer = await run_in_threadpool(http.post, check_url, json=body, timeout=5)
                if answer.status_code == 200:
                    return JSONResponse(answer.json())
            except requests.RequestException:
                pass  # the check is advisory when serve is down; the breaker still decides
        return JSONResponse({"hookSpecificOutput": {"hookEventName": "PreToolUse"}})

    return Starlette(
        routes=[
            Route("/v1/webhooks", webhook, methods=["POST"]),
            Route("/v1/breakers", show, methods=["GET"]),
            Route("/v1/breakers/{key}", show, methods=["GET"]),
            Route("/v1/breakers/{key}/close", close, methods=["POST"]),
            Route("/v1/hooks/claude-code/pre-tool-use", pre_tool_use, methods=["POST"]),
        ]
    )


def _hook(decision: str, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def run(
    *, host: str, port: int, state: str, check_url: str | None, langgraph_url: str | None = None
) -> int:
    import uvicorn

    effects: list[Effect] = []
    if langgraph_url:
        from trajwatch.breaker.langgraph import LangGraphCanceller

        effects.append(LangGraphCanceller(langgraph_url))
    app = create_app(Breakers(state), secrets_from_env(), check_url=check_url, effects=effects)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        for effect in effects:
            effect.close()
    return 0
