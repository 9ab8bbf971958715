"""Quotas of a crowd study: reserved episodes per environment, full environments, the study's
availability, and the lock under which an episode's start is checked against its quotas.

Quotas count episodes in ``recording`` as reserved, and :func:`reserve` takes a lock before
counting (see its docstring).
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from server.errors import Conflict
from server.models import (
    Episode,
    EpisodeStatus,
    FeedbackItem,
    Judgement,
    Participant,
    Study,
    StudyEnvironment,
    StudyState,
)
from server.study_spec import StudySpec

RESERVED = (EpisodeStatus.completed, EpisodeStatus.recording)


class QuotaError(Conflict):
    """An episode cannot start: ``code`` is ``quota_reached`` or ``env_full``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


# -- counts --------------------------------------------------------------------------------
def reserved_totals(db: Session, study_id: int) -> dict[str, int]:
    """Participants' completed plus recording episodes per environment (designers' test
    plays, ``is_test``, do not fill a study)."""
    rows = db.execute(
        select(Episode.env_key, func.count())
        .where(Episode.study_id == study_id, Episode.status.in_(RESERVED),
               Episode.is_test.is_(False))
        .group_by(Episode.env_key)
    ).all()  # fmt: skip
    return {key: int(n) for key, n in rows}


def full_envs(spec: StudySpec, totals: dict[str, int]) -> set[str]:
    """Environments whose ``episodes_total`` is reached (reservations included)."""
    return {
        e.id for e in spec.environments
        if e.episodes_total is not None and totals.get(e.id, 0) >= e.episodes_total
    }  # fmt: skip


def judgements_answered(db: Session, study_id: int) -> int:
    """A feedback study's answered judgements of real participants' non-gold items (what its
    ``judgements_total`` counts)."""
    return int(db.scalar(
        select(func.count()).select_from(Judgement).join(FeedbackItem)
        .join(Participant, Participant.id == Judgement.participant_id)
        .where(Judgement.study_id == study_id, Judgement.answered_at.is_not(None),
               FeedbackItem.is_gold.is_(False), Participant.is_test.is_(False))
    ) or 0)  # fmt: skip


def judgements_full(db: Session, study_id: int, spec: StudySpec) -> bool:
    """A feedback study whose ``judgements_total`` is reached."""
    judging = spec.judging
    return (judging is not None and judging.judgements_total is not None
            and judgements_answered(db, study_id) >= judging.judgements_total)  # fmt: skip


# A feedback study has no environments: its full set is this one name when its quota is met.
JUDGEMENTS = "judgements"


def full_now(db: Session, study: Study, spec: StudySpec) -> set[str]:
    """The environments that are full now (a feedback study: :data:`JUDGEMENTS` when its
    quota of judgements is met)."""
    if spec.judging is not None:
        return {JUDGEMENTS} if judgements_full(db, study.id, spec) else set()
    return full_envs(spec, reserved_totals(db, study.id))


def availability(db: Session, study: Study, spec: StudySpec) -> str:
    """``active``, ``paused``, ``closed`` (draft reads as closed) or ``full``."""
    active = study.state == StudyState.active  # only an active study's quotas are counted
    return study_state(study, spec, full_now(db, study, spec) if active else set())


def study_state(study: Study, spec: StudySpec, full: set[str], preview: bool = False) -> str:
    """:func:`availability`, given the environments that are ``full`` now. A ``preview`` (a
    test participant) sees the study as if it were active, whatever its state."""
    if study.state == StudyState.paused and not preview:
        return "paused"
    if study.state != StudyState.active and not preview:
        return "closed"
    if spec.judging is not None:
        return "full" if JUDGEMENTS in full else "active"
    return "full" if len(full) == len(spec.environments) else "active"


# -- quotas, atomically ----------------------------------------------------------------------
def lock_study(db: Session, study_id: int) -> None:
    """Serialize with the study's other assignments until commit: a no-op UPDATE of its row
    (a row lock on PostgreSQL, the write lock on SQLite; ``updated_at`` is kept as it is)."""
    db.execute(
        update(Study)
        .where(Study.id == study_id)
        .values(updated_at=Study.updated_at)
        .execution_options(synchronize_session=False)
    )


def reserve(db: Session, study_id: int, env_key: str, participant_id: int | None,
            spec: StudySpec, extra: bool = False) -> StudyEnvironment:  # fmt: skip
    """Lock the environment and check its quotas; the caller inserts the episode and commits.

    The no-op UPDATE is the transaction's first write: on PostgreSQL it locks the
    environment's row until commit, on SQLite it takes the database's write lock. Counting
    after it, the insert and the commit are thus serialized per environment, so concurrent
    starts never push it past ``episodes_total``. ``extra``: the per-participant quota is
    lifted (the participant still has requirements to meet).
    """
    row = db.scalar(
        select(StudyEnvironment).where(
            StudyEnvironment.study_id == study_id, StudyEnvironment.env_key == env_key
        )
    )
    if row is None:
        raise Conflict(f"The study has no environment {env_key!r}.")
    db.execute(
        update(StudyEnvironment)
        .where(StudyEnvironment.id == row.id)
        .values(position=StudyEnvironment.position)
        .execution_options(synchronize_session=False)
    )
    if participant_id is None:
        return row
    env = spec.environment(env_key)
    if env.episodes_total is not None:
        total = db.scalar(
            select(func.count()).where(
                Episode.study_env_id == row.id, Episode.status.in_(RESERVED),
                Episode.is_test.is_(False),
            )
        )  # fmt: skip
        if int(total or 0) >= env.episodes_total:
            raise QuotaError("env_full", f"{env.name} has all the episodes it needs.")
    if not extra:
        mine = db.scalar(
            select(func.count()).where(
                Episode.study_env_id == row.id, Episode.status.in_(RESERVED),
                Episode.participant_id == participant_id,
            )
        )  # fmt: skip
        if int(mine or 0) >= env.episodes_per_participant:
            raise QuotaError("quota_reached", f"You have played all episodes of {env.name}.")
    return row
