"""The breaker's client of ``serve``'s ``POST /v1/check`` (``trajwatch breaker --check-url``).

It sends the hook's body as it came (already bounded and depth-checked), with ``serve``'s
token (``TRAJWATCH_AUTH_TOKEN``) as ``Authorization: Bearer``, and passes on a
``PreToolUse`` answer: ``deny`` or ``ask`` with its reason, or no decision (an ``"allow"``
is dropped: a monitor never grants). Every other outcome raises
:class:`CheckFailure` with its cause — ``timeout`` (no answer within
``timeout`` seconds, the whole exchange), ``unreachable``, ``unauthorized`` (401/403: the
tokens differ), ``rejected`` (another 4xx), ``server_error`` (5xx), ``bad_answer`` (a
redirect, a body that is not JSON or not a PreToolUse answer, or one over the cap) — and
the hook's failure policy decides. ``timeout`` must stay under the hook's own ``timeout``
in Claude Code's settings: a hook that times out lets the call run.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import requests

from models.errors import ConfigError
from trajwatch.breaker.hook import MAX_BODY_BYTES
from trajwatch.check_failure import HOOK_EVENT, CheckFailure

DEFAULT_TIMEOUT = 3.0
"""Seconds for the whole check: under the 5 s ``timeout`` of the documented hook entry."""
THREADS = 8
"""Checks in flight at once; more wait their turn within their own deadline."""


def check_url(url: str) -> str:
    """``--check-url`` as given, if it is an http(s) URL with a host and no credentials in
    it; else ConfigError."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise ConfigError(f"--check-url {url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"--check-url {url!r} needs http:// or https:// and a host, "
            "e.g. http://127.0.0.1:4318/v1/check"
        )
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            "--check-url must not hold credentials; serve's token goes in TRAJWATCH_AUTH_TOKEN"
        )
    return url


class CheckClient:
    """Asks ``url`` about one hook call; :meth:`ask` answers in the hook's format or raises
    :class:`CheckFailure`. Thread-safe; :meth:`close` when done."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_answer_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        if timeout <= 0:
            raise ConfigError(f"--check-timeout must be > 0 seconds, got {timeout}")
        self.url = check_url(url)
        self.timeout = timeout
        self.max_answer_bytes = max_answer_bytes
        self._headers = {"content-type": "application/json"}
        if token:
            self._headers["authorization"] = f"Bearer {token}"
        self._http = requests.Session()
        self._http.trust_env = False  # no proxy or .netrc from the environment
        # An executor of our own: a check past its deadline is abandoned (asyncio.wait_for
        # returns), its thread finishes within requests' own timeout.
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="breaker-check")

    async def ask(self, body: bytes) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(self._pool, self._ask, body), self.timeout
            )
        except TimeoutError:
            raise self._timed_out() from None

    def _ask(self, body: bytes) -> dict[str, Any]:
        try:
            with self._http.post(
                self.url,
                data=body,
                headers=self._headers,
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,
            ) as response:
                status = response.status_code
                raw = response.raw.read(self.max_answer_bytes + 1, decode_content=True)
        except requests.Timeout:
            raise self._timed_out() from None
        except requests.RequestException as exc:
            cause = type(exc).__name__
            raise CheckFailure("unreachable", f"serve's check is unreachable ({cause})") from None
        if status in (401, 403):
            raise CheckFailure(
                "unauthorized",
                f"serve refused the breaker's token ({status}): give the breaker serve's "
                "TRAJWATCH_AUTH_TOKEN",
            )
        if 400 <= status < 500:
            raise CheckFailure("rejected", f"serve's check answered {status}")
        if status >= 500:
            raise CheckFailure("server_error", f"serve's check answered {status}")
        if status != 200:
            raise CheckFailure("bad_answer", f"serve's check answered {status}")
        if len(raw) > self.max_answer_bytes:
            limit = self.max_answer_bytes
            raise CheckFailure("bad_answer", f"serve's answer is over {limit} bytes")
        try:
            return validated_answer(json.loads(raw))
        except ValueError:
            raise CheckFailure("bad_answer", "serve's answer is not JSON") from None

    def _timed_out(self) -> CheckFailure:
        return CheckFailure("timeout", f"serve's check did not answer in {self.timeout:g} s")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()


def validated_answer(data: Any) -> dict[str, Any]:
    """The check's answer, kept to what the hook passes on: ``deny``/``ask`` and the reason,
    ``additionalContext``; :class:`CheckFailure` ``bad_answer`` for anything else."""
    out = data.get("hookSpecificOutput") if isinstance(data, dict) else None
    if not isinstance(out, dict) or out.get("hookEventName") != HOOK_EVENT:
        raise CheckFailure("bad_answer", f"serve's answer is not a {HOOK_EVENT} hook answer")
    kept: dict[str, Any] = {"hookEventName": HOOK_EVENT}
    decision = out.get("permissionDecision")
    if decision in ("deny", "ask"):
        kept["permissionDecision"] = decision
        kept["permissionDecisionReason"] = str(out.get("permissionDecisionReason") or "trajwatch")
    elif decision not in (None, "allow"):
        raise CheckFailure("bad_answer", f"serve's answer holds an unknown decision {decision!r}")
    if isinstance(out.get("additionalContext"), str):
        kept["additionalContext"] = out["additionalContext"]
    return {"hookSpecificOutput": kept}
