"""The live study dashboard's figures, read from the database only.

Everything comes from rows every replica writes (``live_sessions`` of live replicas,
``episodes``, ``participants``, a feedback study's ``judgements``), so the dashboard is the
same on every replica and after a restart. One call is one tick of a study's feed
(server/services/live/live_feed.py).
"""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session

from server.models import (
    Episode,
    EpisodeStatus,
    LiveSessionRow,
    Participant,
    Replica,
    Study,
    User,
    utcnow,
)
from server.services.feedback import summary
from server.services.live.replicas import alive_filter
from server.services.review import counts
from server.study_spec import EnvironmentSpec, StudySpec


def _sessions(db: Session, study_id: int, dead_after_s: float) -> list[dict[str, Any]]:
    rows = db.execute(
        select(LiveSessionRow, Participant.external_id, User.email)
        .join(Replica, Replica.id == LiveSessionRow.replica_id)
        .outerjoin(Participant, Participant.id == LiveSessionRow.participant_id)
        .outerjoin(User, User.id == LiveSessionRow.user_id)
        .where(LiveSessionRow.study_id == study_id, alive_filter(dead_after_s))
        .order_by(LiveSessionRow.session_id)
    ).all()
    return [
        {"session_id": live.session_id,
         "participant": external if external is not None else f"designer {email or '?'}",
         "env_key": live.env_key, "phase": live.phase, "episode_id": live.episode_id,
         "step": live.step, "fps": live.fps, "latency_p50_ms": live.latency_p50_ms,
         "frames_dropped": live.frames_dropped, "replica_id": live.replica_id,
         "updated_at": live.updated_at.isoformat()}
        for live, external, email in rows
    ]  # fmt: skip


def _quotas(db: Session, study_id: int, spec: StudySpec) -> list[dict[str, Any]]:
    """Participants' completed and recording episodes per environment, against its total,
    and per task of the environment (:func:`_tasks`)."""
    found: dict[tuple[str, str | None, str], int] = {
        (key, task, str(status)): int(n)
        for key, task, status, n in db.execute(
            select(Episode.env_key, Episode.task_key, Episode.status, func.count())
            .where(Episode.study_id == study_id, counts.PARTICIPANT_PLAY,
                   Episode.status.in_((EpisodeStatus.completed, EpisodeStatus.recording)))
            .group_by(Episode.env_key, Episode.task_key, Episode.status)
        ).all()
    }  # fmt: skip

    def total(env_key: str, status: str) -> int:
        return sum(n for (key, _, st), n in found.items() if key == env_key and st == status)

    return [
        {"env_key": env.id, "name": env.name, "total": env.episodes_total,
         "completed": total(env.id, EpisodeStatus.completed),
         "recording": total(env.id, EpisodeStatus.recording),
         "tasks": _tasks(env, found)}
        for env in spec.environments
    ]  # fmt: skip


def _tasks(
    env: EnvironmentSpec, found: dict[tuple[str, str | None, str], int]
) -> list[dict[str, Any]]:
    """Each task of the environment with its completed and recording episodes, in the
    study's order; then, when they have episodes, tasks no longer listed and episodes
    without a task (``id`` null) in an environment that lists tasks now."""
    listed = {t.id: t for t in env.tasks}
    drawn = sorted({task for key, task, _ in found if key == env.id},
                   key=lambda t: (t is None, t or ""))  # fmt: skip
    ids = [*listed, *(t for t in drawn if t not in listed and (t is not None or listed))]
    out = []
    for task_id in ids:
        task = listed.get(task_id) if task_id is not None else None
        out.append({
            "id": task_id,
            "name": task.name if task else (task_id or "no task"),
            "instruction": task.instruction if task else None,
            "completed": found.get((env.id, task_id, EpisodeStatus.completed), 0),
            "recording": found.get((env.id, task_id, EpisodeStatus.recording), 0),
        })  # fmt: skip
    return out


def _today(db: Session, study_id: int, since: datetime) -> dict[str, int]:
    """Participants' episodes started today by status (test plays are not counted here)."""
    rows = db.execute(
        select(Episode.status, func.count())
        .where(Episode.study_id == study_id, Episode.started_at >= since, counts.PARTICIPANT_PLAY)
        .group_by(Episode.status)
    ).all()
    out = {str(status): 0 for status in EpisodeStatus}
    out.update({str(status): int(n) for status, n in rows})
    return out


def _replays_today(db: Session, study_id: int, since: datetime) -> dict[str, int]:
    """Participants' ended episodes started today by replay verdict (docs/review.md, "Replay
    verification")."""
    rows = db.execute(
        select(Episode.replay_verdict, func.count())
        .where(Episode.study_id == study_id, Episode.started_at >= since,
               counts.PARTICIPANT_PLAY, Episode.status != EpisodeStatus.recording)
        .group_by(Episode.replay_verdict)
    ).all()  # fmt: skip
    return {str(verdict): int(n) for verdict, n in rows}


def _test_plays_today(db: Session, study_id: int, since: datetime) -> int:
    return int(
        db.scalar(
            select(func.count()).where(
                Episode.study_id == study_id, Episode.started_at >= since, counts.TEST_PLAY
            )
        )
        or 0
    )


def _participants(db: Session, study_id: int) -> dict[str, int]:
    joined, completed, screened_out = db.execute(
        select(
            func.count(),
            func.count(Participant.completed_at),
            func.count().filter(counts.SCREENED_OUT),
        ).where(Participant.study_id == study_id, counts.REAL_PARTICIPANT)
    ).one()
    started = db.scalar(
        select(func.count(distinct(Episode.participant_id))).where(
            Episode.study_id == study_id, counts.PARTICIPANT_PLAY
        )
    )
    return {
        "joined": int(joined),
        "started": int(started or 0),
        "completed": int(completed),
        "screened_out": int(screened_out),
    }


def snapshot(db: Session, study_id: int, dead_after_s: float) -> dict[str, Any] | None:
    """The dashboard of a study now (None once the study is gone)."""
    study = db.get(Study, study_id)
    if study is None:
        return None
    spec = StudySpec.model_validate(study.spec)
    now = utcnow()
    since = datetime.combine(now.date(), time.min, tzinfo=now.tzinfo)
    return {
        "type": "live",
        "study": {"id": study.id, "name": study.name, "state": study.state},
        "at": now.isoformat(),
        "today_since": since.isoformat(),
        "sessions": _sessions(db, study.id, dead_after_s),
        "quotas": _quotas(db, study.id, spec),
        "episodes_today": _today(db, study.id, since),
        "test_plays_today": _test_plays_today(db, study.id, since),
        "replays_today": _replays_today(db, study.id, since),
        "participants": _participants(db, study.id),
        "replicas": int(db.scalar(select(func.count()).where(alive_filter(dead_after_s))) or 0),
        "kind": spec.kind,
        # a feedback study's judging: the rate, agreement so far, the quota, active judges
        "feedback": summary.live(db, study, spec.judging) if spec.judging else None,
    }
