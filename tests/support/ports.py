"""Loopback ports for tests that start servers: a free one, and whether one listens."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on: bound, then released (another process could take
    it before the caller binds it; on a test machine that race is not seen)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on ``127.0.0.1:port`` now."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True
