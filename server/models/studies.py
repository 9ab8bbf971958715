"""Studies and the environments mirrored from their specs."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, utcnow


class StudyState(enum.StrEnum):
    draft = "draft"
    active = "active"
    paused = "paused"
    closed = "closed"


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
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow, index=True)

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

    @property
    def kind(self) -> str:
        """``play`` or ``feedback``: what its participants do (the spec's ``kind``)."""
        return str(self.spec.get("kind", "play"))


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
    # median length of its completed episodes (server/services/review/quality.py keeps it current)
    median_steps: Mapped[float | None] = mapped_column(Float)

    study: Mapped[Study] = relationship(back_populates="environments")
