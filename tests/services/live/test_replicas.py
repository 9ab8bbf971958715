"""Replica bookkeeping on the test database: who recovers what at start-up, the failover
claim with two replicas racing, live rows and the worker counts over live replicas."""

from __future__ import annotations

import os
import subprocess
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from server.core.db import make_engine, make_sessionmaker
from server.core.replica import ReplicaInfo
from server.models import Episode, EpisodeStatus, LiveSessionRow, Replica, utcnow
from server.principal import Principal
from server.services.crowd import episodes
from server.services.crowd.episodes import SERVER_RESTART
from server.services.live import replicas
from server.services.live.replicas import REPLICA_LOST, LiveRow
from tests.player.conftest import counter_env, spec

BOUND = 15.0


@pytest.fixture
def designer(factory):  # type: ignore[no-untyped-def]
    return factory.user()


def _replica(db, rid: str, *, age_s: float = 0.0, host: str = "other-host", pid: int = 1):
    at = utcnow() - timedelta(seconds=age_s)
    db.add(Replica(id=rid, host=host, pid=pid, address="x:1", started_at=at, heartbeat_at=at))
    db.commit()


def _episodes(db, factory, designer, settings, owners):
    study = factory.study(designer, spec(counter_env()))
    who = Principal.for_user(designer.id, designer.role)
    sid = episodes.start_session(db, study.id, who)
    made = {}
    for owner in owners:
        row = episodes.create_episode(db, study_id=study.id, env_key="counter", session_id=sid,
                                      principal=who, seed=1, data_root=settings.data_root,
                                      replica_id=owner)  # fmt: skip
        made[owner] = row.id
    return study, made


def _status(db, episode_id):
    row = db.get(Episode, episode_id)
    db.refresh(row)
    return row.status, row.end_reason


def test_start_up_recovers_only_episodes_no_live_replica_hosts(factory, designer, db, settings):
    here = ReplicaInfo.current("me", "").host
    sleeper = subprocess.Popen(["sleep", "60"])  # a live process on this host
    try:
        _replica(db, "live-elsewhere")  # fresh heartbeat, another host: alive
        _replica(db, "live-here", host=here, pid=sleeper.pid)  # fresh, its process runs
        _replica(db, "gone-here", host=here, pid=2**22 + 7)  # fresh stamp, process gone
        _replica(db, "stale", age_s=BOUND + 5)  # heartbeat too old
        owners = [None, "me", "unknown", "stale", "gone-here", "live-elsewhere", "live-here"]
        _, made = _episodes(db, factory, designer, settings, owners)
        assert replicas.recover_at_start(db, BOUND, "me") == 5
    finally:
        sleeper.kill()
        sleeper.wait()
    for owner in (None, "me", "unknown", "stale", "gone-here"):
        assert _status(db, made[owner]) == (EpisodeStatus.abandoned, SERVER_RESTART), owner
    for owner in ("live-elsewhere", "live-here"):
        assert _status(db, made[owner]) == (EpisodeStatus.recording, None), owner
    # the replica known gone has no row left (its live sessions leave the dashboard); the
    # stale one is left to the live replicas' watch
    db.expire_all()
    assert {r.id for r in db.scalars(select(Replica))} == {"live-elsewhere", "live-here", "stale"}


def test_two_replicas_racing_for_a_dead_one_abandon_each_episode_once(
    factory, designer, db, settings
):
    _replica(db, "dead", age_s=BOUND + 5)
    _replica(db, "a")
    _replica(db, "b")
    _, made = _episodes(db, factory, designer, settings, ["dead"] * 6 + ["a"])
    start = threading.Barrier(2)
    taken: dict[str, dict[str, int]] = {}
    engines = [make_engine(settings.database_url) for _ in range(2)]

    def take(me: str, engine) -> None:  # type: ignore[no-untyped-def]
        with make_sessionmaker(engine)() as session:
            start.wait()
            taken[me] = replicas.take_over_dead(session, BOUND, me)

    threads = [
        threading.Thread(target=take, args=(me, e)) for me, e in zip("ab", engines, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for e in engines:
        e.dispose()
    # each episode was claimed by exactly one of them
    assert sum(t.get("dead", 0) for t in taken.values()) == 6
    rows = db.scalars(select(Episode).where(Episode.replica_id == "dead")).all()
    for row in rows:
        db.refresh(row)
    assert {(r.status, r.end_reason) for r in rows} == {(EpisodeStatus.abandoned, REPLICA_LOST)}
    assert _status(db, made["a"]) == (EpisodeStatus.recording, None)
    db.expire_all()
    assert {r.id for r in db.scalars(select(Replica))} == {"a", "b"}


def _row(session_id: str, study_id: int, worker: bool = True, step: int = 3) -> LiveRow:
    return LiveRow(session_id=session_id, study_id=study_id, participant_id=None, user_id=None,
                   env_key="counter", phase="playing", has_worker=worker, episode_id=None,
                   step=step, fps=60.0, latency_p50_ms=12.0, frames_dropped=0)  # fmt: skip


def test_beat_replaces_live_rows_and_counts_cover_live_replicas_only(factory, designer, db):
    one = factory.study(designer, spec(counter_env()))
    two = factory.study(designer, spec(counter_env()))
    me = ReplicaInfo(id="me", host="h", pid=os.getpid(), address="h:1")
    other = ReplicaInfo(id="other", host="h2", pid=1, address="h2:1")
    old = ReplicaInfo(id="old", host="h3", pid=1, address="h3:1")
    for info in (me, other, old):
        replicas.register(db, info)
    replicas.beat(db, me, [_row("m1", one.id), _row("m2", two.id)])
    replicas.beat(db, other, [_row("o1", one.id), _row("o2", one.id, worker=False),
                              _row("o3", two.id)])  # fmt: skip
    replicas.beat(db, old, [_row("x1", one.id)])
    stale = utcnow() - timedelta(seconds=BOUND + 1)
    db.execute(update(Replica).where(Replica.id == "old").values(heartbeat_at=stale))
    db.commit()
    # other live replicas' workers: other's o1 and o3 (o2 has none; old is dead; me excluded)
    assert replicas.workers_elsewhere(db, BOUND, "me") == 2
    assert replicas.workers_elsewhere(db, BOUND, "me", one.id) == 1
    # the next tick replaces the replica's rows
    replicas.beat(db, me, [_row("m2", two.id, step=9)])
    mine = db.scalars(select(LiveSessionRow).where(LiveSessionRow.replica_id == "me")).all()
    assert [(r.session_id, r.step) for r in mine] == [("m2", 9)]
    # a replica declared dead meanwhile registers again on its next beat
    db.execute(update(Replica).where(Replica.id == "me").values(heartbeat_at=stale))
    db.commit()
    assert replicas.take_over_dead(db, BOUND, "other") == {"me": 0, "old": 0}
    replicas.beat(db, me, [])
    db.expire_all()
    assert {r.id for r in db.scalars(select(Replica))} == {"me", "other"}
    replicas.deregister(db, other)  # its live rows go with it
    assert db.scalars(select(LiveSessionRow)).all() == []
