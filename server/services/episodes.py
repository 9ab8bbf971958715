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

from server.errors import Conflict, Invalid, NotFound
from server.models import (
    Episode,
    EpisodeStatus,
    Participant,
    PlaySession,
    Study,
    StudyEnvironment,
    utcnow,
)
from server.principal import Principal, is_reserved_participant_id
from server.recording.format import episode_dir
from server.services import crowd
from server.study_spec import EnvironmentSpec, StudySpec

FINAL = frozenset(EpisodeStatus) - {EpisodeStatus.recording}
SERVER_RESTART = "server_restart"
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
    player_outcome: str | None = None  # "success" / "failure": the player's answer, if asked


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` percentile (0-100, linear interpolation) or None without values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def find_or_create_participant(db: Session, study: Study, external_id: str) -> Participant:
    """The participant with this external id in this study (created on first visit)."""
    if is_reserved_participant_id(external_id):  # it would be read as a designer's test play
        message = "Participant ids starting with 'user:' are reserved for designers' test plays."
        raise Invalid(message, detail=[{"loc": ["body", "participant_id"], "msg": message}])
    query = select(Participant).where(
        Participant.study_id == study.id, Participant.external_id == external_id
    )
    participant = db.scalar(query)
    if participant is None:
        participant = Participant(study_id=study.id, external_id=external_id)
        db.add(participant)
        db.commit()
    return participant


def start_session(db: Session, study_id: int, principal: Principal) -> str:
    """A new play session row; returns its id."""
    row = PlaySession(
        study_id=study_id, participant_id=principal.participant_id, user_id=principal.user_id
    )
    db.add(row)
    db.commit()
    return row.id


def end_session(db: Session, session_id: str) -> None:
    """Stamp the session's end (idempotent)."""
    row = db.get(PlaySession, session_id)
    if row is not None and row.ended_at is None:
        row.ended_at = utcnow()
        db.commit()


def _player_filter(principal: Principal) -> object:
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
            _player_filter(principal),  # type: ignore[arg-type]
        )
        .group_by(Episode.env_key)
    ).all()
    return {key: int(n) for key, n in rows}


def next_seed(db: Session, study_id: int, env: EnvironmentSpec, principal: Principal) -> int:
    """The study's seeds in turn for this player, or a random seed when it lists none."""
    if not env.seeds:
        return random.randrange(2**31)
    played = db.scalar(
        select(func.count()).where(
            Episode.study_id == study_id,
            Episode.env_key == env.id,
            _player_filter(principal),  # type: ignore[arg-type]
        )
    )
    return env.seeds[int(played or 0) % len(env.seeds)]


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
) -> Episode:
    """A new ``recording`` episode whose log goes to ``episode_dir``.

    With ``spec``, a participant's episode is a reservation against the environment's
    quotas, checked under a lock (:func:`server.services.crowd.reserve`, QuotaError).
    """
    study_env: StudyEnvironment | None
    if spec is not None:
        try:
            study_env = crowd.reserve(
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
        seed=seed,
        status=EpisodeStatus.recording,
        storage_path="",
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


def record_start_failure(
    db: Session, *, study_id: int, env_key: str, session_id: str, principal: Principal,
    data_root: Path, error: str,
) -> Episode:  # fmt: skip
    """A ``failed`` episode (no steps, end reason ``env_failed``) for an environment that did
    not start for this player: the designer sees the error; it takes no quota."""
    episode = create_episode(
        db, study_id=study_id, env_key=env_key, session_id=session_id, principal=principal,
        seed=None, data_root=data_root,
    )  # fmt: skip
    return finish_episode(
        db, episode.id,
        EpisodeResult(status=EpisodeStatus.failed, steps=0, total_reward=0.0,
                      end_reason=crowd.ENV_FAILED, error=error),
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
    episode.error = result.error
    episode.ended_at = ended
    episode.duration_s = max(0.0, (ended - episode.started_at).total_seconds())
    episode.latency_p50_ms = percentile(result.latencies_ms, 50)
    episode.latency_p95_ms = percentile(result.latencies_ms, 95)
    episode.frames_dropped = result.frames_dropped
    episode.player_outcome = result.player_outcome
    db.commit()
    return episode


def log_totals(storage_path: Path | str) -> tuple[int, float] | None:
    """Steps and return an episode's log holds; None when it cannot be read.

    What a row counts after its worker died (the server, or the worker alone): the log holds
    every step the worker flushed, which may be fewer or more than the player had counted.
    """
    from server.export.episode import read_episode  # reads envlogger logs; imported lazily

    try:
        recorded = read_episode(Path(storage_path))
    except Exception as exc:  # an empty or unreadable log: the caller keeps its own counts
        log.warning("episode log %s not readable (%s)", storage_path, exc)
        return None
    return len(recorded), float(recorded.total_reward)


def recover_interrupted(db: Session) -> int:
    """Episodes a dead server left ``recording`` become ``abandoned``, totals from their logs.

    Run by ``rlds-studio serve`` before it serves (no player can be connected then).
    """
    rows = db.scalars(select(Episode).where(Episode.status == EpisodeStatus.recording)).all()
    for episode in rows:
        totals = log_totals(episode.storage_path)
        if totals is not None:
            episode.steps, episode.total_reward = totals
        episode.status = EpisodeStatus.abandoned
        episode.end_reason = SERVER_RESTART
        episode.ended_at = utcnow()
        episode.duration_s = (episode.ended_at - episode.started_at).total_seconds()
    db.commit()
    return len(rows)
