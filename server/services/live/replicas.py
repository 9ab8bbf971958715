"""Replicas sharing one database: registration, heartbeats, live sessions and failover.

Every app process (a *replica*, :mod:`server.core.replica`) keeps a row in ``replicas`` and
stamps ``heartbeat_at`` every ``heartbeat_interval_s``; in the same transaction it replaces
its rows of ``live_sessions`` (one per play session it hosts). A replica whose heartbeat is
older than ``replica_dead_after_s`` is dead: the first live replica to see it marks its
``recording`` episodes ``abandoned`` (steps and return from their logs, completed from their
step journals) with conditional
updates, so two replicas racing for the same dead one abandon each episode once.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import ColumnElement, delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from server.core.replica import ReplicaInfo, live_cutoff, process_alive
from server.models import EndedBy, Episode, EpisodeStatus, LiveSessionRow, Replica, utcnow
from server.recording import recovery
from server.services.crowd.episodes import SERVER_RESTART
from server.services.review import quality

REPLICA_LOST = "replica_lost"  # end reason of an episode whose replica stopped heartbeating
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LiveRow:
    """One play session as its replica reports it on a heartbeat tick."""

    session_id: str
    study_id: int
    participant_id: int | None
    user_id: int | None
    env_key: str | None
    phase: str  # waiting, playing, paused, ended
    has_worker: bool
    episode_id: str | None
    step: int | None
    fps: float | None
    latency_p50_ms: float | None
    frames_dropped: int


# -- this replica ---------------------------------------------------------------------------
def register(db: Session, me: ReplicaInfo) -> None:
    """(Re)write this replica's row; live rows of an earlier process with the same id go."""
    now = utcnow()
    db.execute(delete(LiveSessionRow).where(LiveSessionRow.replica_id == me.id))
    db.merge(Replica(id=me.id, host=me.host, pid=me.pid, address=me.address,
                     started_at=now, heartbeat_at=now))  # fmt: skip
    db.commit()


def beat(db: Session, me: ReplicaInfo, rows: Sequence[LiveRow]) -> None:
    """One tick: stamp the heartbeat and replace this replica's live sessions, atomically."""
    now = utcnow()
    stamped = db.execute(
        update(Replica).where(Replica.id == me.id).values(heartbeat_at=now)
    ).rowcount  # type: ignore[attr-defined]
    if not stamped:  # declared dead (a stall longer than the bound) or never registered
        log.warning("replica %s had no row (declared dead?): registering again", me.id)
        db.add(Replica(id=me.id, host=me.host, pid=me.pid, address=me.address,
                       started_at=now, heartbeat_at=now))  # fmt: skip
    db.execute(delete(LiveSessionRow).where(LiveSessionRow.replica_id == me.id))
    if rows:
        db.execute(
            insert(LiveSessionRow),
            [{**asdict(r), "replica_id": me.id, "updated_at": now} for r in rows],  # fmt: skip
        )
    db.commit()


def deregister(db: Session, me: ReplicaInfo) -> None:
    """A clean stop: the row and its live sessions go (its episodes were closed already)."""
    db.execute(delete(Replica).where(Replica.id == me.id))
    db.commit()


# -- other replicas -------------------------------------------------------------------------
def alive_filter(dead_after_s: float) -> ColumnElement[bool]:
    """Rows of ``replicas`` that heartbeat recently enough."""
    return Replica.heartbeat_at >= live_cutoff(dead_after_s)


def is_alive(db: Session, replica_id: str, dead_after_s: float) -> bool:
    """Whether the replica ``replica_id`` heartbeats recently enough."""
    found = db.scalar(
        select(Replica.id).where(Replica.id == replica_id, alive_filter(dead_after_s))
    )
    return found is not None


def dead_replicas(db: Session, dead_after_s: float, me: str) -> list[str]:
    """Ids of replicas whose heartbeat is older than the bound (never ``me``)."""
    cutoff = live_cutoff(dead_after_s)
    rows = db.scalars(select(Replica.id).where(Replica.heartbeat_at < cutoff, Replica.id != me))
    return list(rows)


def _alive_and_gone(db: Session, dead_after_s: float, me: str) -> tuple[list[str], list[str]]:
    """Replicas with a recent heartbeat that are alive, and those known gone although their
    heartbeat is recent: ``me`` (an earlier process with this id) and replicas on this host
    whose process is gone (a server killed and restarted at once)."""
    fresh = db.execute(select(Replica.id, Replica.host, Replica.pid).where(
        alive_filter(dead_after_s))).all()  # fmt: skip
    here = socket.gethostname()
    alive: list[str] = []
    gone: list[str] = []
    for rid, host, pid in fresh:
        is_alive = rid != me and (host != here or process_alive(pid))
        (alive if is_alive else gone).append(rid)
    return alive, gone


def _no_live_owner(alive: list[str]) -> ColumnElement[bool]:
    """Episodes none of the ``alive`` replicas hosts."""
    if not alive:
        return or_(Episode.replica_id.is_(None), Episode.replica_id.is_not(None))
    return or_(Episode.replica_id.is_(None), Episode.replica_id.not_in(alive))


def abandon(db: Session, where: ColumnElement[bool], reason: str) -> int:
    """Mark ``recording`` episodes matching ``where`` abandoned, totals and quality signals
    from their logs (read once each).

    Each row is claimed by ``UPDATE ... WHERE status = 'recording' AND replica_id = <the
    owner read>``: a replica racing for the same episode updates nothing.
    """
    found = db.execute(
        select(Episode.id, Episode.replica_id, Episode.storage_path, Episode.started_at).where(
            Episode.status == EpisodeStatus.recording, where
        )
    ).all()
    db.rollback()  # no transaction held while logs are read
    done = 0
    for episode_id, owner, path, started_at in found:
        recovery.recover(path)  # the steps its dead worker journaled but had not flushed
        recorded = quality.read_log(path)
        now = utcnow()
        duration_s = max(0.0, (now - started_at).total_seconds())
        values: dict[str, Any] = {
            "status": EpisodeStatus.abandoned,
            "end_reason": reason,
            "ended_by": EndedBy.abandoned,
            "ended_at": now,
            "duration_s": duration_s,
            "quality_at": now,  # the session's measurements died with it: from the log
        }
        if recorded is not None:
            values["steps"], values["total_reward"] = len(recorded), float(recorded.total_reward)
            values.update(quality.from_recorded(recorded, duration_s).columns())
        same_owner = Episode.replica_id.is_(None) if owner is None else Episode.replica_id == owner
        claimed = db.execute(
            update(Episode)
            .where(Episode.id == episode_id, Episode.status == EpisodeStatus.recording, same_owner)
            .values(**values)
        ).rowcount  # type: ignore[attr-defined]
        db.commit()
        done += claimed
    return done


def recover_at_start(db: Session, dead_after_s: float, me: str) -> int:
    """At start-up: abandon the recording episodes no live replica hosts (never another live
    replica's: a second process on the same database leaves the first one's players alone);
    rows of replicas known gone go, with their live sessions (off the dashboard at once)."""
    alive, gone = _alive_and_gone(db, dead_after_s, me)
    done = abandon(db, _no_live_owner(alive), SERVER_RESTART)
    if gone:
        db.execute(delete(Replica).where(Replica.id.in_(gone)))
        db.commit()
    return done


def take_over_dead(db: Session, dead_after_s: float, me: str) -> dict[str, int]:
    """Abandon the episodes of every dead replica and drop its rows; {replica: episodes}."""
    taken: dict[str, int] = {}
    for dead in dead_replicas(db, dead_after_s, me):
        taken[dead] = abandon(db, Episode.replica_id == dead, REPLICA_LOST)
        # conditional: a replica that came back meanwhile keeps its row
        stale = Replica.heartbeat_at < live_cutoff(dead_after_s)
        db.execute(delete(Replica).where(Replica.id == dead, stale))
        db.commit()
        log.warning("replica %s stopped heartbeating: %d episodes abandoned", dead, taken[dead])
    return taken


# -- counts over every live replica ----------------------------------------------------------
def workers_elsewhere(db: Session, dead_after_s: float, me: str,
                      study_id: int | None = None) -> int:  # fmt: skip
    """Environment workers other live replicas reported on their last tick."""
    query = (
        select(func.count())
        .select_from(LiveSessionRow)
        .join(Replica, Replica.id == LiveSessionRow.replica_id)
        .where(LiveSessionRow.has_worker, LiveSessionRow.replica_id != me,
               alive_filter(dead_after_s))
    )  # fmt: skip
    if study_id is not None:
        query = query.where(LiveSessionRow.study_id == study_id)
    return int(db.scalar(query) or 0)


def workers_elsewhere_both(db: Session, dead_after_s: float, me: str,
                           study_id: int) -> tuple[int, int]:  # fmt: skip
    """(all, of ``study_id``) workers other live replicas reported."""
    return (workers_elsewhere(db, dead_after_s, me),
            workers_elsewhere(db, dead_after_s, me, study_id))  # fmt: skip
