"""Feedback studies' rows: the items participants judge and their judgements.

An item is one question over one clip (``rate``, ``narrate``) or two (``compare``) of
recorded episodes. The episodes' ids are kept as text, not as foreign keys: a judgement
outlives a deleted episode (its item is then skipped when drawing, never served).
A judgement is made when an item is handed to a participant (``assigned_at``) and answered
once (``answered_at``); a second answer is refused.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, new_uuid, utcnow


class FeedbackItem(Base):
    __tablename__ = "feedback_items"
    __table_args__ = (
        Index("ix_feedback_items_study_question", "study_id", "question_key"),
        UniqueConstraint("study_id", "signature"),
        NO_ID_REUSE,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    question_key: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # compare / rate / narrate
    # what the item is, as text (question, episodes, starts, gold): one row per distinct item
    signature: Mapped[str] = mapped_column(String(200))
    episode_a: Mapped[str] = mapped_column(String(32), index=True)
    a_start: Mapped[int] = mapped_column(Integer)
    a_end: Mapped[int] = mapped_column(Integer)  # inclusive
    episode_b: Mapped[str | None] = mapped_column(String(32), index=True)
    b_start: Mapped[int | None] = mapped_column(Integer)
    b_end: Mapped[int | None] = mapped_column(Integer)
    is_gold: Mapped[bool] = mapped_column(Boolean, default=False)
    gold_answer: Mapped[str | None] = mapped_column(String(16))  # compare: a / b / equal
    gold_min: Mapped[float | None] = mapped_column(Float)  # rate: the correct range
    gold_max: Mapped[float | None] = mapped_column(Float)
    # the item's episode is gone: never drawn again (its judgements are kept)
    gone: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    judgements: Mapped[list[Judgement]] = relationship(back_populates="item")


class Judgement(Base):
    __tablename__ = "judgements"
    __table_args__ = (
        UniqueConstraint("item_id", "participant_id"),
        Index("ix_judgements_study_answered", "study_id", "answered_at"),
        NO_ID_REUSE,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    # what the participant's page names it by (not the id: ids would tell items apart)
    token: Mapped[str] = mapped_column(String(32), unique=True, default=new_uuid)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    item_id: Mapped[int] = mapped_column(ForeignKey("feedback_items.id", ondelete="CASCADE"))
    participant_id: Mapped[int] = mapped_column(
        ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    swapped: Mapped[bool] = mapped_column(Boolean, default=False)  # b shown on the left
    assigned_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(TS)
    choice: Mapped[str | None] = mapped_column(String(16))  # compare, in a/b terms
    rating: Mapped[float | None] = mapped_column(Float)
    text: Mapped[str | None] = mapped_column(Text)
    answer_ms: Mapped[int | None] = mapped_column(Integer)  # from assignment to answer
    correct: Mapped[bool | None] = mapped_column(Boolean)  # gold only

    item: Mapped[FeedbackItem] = relationship(back_populates="judgements")
