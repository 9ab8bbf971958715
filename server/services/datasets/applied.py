"""A dataset's edits by what they edit (:class:`Applied`), as the preview and exports apply
them (the edits' rows and checks: :mod:`server.services.datasets.edits`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Dataset, DatasetEdit, Episode


@dataclass(frozen=True)
class Applied:
    """A dataset's edits by what they edit."""

    excluded: dict[str, str] = field(default_factory=dict)  # episode id -> reason
    trims: dict[str, tuple[int, int]] = field(default_factory=dict)  # episode id -> start, end
    by_episode: dict[str, str] = field(default_factory=dict)  # episode id -> instruction
    by_task: dict[str, str] = field(default_factory=dict)  # task key -> instruction

    def instruction(self, episode: Episode) -> str | None:
        """The relabelled instruction of ``episode`` (its own, else its task's), or None."""
        own = self.by_episode.get(episode.id)
        if own is not None:
            return own
        return self.by_task.get(episode.task_key) if episode.task_key else None

    def trim(self, episode_id: str) -> tuple[int, int]:
        return self.trims.get(episode_id, (0, 0))


def edits_of(db: Session, dataset: Dataset) -> list[DatasetEdit]:
    """The dataset's edits, oldest first."""
    query = select(DatasetEdit).where(DatasetEdit.dataset_id == dataset.id)
    return list(db.scalars(query.order_by(DatasetEdit.id)))


def applied(db: Session, dataset: Dataset) -> Applied:
    """The dataset's edits, by episode and task."""
    out = Applied()
    for e in edits_of(db, dataset):
        if e.kind == "exclude" and e.episode_id:
            out.excluded[e.episode_id] = e.reason
        elif e.kind == "trim" and e.episode_id:
            out.trims[e.episode_id] = (e.trim_start, e.trim_end)
        elif e.kind == "relabel" and e.episode_id:
            out.by_episode[e.episode_id] = e.instruction
        elif e.kind == "relabel" and e.task_key:
            out.by_task[e.task_key] = e.instruction
    return out
