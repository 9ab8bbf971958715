"""A judge's item and answer (feedback studies, docs/feedback.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from server.study_spec import StrictModel


class JudgeAnswerIn(StrictModel):
    """An answer to the item given: ``choice`` (compare: left, right, equal or cant_tell),
    ``rating`` (rate: a whole number on the question's scale) or ``text`` (narrate)."""

    choice: str | None = Field(default=None, max_length=20)
    rating: float | None = Field(default=None, allow_inf_nan=False, ge=-1000, le=1000)
    text: str | None = Field(default=None, max_length=4000)


class JudgeClipOut(BaseModel):
    frames: int = Field(
        description="Frames of the clip: all at once at .../clips/{n}, or one at "
        ".../clips/{n}/frames/{i}."
    )


class JudgeItemOut(BaseModel):
    """The item a judge is shown: nothing in it tells a gold item from another."""

    token: str = Field(description="The judgement's opaque id (its frames and its answer).")
    question: dict[str, Any] = Field(
        description="id, kind (compare / rate / narrate), prompt, scale_min, scale_max, "
        "low_label, high_label."
    )
    clips: list[JudgeClipOut] = Field(description="One clip, or two shown left and right.")
    fps: float
    min_watch_s: float
    wait_s: float = Field(description="Seconds still to watch before an answer counts.")
    number: int = Field(description="This item's place among the participant's judgements.")
    of: int = Field(description="The judgements that complete the participant.")


class JudgeNextOut(BaseModel):
    """The next item (null when the participant is done) and the participant's state."""

    item: JudgeItemOut | None
    participant: dict[str, Any] = Field(description="ParticipantState (docs/protocol.md).")
