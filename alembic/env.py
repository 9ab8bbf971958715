"""Alembic environment: migrates the database named by the settings (or by the caller)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection

from server import models  # noqa: F401  (registers every table on Base.metadata)
from server.core.config import get_settings
from server.core.db import Base, make_engine

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logging", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _url() -> str:
    return config.attributes.get("database_url") or get_settings().database_url


def run_migrations_offline() -> None:
    """Emit SQL without a connection (``alembic upgrade head --sql``)."""
    context.configure(
        url=_url(), target_metadata=target_metadata, literal_binds=True, compare_type=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate through a live connection (given by the caller or made from the URL)."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=True,
    )
    with _sqlite_foreign_keys_off(connection), context.begin_transaction():
        context.run_migrations()


@contextmanager
def _sqlite_foreign_keys_off(connection: Connection) -> Iterator[None]:
    """SQLite alters a table by copying it and dropping the old one; with foreign keys on,
    that drop would cascade to (or be refused by) the rows pointing at it.

    The pragma only works outside a transaction, so it is set before the migrations start;
    afterwards every reference is checked before foreign keys go back on.
    """
    if connection.dialect.name != "sqlite":
        yield
        return
    was_on = connection.exec_driver_sql("PRAGMA foreign_keys").scalar()
    connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    connection.commit()
    try:
        yield
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise RuntimeError(f"the migration left rows pointing at missing rows: {broken}")
    finally:
        connection.exec_driver_sql(f"PRAGMA foreign_keys={'ON' if was_on else 'OFF'}")
        connection.commit()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
