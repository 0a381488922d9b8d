"""Alembic environment: runs the migrations on the connection :func:`models.migrations.upgrade`
hands over (``config.attributes["connection"]``), or on ``sqlalchemy.url`` otherwise."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from models.tables import Base


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        compare_type=True,
        # SQLite cannot ALTER most things; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    if context.is_offline_mode():
        raise RuntimeError("offline (--sql) migrations are not supported; pass a database URL")
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.connect() as connection:
            _run(connection)
    finally:
        engine.dispose()


# pytest --doctest-modules imports every module; only alembic installs ``context.config``.
if hasattr(context, "config"):
    main()
