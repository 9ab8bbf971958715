"""Crowd participants and the play sessions (sittings) of every player."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, new_uuid, utcnow


class Platform(enum.StrEnum):
    """How a participant arrived: a platform's URL parameters, a typed id, or no id."""

    prolific = "prolific"
    mturk = "mturk"
    direct = "direct"
    anonymous = "anonymous"


class ScreenoutReason(enum.StrEnum):
    """Why a participant was screened out."""

    declined = "declined"  # said no to the consent form
    device = "device"  # left at the device check, before the consent was shown
    gold = "gold"  # a feedback study's gold answers fell below its threshold


class Participant(Base):
    """A crowd worker in one study, known by an external id (Prolific, MTurk, ...)."""

    __tablename__ = "participants"
    __table_args__ = (UniqueConstraint("study_id", "external_id"), NO_ID_REUSE)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[str] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(TS)
    # where they came from (Platform) and the platform's own ids, for approvals and bonuses
    platform: Mapped[str] = mapped_column(
        String(16), index=True, default="direct", server_default="direct"
    )
    platform_study_id: Mapped[str | None] = mapped_column(String(200))  # STUDY_ID / hitId
    # Prolific SESSION_ID / MTurk assignmentId
    platform_session_id: Mapped[str | None] = mapped_column(String(200))
    submit_to: Mapped[str | None] = mapped_column(String(500))  # MTurk turkSubmitTo
    assigned_env: Mapped[str | None] = mapped_column(String(64))  # balanced assignment
    consented_at: Mapped[datetime | None] = mapped_column(TS)
    screened_out_at: Mapped[datetime | None] = mapped_column(TS)
    # why (ScreenoutReason): declined the consent, or left at the device check before it
    screenout_reason: Mapped[str | None] = mapped_column(String(16))
    # done because the study filled up before they finished (crowd.full_code, not completion)
    full_at: Mapped[datetime | None] = mapped_column(TS)
    # sha256 of the secret the browser that earned their code keeps (codes go only to it)
    browser_key_hash: Mapped[str | None] = mapped_column(String(64))
    last_seen_at: Mapped[datetime | None] = mapped_column(TS)
    completion_shown_at: Mapped[datetime | None] = mapped_column(TS)
    # made by a designer's "preview as a participant": its episodes are test plays, and it is
    # in no participants list, count or quota
    is_test: Mapped[bool] = mapped_column(default=False, server_default=false())


class PlaySession(Base):
    """One sitting of a player (participant or designer test-playing)."""

    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_uuid)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    participant_id: Mapped[int | None] = mapped_column(
        ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    started_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(TS)
