"""The participant's session lease on the test database (SQLite, or PostgreSQL when
``STUDIO_TEST_DATABASE_URL`` is set): taken atomically, refused while a live session on a
live replica holds it, free once that replica stops heartbeating or that session ends,
moved by a takeover (the losing replica learns it on its tick), and of two tabs starting at
once exactly one holds it."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import update

from server.core.db import make_sessionmaker
from server.models import PlaySession, Replica, SessionLease, utcnow
from server.principal import Principal
from server.services.crowd import episodes, leases

DEAD_AFTER_S = 15.0
PID = 7  # the lease table keys on the participant id alone (no foreign key)


@pytest.fixture
def sessions(factory, db):  # type: ignore[no-untyped-def]
    """Make play session rows (the lease reads whether its session ended)."""
    designer = factory.user()
    study = factory.study(designer)
    who = Principal.for_user(designer.id, designer.role)
    return lambda: episodes.start_session(db, study.id, who)


def _replica(db, rid: str, *, age_s: float = 0.0) -> None:
    at = utcnow() - timedelta(seconds=age_s)
    db.add(Replica(id=rid, host="h", pid=1, address="x:1", started_at=at, heartbeat_at=at))
    db.commit()


def _take(db, session_id: str, replica_id: str, **kwargs) -> bool:  # type: ignore[no-untyped-def]
    return leases.take(db, PID, session_id, replica_id, DEAD_AFTER_S, **kwargs)


def _held(db) -> tuple[str, str] | None:
    db.expire_all()
    row = leases.holder(db, PID)
    return None if row is None else (row.session_id, row.replica_id)


def test_a_live_holder_keeps_the_lease_until_taken_over(db, sessions):
    _replica(db, "a")
    _replica(db, "b")
    first, second = sessions(), sessions()
    assert _take(db, first, "a") is True
    assert _take(db, first, "a") is True  # already its own
    assert _take(db, second, "b") is False  # another tab, on another replica
    assert _held(db) == (first, "a")
    assert leases.renew(db, "a", [first]) == set()  # a still holds it
    assert _take(db, second, "b", takeover=True) is True
    assert _held(db) == (second, "b")
    assert leases.renew(db, "a", [first]) == {first}  # a learns it lost it on its tick
    assert leases.renew(db, "b", [second]) == set()
    assert _take(db, first, "a") is False  # and cannot take it back without asking


def test_the_session_a_reload_asks_for_counts_as_free(db, sessions):
    _replica(db, "a")
    _replica(db, "b")
    old, new = sessions(), sessions()
    assert _take(db, old, "a") is True
    assert _take(db, new, "b", replaces="someone-elses") is False
    assert _take(db, new, "b", replaces=old) is True
    assert _held(db) == (new, "b")


def test_a_lease_of_a_dead_or_gone_replica_is_free(db, sessions):
    _replica(db, "dead", age_s=DEAD_AFTER_S + 5)
    _replica(db, "b")
    first, second, third = sessions(), sessions(), sessions()
    assert _take(db, first, "dead") is True
    assert _take(db, second, "b") is True  # its replica stopped heartbeating
    assert _held(db) == (second, "b")
    db.delete(db.get(Replica, "b"))  # a replica that stopped cleanly has no row
    db.commit()
    _replica(db, "c")
    assert _take(db, third, "c") is True
    assert _held(db) == (third, "c")


def test_a_lease_of_an_ended_session_is_free_and_ending_releases_it(db, sessions):
    _replica(db, "a")
    _replica(db, "b")
    first, second, third = sessions(), sessions(), sessions()
    assert _take(db, first, "a") is True
    # ended without releasing (the release failed): free all the same
    db.execute(update(PlaySession).where(PlaySession.id == first).values(ended_at=utcnow()))
    db.commit()
    assert _take(db, second, "b") is True
    episodes.end_session(db, second)  # the session ends: its lease goes
    assert _held(db) is None
    assert _take(db, third, "a") is True
    episodes.end_session(db, first)  # an older session ending leaves the holder's alone
    assert _held(db) == (third, "a")


def test_clear_replica_drops_only_its_own(db, sessions):
    _replica(db, "a")
    assert _take(db, sessions(), "a") is True
    assert leases.take(db, PID + 1, sessions(), "b", DEAD_AFTER_S) is True
    leases.clear_replica(db, "a")
    db.expire_all()
    assert [row.participant_id for row in db.query(SessionLease)] == [PID + 1]


def _race(engine, participant: int, tabs: list[tuple[str, str]], takeover: bool) -> dict[str, str]:
    """Every tab takes the participant's lease at once, each on its own connection; the
    sessions that were told they hold it, with their replica."""
    make = make_sessionmaker(engine)
    gate = threading.Barrier(len(tabs))
    won: dict[str, str] = {}

    def tab(session_id: str, replica_id: str) -> None:
        with make() as own:
            gate.wait()
            if leases.take(own, participant, session_id, replica_id, DEAD_AFTER_S,
                           takeover=takeover):  # fmt: skip
                won[session_id] = replica_id

    threads = [threading.Thread(target=tab, args=pair) for pair in tabs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return won


@pytest.mark.parametrize("takeover", [False, True])
def test_tabs_starting_at_once_on_replicas_give_one_holder(engine, db, sessions, takeover):
    replica_ids = [f"r{i}" for i in range(4)]
    for rid in replica_ids:
        _replica(db, rid)
    for participant in range(100, 106):
        won = _race(engine, participant, [(sessions(), rid) for rid in replica_ids], takeover)
        db.expire_all()
        row = leases.holder(db, participant)
        assert row is not None and won.get(row.session_id) == row.replica_id
        if not takeover:
            assert len(won) == 1, won
        # takeovers may each win in turn: every one but the last learns it lost, on its tick
        for session_id, replica_id in won.items():
            lost = leases.renew(db, replica_id, [session_id])
            assert lost == (set() if session_id == row.session_id else {session_id})
