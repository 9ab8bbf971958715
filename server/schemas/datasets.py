"""Datasets: a designer's named selection of episodes across their studies and its split
(Create / Update / Public), and the preview of what it selects."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from server.models import MAX_DB_INT, EpisodeStatus
from server.schemas.base import Public
from server.schemas.dataset_edits import PreviewEdits
from server.schemas.episodes import EpisodeFilterIn
from server.study_spec import StrictModel

MAX_SOURCES = 50
SplitBy = Literal["participant", "episode", "none"]
SplitName = Literal["train", "validation", "test"]


class DatasetFilterIn(EpisodeFilterIn):
    """A source's episodes: the episodes page's filter, but (as exports) completed episodes
    by default and excluded ones left out unless ``excluded`` is null (both) or true."""

    statuses: list[EpisodeStatus] = Field(
        default_factory=lambda: [EpisodeStatus.completed],
        description="Episode statuses (default: completed).",
    )
    excluded: bool | None = Field(
        default=False,
        description="false (default): leave excluded episodes out; true: only them; null: both.",
    )


class DatasetSource(StrictModel):
    """One study of the designer's and which of its episodes the dataset takes."""

    study_id: int = Field(ge=1, le=MAX_DB_INT, description="A study of yours (once per dataset).")
    filter: DatasetFilterIn = Field(default_factory=DatasetFilterIn)


def _fraction(value: float) -> float:
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError("a fraction from 0 to 1")
    return value


class DatasetSplit(StrictModel):
    """How the episodes divide into train, validation and test (docs/export.md, "Datasets
    and splits"): the fractions add up to 1; the seed makes the division repeatable."""

    by: SplitBy = Field(
        default="participant",
        description="participant: all of a participant's episodes in one split; episode: "
        "each episode on its own; none: every episode in train.",
    )
    train: float = Field(default=0.8, description="Fraction of episodes (0-1).")
    validation: float = Field(default=0.1, description="Fraction of episodes (0-1).")
    test: float = Field(default=0.1, description="Fraction of episodes (0-1).")
    seed: int = Field(default=0, ge=0, le=MAX_DB_INT, strict=True)

    _fractions = field_validator("train", "validation", "test")(_fraction)

    @model_validator(mode="after")
    def _sum_is_one(self) -> DatasetSplit:
        total = self.train + self.validation + self.test
        if abs(total - 1) > 1e-6:
            raise PydanticCustomError(
                "value_error",
                "train, validation and test must add up to 1 (they add up to {total})",
                {"total": round(total, 6), "path": ["train"]},
            )
        return self

    def fractions(self) -> dict[str, float]:
        return {"train": self.train, "validation": self.validation, "test": self.test}


def _name(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("give the dataset a name")
    if any(ord(c) < 32 for c in value):
        raise ValueError("a name is one line of text")
    return value


class DatasetCreate(StrictModel):
    name: str = Field(max_length=200, description="Unique among your datasets.")
    description: str = Field(default="", max_length=10_000)
    sources: list[DatasetSource] = Field(
        min_length=1, max_length=MAX_SOURCES, description="One or more of your studies."
    )
    split: DatasetSplit = Field(default_factory=DatasetSplit)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return _name(value)


class DatasetUpdate(StrictModel):
    """The fields to change; absent ones stay."""

    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=10_000)
    sources: list[DatasetSource] | None = Field(default=None, min_length=1, max_length=MAX_SOURCES)
    split: DatasetSplit | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str | None) -> str | None:
        return None if value is None else _name(value)


class DatasetPublic(Public):
    id: int
    owner_id: int
    name: str
    description: str
    sources: list[DatasetSource]
    split: DatasetSplit
    created_at: datetime
    updated_at: datetime


class SplitCounts(BaseModel):
    train: int = 0
    validation: int = 0
    test: int = 0


class CountRow(BaseModel):
    """Episodes and steps of one study, environment, task or participant, per split."""

    key: str = Field(description='Study id, environment key, task id ("": none), agent id.')
    label: str = Field(description='What the page shows (a study\'s name, "no task"...).')
    episodes: int
    steps: int
    per_split: SplitCounts = Field(description="Episodes per split.")
    relabel: str | None = Field(
        default=None, description="Tasks only: the instruction a relabel gives it (None: none)."
    )


class SplitTotal(BaseModel):
    split: SplitName
    fraction: float = Field(description="The fraction asked for.")
    episodes: int
    steps: int
    participants: int
    share: float = Field(description="Its share of the dataset's episodes (0 when empty).")


class EpisodeSplit(BaseModel):
    episode_id: str
    study_id: int
    split: SplitName
    task_key: str | None = None
    recorded_steps: int = Field(default=0, description="Its RLDS steps as recorded.")
    steps: int = Field(default=0, description="Its RLDS steps as exported (after its trim).")
    trim_start: int = 0
    trim_end: int = 0
    relabel: str | None = Field(
        default=None, description="Its instruction as a relabel (its own or its task's) sets it."
    )


class ParticipantRow(BaseModel):
    participant: str = Field(description="The pseudonymous agent id exports write.")
    split: SplitName
    episodes: int
    steps: int


class DatasetPreviewPublic(BaseModel):
    """What a dataset selects now and how its split divides it. Steps are RLDS steps (one
    per observation, as exports write them: actions + 1 per episode)."""

    dataset_id: int
    split_by: SplitBy
    seed: int
    episodes: int
    steps: int
    participants: int
    message: str | None = Field(description="Said when the selection is empty.")
    splits: list[SplitTotal]
    studies: list[CountRow]
    environments: list[CountRow]
    tasks: list[CountRow]
    by_participant: list[ParticipantRow]
    assignments: list[EpisodeSplit] = Field(
        description="Every episode's split, in the dataset's order (study, start, id); "
        "the edits' exclusions left out (they are in `edits.excluded`)."
    )
    edits: PreviewEdits = Field(description="What the dataset's edits change.")
