"""Schema migrations for the store, run from code (no ``alembic.ini``).

The alembic environment lives next to this file (``env.py``, ``versions/``), so it is
found the same way from a checkout and from an installed wheel. :func:`upgrade` is what
:meth:`models.store.Store.open` calls; :func:`alembic_config` serves tests and the
occasional manual command::

    from alembic import command
    command.revision(alembic_config("sqlite:///dev.db"), "add foo", autogenerate=True)
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, text

SCRIPT_LOCATION = Path(__file__).resolve().parent


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    """An alembic ``Config`` for this package's scripts, bound to ``connection`` (used
    as is, inside its transaction) or else to ``url`` (env.py makes its own engine)."""
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    if url is not None:
        # ConfigParser interpolates "%"; URL-encoded passwords contain it.
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade the database behind ``engine`` to ``revision`` in one transaction.

    Concurrent callers (several workers starting at once) are serialised: SQLite by the
    ``BEGIN IMMEDIATE`` write lock, PostgreSQL by a transaction-scoped advisory lock per
    schema. The second caller then finds the schema current and does nothing.
    """
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            connection.execution_options(sqlite_begin="IMMEDIATE")
        with connection.begin():
            if engine.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext('trajwatch:' || current_schema()))")
                )
            command.upgrade(alembic_config(connection=connection), revision)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at; None for an empty database."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
