"""Narrations of an episode's steps (server/services/review/narrations.py): the reviewer's
and the participant's bodies, the answers, the study's JSON export and import rows."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, model_validator

from server.models import MAX_DB_INT
from server.study_spec import StrictModel

MAX_TEXT = 1000  # characters of a narration's text, once stripped
# The body's text may carry blanks around it: the bound that counts (1..MAX_TEXT characters)
# is checked once it is stripped; this one only bounds the body.
_RAW_TEXT = MAX_TEXT + 200
TEXT = f"What happened: 1 to {MAX_TEXT} characters once stripped, plain text, no control character."


class NarrationIn(StrictModel):
    start_step: int = Field(ge=0, le=MAX_DB_INT, description="First narrated step (RLDS index).")
    end_step: int = Field(ge=0, le=MAX_DB_INT, description="Last narrated step (inclusive).")
    text: str = Field(min_length=1, max_length=_RAW_TEXT, description=TEXT)


class NarrationEditIn(StrictModel):
    """A change of the narration the client read at ``version``; absent fields stay."""

    text: str | None = Field(default=None, min_length=1, max_length=_RAW_TEXT, description=TEXT)
    start_step: int | None = Field(default=None, ge=0, le=MAX_DB_INT)
    end_step: int | None = Field(default=None, ge=0, le=MAX_DB_INT)
    version: int = Field(ge=1, le=MAX_DB_INT, description="The version the client read.")

    @model_validator(mode="after")
    def _something(self) -> NarrationEditIn:
        if self.text is None and self.start_step is None and self.end_step is None:
            raise ValueError("give text, start_step and/or end_step")
        return self


class NarrationPublic(BaseModel):
    id: int
    episode_id: str
    start_step: int
    end_step: int
    text: str
    author_id: int | None = Field(description="The reviewer who wrote it (null: the participant).")
    author: str | None = Field(description="That reviewer's email.")
    by_participant: bool = Field(description="The episode's own participant wrote it.")
    version: int = Field(description="Counts edits; an edit or a deletion names it.")
    created_at: datetime
    updated_at: datetime


class NarrationRow(StrictModel):
    """One narration of a study's export; the import takes the same rows back."""

    episode_id: str = Field(min_length=1, max_length=64)
    start_step: int = Field(ge=0, le=MAX_DB_INT)
    end_step: int = Field(ge=0, le=MAX_DB_INT)
    text: str = Field(max_length=_RAW_TEXT, description=TEXT)
    author: str | None = Field(
        default=None, max_length=320, description="The author's email (null: none, or the "
        "participant). Imported: matched to a user, else the importer.",
    )  # fmt: skip
    by_participant: bool = Field(default=False, description="The episode's participant's own.")
    created_at: datetime | None = None
    updated_at: datetime | None = None


class NarrationImportOut(BaseModel):
    imported: int = Field(description="Narrations added.")
    skipped: int = Field(description="Rows identical to a narration already there (skipped).")


class PlayNarrationOut(BaseModel):
    """What the participant's narration form needs of one of their saved episodes."""

    episode_id: str
    steps: int = Field(description="RLDS steps: frames 0..steps-1.")
    instruction: str | None = Field(description="The task instruction it was played under.")
    narrations: list[NarrationPublic] = Field(description="The participant's own, in step order.")
