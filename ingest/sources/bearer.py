"""Bearer-token authentication for ``serve``'s endpoints (``TRAJWATCH_AUTH_TOKEN``).

Only ``Authorization: Bearer <token>`` authenticates — no cookie, query string or form
field, so nothing a page in a browser can make a browser send (a cross-origin request
with an ``Authorization`` header needs a CORS preflight, which ``serve`` never answers).
The token is compared with :func:`hmac.compare_digest` (the time taken does not say how
much of it matched); a request with no, several or another scheme's ``Authorization``
headers is refused. Without a token configured, every request is allowed.

>>> from starlette.requests import Request
>>> def request(*values: bytes) -> Request:
...     return Request({"type": "http", "headers": [(b"authorization", v) for v in values]})
>>> auth = BearerToken("s3cret-s3cret")
>>> auth.allows(request(b"Bearer s3cret-s3cret")), auth.allows(request(b"bearer s3cret-s3cret"))
(True, True)
>>> auth.allows(request()), auth.allows(request(b"Bearer nope")), auth.allows(request(b"Basic x"))
(False, False, False)
>>> BearerToken(None).allows(request())
True
"""

from __future__ import annotations

import hmac

from starlette.requests import Request

__all__ = ["BearerToken"]


class BearerToken:
    """The one token ``serve``'s protected endpoints require (None: none required)."""

    def __init__(self, token: str | None) -> None:
        self._token = token.encode() if token else None

    @property
    def required(self) -> bool:
        return self._token is not None

    def allows(self, request: Request) -> bool:
        """Whether ``request`` carries the token (always, when none is configured)."""
        if self._token is None:
            return True
        values = request.headers.getlist("authorization")
        return len(values) == 1 and self.matches(values[0])

    def matches(self, value: str) -> bool:
        """Whether one ``authorization`` value (an HTTP header, a gRPC metadata entry) is
        ``Bearer <token>``, compared in constant time (always, when none is configured)."""
        if self._token is None:
            return True
        scheme, _, given = value.strip().partition(" ")
        # headers arrive decoded as latin-1: encoding back gives the bytes that were sent
        candidate = given.strip().encode("latin-1", "replace")
        matched = hmac.compare_digest(candidate, self._token)
        return matched and scheme.lower() == "bearer"
