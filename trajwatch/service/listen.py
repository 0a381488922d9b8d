"""The port a server of trajwatch listens on: a valid number, and bound before anything starts.

``serve``, ``breaker`` and ``ui`` take ``--port``. :func:`port` is its argparse type, so
``--port 99999`` is refused when the command line is read (a socket would silently take it
modulo 65536 and listen elsewhere). :func:`bind` binds the listening socket as uvicorn and
Streamlit do (``SO_REUSEADDR``, IPv6 when the host has a ``:``) but turns a refusal into a
:class:`~models.errors.ConfigError` — one line saying what and what to do, exit 2 — where
uvicorn logs the raw error and exits 3 and Streamlit prints its own line and exits 1.
The bound socket is handed to the server (uvicorn's ``Server.run(sockets=...)``), so
nothing can take the port between the check and the start; Streamlit binds its own, so
``ui`` checks with :func:`ensure_free` just before it becomes Streamlit.
"""

from __future__ import annotations

import argparse
import errno
import socket

from models.errors import ConfigError

LOWEST = 1
HIGHEST = 65535


def port(text: str) -> int:
    """argparse ``type=`` of ``--port``: a whole number from 1 to 65535.

    >>> port("4318")
    4318
    >>> port("99999")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a port from 1 to 65535, got '99999'
    """
    if not text.strip().isdigit() or not LOWEST <= int(text) <= HIGHEST:
        raise argparse.ArgumentTypeError(
            f"expected a port from {LOWEST} to {HIGHEST}, got {text!r}"
        )
    return int(text)


def bind(host: str, number: int, *, command: str) -> socket.socket:
    """A TCP socket bound to ``host:number`` (not yet listening; the server calls
    ``listen``). A port in use, a privileged port, an address that is not this machine's:
    :class:`ConfigError` naming the port and what to do. ``command`` names the server in
    the message (``serve``, ``breaker``, ``ui``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, number))
    except OSError as exc:
        sock.close()
        raise ConfigError(_refusal(exc, host, number, command)) from exc
    return sock


def ensure_free(host: str, number: int, *, command: str) -> None:
    """Raise what :func:`bind` raises if ``host:number`` cannot be listened on now."""
    bind(host, number, command=command).close()


def _refusal(exc: OSError, host: str, number: int, command: str) -> str:
    where = f"{host}:{number}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {number} is already in use on {host} (another trajwatch {command}?); "
            f"stop what listens there, or choose another port with --port"
        )
    if exc.errno == errno.EACCES:
        return (
            f"listening on {where} needs privileges this user lacks; choose a port above "
            "1023 with --port"
        )
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine; fix --host (127.0.0.1, 0.0.0.0, ...)"
    return f"cannot listen on {where}: {exc.strerror or exc}; fix --host or --port"
