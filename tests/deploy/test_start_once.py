"""Replicas starting together on one new database: the schema is migrated once, the admin
created once and the sample studies loaded once (real processes, the shipped CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import func, select

from server.core.db import make_engine, make_sessionmaker
from server.core.migrate import current_revision
from server.models import Study, User
from tests.conftest import PG_URL, pg_schema_url
from tests.core.test_migrations import _empty_database

ROOT = Path(__file__).resolve().parents[2]
REPLICAS = 4


def test_replicas_starting_together_migrate_and_load_once(tmp_path):
    url, cleanup = _empty_database(tmp_path)
    try:
        env = {
            **os.environ,
            "STUDIO_DATABASE_URL": url,
            "STUDIO_DATA_ROOT": str(tmp_path / "data"),
            "STUDIO_SECRET_KEY": "test-secret-key-0123456789",
            "STUDIO_ADMIN_PASSWORD": "admin-password-123",
            "STUDIO_STUDIES_DIR": str(ROOT / "studies"),
            "STUDIO_LOAD_SAMPLE_STUDIES": "true",
            "STUDIO_DB_WAIT_S": "30",
        }
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "server.cli", "migrate"],
                env=env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            for _ in range(REPLICAS)
        ]
        outs = [p.communicate(timeout=240) for p in procs]
        assert [p.returncode for p in procs] == [0] * REPLICAS, [err for _, err in outs]
        said = [out for out, _ in outs]
        samples = len(list((ROOT / "studies").glob("*.yaml")))
        assert sum("migrated from empty" in s for s in said) == 1, said
        assert sum("database at head" in s for s in said) == REPLICAS - 1, said
        assert sum(f"; {samples} sample studies loaded" in s for s in said) == 1, said
        assert sum("; 0 sample studies loaded" in s for s in said) == REPLICAS - 1, said

        assert current_revision(url) is not None
        engine = make_engine(url)
        with make_sessionmaker(engine)() as db:
            assert db.scalar(select(func.count(Study.id))) == samples
            assert db.scalar(select(func.count(User.id))) == 1
        engine.dispose()
    finally:
        cleanup()


def test_the_app_connects_as_a_role_that_is_not_the_owner(tmp_path):
    """Compose's split (docs/deploy.md): migrations as the owner, the app as a role that
    reads and writes rows only, set up as docker/initdb/10-app-role.sh does."""
    import uuid

    import pytest
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    from server.core.config import Settings
    from server.services.bootstrap import start_replica

    if not PG_URL:
        pytest.skip("roles are a PostgreSQL matter (STUDIO_TEST_DATABASE_URL)")
    owner_url, cleanup = _empty_database(tmp_path)
    schema = make_url(owner_url).query["options"].split("search_path=")[1].split()[0]
    role = f"app_{uuid.uuid4().hex[:10]}"
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD 'pw' NOSUPERUSER NOCREATEDB"))
        conn.execute(text(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}'))
        conn.execute(text(f'ALTER DEFAULT PRIVILEGES IN SCHEMA "{schema}" '
                          f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}"))  # fmt: skip
        conn.execute(text(f'ALTER DEFAULT PRIVILEGES IN SCHEMA "{schema}" '
                          f"GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {role}"))  # fmt: skip
    app_url = pg_schema_url(
        make_url(PG_URL).set(username=role, password="pw").render_as_string(hide_password=False),
        schema,
    )
    try:
        settings = Settings(
            environment="test", database_url=app_url, migration_database_url=owner_url,
            data_root=tmp_path / "data", secret_key="test-secret-key-0123456789",
            admin_password="admin-password-123", studies_dir=ROOT / "studies",
            _env_file=None,
        )  # fmt: skip
        report = start_replica(settings)
        assert report.migrated_from == "empty" and report.samples_loaded > 0
        engine = make_engine(app_url)
        try:
            with make_sessionmaker(engine)() as db:
                assert db.scalar(select(func.count(User.id))) == 1
                assert (
                    db.scalar(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
                    is False
                )
            with engine.connect() as conn:
                with pytest.raises(Exception, match="permission denied"):
                    conn.execute(text("CREATE TABLE not_allowed (x int)"))
        finally:
            engine.dispose()
    finally:
        cleanup()
        with admin.begin() as conn:
            conn.execute(text(f"DROP OWNED BY {role}"))
            conn.execute(text(f"DROP ROLE {role}"))
        admin.dispose()
