"""Tables. Everything a designer filters on is a real, indexed column.

Schemas (Create / Update / Public) live in ``server/schemas.py``; these are rows only.
"""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.core.db import Base

# Row ids are INTEGER columns (32-bit on PostgreSQL): larger ids are refused instead of
# overflowing in the database.
MAX_DB_INT = 2**31 - 1


# Integer ids appear in URLs, exports and answers: a deleted row's id must never come back
# for another row. PostgreSQL sequences never go back; SQLite needs AUTOINCREMENT for that
# (it otherwise reuses the largest id after a delete). Every table with an integer id has it.
NO_ID_REUSE = {"sqlite_autoincrement": True}


def is_row_id(text: str) -> bool:
    """``text`` is the decimal id of a row (fits the 32-bit INTEGER columns of PostgreSQL)."""
    return text.isascii() and text.isdigit() and int(text) <= MAX_DB_INT


def utcnow() -> datetime:
    """Timezone-aware now, the only clock rows use."""
    return datetime.now(UTC)


def new_uuid() -> str:
    """A globally unique id as text (episodes, play sessions)."""
    return uuid.uuid4().hex


class Role(enum.StrEnum):
    admin = "admin"
    designer = "designer"


class Platform(enum.StrEnum):
    """How a participant arrived: a platform's URL parameters, a typed id, or no id."""

    prolific = "prolific"
    mturk = "mturk"
    direct = "direct"
    anonymous = "anonymous"


class StudyState(enum.StrEnum):
    draft = "draft"
    active = "active"
    paused = "paused"
    closed = "closed"


class EpisodeStatus(enum.StrEnum):
    recording = "recording"
    completed = "completed"
    rejected = "rejected"
    canceled = "canceled"
    abandoned = "abandoned"
    failed = "failed"


class Outcome(enum.StrEnum):
    success = "success"
    failure = "failure"


class JobState(enum.StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    canceled = "canceled"


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every database (SQLite drops the zone on its own)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value


_TS = UTCDateTime()


class User(Base):
    __tablename__ = "users"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True, index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16), index=True, default=Role.designer)
    is_active: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)


class AuthSession(Base):
    """A login: the cookie holds the token, the table only its SHA-256."""

    __tablename__ = "auth_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(_TS, index=True)


class Study(Base):
    __tablename__ = "studies"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    state: Mapped[str] = mapped_column(String(16), index=True, default=StudyState.draft)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    permalink_token: Mapped[str | None] = mapped_column(String(64), unique=True, index=True)
    # the study this one is a new version of (its episodes mean something else)
    parent_study_id: Mapped[int | None] = mapped_column(
        ForeignKey("studies.id", ondelete="SET NULL", name="fk_studies_parent_study_id_studies"),
        index=True,
    )
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, onupdate=utcnow, index=True)

    environments: Mapped[list[StudyEnvironment]] = relationship(
        back_populates="study",
        order_by="StudyEnvironment.position",
        cascade="all, delete-orphan",
    )
    parent: Mapped[Study | None] = relationship(
        remote_side="Study.id", back_populates="versions", foreign_keys=[parent_study_id]
    )
    versions: Mapped[list[Study]] = relationship(
        back_populates="parent", order_by="Study.id", passive_deletes=True
    )


class StudyEnvironment(Base):
    """One environment of a study, mirrored from its spec so episodes can point at it."""

    __tablename__ = "study_environments"
    __table_args__ = (UniqueConstraint("study_id", "env_key"), NO_ID_REUSE)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    env_key: Mapped[str] = mapped_column(String(64), index=True)
    name: Mapped[str] = mapped_column(String(200))
    source_kind: Mapped[str] = mapped_column(String(16), index=True)
    source_ref: Mapped[str] = mapped_column(String(200), index=True)
    mode: Mapped[str] = mapped_column(String(8))
    # median length of its completed episodes (server/services/quality.py keeps it current)
    median_steps: Mapped[float | None] = mapped_column(Float)

    study: Mapped[Study] = relationship(back_populates="environments")


class Participant(Base):
    """A crowd worker in one study, known by an external id (Prolific, MTurk, ...)."""

    __tablename__ = "participants"
    __table_args__ = (UniqueConstraint("study_id", "external_id"), NO_ID_REUSE)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(_TS)
    # where they came from (Platform) and the platform's own ids, for approvals and bonuses
    platform: Mapped[str] = mapped_column(
        String(16), index=True, default="direct", server_default="direct"
    )
    platform_study_id: Mapped[str | None] = mapped_column(String(200))  # STUDY_ID / hitId
    # Prolific SESSION_ID / MTurk assignmentId
    platform_session_id: Mapped[str | None] = mapped_column(String(200))
    submit_to: Mapped[str | None] = mapped_column(String(500))  # MTurk turkSubmitTo
    assigned_env: Mapped[str | None] = mapped_column(String(64))  # balanced assignment
    consented_at: Mapped[datetime | None] = mapped_column(_TS)
    screened_out_at: Mapped[datetime | None] = mapped_column(_TS)
    # done because the study filled up before they finished (crowd.full_code, not completion)
    full_at: Mapped[datetime | None] = mapped_column(_TS)
    # sha256 of the secret the browser that earned their code keeps (codes go only to it)
    browser_key_hash: Mapped[str | None] = mapped_column(String(64))
    last_seen_at: Mapped[datetime | None] = mapped_column(_TS)
    completion_shown_at: Mapped[datetime | None] = mapped_column(_TS)
    # made by a designer's "preview as a participant": its episodes are test plays, and it is
    # in no participants list, count or quota
    is_test: Mapped[bool] = mapped_column(default=False, server_default=false())


class PlaySession(Base):
    """One sitting of a player (participant or designer test-playing)."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_uuid)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    participant_id: Mapped[int | None] = mapped_column(
        ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    started_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(_TS)


class Episode(Base):
    __tablename__ = "episodes"
    __table_args__ = (
        Index("ix_episodes_study_status_env", "study_id", "status", "env_key"),
        # the environment's median length (server/services/quality.py)
        Index("ix_episodes_env_status_steps", "study_env_id", "status", "steps"),
        # the list's sorts within a study (keyset order: the column, then id)
        Index("ix_episodes_study_latency_p50", "study_id", "latency_p50_ms", "id"),
        Index("ix_episodes_study_latency_p99", "study_id", "latency_p99_ms", "id"),
        Index("ix_episodes_study_started", "study_id", "started_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_uuid)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    study_env_id: Mapped[int] = mapped_column(ForeignKey("study_environments.id"), index=True)
    env_key: Mapped[str] = mapped_column(String(64), index=True)
    session_id: Mapped[str | None] = mapped_column(
        ForeignKey("sessions.id", ondelete="SET NULL"), index=True
    )
    participant_id: Mapped[int | None] = mapped_column(
        ForeignKey("participants.id", ondelete="SET NULL"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    # a designer's test play: kept out of exports, counts, quotas and review unless asked for
    is_test: Mapped[bool] = mapped_column(default=False, server_default=false(), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True, default=EpisodeStatus.recording)
    end_reason: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    seed: Mapped[int | None] = mapped_column(Integer)
    steps: Mapped[int] = mapped_column(Integer, default=0, index=True)
    total_reward: Mapped[float] = mapped_column(Float, default=0.0, index=True)
    started_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(_TS, index=True)
    duration_s: Mapped[float | None] = mapped_column(Float)
    storage_path: Mapped[str] = mapped_column(String(500))
    latency_p50_ms: Mapped[float | None] = mapped_column(Float)
    latency_p95_ms: Mapped[float | None] = mapped_column(Float)
    frames_dropped: Mapped[int] = mapped_column(Integer, default=0)
    # the app process (replica) hosting a ``recording`` episode: when its heartbeat stops,
    # another replica abandons the episode (server/services/replicas.py)
    replica_id: Mapped[str | None] = mapped_column(String(128), index=True)
    # quality signals (server/services/quality.py); quality_at NULL: not computed
    latency_p99_ms: Mapped[float | None] = mapped_column(Float)
    idle_share: Mapped[float | None] = mapped_column(Float)
    inputs_per_s: Mapped[float | None] = mapped_column(Float)
    quality_at: Mapped[datetime | None] = mapped_column(_TS)
    # "success" / "failure" (Outcome) or None: the player's answer at save time, and the
    # reviewer's, which wins (effective_outcome)
    player_outcome: Mapped[str | None] = mapped_column(String(16))
    outcome: Mapped[str | None] = mapped_column(String(16))
    # kept out of exports unless an export asks for excluded episodes
    excluded: Mapped[bool] = mapped_column(Boolean, default=False, index=True)

    tags: Mapped[list[EpisodeTag]] = relationship(cascade="all, delete-orphan")
    step_tags: Mapped[list[StepTag]] = relationship(cascade="all, delete-orphan")
    notes: Mapped[list[Note]] = relationship(cascade="all, delete-orphan")


class EpisodeTag(Base):
    __tablename__ = "episode_tags"
    __table_args__ = (UniqueConstraint("episode_id", "name"), NO_ID_REUSE)

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64), index=True)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)


class StepTag(Base):
    """A tag on one step (start == end) or an inclusive range of steps."""

    __tablename__ = "step_tags"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64), index=True)
    start_step: Mapped[int] = mapped_column(Integer)
    end_step: Mapped[int] = mapped_column(Integer)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)


class Note(Base):
    __tablename__ = "notes"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), index=True
    )
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)


class EpisodeDeletion(Base):
    """A record that someone deleted episodes of a study (the rows themselves are gone)."""

    __tablename__ = "episode_deletions"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    count: Mapped[int] = mapped_column(Integer)
    deleted_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, index=True)


class LoginFailure(Base):
    """A failed login, counted against its key while it is in the login limits' window.

    Shared by every replica through the database (server/core/login_limit.py); rows older
    than the window are deleted as logins fail.
    """

    __tablename__ = "login_failures"
    __table_args__ = (Index("ix_login_failures_key_at", "key", "at"), NO_ID_REUSE)

    # 64-bit on PostgreSQL: a long password spray must not run out of ids (they are never
    # reused). SQLite's AUTOINCREMENT needs its own INTEGER, which is 64-bit there anyway.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255))  # account:<email> or address:<ip>
    at: Mapped[datetime] = mapped_column(_TS, index=True)


class ClaimableJob:
    """Columns of a job that exactly one replica claims and runs (server/core/job_queue.py)."""

    claimed_by: Mapped[str | None] = mapped_column(String(128), index=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(_TS)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    cancel_requested: Mapped[bool] = mapped_column(default=False)


class ExportJob(ClaimableJob, Base):
    __tablename__ = "export_jobs"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
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
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(_TS)
    finished_at: Mapped[datetime | None] = mapped_column(_TS)


class Replica(Base):
    """An app process sharing the database; alive while ``heartbeat_at`` is recent."""

    __tablename__ = "replicas"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    address: Mapped[str] = mapped_column(String(255))  # where it serves (host:port)
    started_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, index=True)


class LiveSessionRow(Base):
    """A play session a replica hosts now, as its last heartbeat tick saw it.

    Only the replica is a foreign key: a study or player deleted meanwhile must not make a
    replica's heartbeat transaction fail (its row goes at the next tick anyway).
    """

    __tablename__ = "live_sessions"

    session_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    replica_id: Mapped[str] = mapped_column(
        ForeignKey("replicas.id", ondelete="CASCADE"), index=True
    )
    study_id: Mapped[int] = mapped_column(Integer, index=True)
    participant_id: Mapped[int | None] = mapped_column(Integer)
    user_id: Mapped[int | None] = mapped_column(Integer)
    env_key: Mapped[str | None] = mapped_column(String(64))
    phase: Mapped[str] = mapped_column(String(16))  # waiting, playing, paused, ended
    has_worker: Mapped[bool] = mapped_column(Boolean, default=False)
    episode_id: Mapped[str | None] = mapped_column(String(32))
    step: Mapped[int | None] = mapped_column(Integer)
    fps: Mapped[float | None] = mapped_column(Float)
    latency_p50_ms: Mapped[float | None] = mapped_column(Float)
    frames_dropped: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)


class SessionLease(Base):
    """The one live play session a participant has, across every replica
    (server/services/leases.py): taken atomically as the session starts, released as it
    ends; free once its replica stops heartbeating or its session has ended.

    No foreign keys: taking a lease is one small write on the players' path, and a row of a
    deleted participant or replica is free anyway (and goes with its replica's next start).
    """

    __tablename__ = "session_leases"

    participant_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(String(32), index=True)
    replica_id: Mapped[str] = mapped_column(String(128), index=True)
    taken_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)
    renewed_at: Mapped[datetime] = mapped_column(_TS, default=utcnow)


class BulkJob(ClaimableJob, Base):
    """A bulk action over many episodes, run in the background (server/services/bulk.py)."""

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
    created_at: Mapped[datetime] = mapped_column(_TS, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(_TS)
    finished_at: Mapped[datetime | None] = mapped_column(_TS)
