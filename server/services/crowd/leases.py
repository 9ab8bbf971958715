"""One live play session per crowd participant across every replica: a lease in the database.

A participant's play session holds their row of ``session_leases`` (participant, session,
replica). It is taken as the session starts: ``INSERT ... ON CONFLICT DO NOTHING`` when the
participant holds none, else a compare-and-swap ``UPDATE ... WHERE session_id = <the holder
read> AND replica_id = <its replica>`` when the holder is free or the player takes over.
Either statement is atomic on SQLite (one writer at a time) and on PostgreSQL (the insert
waits for a concurrent insert's commit; the update re-checks its ``WHERE`` on the row's
newest version), so of two tabs starting at once on two replicas exactly one holds the lease.

A lease is free when its replica's heartbeat is older than ``replica_dead_after_s`` (or the
replica has no row), or when its session has ended; it is released as the session ends. A
replica renews its leases on each heartbeat tick and learns there which it lost to a
takeover on another replica (:func:`renew`).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from server.core.replica import live_cutoff
from server.models import PlaySession, Replica, SessionLease, utcnow

ATTEMPTS = 3  # a lease released between our insert and our read: try the insert again


def holder(db: Session, participant_id: int) -> SessionLease | None:
    """The participant's lease row, free or not."""
    return db.scalars(
        select(SessionLease).where(SessionLease.participant_id == participant_id)
    ).one_or_none()


def is_free(db: Session, lease: SessionLease, dead_after_s: float) -> bool:
    """Whether ``lease`` no longer guards a live session: its replica stopped heartbeating
    (or is gone), or its session ended (or is gone)."""
    beat = db.scalar(select(Replica.heartbeat_at).where(Replica.id == lease.replica_id))
    if beat is None or beat < live_cutoff(dead_after_s):
        return True
    ended = db.execute(
        select(PlaySession.ended_at).where(PlaySession.id == lease.session_id)
    ).one_or_none()
    return ended is None or ended[0] is not None


def take(db: Session, participant_id: int, session_id: str, replica_id: str,
         dead_after_s: float, *, takeover: bool = False,
         replaces: str | None = None) -> bool:  # fmt: skip
    """Make ``session_id`` (on ``replica_id``) the participant's live session; False when
    another live session holds it. ``takeover``: take it from whoever holds it (that
    replica ends its session at its next heartbeat tick); ``replaces``: a session the player
    asks to resume (a reload that reached another replica) counts as free. Committed."""
    insert = pg_insert if db.get_bind().dialect.name == "postgresql" else sqlite_insert
    for _ in range(ATTEMPTS):
        now = utcnow()
        mine = {"session_id": session_id, "replica_id": replica_id,
                "taken_at": now, "renewed_at": now}  # fmt: skip
        inserted = db.scalar(
            insert(SessionLease)
            .values(participant_id=participant_id, **mine)
            .on_conflict_do_nothing(index_elements=["participant_id"])
            .returning(SessionLease.participant_id)
        )
        if inserted is not None:
            db.commit()
            return True
        lease = holder(db, participant_id)
        if lease is None:  # released since the insert: try again
            db.rollback()
            continue
        held = (lease.session_id, lease.replica_id)
        if held == (session_id, replica_id):
            db.commit()
            return True
        if not (takeover or lease.session_id == replaces or is_free(db, lease, dead_after_s)):
            db.rollback()
            return False
        swapped = db.execute(
            update(SessionLease)
            .where(SessionLease.participant_id == participant_id,
                   SessionLease.session_id == held[0], SessionLease.replica_id == held[1])
            .values(**mine)
            .execution_options(synchronize_session=False)
        ).rowcount  # type: ignore[attr-defined]  # fmt: skip
        db.commit()
        if swapped:
            return True
        db.expire_all()  # someone else moved it meanwhile: look again
    return False


def release(db: Session, session_id: str) -> None:
    """The session ended: its lease (if it still holds one) is free for the next. Committed."""
    db.execute(delete(SessionLease).where(SessionLease.session_id == session_id))
    db.commit()


def renew(db: Session, replica_id: str, session_ids: Iterable[str]) -> set[str]:
    """Stamp this replica's leases and return which of ``session_ids`` (its participants'
    live sessions) no longer hold theirs: taken over on another replica. Committed."""
    db.execute(
        update(SessionLease)
        .where(SessionLease.replica_id == replica_id)
        .values(renewed_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    held = set(db.scalars(select(SessionLease.session_id).where(
        SessionLease.replica_id == replica_id)))  # fmt: skip
    db.commit()
    return set(session_ids) - held


def clear_replica(db: Session, replica_id: str) -> None:
    """The leases of an earlier process with this replica id (its sessions are gone), or of
    this one as it stops. Committed."""
    db.execute(delete(SessionLease).where(SessionLease.replica_id == replica_id))
    db.commit()
