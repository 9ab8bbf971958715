"""First start: migrate, create the first admin, load the sample studies."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.core.config import Settings
from server.core.db import make_engine, make_sessionmaker
from server.core.migrate import current_revision, upgrade_head
from server.core.startup import startup_lock, wait_for_database
from server.models import Role, Study, User
from server.services import users
from server.services.live import replicas
from server.services.studies import studies, study_files

log = logging.getLogger(__name__)


def load_sample_studies(db: Session, folder: Path, owner_id: int) -> list[Study]:
    """Import every ``*.yaml`` in ``folder`` as a draft owned by ``owner_id``."""
    loaded = []
    for path in sorted(Path(folder).glob("*.yaml")):
        loaded.append(studies.create_study(db, owner_id, study_files.load_file(path)))
    return loaded


def bootstrap(settings: Settings, db: Session) -> str | None:
    """Admin, interrupted episodes, sample studies; returns a generated admin password."""
    password = users.ensure_admin(db, settings.admin_email, settings.admin_password)
    # only episodes no live replica hosts: a second process on the same database must not
    # abandon the first one's players (docs/deploy.md, "Replicas, heartbeats and failover")
    recovered = replicas.recover_at_start(db, settings.replica_dead_after_s, settings.replica_id)
    if recovered:
        log.info("marked %d episodes interrupted by a server stop as abandoned", recovered)
    if settings.load_sample_studies and not db.scalar(select(func.count(Study.id))):
        admin = db.scalar(select(User).where(User.role == Role.admin).order_by(User.id))
        if admin is not None and settings.studies_dir.is_dir():
            loaded = load_sample_studies(db, settings.studies_dir, admin.id)
            log.info("loaded %d sample studies from %s", len(loaded), settings.studies_dir)
    return password


def prepare(settings: Settings) -> None:
    """Create the data root and migrate the database to head (under the start-up lock)."""
    settings.data_root.mkdir(parents=True, exist_ok=True)
    owner = settings.migration_database_url or settings.database_url
    with startup_lock(owner):
        upgrade_head(owner)


@dataclass(frozen=True)
class StartReport:
    """What one replica's start did: ``migrated_from`` is None when it found the schema at
    head (another replica migrated it); ``samples_loaded`` is 0 when studies existed."""

    migrated_from: str | None
    samples_loaded: int
    admin_password: str | None


def start_replica(settings: Settings) -> StartReport:
    """Wait for the database, then migrate and bootstrap once across replicas starting
    together (:mod:`server.core.startup`)."""
    settings.data_root.mkdir(parents=True, exist_ok=True)
    url = settings.database_url
    owner = settings.migration_database_url or url  # migrations may need the owner's rights
    wait_for_database(owner, settings.db_wait_s)
    if owner != url:
        wait_for_database(url, settings.db_wait_s)
    with startup_lock(owner):
        before = current_revision(owner)
        upgrade_head(owner)
        after = current_revision(owner)
        engine = make_engine(url)
        try:
            with make_sessionmaker(engine)() as db:
                studies_before = db.scalar(select(func.count(Study.id))) or 0
                password = bootstrap(settings, db)
                studies_after = db.scalar(select(func.count(Study.id))) or 0
        finally:
            engine.dispose()
    return StartReport(
        migrated_from=None if before == after else (before or "empty"),
        samples_loaded=studies_after - studies_before,
        admin_password=password,
    )
