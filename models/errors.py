"""trajwatch's exceptions, the whole tree. One root, so callers can catch everything of ours::

    TrajwatchError
    ├── UserError      the user gave something wrong: one line "what; what to do", exit 2
    │   ├── ConfigError     a setting, flag or config file (TOML, detector parameters)
    │   │   └── DestinationRefused  a webhook URL the SSRF guard refuses (ambiguous, or
    │   │                           it resolves to an address not allowed)
    │   ├── InputError      a source path or labels file cannot be read at all (one bad
    │   │                   record is not: it becomes a dead letter)
    │   └── StoreOpenError  the store URL cannot be opened (raised by Store.open, which
    │                       translates SQLAlchemy and driver errors)
    └── DecodeError    one record cannot be decoded; the pipeline dead-letters it and goes on

Bad *records* never raise out of the pipeline: they become dead letters with the
reason. Only infrastructure failures (database, broker) stop the loop; they are not
``UserError``: the command line still prints one line, and exits 1.

The tree lives in the lowest layer so that every package (the store, the detector
registry, the decoders, the command line) raises the same family.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class TrajwatchError(Exception):
    """Root of trajwatch's exceptions."""


class UserError(TrajwatchError):
    """Something the user gave is wrong (a flag, a setting, a file, a URL). The message is
    one line: what is wrong, then ``;`` and what to do about it. The command line prints
    it without a traceback and exits 2."""


class ConfigError(UserError):
    """A setting, config file or command-line value is wrong."""


class DestinationRefused(ConfigError):
    """A webhook destination the SSRF guard (:mod:`trajwatch.actions.ssrf`) refuses: its URL
    could be read two ways, or its host is (or resolves to) an address not allowed. The
    message says which, and how to allow it when that is meant."""


class InputError(UserError):
    """A source cannot be read at all (missing path, unknown format, bad labels file)."""


class StoreOpenError(UserError):
    """The store URL cannot be opened: malformed, unknown database or driver, server
    unreachable, login refused, SQLite folder missing. ``url`` is the URL as shown to the
    user (password hidden)."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class DecodeError(TrajwatchError):
    """One record cannot be decoded. ``reason`` is what a person reads in the dead-letter table."""

    def __init__(self, reason: str, *, location: str = "") -> None:
        super().__init__(f"{location}: {reason}" if location else reason)
        self.reason = reason
        self.location = location


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``word`` (difflib's ratio, at least 0.6), or None: the
    suggestion an "unknown name" error makes."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return close[0] if close else None


def did_you_mean(word: str, known: Iterable[str], *, form: str = "`{}`") -> str:
    """The tail of an "unknown name" message: ``" (did you mean `closest`?)"`` (see
    :func:`closest`), else ``""``. ``form`` spells the suggestion (``"[{}]"`` for a table).

    >>> did_you_mean("acitons", ["detectors", "actions", "webhooks"], form="[{}]")
    ' (did you mean [actions]?)'
    >>> did_you_mean("zzz", ["actions"])
    ''
    """
    match = closest(word, known)
    return f" (did you mean {form.format(match)}?)" if match is not None else ""
