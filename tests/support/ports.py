"""Loopback ports for tests that start servers: a free one, and whether one listens."""

from __future__ import annotations

import socket

from trajwatch.service.spawned import free_port

__all__ = ["free_port", "listening"]


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on ``127.0.0.1:port`` now."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
    except OSError:
        return False
    return True
