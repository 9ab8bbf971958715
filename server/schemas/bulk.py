"""Bulk actions over many episodes: the selection, the action and its background job."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from server.models import JobState
from server.schemas.episodes import EpisodeFilterIn
from server.study_spec import StrictModel

MAX_BULK_IDS = 10_000
MAX_BULK_TAGS = 50


class BulkSelection(StrictModel):
    """Exactly one of: explicit episode ids, or a filter over the study's episodes."""

    episode_ids: list[str] | None = Field(
        default=None, min_length=1, max_length=MAX_BULK_IDS, description="These episodes."
    )
    filter: EpisodeFilterIn | None = Field(default=None, description="Every matching episode.")

    @model_validator(mode="after")
    def _one_of(self) -> BulkSelection:
        if (self.episode_ids is None) == (self.filter is None):
            raise ValueError("give either episode_ids or filter")
        return self


class EpisodeBulkIn(StrictModel):
    selection: BulkSelection
    action: Literal["add_tags", "remove_tags", "delete", "set_outcome", "exclude", "include"]
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=MAX_BULK_TAGS, description="For add_tags, remove_tags."
    )
    outcome: Literal["success", "failure"] | None = Field(
        default=None, description="For set_outcome: the reviewer's outcome; null unsets it."
    )

    @model_validator(mode="after")
    def _tags_when_tagging(self) -> EpisodeBulkIn:
        if self.action in ("add_tags", "remove_tags") and not self.tags:
            raise ValueError(f"{self.action} needs at least one tag")
        if self.action != "set_outcome" and self.outcome is not None:
            raise ValueError("outcome is for set_outcome only")
        return self


class EpisodeBulkOut(BaseModel):
    matched: int = Field(description="Episodes the selection matched in this study.")
    changed: int = Field(description="Episodes changed (tagged, untagged or deleted).")
    skipped_recording: int = Field(default=0, description="Still recording: not deleted.")


class BulkJobPublic(BaseModel):
    """A bulk action running in the background (202 from the bulk route)."""

    id: int
    study_id: int
    state: JobState
    action: str
    total: int = Field(description="Episodes the selection matched.")
    done: int = Field(description="Episodes gone through so far.")
    changed: int
    skipped_recording: int
    progress: float = Field(description="done / total, 0..1.")
    message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
