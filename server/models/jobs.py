"""Background jobs one replica claims and runs: exports, bulk actions, replay checks."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, utcnow


class JobState(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    canceled = "canceled"


class ClaimableJob:
    """Columns of a job that exactly one replica claims and runs (server/queue/job_queue.py)."""

    claimed_by: Mapped[str | None] = mapped_column(String(128), index=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(TS)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    cancel_requested: Mapped[bool] = mapped_column(default=False)


class ExportJob(ClaimableJob, Base):
    __tablename__ = "export_jobs"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    # a study's export; None for a dataset's (``dataset_id``), whose episodes span studies
    study_id: Mapped[int | None] = mapped_column(
        ForeignKey("studies.id", ondelete="CASCADE"), index=True
    )
    dataset_id: Mapped[int | None] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    state: Mapped[str] = mapped_column(String(16), index=True, default=JobState.queued)
    format: Mapped[str] = mapped_column(String(16), default="tfds")
    selection: Mapped[dict[str, Any]] = mapped_column(JSON)
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    episodes_total: Mapped[int] = mapped_column(Integer, default=0)
    episodes_done: Mapped[int] = mapped_column(Integer, default=0)
    steps_done: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str | None] = mapped_column(Text)
    output_path: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(TS)
    finished_at: Mapped[datetime | None] = mapped_column(TS)


class BulkJob(ClaimableJob, Base):
    """A bulk action over many episodes, run in the background (server/services/review/bulk.py)."""

    __tablename__ = "bulk_jobs"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    state: Mapped[str] = mapped_column(String(16), index=True, default=JobState.queued)
    action: Mapped[str] = mapped_column(String(32))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)  # tags, outcome, the request
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    changed: Mapped[int] = mapped_column(Integer, default=0)
    skipped_recording: Mapped[int] = mapped_column(Integer, default=0)
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(TS)
    finished_at: Mapped[datetime | None] = mapped_column(TS)


class ReplayCheck(ClaimableJob, Base):
    """The verification of one episode by replay, claimed by one replica
    (server/services/jobs/replay_checks.py): one row per episode, queued again when the
    episode must be checked again."""

    __tablename__ = "replay_checks"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), unique=True
    )
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    state: Mapped[str] = mapped_column(String(16), index=True, default=JobState.queued)
    message: Mapped[str | None] = mapped_column(Text)
    # a check that could not run yet (the log still open, the runtime not installed) is
    # queued again from this time on
    retry_at: Mapped[datetime | None] = mapped_column(TS, index=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(TS)
    finished_at: Mapped[datetime | None] = mapped_column(TS)
