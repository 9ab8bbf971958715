"""Play sessions and episodes: the rows the player writes (the env workers never do).

Every function takes a SQLAlchemy session and commits; the player calls them from a thread
so the event loop never waits on the database.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.errors import Conflict, NotFound
from server.models import (
    Episode,
    EpisodeStatus,
    PlaySession,
    StudyEnvironment,
    ended_by,
    utcnow,
)
from server.principal import Principal
from server.recording import recovery
from server.recording.format import episode_dir
from server.recording.signals import InputCounts
from server.services.crowd import leases, progress, quotas
from server.services.review import quality
from server.study_spec import EnvironmentSpec, StudySpec, TaskSpec

FINAL = frozenset(EpisodeStatus) - {EpisodeStatus.recording}
SERVER_RESTART = "server_restart"  # abandoned at start-up: its server had stopped
log = logging.getLogger(__name__)


@dataclass
class EpisodeResult:
    """What the player knows when an episode stops."""

    status: EpisodeStatus
    steps: int  # recorded timesteps (RLDS steps), the first observation included
    total_reward: float
    end_reason: str | None = None
    error: str | None = None
    latencies_ms: list[float] = field(default_factory=list)
    frames_dropped: int = 0
    ended_at: datetime | None = None  # when the env ended it (before the save question)
    inputs: InputCounts = field(default_factory=InputCounts)
    player_outcome: str | None = None  # "success" / "failure": the player's answer, if asked
    policy_error: str | None = None  # shared autonomy: why the policy stopped driving
    # who ended its steps (EndedBy; None: from ``end_reason``) and the environment's own
    # report of success at its last step ("success" / "failure"; None: it reports none)
    ended_by: str | None = None
    env_outcome: str | None = None


def start_session(db: Session, study_id: int, principal: Principal) -> str:
    """A new play session row; returns its id."""
    row = PlaySession(
        study_id=study_id, participant_id=principal.participant_id, user_id=principal.user_id
    )
    db.add(row)
    db.commit()
    return row.id


def end_session(db: Session, session_id: str) -> None:
    """Stamp the session's end and release its participant's lease (idempotent)."""
    row = db.get(PlaySession, session_id)
    if row is not None and row.ended_at is None:
        row.ended_at = utcnow()
    leases.release(db, session_id)  # commits both


def player_filter(principal: Principal) -> object:
    """The episodes of this player (a participant, or a designer test-playing)."""
    if principal.participant_id is not None:
        return Episode.participant_id == principal.participant_id
    return Episode.user_id == principal.user_id


def completed_counts(db: Session, study_id: int, principal: Principal) -> dict[str, int]:
    """Completed episodes per environment key for this player."""
    rows = db.execute(
        select(Episode.env_key, func.count())
        .where(
            Episode.study_id == study_id,
            Episode.status == EpisodeStatus.completed,
            player_filter(principal),  # type: ignore[arg-type]
        )
        .group_by(Episode.env_key)
    ).all()
    return {key: int(n) for key, n in rows}


def next_seed(db: Session, study_id: int, env: EnvironmentSpec, principal: Principal,
              task: TaskSpec | None = None) -> int:  # fmt: skip
    """The seeds in turn for this player (the task's, counting its episodes of that task,
    else the environment's), or a random seed when none are listed."""
    seeds = (task.seeds if task is not None else None) or env.seeds
    if not seeds:
        return random.randrange(2**31)
    query = select(func.count()).where(
        Episode.study_id == study_id,
        Episode.env_key == env.id,
        player_filter(principal),  # type: ignore[arg-type]
    )
    if task is not None and task.seeds:
        query = query.where(Episode.task_key == task.id)
    return seeds[int(db.scalar(query) or 0) % len(seeds)]


def create_episode(
    db: Session,
    *,
    study_id: int,
    env_key: str,
    session_id: str,
    principal: Principal,
    seed: int | None,
    data_root: Path,
    spec: StudySpec | None = None,
    extra: bool = False,
    replica_id: str | None = None,
    task: TaskSpec | None = None,
) -> Episode:
    """A new ``recording`` episode whose log goes to ``episode_dir``.

    With ``spec``, a participant's episode is a reservation against the environment's
    quotas, checked under a lock (:func:`server.services.crowd.quotas.reserve`, QuotaError).
    ``replica_id`` is the app process hosting it (failover: server/services/live/replicas.py);
    ``task`` the task it drew (:mod:`server.services.crowd.tasks`).
    """
    study_env: StudyEnvironment | None
    if spec is not None:
        try:
            study_env = quotas.reserve(
                db, study_id, env_key, principal.participant_id, spec, extra=extra
            )
        except Exception:
            db.rollback()  # release the lock
            raise
    else:
        study_env = db.scalar(
            select(StudyEnvironment).where(
                StudyEnvironment.study_id == study_id, StudyEnvironment.env_key == env_key
            )
        )
        if study_env is None:
            raise NotFound(f"The study has no environment {env_key!r}.")
    episode = Episode(
        study_id=study_id,
        study_env_id=study_env.id,
        env_key=env_key,
        session_id=session_id,
        participant_id=principal.participant_id,
        user_id=principal.user_id,
        is_test=principal.plays_tests,  # a designer's (or admin's) test play, or a preview's
        seed=seed,
        status=EpisodeStatus.recording,
        storage_path="",
        replica_id=replica_id,
        task_key=None if task is None else task.id,
        instruction=None if task is None else task.instruction,
    )
    db.add(episode)
    db.flush()
    episode.storage_path = str(episode_dir(data_root, study_id, episode.id))
    db.commit()
    return episode


def mark_started(db: Session, episode_id: str) -> None:
    """The player is past the ready gate: the episode's time counts from now."""
    episode = db.get(Episode, episode_id)
    if episode is not None and episode.status == EpisodeStatus.recording:
        episode.started_at = utcnow()
        db.commit()


def record_start_failure(db: Session, episode_id: str, error: str) -> Episode:
    """The reserved episode of an environment that did not start: ``failed`` with no steps
    and end reason ``env_failed`` (the designer sees the error; it takes no quota)."""
    return finish_episode(
        db, episode_id,
        EpisodeResult(status=EpisodeStatus.failed, steps=0, total_reward=0.0,
                      end_reason=progress.ENV_FAILED, error=error),
    )  # fmt: skip


def record_progress(db: Session, episode_id: str, steps: int, total_reward: float) -> None:
    """Steps and return so far of a recording episode."""
    episode = db.get(Episode, episode_id)
    if episode is not None and episode.status == EpisodeStatus.recording:
        episode.steps = steps
        episode.total_reward = total_reward
        db.commit()


def finish_episode(db: Session, episode_id: str, result: EpisodeResult) -> Episode:
    """Give a recording episode its final status and summary (once)."""
    if result.status not in FINAL:
        raise ValueError(f"{result.status} is not a final status")
    episode = db.get(Episode, episode_id)
    if episode is None:
        raise NotFound("No such episode.")
    if episode.status != EpisodeStatus.recording:
        raise Conflict(f"The episode is already {episode.status}.")
    ended: datetime = result.ended_at or utcnow()
    episode.status = result.status
    episode.steps = result.steps
    episode.total_reward = result.total_reward
    episode.end_reason = result.end_reason
    episode.ended_by = result.ended_by or ended_by(result.end_reason)
    episode.env_outcome = result.env_outcome
    episode.error = result.error
    episode.policy_error = result.policy_error
    episode.ended_at = ended
    episode.duration_s = max(0.0, (ended - episode.started_at).total_seconds())
    episode.frames_dropped = result.frames_dropped
    # measured as it was played: ending an episode never re-reads its log
    quality.apply(episode, result.inputs.signals(result.latencies_ms, episode.duration_s))
    if episode.status == EpisodeStatus.completed:
        quality.refresh_medians(db, [episode.study_env_id])
    episode.player_outcome = result.player_outcome
    db.commit()
    return episode


def log_totals(storage_path: Path | str) -> tuple[int, float] | None:
    """Steps and return an episode's log holds; None when it cannot be read.

    What a row counts after its worker died (the server, or the worker alone): the log, with
    the steps of its journal put back (:mod:`server.recording.recovery`), holds every step
    the worker recorded, which may be more than the player had counted.
    """
    recovery.recover(storage_path)
    recorded = quality.read_log(storage_path)
    return None if recorded is None else (len(recorded), float(recorded.total_reward))
