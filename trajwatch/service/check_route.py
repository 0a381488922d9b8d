"""``POST /v1/check`` on ``serve``: the HTTP edge of :mod:`trajwatch.service.check`.

Behind ``serve``'s bearer token (``TRAJWATCH_AUTH_TOKEN``; 401 without it, checked before
the body is read: :mod:`ingest.sources.bearer`). Everything else is answered 200 with a
decision, because Claude Code runs a call whose hook answered an error:

- a body over ``check_max_body_bytes`` (by its ``Content-Length``, or once that much
  arrived): the failure policy's decision for an unknown tool, cause ``too_large``;
- no verdict within ``check_timeout_ms`` (the pipeline holding its lock through a long
  commit, a pathological input): the decision for the tool read so far, ``timeout``;
- everything the check itself meets (:func:`trajwatch.service.check.check`).

The check runs in a worker thread (it takes the pipeline's lock and runs detectors); a
timed-out check runs to its end there (its input is bounded), its answer discarded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ingest.pipeline.probe import Probe
from ingest.sources.otlp_http import BodyTooLarge, capped
from trajwatch.check_failure import CheckFailure, CheckMetrics, FailurePolicy
from trajwatch.service.check import Outcome, Seen, check, failed

__all__ = ["check_route"]


def check_route(
    probe: Callable[[str], Probe],
    *,
    policy: FailurePolicy,
    metrics: CheckMetrics,
    max_body_bytes: int,
    timeout_s: float,
) -> Route:
    """The ``POST /v1/check`` route (the token is checked by the app it joins)."""

    async def endpoint(request: Request) -> Response:
        seen = Seen()
        outcome: Outcome
        try:
            data = await capped(request, max_body_bytes)
            outcome = await asyncio.wait_for(
                run_in_threadpool(check, data, probe, policy, seen), timeout_s
            )
        except BodyTooLarge:
            detail = f"a body over {max_body_bytes} bytes (TRAJWATCH_CHECK_MAX_BODY_BYTES)"
            outcome = failed(policy, CheckFailure("too_large", detail), seen)
        except TimeoutError:
            detail = f"no verdict within {timeout_s:g} s (TRAJWATCH_CHECK_TIMEOUT_MS)"
            outcome = failed(policy, CheckFailure("timeout", detail), seen)
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is left to read it
        metrics.count(outcome.decision, outcome.causes)
        return JSONResponse(outcome.answer)

    return Route("/v1/check", endpoint, methods=["POST"])
