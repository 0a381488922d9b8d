"""What went wrong opening the store, said so that the user can fix it.

:meth:`models.store.Store.open` hands every error raised while it parses the URL, builds
the engine and makes the first connection to :func:`open_error`, which turns it into a
one-line :class:`~models.errors.StoreOpenError` ("what; what to do"). Errors after the
first connection (a server lost mid-run, a failing migration) are infrastructure
failures, not the user's URL, and are left alone.

The texts come from the layers that know: SQLAlchemy's URL parser and plugin loader,
Python's import system, and the driver's connect error — for PostgreSQL libpq's message,
whose ``FATAL:`` prefix marks an answer from the server (login, role, database) as
opposed to a network failure (refused, timed out, unknown host).

>>> from sqlalchemy.exc import ArgumentError
>>> str(open_error("postgres//me@host/db", ArgumentError("Could not parse")))
"cannot read the store URL 'postgres//me@host/db'; write it as sqlite:///path/to/trajwatch.db or postgresql+psycopg://user@host:5432/db"
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from models.errors import StoreOpenError

EXAMPLE_URLS = "sqlite:///path/to/trajwatch.db or postgresql+psycopg://user@host:5432/db"

_PASSWORD = re.compile(r"(//[^:/@\s]*:)[^@\s]*@")


def shown(url: str) -> str:
    """``url`` as it may be printed: the password hidden, even in a URL that does not parse."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return _PASSWORD.sub(r"\1***@", url)


def open_error(url: str, exc: BaseException) -> StoreOpenError:
    """The user-facing error for ``exc``, raised while opening the store at ``url``."""
    where = shown(url)

    def error(message: str) -> StoreOpenError:
        return StoreOpenError(message, url=where)

    parsed = _url(url)
    if isinstance(exc, NoSuchModuleError):  # before ArgumentError: it is one
        driver = parsed.drivername if parsed is not None else url.split(":", 1)[0]
        return error(f"unknown database driver {driver!r} in the store URL; use {EXAMPLE_URLS}")
    if isinstance(exc, ArgumentError):
        return error(f"cannot read the store URL {where!r}; write it as {EXAMPLE_URLS}")
    if isinstance(exc, ImportError):
        module = exc.name or str(exc)
        driver = parsed.drivername if parsed else "the driver"
        return error(
            f"the Python module {module!r} for {driver!r} is not installed; install it "
            "(pip install ...) or use postgresql+psycopg://... (psycopg comes with trajwatch)"
        )
    if isinstance(exc, DBAPIError) and parsed is not None:
        detail = _first_line(str(exc.orig))
        if parsed.get_backend_name() == "sqlite":
            return error(_sqlite(parsed.database or "", detail))
        return error(_postgresql(parsed, detail))
    return error(f"cannot open the store: {_first_line(str(exc))}; check the store URL")


def _sqlite(database: str, detail: str) -> str:
    path = Path(database)
    folder = path.parent
    if not folder.is_dir():
        return (
            f"cannot create the SQLite store {path}: folder {folder} does not exist; "
            f"create it (mkdir -p {folder}) or choose another path"
        )
    if detail.startswith("file is not a database"):
        return (
            f"{path} is not a SQLite database; "
            "point the store URL at a trajwatch store or a new file"
        )
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"cannot open the SQLite store {path}: permission denied; choose a writable path"
    return f"cannot open the SQLite store {path}: {detail}; check the path"


def _postgresql(url: URL, detail: str) -> str:
    at = f"{url.host or 'localhost'}:{url.port or 5432}"
    # libpq: 'connection to server at "h", port p failed: <why>'; the why is what matters.
    why = detail.rsplit(" failed: ", 1)[-1].removeprefix("connection failed: ")
    if why.startswith("FATAL:"):
        why = why.removeprefix("FATAL:").strip()
        hint = "check the user, password and database name in the URL"
        if why.startswith("database ") and why.endswith("does not exist"):
            hint = "create it (createdb) or name an existing database in the URL"
        return f"PostgreSQL at {at} refused the connection: {why}; {hint}"
    if why.startswith("failed to resolve host"):
        return f"cannot connect to PostgreSQL at {at}: unknown host; check the host name in the URL"
    why = why[:1].lower() + why[1:]
    return f"cannot connect to PostgreSQL at {at}: {why}; is the server running?"


def _url(url: str) -> URL | None:
    try:
        return make_url(url)
    except ArgumentError:
        return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite store URL; None for another database, an in-memory SQLite or
    a URL that does not parse (opening it says what is wrong)."""
    parsed = _url(url)
    if parsed is None or parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)
