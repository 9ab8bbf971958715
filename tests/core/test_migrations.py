"""Alembic is the only way the schema is made: it must agree with the models."""

from __future__ import annotations

import uuid

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from server.core.db import Base, make_engine
from server.core.migrate import alembic_config, upgrade_head
from tests.conftest import PG_URL, pg_schema_url


def _empty_database(tmp_path):
    """A brand-new empty database of the kind this run tests (and a cleanup)."""
    if not PG_URL:
        return f"sqlite:///{tmp_path / 'empty.db'}", lambda: None
    schema = f"m_{uuid.uuid4().hex[:12]}"
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))

    def drop() -> None:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

    return pg_schema_url(PG_URL, schema), drop


def test_upgrade_head_then_models_and_migrations_agree(tmp_path):
    url, cleanup = _empty_database(tmp_path)
    try:
        upgrade_head(url)
        engine = make_engine(url)
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(context, Base.metadata)
            tables = set(inspect(conn).get_table_names())
        engine.dispose()
        assert diff == []
        assert {t.name for t in Base.metadata.sorted_tables} <= tables
    finally:
        cleanup()


def test_downgrade_to_base_and_up_again(tmp_path):
    url, cleanup = _empty_database(tmp_path)
    try:
        config = alembic_config(url)
        command.upgrade(config, "head")
        command.downgrade(config, "base")
        engine = make_engine(url)
        with engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) <= {"alembic_version"}
        command.upgrade(config, "head")
        with engine.connect() as conn:
            assert "episodes" in inspect(conn).get_table_names()
        engine.dispose()
    finally:
        cleanup()


def test_filter_columns_are_indexed(tmp_path):
    url, cleanup = _empty_database(tmp_path)
    try:
        upgrade_head(url)
        engine = make_engine(url)
        with engine.connect() as conn:
            insp = inspect(conn)
            indexed = {col for ix in insp.get_indexes("episodes") for col in ix["column_names"]}
        engine.dispose()
        assert {"study_id", "status", "env_key", "participant_id", "started_at"} <= indexed
    finally:
        cleanup()
