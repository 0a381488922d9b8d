"""Shared pytest fixtures. Each section belongs to one layer; add yours in its own section."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from models.store import Store

# ---------------------------------------------------------------------------------------
# Database fixtures (models/): `dialect`, `db_url`, `store`.
#
# Every DB test runs on SQLite (a file in tmp_path) and on PostgreSQL (a fresh schema per
# test, dropped afterwards, so tests are isolated and can run in parallel). PostgreSQL
# tests carry the `postgres` marker and FAIL, not skip, when the server is down: CI
# starts it, and a silently skipped dialect is how the two drift apart.
# ---------------------------------------------------------------------------------------

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PG_START = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def dialect(request: pytest.FixtureRequest) -> str:
    """The database the test runs on: ``"sqlite"`` or ``"postgresql"``."""
    return str(request.param)


@pytest.fixture
def db_url(dialect: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A URL to an empty database of ``dialect`` that no other test sees."""
    if dialect == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'trajwatch.db'}"
        return
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
    schema = f"t_{uuid.uuid4().hex[:16]}"
    unreachable = None
    try:
        with admin.connect() as connection:
            connection.execute(text(f"CREATE SCHEMA {schema}"))
    except OperationalError as error:
        unreachable = error.orig
    if unreachable is not None:  # outside the except: no chained traceback to wade through
        admin.dispose()
        pytest.fail(
            f"PostgreSQL is not reachable at {PG_URL}: {unreachable}\n"
            f"Start it with:  {PG_START}\n"
            "or deselect these tests with  -m 'not postgres'",
            pytrace=False,
        )
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A :class:`Store` on a fresh, fully migrated database of ``dialect``."""
    opened = Store.open(db_url)
    try:
        yield opened
    finally:
        opened.close()


# ---------------------------------------------------------------------------------------
# (end of database fixtures)
# ---------------------------------------------------------------------------------------
