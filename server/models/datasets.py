"""Datasets: a designer's named selection of episodes across their own studies, with the split
that divides them into train, validation and test.

``sources`` and ``split`` are the designer's own words (JSON, validated by
``server.schemas.datasets``); which episodes they select is resolved when asked
(``server.services.datasets.preview``), so a dataset follows its studies as they grow.
Releases, trims and exports of a dataset are rows of their own that point here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, utcnow


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
