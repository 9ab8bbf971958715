"""Phone pairing codes in the test database (SQLite, or PostgreSQL when
``STUDIO_TEST_DATABASE_URL`` is set), as replicas sharing it see them: a code is redeemed
once, by exactly one of the phones racing it; it expires; a session's new code or its end
drops the old one; wrong guesses from any replica count against one limit."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from sqlalchemy import update

from server.core.db import make_sessionmaker
from server.models import PhoneCode, PhoneCodeFailure, utcnow
from server.services.crowd import phone_codes
from server.services.crowd.phone_codes import CODE_ALPHABET, GuessLimit, Redeemed


def _add(db, session_id: str = "s1", replica: str = "app1", ttl_s: float = 600.0) -> str:  # type: ignore[no-untyped-def]
    return phone_codes.add(db, session_id, replica, f"ticket-{session_id}", time.time() + ttl_s)


def test_a_code_is_redeemed_once_for_its_session_replica_and_ticket(db):
    code = _add(db)
    assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)
    assert phone_codes.redeem(db, code) == Redeemed("s1", "app1", "ticket-s1")
    assert phone_codes.redeem(db, code) is None  # used up
    assert db.query(PhoneCode).count() == 0


def test_a_new_code_or_the_end_of_the_session_drops_the_old_one(db):
    first = _add(db, "s1")
    other = _add(db, "s2")
    second = _add(db, "s1")  # the page asked again: only the newest works
    assert second != first
    assert phone_codes.redeem(db, first) is None
    phone_codes.drop_session(db, "s2")  # the session ended
    assert phone_codes.redeem(db, other) is None
    assert phone_codes.redeem(db, second) == Redeemed("s1", "app1", "ticket-s1")


def test_an_expired_code_is_refused_and_pruned(db):
    code = _add(db)
    db.execute(update(PhoneCode).values(expires_at=utcnow() - timedelta(seconds=1)))
    db.commit()
    assert phone_codes.redeem(db, code) is None  # its ten minutes passed
    assert db.query(PhoneCode).count() == 1  # still there, but dead: the next add prunes it
    fresh = _add(db, "s2")
    db.expire_all()
    assert [row.code for row in db.query(PhoneCode)] == [fresh]
    assert phone_codes.redeem(db, _add(db, "s3", ttl_s=-1)) is None  # born expired


def _race(engine, code: str, phones: int) -> tuple[list[Redeemed], list[BaseException]]:  # type: ignore[no-untyped-def]
    """``phones`` requests redeem ``code`` at once, each on its own connection."""
    make = make_sessionmaker(engine)
    gate = threading.Barrier(phones)
    won: list[Redeemed] = []
    errors: list[BaseException] = []

    def phone() -> None:
        with make() as own:
            gate.wait()
            try:
                found = phone_codes.redeem(own, code)
            except BaseException as exc:  # reported by the test
                errors.append(exc)
                return
            if found is not None:
                won.append(found)

    threads = [threading.Thread(target=phone) for _ in range(phones)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return won, errors


def test_phones_racing_one_code_from_many_replicas_give_one_winner(engine, db):
    for round_ in range(5):
        won, errors = _race(engine, _add(db, f"s{round_}"), 6)
        assert not errors, errors
        assert won == [Redeemed(f"s{round_}", "app1", f"ticket-s{round_}")]


def test_wrong_guesses_on_every_replica_count_against_one_limit(engine, db):
    make = make_sessionmaker(engine)
    replicas = [GuessLimit(per_address=4, overall=6), GuessLimit(per_address=4, overall=6)]
    with make() as one, make() as two:
        for n in range(4):  # one phone's wrong codes, alternating between two replicas
            assert replicas[n % 2].retry_after([one, two][n % 2], "10.0.0.1") == 0
            replicas[n % 2].failed([one, two][n % 2], "10.0.0.1")
        for limit, session in zip(replicas, (one, two), strict=True):
            wait = limit.retry_after(session, "10.0.0.1")
            assert 590 <= wait <= 600  # until the oldest of them leaves the window
        assert replicas[0].retry_after(one, "10.0.0.2") == 0  # another address may guess
        replicas[1].failed(two, "10.0.0.2")
        replicas[0].failed(one, "10.0.0.3")
        # six wrong codes over every address: everyone waits
        assert replicas[1].retry_after(two, "10.0.0.9") > 0
    db.execute(update(PhoneCodeFailure).values(at=utcnow() - timedelta(minutes=10)))
    db.commit()
    assert replicas[0].retry_after(db, "10.0.0.1") == 0  # the window passed
    replicas[0].failed(db, "10.0.0.4")  # and its rows are deleted as the next one counts
    db.expire_all()
    assert [row.address for row in db.query(PhoneCodeFailure)] == ["10.0.0.4"]
