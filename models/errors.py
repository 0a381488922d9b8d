"""The root of trajwatch's exceptions, in the lowest layer so that every package (the
store, the detector registry) can raise them. The whole tree, with the classes the other
layers add, is drawn in :mod:`ingest.errors`."""

from __future__ import annotations


class TrajwatchError(Exception):
    """Root of trajwatch's exceptions."""


class UserError(TrajwatchError):
    """Something the user gave is wrong (a flag, a setting, a file, a URL). The message is
    one line: what is wrong, then ``;`` and what to do about it. The command line prints
    it without a traceback and exits 2."""


class StoreOpenError(UserError):
    """The store URL cannot be opened: malformed, unknown database or driver, server
    unreachable, login refused, SQLite folder missing. ``url`` is the URL as shown to the
    user (password hidden)."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url
