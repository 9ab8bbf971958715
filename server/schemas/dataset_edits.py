"""Dataset edits (Create / Update / Public): a trim, relabel or exclusion of a dataset's
episode (a relabel also of a task), and what the preview says of them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from server.models import MAX_DB_INT
from server.schemas.base import Public
from server.study_spec import StrictModel

EditKind = Literal["trim", "relabel", "exclude"]
MAX_TEXT = 2000
# the fields each kind takes (the others must be left out)
FIELDS: dict[str, set[str]] = {
    "trim": {"episode_id", "trim_start", "trim_end"},
    "relabel": {"episode_id", "task_key", "instruction"},
    "exclude": {"episode_id", "reason"},
}


def _text(value: str | None) -> str | None:
    return None if value is None else value.strip()


class EditValues(StrictModel):
    """What a PUT replaces: the kind's own fields (:data:`FIELDS`; the service refuses
    others at their field)."""

    trim_start: int = Field(
        default=0, ge=0, le=MAX_DB_INT, strict=True, description="Trim: RLDS steps dropped first."
    )
    trim_end: int = Field(
        default=0, ge=0, le=MAX_DB_INT, strict=True, description="Trim: RLDS steps dropped last."
    )
    instruction: str | None = Field(
        default=None, max_length=MAX_TEXT, description="Relabel: the new instruction."
    )
    reason: str | None = Field(
        default=None, max_length=MAX_TEXT, description="Exclude: why (required)."
    )

    _strip = field_validator("instruction", "reason")(_text)


class DatasetEditCreate(EditValues):
    """A new edit: its kind, what it edits (an episode of the dataset; a relabel: an episode
    or a task) and its values."""

    kind: EditKind
    episode_id: str | None = Field(
        default=None, min_length=1, max_length=32, description="An episode the dataset selects."
    )
    task_key: str | None = Field(
        default=None, min_length=1, max_length=64,
        description="Relabel only: a task of the dataset's episodes (instead of an episode).",
    )  # fmt: skip


class DatasetEditPublic(Public):
    id: int
    dataset_id: int
    kind: EditKind
    episode_id: str | None
    task_key: str | None
    trim_start: int
    trim_end: int
    instruction: str
    reason: str
    author_id: int
    author_email: str = Field(description="Who made it (or last replaced it).")
    created_at: datetime


class ExcludedEpisode(BaseModel):
    episode_id: str
    study_id: int
    split: Literal["train", "validation", "test"]
    steps: int
    reason: str


class PreviewEdits(BaseModel):
    """What the dataset's edits do to the preview's counts."""

    excluded: list[ExcludedEpisode] = Field(description="Left out, with their reasons.")
    trimmed: int = Field(description="Episodes trimmed.")
    steps_trimmed: int = Field(description="RLDS steps the trims drop.")
    relabelled: dict[str, str] = Field(description="Task id → its new instruction.")
