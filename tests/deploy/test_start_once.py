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
