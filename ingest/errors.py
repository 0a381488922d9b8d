"""trajwatch's exceptions. One root, so callers can catch everything of ours::

    TrajwatchError
    ├── ConfigError   a setting or file the user gave is wrong; the message says which and how
    ├── InputError    a source path or format cannot be read at all (one bad record is not:
    │                 it becomes a dead letter)
    └── DecodeError   one record cannot be decoded; the pipeline dead-letters it and goes on

Bad *records* never raise out of the pipeline: they become dead letters with the
reason. Only infrastructure failures (database, broker) stop the loop.
"""

from __future__ import annotations


class TrajwatchError(Exception):
    """Root of trajwatch's exceptions."""


class ConfigError(TrajwatchError):
    """A setting, config file or command-line value is wrong."""


class InputError(TrajwatchError):
    """A source cannot be read at all (missing path, unknown format)."""


class DecodeError(TrajwatchError):
    """One record cannot be decoded. ``reason`` is what a person reads in the dead-letter table."""

    def __init__(self, reason: str, *, location: str = "") -> None:
        super().__init__(f"{location}: {reason}" if location else reason)
        self.reason = reason
        self.location = location
