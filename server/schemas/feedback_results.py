"""What a feedback study's designer reads of its judgements: the study's figures, each
participant's judging record, the live dashboard's part (docs/feedback.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FeedbackQuota(BaseModel):
    total: int | None = Field(description="judgements_total (null: no quota).")
    counted: int = Field(description="Judgements that count toward it (real, non-gold).")
    reached: bool


class FeedbackPeople(BaseModel):
    joined: int = Field(description="Participants who opened the study's link.")
    active: int = Field(description="Seen within the last two minutes and still judging.")
    completed: int
    screened_out_gold: int = Field(description="Screened out by their gold answers.")


class FeedbackLiveOut(BaseModel):
    """The live dashboard's part of a feedback study (every tick)."""

    at: str = Field(description="When the figures were read (ISO 8601, UTC).")
    answered: int = Field(description="Judgements answered (gold included).")
    per_minute: list[int] = Field(
        description="Judgements answered in each of the last `minutes` minutes, oldest first."
    )
    rate_per_minute: float = Field(description="Their mean: judgements per minute.")
    minutes: int
    agreement: float | None = Field(
        description="The share of pairs of judges of one item who gave the same answer "
        "(ratings within one point); null before any item has two judges."
    )
    pairs: int = Field(description="The pairs of judges that agreement counts.")
    quota: FeedbackQuota
    participants: FeedbackPeople


class FeedbackQuestionFigures(BaseModel):
    id: str
    kind: str | None = Field(description="compare, rate or narrate (null: no longer asked).")
    prompt: str | None
    items: int = Field(description="Items made (gold left out).")
    gold_items: int
    answered: int = Field(description="Judgements answered (gold included).")
    gold_answered: int


class FeedbackFiguresOut(FeedbackLiveOut):
    """A feedback study's figures for its designer (real participants only; the preference
    dataset has every judgement)."""

    study_id: int
    pool_episodes: int = Field(
        description="Source episodes in the pool (at most `pool_limit` per draw)."
    )
    pool_limit: int
    items: int = Field(description="Items made, gold included.")
    gold_items: int
    gold_answered: int = Field(description="Gold judgements answered.")
    questions: list[FeedbackQuestionFigures]


class ParticipantJudging(BaseModel):
    """A feedback study's participant: what they judged and how well."""

    answered: int = Field(description="Judgements answered (gold included).")
    gold_answered: int
    gold_correct: int
    gold_accuracy: float | None = Field(description="gold_correct / gold_answered.")
    agreement: float | None = Field(
        description="Their agreement with the other judges of the items they shared."
    )
