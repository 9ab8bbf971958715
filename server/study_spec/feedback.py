"""A feedback study's part of the format: what its participants judge instead of play.

A feedback study draws *items* from recorded episodes of other studies (``source``): a clip
of one episode (``rate``, ``narrate``) or two clips of one environment and task side by side
(``compare``). Each item is judged by up to ``judgements_per_item`` participants; ``gold``
items with a known answer are mixed in at ``gold_rate`` and a participant whose gold answers
fall below ``gold_min_accuracy`` is screened out. The judging itself lives in
``server/services/feedback/``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from server.study_spec.base import StrictModel, reject_control_chars
from server.study_spec.environments import SLUG

QuestionKind = Literal["compare", "rate", "narrate"]
# A compare answer, in the item's own terms: its first clip (a) or second (b) is better, both
# equally good, or the participant cannot tell. Participants see the clips in either order
# (left / right): the judgement records which was shown where.
CompareAnswer = Literal["a", "b", "equal", "cant_tell"]
Pairing = Literal["random", "disagreement", "all_pairs"]
EpisodeStatusName = Literal["completed", "rejected", "canceled", "abandoned"]
MAX_PROMPT = 500
MAX_CLIP_STEPS = 10_000
EPISODE_ID = r"^[0-9a-f]{32}$"


class FeedbackQuestion(StrictModel):
    """One question of a feedback study, asked of each of its items."""

    id: str = Field(pattern=SLUG, description="Stable identifier, used in exports.")
    kind: QuestionKind = Field(
        description="compare: two clips side by side; rate: one clip on a scale; narrate: "
        "one clip, free text."
    )
    prompt: str = Field(
        min_length=1, max_length=MAX_PROMPT,
        description='What the participant is asked, e.g. "Which is closer to stacking the '
        'cubes?" (plain text).',
    )  # fmt: skip
    scale_min: int = Field(default=1, ge=-100, le=100, description="rate: the lowest answer.")
    scale_max: int = Field(default=7, ge=-100, le=100, description="rate: the highest answer.")
    low_label: str = Field(default="", max_length=60, description="rate: the low end's label.")
    high_label: str = Field(default="", max_length=60, description="rate: the high end's label.")

    @model_validator(mode="after")
    def _scale(self) -> FeedbackQuestion:
        if not self.prompt.strip():
            raise ValueError("prompt must not be blank")
        if self.kind == "rate" and not 1 <= self.scale_max - self.scale_min <= 10:
            raise ValueError("a rating scale has 2 to 11 points (scale_min < scale_max)")
        return self


class GoldItem(StrictModel):
    """An item with a known answer (never shown as such): the episodes and, with clips, the
    first step of each clip; the answer a careful participant gives."""

    question: str = Field(pattern=SLUG, description="The question's id.")
    episodes: list[str] = Field(
        min_length=1, max_length=2,
        description="compare: the two episodes (a, b); rate: one episode.",
    )  # fmt: skip
    starts: list[int] | None = Field(
        default=None, max_length=2,
        description="The first step of each clip (default 0; only with clip_steps).",
    )  # fmt: skip
    answer: CompareAnswer | None = Field(
        default=None, description="compare: a (the first is better), b or equal."
    )
    rating_min: float | None = Field(
        default=None, allow_inf_nan=False, description="rate: the lowest correct answer."
    )
    rating_max: float | None = Field(
        default=None, allow_inf_nan=False, description="rate: the highest correct answer."
    )

    @field_validator("episodes")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        for item in value:
            if not re.fullmatch(EPISODE_ID, item):
                raise ValueError(f"{item[:40]!r} is not an episode id (32 hex digits)")
        if len(set(value)) != len(value):
            raise ValueError("a gold pair compares two different episodes")
        return value

    @field_validator("starts")
    @classmethod
    def _starts(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(not 0 <= s <= 2**31 - 1 for s in value):
            raise ValueError("a clip starts at a step from 0")
        return value


def _completed() -> list[EpisodeStatusName]:
    return ["completed"]


class FeedbackSource(StrictModel):
    """Which recorded episodes the items come from: episodes of these studies (the
    designer's own), filtered as the episodes page filters."""

    studies: list[int] = Field(min_length=1, max_length=20, description="Study ids.")
    environments: list[str] = Field(
        default_factory=list, max_length=50, description="Environment ids (empty: all)."
    )
    task: str | None = Field(default=None, pattern=SLUG, description="Only this task.")
    statuses: list[EpisodeStatusName] = Field(
        default_factory=_completed, min_length=1, max_length=4
    )
    outcomes: list[Literal["success", "failure", "unset"]] = Field(
        default_factory=list, max_length=3, description="Effective outcomes (empty: any)."
    )
    tags: list[str] = Field(default_factory=list, max_length=20, description="Required tags.")
    exclude_tags: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("studies")
    @classmethod
    def _study_ids(cls, value: list[int]) -> list[int]:
        if any(not 1 <= s <= 2**31 - 1 for s in value) or len(set(value)) != len(value):
            raise ValueError("list each study id (a positive integer) once")
        return value

    @field_validator("environments", "tags", "exclude_tags")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        if any(not 1 <= len(v) <= 64 for v in value):
            raise ValueError("names are 1 to 64 characters")
        return value


class FeedbackSpec(StrictModel):
    """A feedback study: items, questions, who judges what, gold and screening."""

    _no_control = model_validator(mode="before")(reject_control_chars)

    source: FeedbackSource
    clip_steps: int | None = Field(
        default=None, ge=2, le=MAX_CLIP_STEPS,
        description="Clips of this many steps (a random window of each episode); null: "
        "whole episodes.",
    )  # fmt: skip
    view: Literal["frames", "observation"] = Field(
        default="frames",
        description="frames: what the player saw (the streamed JPEGs); observation: the "
        "recorded observation image.",
    )
    fps: float = Field(default=15, ge=1, le=60, description="Playback speed of the clips.")
    questions: list[FeedbackQuestion] = Field(min_length=1, max_length=10)
    pairing: Pairing = Field(
        default="random",
        description="random: random pairs of one environment and task; disagreement: the "
        "items judged so far whose answers disagree most first; all_pairs: every pair of "
        "the (small) set of source episodes.",
    )
    judgements_per_item: int = Field(default=3, ge=1, le=50, description="K judges per item.")
    judgements_per_participant: int = Field(
        default=10, ge=1, le=1000, description="Judgements that complete a participant."
    )
    judgements_total: int | None = Field(
        default=None, ge=1, le=1_000_000, description="The study's quota (gold left out)."
    )
    min_watch_s: float = Field(
        default=3, ge=0, le=600, description="Seconds an item is shown before an answer counts."
    )
    gold: list[GoldItem] = Field(default_factory=list, max_length=200)
    gold_rate: float = Field(
        default=0.2, ge=0, le=0.5, description="Share of a participant's items that are gold."
    )
    gold_min_accuracy: float = Field(
        default=0, ge=0, le=1,
        description="Screen out a participant whose gold answers are right less often than "
        "this (0: never), once they gave gold_min_answers of them.",
    )  # fmt: skip
    gold_min_answers: int = Field(default=2, ge=1, le=50)

    @model_validator(mode="after")
    def _consistent(self) -> FeedbackSpec:
        ids = [q.id for q in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError("a question id is used twice")
        kinds = {q.id: q for q in self.questions}
        for n, gold in enumerate(self.gold):
            question = kinds.get(gold.question)
            where = f"gold.{n}"
            if question is None:
                raise ValueError(f"{where}: no question {gold.question!r}")
            if question.kind == "narrate":
                raise ValueError(f"{where}: a narrate question has no known answer")
            wanted = 2 if question.kind == "compare" else 1
            if len(gold.episodes) != wanted:
                raise ValueError(f"{where}: a {question.kind} item has {wanted} episode(s)")
            if gold.starts is not None and len(gold.starts) != wanted:
                raise ValueError(f"{where}: give one start per episode")
            if question.kind == "compare" and gold.answer not in ("a", "b", "equal"):
                raise ValueError(f"{where}: answer is a, b or equal")
            if question.kind == "rate":
                low, high = gold.rating_min, gold.rating_max
                if low is None or high is None or low > high:
                    raise ValueError(f"{where}: give rating_min <= rating_max")
                if low < question.scale_min or high > question.scale_max:
                    raise ValueError(f"{where}: the ratings are outside the question's scale")
        return self

    def asked(self, question_id: str) -> FeedbackQuestion | None:
        """The question with this id; None when the study no longer asks it."""
        return next((q for q in self.questions if q.id == question_id), None)

    def question(self, question_id: str) -> FeedbackQuestion:
        """The question with this id (KeyError when absent)."""
        found = self.asked(question_id)
        if found is None:
            raise KeyError(question_id)
        return found
