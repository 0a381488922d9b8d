"""``trajwatch breaker [run] | close KEY | show [KEY]`` (wired into :mod:`trajwatch.cli.main`).

``run`` serves the reference circuit breaker (:mod:`trajwatch.breaker.server`); ``close``
and ``show`` call a running one with the operator token (``TRAJWATCH_BREAKER_TOKEN``) as
``Authorization: Bearer``; ``close`` records who (``--by``, default ``user@host``).
"""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from models.errors import ConfigError
from trajwatch.breaker.check import DEFAULT_TIMEOUT
from trajwatch.breaker.hook import MAX_BODY_BYTES, MAX_DEPTH
from trajwatch.check_failure import DECISIONS, READ_ONLY_TOOLS
from trajwatch.service.listen import port
from trajwatch.settings import Settings

DEFAULT_URL = "http://127.0.0.1:4319"


def add_parser(sub: Any, common: argparse.ArgumentParser, positive: Callable[[str], int]) -> None:
    br = sub.add_parser(
        "breaker", parents=[common], help="run the reference circuit breaker, or close one"
    )
    br.add_argument("verb", nargs="?", choices=["run", "close", "show"], default="run")
    br.add_argument("session", nargs="?", help="close/show: the session (or, with --agent, agent)")
    br.add_argument("--agent", action="store_true", help="close/show: an agent's breaker")
    br.add_argument("--host", default="127.0.0.1", help="address to listen on")
    br.add_argument("--port", type=port, default=4319, help="port (default: 4319)")
    br.add_argument("--state", default="trajwatch-breaker.db", help="its SQLite state file")
    br.add_argument(
        "--check-url",
        help="trajwatch serve's /v1/check, asked when the breaker is closed "
        "(sent with $TRAJWATCH_AUTH_TOKEN)",
    )
    br.add_argument(
        "--check-timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds for the whole check (default {DEFAULT_TIMEOUT:g}); keep it under the "
        "hook's timeout",
    )
    br.add_argument(
        "--on-check-failure-dangerous",
        choices=DECISIONS,
        default="deny",
        help="what a failed check decides for a tool that is not read-only (default deny)",
    )
    br.add_argument(
        "--on-check-failure-other",
        choices=DECISIONS,
        default="ask",
        help="what a failed check decides for a read-only tool (default ask; allow = no decision)",
    )
    br.add_argument(
        "--read-only-tools",
        default=",".join(READ_ONLY_TOOLS),
        help=f"comma-separated tools that change nothing (default {','.join(READ_ONLY_TOOLS)}); "
        "any other, unknown ones included, is dangerous",
    )
    br.add_argument(
        "--max-body-bytes",
        type=positive,
        default=MAX_BODY_BYTES,
        help=f"the hook body's cap (default {MAX_BODY_BYTES}); larger is a check failure",
    )
    br.add_argument(
        "--max-json-depth",
        type=positive,
        default=MAX_DEPTH,
        help=f"the hook body's nesting limit (default {MAX_DEPTH}); deeper is a check failure",
    )
    br.add_argument(
        "--hook-without-token",
        action="store_true",
        help="answer hook calls without TRAJWATCH_HOOK_TOKEN (any local caller may use it)",
    )
    br.add_argument(
        "--langgraph-url",
        help="a LangGraph API server: a kill interrupts the session's runs, a rollback "
        "rolls them back (pip install 'trajwatch[langgraph]')",
    )
    br.add_argument("--url", default=DEFAULT_URL, help="close/show: the breaker's URL")
    br.add_argument("--trial", action="store_true", help="close: half-open instead")
    br.add_argument(
        "--by", help="close: who re-enables it, for the audit trail (default: user@host)"
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.verb == "run":
        return _serve(args, settings)
    scope = "agent" if args.agent else "session"
    if args.verb == "close" and not args.session:
        raise ConfigError(
            f"give the {scope} to re-enable: trajwatch breaker close "
            + ("--agent NAME" if args.agent else "SESSION")
        )
    from trajwatch.breaker.auth import Tokens

    tokens = Tokens.parse(settings.breaker_token, variable="TRAJWATCH_BREAKER_TOKEN")
    if not tokens:
        raise ConfigError(
            "export TRAJWATCH_BREAKER_TOKEN=<an operator token of the breaker> for this "
            "command only (never in the agent's environment)"
        )
    headers = {"authorization": f"Bearer {tokens.first()}"}
    base = args.url.rstrip("/")
    key = f"/{quote(args.session, safe='')}" if args.session else ""
    if args.verb == "show":
        answer = _call("get", f"{base}/v1/breakers{key}", headers, {"scope": scope}, args.url)
        print(json.dumps(answer, indent=2))
        return 0
    params = {"scope": scope, "by": args.by or _who(), **({"trial": "1"} if args.trial else {})}
    answer = _call("post", f"{base}/v1/breakers{key}/close", headers, params, args.url)
    print(f"breaker for {scope} {args.session}: {answer.get('state')} ({answer.get('by')})")
    return 0


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry nor LOGNAME/USER
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def _call(
    method: str, url: str, headers: dict[str, str], params: dict[str, str], base: str
) -> dict[str, Any]:
    import requests

    try:
        response = requests.request(method, url, headers=headers, params=params, timeout=10)
    except requests.RequestException as exc:
        raise ConfigError(f"no breaker answers at {base}: {type(exc).__name__}") from None
    if response.status_code == 401:
        raise ConfigError(
            f"the breaker at {base} refused the token (401): TRAJWATCH_BREAKER_TOKEN must be "
            "one of its operator tokens"
        )
    try:
        answer = response.json()
    except ValueError:
        answer = None
    if response.status_code == 404 and isinstance(answer, dict) and "known" in answer:
        raise ConfigError(_unknown(answer, base))
    if not response.ok or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else response.text[:200]
        raise ConfigError(f"the breaker at {base} answered {response.status_code}: {error}")
    return answer


def _unknown(answer: dict[str, Any], base: str) -> str:
    """The one line for a close the breaker refused: it never opened that key."""
    known = [str(k) for k in answer.get("known") or []]
    nearest = answer.get("closest")
    line = f"the breaker at {base}: {answer.get('error')}"
    if nearest:
        line += f" (did you mean `{nearest}`?)"
    if not known:
        return line + "; it holds no breaker yet: a kill or rollback webhook opens one"
    return line + f"; give one it holds: {', '.join(known)} (trajwatch breaker show lists all)"


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from trajwatch.breaker.auth import Credentials
    from trajwatch.breaker.check import CheckClient
    from trajwatch.breaker.server import run
    from trajwatch.check_failure import FailurePolicy

    credentials = Credentials.from_settings(settings, hook_without_token=args.hook_without_token)
    policy = FailurePolicy(
        dangerous=args.on_check_failure_dangerous,
        other=args.on_check_failure_other,
        read_only_tools=FailurePolicy.tools(args.read_only_tools),
        settings=("--on-check-failure-dangerous", "--on-check-failure-other"),
        speaker="trajwatch breaker",
    )
    check = (
        CheckClient(
            args.check_url,
            token=credentials.check_token,
            timeout=args.check_timeout,
            max_answer_bytes=args.max_body_bytes,
        )
        if args.check_url is not None
        else None
    )
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s trajwatch breaker %(levelname)s: %(message)s"
    )
    return run(
        host=args.host,
        port=args.port,
        state=args.state,
        credentials=credentials,
        check=check,
        policy=policy,
        max_body_bytes=args.max_body_bytes,
        max_depth=args.max_json_depth,
        langgraph_url=args.langgraph_url,
    )
