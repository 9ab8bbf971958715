"""Background jobs claimed by exactly one replica through the database.

Any table with a ``state`` column (:class:`server.models.JobState`), ``started_at``,
``finished_at``, ``message`` and the :class:`server.models.jobs.ClaimableJob` columns is a queue:
every replica polls it, and one statement claims the oldest queued row::

    UPDATE jobs SET state='running', claimed_by=:me, ...
    WHERE id = (SELECT id FROM jobs WHERE state='queued' ORDER BY id LIMIT 1
                FOR UPDATE SKIP LOCKED)
      AND state = 'queued'
    RETURNING id

On PostgreSQL the row lock with ``SKIP LOCKED`` lets replicas claim different rows at once;
SQLite has no row locks (the clause is left out) but runs one writer at a time, and the
``state = 'queued'`` condition makes a second claim of the same row match nothing. The
claiming replica heartbeats the row while it runs; a row whose heartbeat is older than the
stale bound belongs to a dead replica and any replica puts it back in the queue.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from server.models import JobState, utcnow


def claim_next(db: Session, model: Any, me: str, **values: Any) -> int | None:
    """Claim the oldest queued job for replica ``me``: its id, or None when none is left."""
    now = utcnow()
    candidate = (
        select(model.id)
        .where(model.state == JobState.queued, model.cancel_requested.is_(False))
        .order_by(model.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    claimed = db.execute(
        update(model)
        .where(model.id == candidate, model.state == JobState.queued)
        .values(
            state=JobState.running,
            claimed_by=me,
            heartbeat_at=now,
            started_at=now,
            attempts=model.attempts + 1,
            **values,
        )
        .returning(model.id)
    ).scalar()
    db.commit()
    return None if claimed is None else int(claimed)


def heartbeat(db: Session, model: Any, me: str) -> dict[int, bool]:
    """Refresh every claim of replica ``me``: job id -> whether a cancel was requested (a job
    missing from the answer is no longer this replica's)."""
    rows = db.execute(
        update(model)
        .where(model.claimed_by == me, model.state == JobState.running)
        .values(heartbeat_at=utcnow())
        .returning(model.id, model.cancel_requested)
    ).all()
    db.commit()
    return {int(job_id): bool(wanted) for job_id, wanted in rows}


def set_if_claimed(db: Session, model: Any, job_id: int, me: str, **values: Any) -> bool:
    """Update the job only while ``me`` holds its claim (a replica declared dead does not
    overwrite the job's next run)."""
    result = db.execute(
        update(model)
        .where(model.id == job_id, model.claimed_by == me, model.state == JobState.running)
        .values(**values)
        .returning(model.id)
    ).scalar()
    db.commit()
    return result is not None


def release(db: Session, model: Any, job_id: int, me: str, **reset: Any) -> bool:
    """Give a running job back to the queue (this replica is stopping)."""
    return set_if_claimed(
        db, model, job_id, me, state=JobState.queued, claimed_by=None, heartbeat_at=None,
        started_at=None, **reset,
    )  # fmt: skip


def request_cancel(db: Session, model: Any, job_id: int, message: str) -> None:
    """Cancel a queued job at once; flag a running one for the replica that runs it."""
    db.execute(
        update(model)
        .where(model.id == job_id, model.state == JobState.queued)
        .values(state=JobState.canceled, message=message, finished_at=utcnow())
    )
    db.execute(
        update(model)
        .where(model.id == job_id, model.state == JobState.running)
        .values(cancel_requested=True)
    )
    db.commit()


def requeue_stale(
    db: Session, model: Any, stale_s: float, max_attempts: int, failed_message: str, **reset: Any
) -> list[int]:
    """Put back in the queue the running jobs whose replica stopped heartbeating.

    A job already run ``max_attempts`` times fails with ``failed_message`` instead (a job
    that kills its replica must not kill them all); one whose cancel was requested is
    canceled. Returns the ids of every job taken from a dead replica.
    """
    now = utcnow()
    stale = (
        model.state == JobState.running,
        or_(model.heartbeat_at.is_(None), model.heartbeat_at < now - timedelta(seconds=stale_s)),
    )
    gone: dict[str, Any] = {"claimed_by": None, "heartbeat_at": None, "started_at": None}
    ids: list[int] = []
    for condition, values in (
        (model.cancel_requested.is_(True), {"state": JobState.canceled, "message": "Canceled."}),
        (model.attempts >= max_attempts, {"state": JobState.failed, "message": failed_message}),
    ):
        ids += db.scalars(
            update(model)
            .where(*stale, condition)
            .values(finished_at=now, **values)
            .returning(model.id)
        ).all()
    ids += db.scalars(
        update(model)
        .where(*stale)
        .values(state=JobState.queued, **gone, **reset)
        .returning(model.id)
    ).all()
    db.commit()
    return [int(i) for i in ids]
