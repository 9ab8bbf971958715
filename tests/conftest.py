"""Shared fixtures: a migrated database per test (SQLite, or PostgreSQL when
``STUDIO_TEST_DATABASE_URL`` is set), settings, the app and logged-in clients."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from server.core.config import Settings
from server.core.db import Base, make_engine, make_sessionmaker
from server.core.migrate import upgrade_head
from tests.factories import Factory

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("STUDIO_TEST_DATABASE_URL", "")


def pg_schema_url(base: str, schema: str) -> str:
    """``base`` with every connection's search_path set to ``schema``."""
    url = make_url(base)
    return url.set(query={**url.query, "options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database migrated to head once per run: a SQLite file, or a fresh PostgreSQL schema."""
    if PG_URL:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        admin = make_engine(PG_URL)
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = pg_schema_url(PG_URL, schema)
        upgrade_head(url)
        yield url
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
    else:
        path = tmp_path_factory.mktemp("template") / "template.db"
        upgrade_head(f"sqlite:///{path}")
        yield str(path)


@pytest.fixture
def database_url(migrated_template: str, tmp_path: Path) -> Iterator[str]:
    """A migrated, empty database for one test."""
    if PG_URL:
        engine = make_engine(migrated_template)
        names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
        with engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
        engine.dispose()
        yield migrated_template
    else:
        path = tmp_path / "studio.db"
        shutil.copyfile(migrated_template, path)
        yield f"sqlite:///{path}"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Test settings: own database and data root, the repo's sample studies."""
    return Settings(
        environment="test",
        database_url=database_url,
        data_root=tmp_path / "data",
        secret_key="test-secret-key-0123456789",
        studies_dir=ROOT / "studies",
        admin_email="admin@example.com",
        admin_password="admin-password",
        max_body_bytes=256 * 1024,
    )


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    eng = make_engine(settings.database_url)
    yield eng
    eng.dispose()


@pytest.fixture
def db(engine: Engine) -> Iterator[Session]:
    """A session on the test's database."""
    with make_sessionmaker(engine)() as session:
        yield session


@pytest.fixture
def app(settings: Settings):  # type: ignore[no-untyped-def]
    from server.main import create_app

    return create_app(settings)


@pytest.fixture
def client(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """An anonymous client; startup and shutdown run."""
    with TestClient(app) as c:
        yield c


@pytest.fixture
def factory(db: Session, app) -> Iterator[Factory]:  # type: ignore[no-untyped-def]
    """Rows and logged-in clients."""
    made = Factory(db, app)
    yield made
    made.close()
