"""trajwatch's exceptions. One root, so callers can catch everything of ours::

    TrajwatchError                       (models.errors)
    ├── UserError      the user gave something wrong: one line "what; what to do", exit 2
    │   ├── ConfigError     a setting, flag or config file (TOML, detector parameters)
    │   ├── InputError      a source path or labels file cannot be read at all (one bad
    │   │                   record is not: it becomes a dead letter)
    │   └── StoreOpenError  the store URL cannot be opened (models.errors; raised by
    │                       Store.open, which translates SQLAlchemy and driver errors)
    └── DecodeError    one record cannot be decoded; the pipeline dead-letters it and goes on

Bad *records* never raise out of the pipeline: they become dead letters with the
reason. Only infrastructure failures (database, broker) stop the loop; they are not
``UserError``: the command line still prints one line, and exits 1.

The root and ``UserError`` live in :mod:`models.errors`, the lowest layer, so that the
store and the detector registry raise the same family; they are re-exported here.
"""

from __future__ import annotations

from models.errors import StoreOpenError, TrajwatchError, UserError

__all__ = [
    "ConfigError",
    "DecodeError",
    "InputError",
    "StoreOpenError",
    "TrajwatchError",
    "UserError",
]


class ConfigError(UserError):
    """A setting, config file or command-line value is wrong."""


class InputError(UserError):
    """A source cannot be read at all (missing path, unknown format, bad labels file)."""


class DecodeError(TrajwatchError):
    """One record cannot be decoded. ``reason`` is what a person reads in the dead-letter table."""

    def __init__(self, reason: str, *, location: str = "") -> None:
        super().__init__(f"{location}: {reason}" if location else reason)
        self.reason = reason
        self.location = location
