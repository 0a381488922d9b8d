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
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import requests
from standardwebhooks import Webhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from models.errors import ConfigError

OPEN, HALF_OPEN, CLOSED = "open", "half-open", "closed"
OPENING = {"trajwatch.kill": OPEN, "trajwatch.rollback": OPEN, "trajwatch.alert": HALF_OPEN}
SCOPES = ("session", "agent")
SCHEMA = """
create table if not exists seen (webhook_id text primary key, at real not null);
create table if not exists breakers (
    scope text not null, key text not null, state text not null, reason text,
    alert_id text, updated real not null, primary key (scope, key));
create table if not exists audit (
    at real not null, scope text not null, key text not null, state text not null,
    reason text, source text not null);
create table if not exists effects (key text primary key, at real not null, outcome text);
"""


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


class Breakers:
    """The breaker state in a SQLite file; safe from several threads."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._effects = threading.Lock()  # effects one at a time; never held by state reads

    def apply(self, webhook_id: str, payload: dict[str, Any]) -> bool:
        """Apply one verified webhook; False if its id was applied before."""
        data = payload.get("data") or {}
        state = OPENING.get(str(payload.get("type")))
        reason = f"{data.get('detector')} ({data.get('severity')}): {data.get('reason')}"
        with self._lock:
            cur = self._db.cursor()
            cur.execute("begin immediate")
            try:
                if cur.execute("select 1 from seen where webhook_id = ?", (webhook_id,)).fetchone():
                    cur.execute("rollback")
                    return False
                cur.execute("insert into seen values (?, ?)", (webhook_id, time.time()))
                if state is not None:
                    for scope, key in (
                        ("session", data.get("session_id")),
                        ("agent", data.get("agent")),
                    ):
                        if key:
                            self._set(
                                cur,
                                scope,
                                str(key),
                                state,
                                reason,
                                data.get("alert_id"),
                                f"webhook {webhook_id}",
                                keep_open=state == HALF_OPEN,
                            )
                cur.execute("commit")
            except BaseException:
                cur.execute("rollback")
                raise
        return True

    def once(
        self, key: str, effect: Callable[[], str | None], *, session: str | None = None
    ) -> tuple[bool, str | None]:
        """Run ``effect`` once per ``key`` (``<effect>:<webhook-id>``): (False, what it did
        then) if it ran before, else (True, what it did now). The key is recorded, with
        the outcome in the session's audit trail, only after ``effect`` returned: one that
        raises runs again on the retry. Effects run one at a time, outside the state lock,
        so the hook's reads never wait for a remote call."""
        with self._effects:
            with self._lock:
                row = self._db.execute(
                    "select outcome from effects where key = ?", (key,)
                ).fetchone()
            if row is not None:
                return False, row[0]
            outcome = effect()
            with self._lock:
                cur = self._db.cursor()
                cur.execute("begin immediate")
                try:
                    now = time.time()
                    cur.execute("insert into effects values (?, ?, ?)", (key, now, outcome))
                    if session and outcome:
                        state = cur.execute(
                            "select state from breakers where scope = 'session' and key = ?",
                            (session,),
                        ).fetchone()
                        cur.execute(
                            "insert into audit values (?, 'session', ?, ?, ?, ?)",
                            (now, session, state[0] if state else CLOSED, outcome, key),
                        )
                    cur.execute("commit")
                except BaseException:
                    cur.execute("rollback")
                    raise
            return True, outcome

    def _set(
        self,
        cur: sqlite3.Cursor,
        scope: str,
        key: str,
        state: str,
        reason: str | None,
        alert_id: Any,
        source: str,
        *,
        keep_open: bool = False,
    ) -> None:
        now = time.time()
        row = cur.execute(
            "select state from breakers where scope = ? and key = ?", (scope, key)
        ).fetchone()
        if keep_open and row is not None and row[0] == OPEN:
            state = OPEN  # a notify never weakens an open breaker
        cur.execute(
            "insert into breakers values (?, ?, ?, ?, ?, ?) on conflict (scope, key) do update "
            "set state = excluded.state, reason = excluded.reason, alert_id = excluded.alert_id, "
            "updated = excluded.updated",
            (scope, key, state, reason, alert_id, now),
        )
        cur.execute(
            "insert into audit values (?, ?, ?, ?, ?, ?)", (now, scope, key, state, reason, source)
        )

    def close(
        self,
        key: str,
        *,
        scope: str = "session",
        trial: bool = False,
        reason: str = "re-enabled",
    ) -> str:
        """Re-enable the breaker of a session (or, with ``scope="agent"``, an agent);
        half-open with ``trial``. Returns the new state."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        state = HALF_OPEN if trial else CLOSED
        with self._lock:
            cur = self._db.cursor()
            cur.execute("begin immediate")
            self._set(cur, scope, key, state, reason, None, "close")
            cur.execute("commit")
        return state

    def state(self, scope: str, key: str) -> tuple[str, str | None]:
        with self._lock:
            row = self._db.execute(
                "select state, reason from breakers where scope = ? and key = ?", (scope, key)
            ).fetchone()
        return (row[0], row[1]) if row else (CLOSED, None)

    def listing(self, key: str | None = None, scope: str = "session") -> dict[str, Any]:
        where, args = ("where key = ? and scope = ?", (key, scope)) if key else ("", ())
        with self._lock:
            rows = self._db.execute(
                f"select scope, key, state, reason, alert_id, updated from breakers {where}", args
            ).fetchall()
            audit = self._db.execute(
                f"select at, scope, key, state, reason, source from audit {where} order by at", args
            ).fetchall()
        return {
            "breakers": [
                dict(
                    zip(("scope", "key", "state", "reason", "alert_id", "updated"), r, strict=True)
                )
                for r in rows
            ],
            "audit": [
                dict(zip(("at", "scope", "key", "state", "reason", "source"), r, strict=True))
                for r in audit
            ],
        }

    def applied(self) -> int:
        with self._lock:
            return int(self._db.execute("select count(*) from seen").fetchone()[0])


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
