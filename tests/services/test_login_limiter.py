"""The login limiter's sliding window, in the test database, with a hand-driven clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.core.db import make_engine, make_sessionmaker
from server.models import LoginFailure
from server.services import login_limit
from server.services.login_limit import LoginLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def rows(db: Session, key: str | None = None) -> int:
    query = select(func.count()).select_from(LoginFailure)
    if key is not None:
        query = query.where(LoginFailure.key == key)
    return db.scalar(query) or 0


def test_the_window_slides(db):
    clock = Clock()
    limiter = LoginLimiter(max_per_pair=3, max_per_address=100, window_s=60, clock=clock)
    for _ in range(3):
        assert limiter.retry_after(db, "a@x.org", "h") == 0
        limiter.failed(db, "a@x.org", "h")
        clock.now += 10
    # failures at 1000, 1010, 1020; now 1030: the oldest leaves the window at 1060
    assert limiter.retry_after(db, "A@x.org ", "h") == 30
    clock.now = 1059.5
    assert limiter.retry_after(db, "a@x.org", "h") == 1
    clock.now = 1060.0
    assert limiter.retry_after(db, "a@x.org", "h") == 0
    limiter.failed(db, "a@x.org", "h")  # three in the window again
    assert limiter.retry_after(db, "a@x.org", "h") == 10
    # the failure at 1000 left the window and its rows went when the account failed again
    assert rows(db, "pair:a@x.org|h") == 3


def test_success_clears_the_account_from_that_address_but_not_the_address(db):
    clock = Clock()
    limiter = LoginLimiter(max_per_pair=2, max_per_address=3, window_s=60, clock=clock)
    limiter.failed(db, "a@x.org", "h")
    limiter.failed(db, "a@x.org", "h")
    assert limiter.retry_after(db, "a@x.org", "h") == 60
    assert limiter.retry_after(db, "a@x.org", "other") == 0  # the owner elsewhere: free
    limiter.succeeded(db, "a@x.org", "h")
    clock.now += 2  # past the address's progressive delay (2 of 3: 1 s)
    assert limiter.retry_after(db, "a@x.org", "h") == 0
    limiter.failed(db, "b@x.org", "h")
    assert limiter.retry_after(db, "c@x.org", "h") == 58  # the address has 3 failures


def test_delays_grow_before_the_limit(db):
    clock = Clock()
    limiter = LoginLimiter(max_per_pair=6, max_per_address=100, window_s=600, clock=clock)
    waits = []
    for _ in range(6):
        limiter.failed(db, "a@x.org", "h")
        waits.append(limiter.retry_after(db, "a@x.org", "h"))
        clock.now += waits[-1]
    assert waits[:5] == [0, 0, 0, 1, 2]  # half the limit free, then 1 s, 2 s...
    assert waits[5] > 500  # the limit: until the oldest failure leaves the window
    assert limiter.retry_after(db, "a@x.org", "elsewhere") == 0


def test_an_address_failing_100_times_cannot_lock_the_owner_out(db):
    clock = Clock()
    limiter = LoginLimiter(max_per_pair=5, max_per_address=20, window_s=900, clock=clock)
    for _ in range(100):
        limiter.failed(db, "owner@x.org", "203.0.113.9")
        clock.now += 1
    assert limiter.retry_after(db, "owner@x.org", "203.0.113.9") > 0
    assert limiter.retry_after(db, "someone@x.org", "203.0.113.9") > 0  # that address is
    assert limiter.retry_after(db, "owner@x.org", "198.51.100.1") == 0  # the owner is not
    kinds = {
        (limit.kind, limit.account, limit.address, limit.failures) for limit in limiter.limits(db)
    }
    assert kinds == {
        ("account_address", "owner@x.org", "203.0.113.9", 100),
        ("address", None, "203.0.113.9", 100),
    }
    pair = next(limit.key for limit in limiter.limits(db) if limit.kind == "account_address")
    limiter.clear(db, pair)
    assert [limit.kind for limit in limiter.limits(db)] == ["address"]
    limiter.clear(db)
    assert limiter.limits(db) == []


@pytest.fixture
def second_replica(settings) -> Iterator[Session]:  # type: ignore[no-untyped-def]
    """A session of another process's engine on the same database."""
    engine = make_engine(settings.database_url)
    with make_sessionmaker(engine)() as session:
        yield session
    engine.dispose()


def test_replicas_share_the_counts(db, second_replica):
    clock = Clock()
    one = LoginLimiter(max_per_pair=3, max_per_address=5, window_s=60, clock=clock)
    two = LoginLimiter(max_per_pair=3, max_per_address=5, window_s=60, clock=clock)
    one.failed(db, "a@x.org", "h")
    two.failed(second_replica, "a@x.org", "h")
    clock.now += 1
    assert one.retry_after(db, "a@x.org", "h") == 0  # past the 1 s after the second
    one.failed(db, "A@x.org", "h")  # the third failure of the pair, on either replica
    assert two.retry_after(second_replica, "a@x.org", "h") == 59
    assert one.retry_after(db, "a@x.org", "h") == 59
    assert one.retry_after(db, "a@x.org", "other") == 0
    two.failed(second_replica, "b@x.org", "h")
    two.failed(second_replica, "c@x.org", "h")  # the address's fifth
    assert one.retry_after(db, "d@x.org", "h") == 59  # the address's fifth newest: 1000
    # a success on one replica clears the pair on the other
    two.succeeded(second_replica, "a@x.org", "h")
    assert one.retry_after(db, "a@x.org", "h") == 59  # the address still counts
    assert {limit.kind for limit in one.limits(db)} == {"address", "account_address"}


def test_rows_are_bounded(db, monkeypatch):
    monkeypatch.setattr(login_limit, "MAX_ROWS", 50)
    monkeypatch.setattr(login_limit, "PRUNE_EVERY", 10)
    clock = Clock()
    limiter = LoginLimiter(max_per_pair=5, max_per_address=5, window_s=60, clock=clock)
    for n in range(200):
        limiter.failed(db, f"u{n}@x.org", f"10.0.{n}.1")
        clock.now += 0.01
        assert rows(db) <= 50 + 2 * 10  # pruned back to 50 every 10 failures
    # the newest failures are the ones kept
    assert rows(db, "pair:u199@x.org|10.0.199.1") == 1
    assert rows(db, "pair:u0@x.org|10.0.0.1") == 0
    clock.now += 61
    limiter.failed(db, "last@x.org", "h")  # the 200th failure: prunes every expired row
    assert rows(db) == 2


def test_a_process_prunes_at_its_first_failure(db):
    clock = Clock()
    old = LoginLimiter(max_per_pair=5, max_per_address=5, window_s=60, clock=clock)
    for n in range(3):
        old.failed(db, f"u{n}@x.org", "h")
    assert rows(db) == 6
    clock.now += 61
    LoginLimiter(max_per_pair=5, max_per_address=5, window_s=60, clock=clock).failed(
        db, "new@x.org", "h2"
    )
    assert rows(db) == 2


def test_long_keys_are_stored_as_a_digest(db):
    limiter = LoginLimiter(max_per_pair=1, max_per_address=5, window_s=60, clock=Clock())
    long = "İ" * 300 + "@x.org"  # lowercasing lengthens it past the column
    limiter.failed(db, long, "h" * 400)
    keys = set(db.scalars(select(LoginFailure.key)))
    assert all(len(key) <= login_limit.KEY_MAX for key in keys), keys
    assert {key.split(":")[0] for key in keys} == {"pair", "address"}
    assert limiter.retry_after(db, long, "h" * 400) == 60
    assert limiter.retry_after(db, "i̇" * 300 + "@x.org", "h" * 400) == 60  # the same account
    assert {(limit.account, limit.address) for limit in limiter.limits(db)} == {(None, None)}
