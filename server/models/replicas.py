"""App replicas sharing the database, the sessions they host, participants' leases."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.core.db import Base
from server.models.base import TS, utcnow


class Replica(Base):
    """An app process sharing the database; alive while ``heartbeat_at`` is recent."""

    __tablename__ = "replicas"

    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    address: Mapped[str] = mapped_column(String(255))  # where it serves (host:port)
    started_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)


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
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class SessionLease(Base):
    """The one live play session a participant has, across every replica
    (server/services/crowd/leases.py): taken atomically as the session starts, released as it
    ends; free once its replica stops heartbeating or its session has ended.

    No foreign keys: taking a lease is one small write on the players' path, and a row of a
    deleted participant or replica is free anyway (and goes with its replica's next start).
    """

    __tablename__ = "session_leases"

    participant_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(String(32), index=True)
    replica_id: Mapped[str] = mapped_column(String(128), index=True)
    taken_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    renewed_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
