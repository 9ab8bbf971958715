"""Recorded episodes and what reviewers add to them (tags, step tags, notes)."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, new_uuid, utcnow


class EpisodeStatus(enum.StrEnum):
    recording = "recording"
    completed = "completed"
    rejected = "rejected"
    canceled = "canceled"
    abandoned = "abandoned"
    failed = "failed"


class ReplayVerdict(enum.StrEnum):
    """What re-simulating a saved episode from its log showed (server/runtime/replay_check.py)."""

    pending = "pending"  # not checked yet (or again: its environment's package changed)
    verified = "verified"  # every step replayed to the recorded values
    diverged = "diverged"  # a step differed: replay_step, replay_detail say where and how
    not_replayable = "not_replayable"  # it could not be replayed: replay_detail says why


class Outcome(enum.StrEnum):
    success = "success"
    failure = "failure"


class EndedBy(enum.StrEnum):
    """Who or what ended an episode's steps (``episodes.ended_by``, every export's
    ``ended_by``; docs/export.md, "How an episode ended")."""

    environment = "environment"  # the environment terminated it (the task done, or lost)
    time_limit = "time_limit"  # the environment's own time limit, max_steps or max_duration_s
    participant = "participant"  # the participant said "I'm done"
    canceled = "canceled"  # the participant canceled it (its steps kept, marked canceled)
    abandoned = "abandoned"  # the connection went, a pause outlived its timeout, a takeover
    failed = "failed"  # the environment raised or its worker died


# end_reason (server/recording/format.py and the app's own) -> ended_by; any other reason
# the app gives an early stop (disconnected, pause_timeout, taken_over, server_restart...)
# is an abandoned episode's
_ENDED_BY = {
    "terminated": EndedBy.environment, "truncated": EndedBy.time_limit,
    "max_steps": EndedBy.time_limit, "max_duration": EndedBy.time_limit,
    "participant": EndedBy.participant, "canceled": EndedBy.canceled,
    "failed": EndedBy.failed, "env_failed": EndedBy.failed,
}  # fmt: skip


def ended_by(end_reason: str | None) -> EndedBy | None:
    """Who ended an episode that ended for ``end_reason`` (None: it has not ended)."""
    if end_reason is None:
        return None
    return _ENDED_BY.get(end_reason, EndedBy.abandoned)


class Episode(Base):
    __tablename__ = "episodes"
    __table_args__ = (
        Index("ix_episodes_study_status_env", "study_id", "status", "env_key"),
        # the environment's median length (server/services/review/quality.py)
        Index("ix_episodes_env_status_steps", "study_env_id", "status", "steps"),
        # the list's sorts within a study (keyset order: the column, then id)
        Index("ix_episodes_study_latency_p50", "study_id", "latency_p50_ms", "id"),
        Index("ix_episodes_study_latency_p99", "study_id", "latency_p99_ms", "id"),
        Index("ix_episodes_study_started", "study_id", "started_at", "id"),
        Index("ix_episodes_study_replay", "study_id", "replay_verdict"),
        Index("ix_episodes_study_task", "study_id", "task_key"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_uuid)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    study_env_id: Mapped[int] = mapped_column(ForeignKey("study_environments.id"), index=True)
    env_key: Mapped[str] = mapped_column(String(64), index=True)
    session_id: Mapped[str | None] = mapped_column(
        ForeignKey("sessions.id", ondelete="SET NULL"), index=True
    )
    participant_id: Mapped[int | None] = mapped_column(
        ForeignKey("participants.id", ondelete="SET NULL"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    # a designer's test play: kept out of exports, counts, quotas and review unless asked for
    is_test: Mapped[bool] = mapped_column(default=False, server_default=false(), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True, default=EpisodeStatus.recording)
    end_reason: Mapped[str | None] = mapped_column(String(32))
    # who ended its steps (EndedBy; NULL while recording) and, where the environment reports
    # it (info ``is_success`` at the last step), whether it succeeded: "success" / "failure"
    ended_by: Mapped[str | None] = mapped_column(String(16), index=True)
    env_outcome: Mapped[str | None] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    seed: Mapped[int | None] = mapped_column(Integer)
    steps: Mapped[int] = mapped_column(Integer, default=0, index=True)
    total_reward: Mapped[float] = mapped_column(Float, default=0.0, index=True)
    started_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(TS, index=True)
    duration_s: Mapped[float | None] = mapped_column(Float)
    storage_path: Mapped[str] = mapped_column(String(500))
    latency_p50_ms: Mapped[float | None] = mapped_column(Float)
    latency_p95_ms: Mapped[float | None] = mapped_column(Float)
    frames_dropped: Mapped[int] = mapped_column(Integer, default=0)
    # the app process (replica) hosting a ``recording`` episode: when its heartbeat stops,
    # another replica abandons the episode (server/services/live/replicas.py)
    replica_id: Mapped[str | None] = mapped_column(String(128), index=True)
    # quality signals (server/services/review/quality.py); quality_at NULL: not computed
    latency_p99_ms: Mapped[float | None] = mapped_column(Float)
    idle_share: Mapped[float | None] = mapped_column(Float)
    inputs_per_s: Mapped[float | None] = mapped_column(Float)
    # shared autonomy (NULL: no policy drove): takeovers, share of actions the player drove,
    # why the policy stopped (NULL while it worked)
    interventions: Mapped[int | None] = mapped_column(Integer)
    intervention_share: Mapped[float | None] = mapped_column(Float)
    policy_error: Mapped[str | None] = mapped_column(Text)
    quality_at: Mapped[datetime | None] = mapped_column(TS)
    # "success" / "failure" (Outcome) or None: the player's answer at save time, and the
    # reviewer's, which wins (effective_outcome)
    player_outcome: Mapped[str | None] = mapped_column(String(16))
    outcome: Mapped[str | None] = mapped_column(String(16))
    # kept out of exports unless an export asks for excluded episodes
    excluded: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    # replay verification (server/services/jobs/replay_checks.py): the verdict, the first
    # step that differed (diverged) or could not be replayed, what the check found
    # (``reason``, ``message``, ``difference``), when, and the environment's package versions
    # it ran with (a change of them puts the episode back to pending)
    replay_verdict: Mapped[str] = mapped_column(
        String(16), default=ReplayVerdict.pending, server_default=ReplayVerdict.pending,
        index=True,  # the checker's queue looks for pending episodes of every study
    )  # fmt: skip
    replay_step: Mapped[int | None] = mapped_column(Integer)
    replay_detail: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    replay_checked_at: Mapped[datetime | None] = mapped_column(TS)
    replay_versions: Mapped[str | None] = mapped_column(String(300), index=True)
    # the task the episode drew (the environment's ``tasks``; NULL: it lists none) and its
    # instruction as the participant was shown it (kept when the study's tasks change)
    task_key: Mapped[str | None] = mapped_column(String(64))
    instruction: Mapped[str | None] = mapped_column(Text)

    tags: Mapped[list[EpisodeTag]] = relationship(cascade="all, delete-orphan")
    step_tags: Mapped[list[StepTag]] = relationship(cascade="all, delete-orphan")
    notes: Mapped[list[Note]] = relationship(cascade="all, delete-orphan")
    narrations: Mapped[list[Narration]] = relationship(cascade="all, delete-orphan")


class EpisodeTag(Base):
    __tablename__ = "episode_tags"
    __table_args__ = (UniqueConstraint("episode_id", "name"), NO_ID_REUSE)

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64), index=True)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class StepTag(Base):
    """A tag on one step (start == end) or an inclusive range of steps."""

    __tablename__ = "step_tags"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64), index=True)
    start_step: Mapped[int] = mapped_column(Integer)
    end_step: Mapped[int] = mapped_column(Integer)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class Note(Base):
    __tablename__ = "notes"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), index=True
    )
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class Narration(Base):
    """What happened over an inclusive range of steps, in a reviewer's (or the participant's
    own) words. ``version`` counts edits: an edit names the version it read (two reviewers
    editing at once: the second is refused, nothing is lost)."""

    __tablename__ = "narrations"
    __table_args__ = (Index("ix_narrations_episode_start", "episode_id", "start_step"),
                      NO_ID_REUSE)  # fmt: skip

    id: Mapped[int] = mapped_column(primary_key=True)
    episode_id: Mapped[str] = mapped_column(ForeignKey("episodes.id", ondelete="CASCADE"))
    start_step: Mapped[int] = mapped_column(Integer)
    end_step: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # the episode's own participant narrated it (after saving it)
    participant_id: Mapped[int | None] = mapped_column(
        ForeignKey("participants.id", ondelete="SET NULL")
    )
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class EpisodeDeletion(Base):
    """A record that someone deleted episodes of a study (the rows themselves are gone)."""

    __tablename__ = "episode_deletions"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    count: Mapped[int] = mapped_column(Integer)
    deleted_at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
