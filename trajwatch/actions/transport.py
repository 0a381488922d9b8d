"""The webhook's HTTP client: one POST to a destination the SSRF guard pinned.

Why ``http.client`` over an explicit socket, not ``requests``/``urllib3``: the guard's
promise is that the client connects exactly where the guard looked. ``requests`` takes a
URL string, parses it again (its own way: that is how a backslash once sent a kill to
loopback) and resolves the name again (a DNS answer can change in between). One could
pin ``urllib3`` instead — a pool per IP with ``server_hostname``/``assert_hostname`` and a
``Host`` header — but that keeps a second URL parser and a proxy/redirect/retry machinery
in the path that must each be switched off and stay off. Here there is nothing to switch
off: :func:`post` opens the TCP connection itself to one of the
:class:`~trajwatch.actions.ssrf.Pinned` addresses (no DNS, no proxy from the
environment), sends ``Host`` from the parsed target, and for https wraps the socket with
TLS whose server name (SNI) and certificate check are the URL's host name, verified
against the system's CA store (``SSL_CERT_FILE`` to change it) — the same checks a
browser makes, against the name the operator wrote. Redirects are never followed (a 3xx
is an answer like any other). The response body is not read.

Each attempt opens its own connection: webhooks are few (one per action), and a kept-alive
connection would outlive the judgement of the address it was opened to.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from trajwatch.actions.ssrf import Pinned


@dataclass(frozen=True, slots=True)
class Reply:
    """The receiver's answer: status and headers (names in lower case)."""

    status: int
    headers: Mapping[str, str]


def post(
    pinned: Pinned,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout_s: float,
    tls: ssl.SSLContext | None = None,
) -> Reply:
    """POST ``body`` to ``pinned``; its reply. ``timeout_s`` bounds the connect, the TLS
    handshake and each read; ``tls`` overrides the default context (tests trust their
    own CA with it).

    Raises ``TimeoutError`` when the receiver is too slow, another ``OSError`` when no
    pinned address accepts the connection or TLS fails (``ssl.SSLError``: a certificate
    not valid for the host name among them), ``http.client.HTTPException`` for an answer
    that is not HTTP."""
    target = pinned.target
    sock = _connect(pinned, timeout_s)
    connection: http.client.HTTPConnection | None = None
    try:
        if target.scheme == "https":
            context = tls or ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=target.host.rstrip("."))
        connection = http.client.HTTPConnection(target.host, target.port, timeout=timeout_s)
        connection.sock = sock  # connected and judged: http.client never opens another
        sent = {k.lower(): v for k, v in headers.items()}
        sent.update({"host": target.host_header, "connection": "close"})
        connection.request("POST", target.request_target, body=body, headers=sent)
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()})
    finally:
        if connection is not None:
            connection.close()  # the socket and the response's reader of it
        sock.close()


def _connect(pinned: Pinned, timeout_s: float) -> socket.socket:
    """A TCP connection to the first pinned address that accepts one."""
    error: OSError | None = None
    for family, sockaddr in pinned.addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout_s)
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise error or OSError(f"{pinned.target.host} has no address to connect to")
