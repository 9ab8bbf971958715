"""Jobs claimed through the database: each queued job by exactly one replica, even when
several poll at the same moment; a dead replica's job goes back to the queue."""

from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import select

from server.core.db import make_sessionmaker
from server.models import ExportJob, JobState, utcnow
from server.queue import job_queue


def _jobs(db, factory, n: int) -> list[int]:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    rows = [
        ExportJob(study_id=study.id, owner_id=owner.id, selection={}, options={}) for _ in range(n)
    ]
    db.add_all(rows)
    db.commit()
    return [r.id for r in rows]


def test_concurrent_claims_take_each_job_once(db, engine, factory) -> None:  # type: ignore[no-untyped-def]
    ids = _jobs(db, factory, 24)
    sessions = make_sessionmaker(engine)
    claimed: dict[str, list[int]] = {}
    barrier = threading.Barrier(6)

    def replica(name: str) -> None:
        mine = claimed.setdefault(name, [])
        barrier.wait()
        with sessions() as s:
            while (job_id := job_queue.claim_next(s, ExportJob, name)) is not None:
                mine.append(job_id)

    threads = [threading.Thread(target=replica, args=(f"r{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    every = sorted(i for mine in claimed.values() for i in mine)
    assert every == sorted(ids)  # each job once, none left over
    db.expire_all()
    rows = db.scalars(select(ExportJob)).all()
    assert all(r.state == JobState.running and r.attempts == 1 for r in rows)
    assert {r.id: r.claimed_by for r in rows} == {
        i: name for name, mine in claimed.items() for i in mine
    }


def test_stale_claims_are_requeued_then_failed_after_max_attempts(db, factory) -> None:  # type: ignore[no-untyped-def]
    fresh, stale, worn, canceled = _jobs(db, factory, 4)
    for job_id in (fresh, stale, worn, canceled):
        assert job_queue.claim_next(db, ExportJob, "dead") == job_id
    long_ago = utcnow() - timedelta(seconds=60)
    for job_id in (stale, worn, canceled):
        row = db.get(ExportJob, job_id)
        row.heartbeat_at = long_ago
    db.get(ExportJob, worn).attempts = 3
    db.get(ExportJob, canceled).cancel_requested = True
    db.get(ExportJob, stale).steps_done = 40
    db.commit()

    taken = job_queue.requeue_stale(db, ExportJob, 30.0, 3, "gave up", steps_done=0)
    assert sorted(taken) == sorted([stale, worn, canceled])
    db.expire_all()
    state = {i: db.get(ExportJob, i) for i in (fresh, stale, worn, canceled)}
    assert state[fresh].state == JobState.running and state[fresh].claimed_by == "dead"
    assert state[stale].state == JobState.queued and state[stale].claimed_by is None
    assert state[stale].steps_done == 0
    assert state[worn].state == JobState.failed and state[worn].message == "gave up"
    assert state[canceled].state == JobState.canceled
    # The dead replica's late writes no longer land; the next claim is a second attempt.
    assert job_queue.heartbeat(db, ExportJob, "dead") == {fresh: False}
    assert not job_queue.set_if_claimed(db, ExportJob, stale, "dead", steps_done=99)
    assert job_queue.claim_next(db, ExportJob, "alive") == stale
    db.expire_all()
    assert db.get(ExportJob, stale).attempts == 2


def test_cancel_request_reaches_the_claiming_replica(db, factory) -> None:  # type: ignore[no-untyped-def]
    queued, running = _jobs(db, factory, 2)
    assert job_queue.claim_next(db, ExportJob, "a") == queued  # oldest first
    assert job_queue.heartbeat(db, ExportJob, "a") == {queued: False}
    job_queue.request_cancel(db, ExportJob, queued, "stop")
    assert job_queue.heartbeat(db, ExportJob, "a") == {queued: True}
    job_queue.request_cancel(db, ExportJob, running, "not started")
    db.expire_all()
    row = db.get(ExportJob, running)
    assert row.state == JobState.canceled and row.message == "not started"
    assert job_queue.claim_next(db, ExportJob, "b") is None
