"""Datasets: a designer's named selection of episodes across their own studies, with the split
that divides them into train, validation and test.

``sources`` and ``split`` are the designer's own words (JSON, validated by
``server.schemas.datasets``); which episodes they select is resolved when asked
(``server.services.datasets.preview``), so a dataset follows its studies as they grow.
Releases, trims and exports of a dataset are rows of their own that point here.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, utcnow

if TYPE_CHECKING:
    from server.models.users import User


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("owner_id", "name"), NO_ID_REUSE)

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    # [{"study_id": int, "filter": EpisodeFilterIn as JSON}], one per study
    sources: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # {"by": participant / episode / none, "train", "validation", "test": fractions, "seed"}
    split: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)


class DatasetEdit(Base):
    """An edit of a dataset that never changes a recorded value: a ``trim`` of an episode's
    first and last RLDS steps, a ``relabel`` of an episode's (or a task's) instruction, or an
    ``exclude`` of an episode (with its reason). At most one of each kind per episode (and one
    relabel per task): the unique constraints make a second one a 409, not an overwrite; a
    PUT replaces an edit (its author and time become the replacer's)."""

    __tablename__ = "dataset_edits"
    __table_args__ = (
        # NULLs are distinct: a task's relabel has no episode, an episode's edit no task
        UniqueConstraint("dataset_id", "kind", "episode_id", name="uq_dataset_edits_episode"),
        UniqueConstraint("dataset_id", "kind", "task_key", name="uq_dataset_edits_task"),
        NO_ID_REUSE,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(16))  # trim / relabel / exclude
    episode_id: Mapped[str | None] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), nullable=True
    )
    task_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    trim_start: Mapped[int] = mapped_column(Integer, default=0)  # RLDS steps dropped first
    trim_end: Mapped[int] = mapped_column(Integer, default=0)  # RLDS steps dropped last
    instruction: Mapped[str] = mapped_column(Text, default="")
    reason: Mapped[str] = mapped_column(Text, default="")
    author_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    author: Mapped[User] = relationship(lazy="joined")
