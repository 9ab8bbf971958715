"""Start-up of a replica among several: wait for the database, then migrate and load the
first data under one lock, so that replicas starting together migrate once.

PostgreSQL: a session-level advisory lock (``pg_advisory_lock``) on a connection of its own,
held while Alembic upgrades and the bootstrap runs; the next replica finds the schema at head
and the sample studies loaded. SQLite (one machine): an exclusive ``flock`` on a file beside
the database.
"""

from __future__ import annotations

import fcntl
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from server.core.db import make_engine

log = logging.getLogger(__name__)

# Any constant both replicas agree on: the first 8 bytes of "rlds-studio:startup" as an int.
ADVISORY_KEY = int.from_bytes(b"rldsstrt", "big") >> 1
LOCK_FILE_SUFFIX = ".startup-lock"


def wait_for_database(url: str, timeout_s: float) -> None:
    """Return once ``url`` answers a query; raise after ``timeout_s`` seconds without."""
    deadline = time.monotonic() + timeout_s
    engine = make_engine(url, poolclass=NullPool)
    try:
        while True:
            try:
                with engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
                return
            except Exception as exc:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"the database does not answer ({exc})") from exc
                log.info("waiting for the database (%s)", type(exc).__name__)
                time.sleep(1.0)
    finally:
        engine.dispose()


def _sqlite_lock_path(url: str) -> Path:
    database = make_url(url).database or ""
    if database in ("", ":memory:"):
        return Path(".rlds-studio" + LOCK_FILE_SUFFIX).resolve()
    return Path(database + LOCK_FILE_SUFFIX)


@contextmanager
def startup_lock(url: str) -> Iterator[None]:
    """Hold the database-wide start-up lock (one replica at a time inside)."""
    if url.startswith("sqlite"):
        path = _sqlite_lock_path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    engine = make_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_KEY})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_KEY})
                conn.commit()
    finally:
        engine.dispose()
