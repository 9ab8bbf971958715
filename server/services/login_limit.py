"""Login brute-force limit: failed logins counted per (account, address) and per address.

Nothing counts per account alone: such a count is one anyone can fill with wrong passwords
from anywhere, keeping the owner out (docs/security.md). An account's failures from one
address limit that address for that account; an address's failures over every account limit
that address. Before a key's hard limit, its delays grow: a key with more than half its limit
of failures in the window waits 1 s, then 2 s, 4 s... after its newest failure.

The counts live in the database (table ``login_failures``, one row per failure and key), so
every replica sharing the database sees every failure: with N replicas an attacker still gets
the limit once, not N times (docs/security.md). Times are wall-clock UTC, since processes on
several hosts compare them.

The methods take the caller's session (the login request's); ``failed`` and ``succeeded``
commit it, so a failure counts even though the login then answers 401.

Rows older than the window are deleted: those of the keys a failure touches at once, and
every ``PRUNE_EVERY``-th failure of a process (the first included) those of every key, also
keeping at most ``MAX_ROWS`` rows (the newest) so that a spray of random emails from many
addresses cannot grow the table without bound.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from server.models import LoginFailure

log = logging.getLogger(__name__)

# Rows kept at most (two per failure, one per key, newest kept): a spray of random emails
# from many addresses cannot grow the table without bound; the oldest failures go first.
MAX_ROWS = 1_000_000
# A process prunes every key's expired rows at its first failure and then every this many.
PRUNE_EVERY = 1000
# Longer keys (the column's size) are stored as a digest: an email is at most 320 characters,
# but lowercasing can lengthen it, and an address comes from a header behind trusted proxies.
KEY_MAX = 255


PAIR, ADDRESS = "pair:", "address:"
_SEP = "|"  # between the account and the address of a pair key (addresses hold no "|")


@dataclass(frozen=True)
class Limit:
    """One key's failures in the window, as an admin sees it."""

    key: str
    kind: str  # "account_address" or "address"
    account: str | None  # None when the key is a digest
    address: str | None
    failures: int
    last_failure_at: datetime
    retry_after_s: int


class LoginLimiter:
    """Sliding-window counts of failed logins, kept in the database and shared by replicas."""

    def __init__(
        self,
        max_per_pair: int,
        max_per_address: int,
        window_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_per_pair = max_per_pair
        self.max_per_address = max_per_address
        self.window_s = window_s
        self._clock = clock  # seconds since the epoch
        self._failures = itertools.count()  # this process's failures, for PRUNE_EVERY

    @staticmethod
    def _keys(account: str, address: str) -> tuple[str, str]:
        pair = f"{account.strip().lower()}{_SEP}{address}"
        return _key(PAIR, pair), _key(ADDRESS, address)

    def _limit_of(self, key: str) -> int:
        return self.max_per_pair if key.startswith(PAIR) else self.max_per_address

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def retry_after(self, db: Session, account: str, address: str) -> int:
        """Seconds until a login for ``account`` from ``address`` is allowed; 0 when it is."""
        now = self._now()
        wait = max(
            self._wait(db, key, self._limit_of(key), now) for key in self._keys(account, address)
        )
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, db: Session, account: str, address: str) -> None:
        """Count one failed login against the (account, address) and the address; commits."""
        now = self._now()
        keys = self._keys(account, address)
        db.execute(
            delete(LoginFailure).where(
                LoginFailure.key.in_(keys), LoginFailure.at <= now - self._window
            )
        )
        db.execute(insert(LoginFailure), [{"key": key, "at": now} for key in keys])
        db.commit()
        if next(self._failures) % PRUNE_EVERY == 0:
            self._prune(db, now)

    def succeeded(self, db: Session, account: str, address: str) -> None:
        """A successful login clears the account's failures from that address (not the
        address's own count); commits."""
        db.execute(delete(LoginFailure).where(LoginFailure.key == self._keys(account, address)[0]))
        db.commit()

    def limits(self, db: Session) -> list[Limit]:
        """Every key with failures in the window, the most recently failed first."""
        now = self._now()
        rows = db.execute(
            select(LoginFailure.key, func.count(), func.max(LoginFailure.at))
            .where(LoginFailure.at > now - self._window)
            .group_by(LoginFailure.key)
            .order_by(func.max(LoginFailure.at).desc())
        ).all()
        out = []
        for key, failures, last in rows:
            pair = key.startswith(PAIR)
            value = key.partition(":")[2]
            account: str | None = None
            address: str | None = None
            if not value.startswith("sha256:"):  # a digest names neither
                if pair:
                    account, _, address = value.rpartition(_SEP)
                else:
                    address = value
            wait = self._wait(db, key, self._limit_of(key), now)
            out.append(Limit(
                key=key, kind="account_address" if pair else "address",
                account=account, address=address, failures=int(failures),
                last_failure_at=_aware(last), retry_after_s=math.ceil(wait) if wait > 0 else 0,
            ))  # fmt: skip
        return out

    def clear(self, db: Session, key: str | None = None) -> None:
        """Forget ``key``'s failures (every key's when None); commits."""
        query = delete(LoginFailure)
        if key is not None:
            query = query.where(LoginFailure.key == key)
        db.execute(query)
        db.commit()

    @property
    def _window(self) -> timedelta:
        return timedelta(seconds=self.window_s)

    def _wait(self, db: Session, key: str, limit: int, now: datetime) -> float:
        newest = [
            _aware(at)
            for at in db.scalars(
                select(LoginFailure.at)
                .where(LoginFailure.key == key, LoginFailure.at > now - self._window)
                .order_by(LoginFailure.at.desc())
                .limit(limit)
            )
        ]
        if len(newest) >= limit:
            # allowed again when enough failures have aged out of the window: the limit-th
            # newest one
            return (newest[limit - 1] + self._window - now).total_seconds()
        return (
            (newest[0] + progressive_delay(len(newest), limit) - now).total_seconds()
            if newest
            else 0.0
        )

    def _prune(self, db: Session, now: datetime) -> None:
        """Delete every key's expired rows and the oldest beyond ``MAX_ROWS``.

        Housekeeping in its own transaction: the failure is already counted, and a clash
        with another replica pruning at the same moment must not fail the login's answer.
        """
        try:
            db.execute(delete(LoginFailure).where(LoginFailure.at <= now - self._window))
            beyond = db.scalar(  # the newest row beyond MAX_ROWS: it and older ones go
                select(LoginFailure.at).order_by(LoginFailure.at.desc()).offset(MAX_ROWS).limit(1)
            )
            if beyond is not None:
                db.execute(delete(LoginFailure).where(LoginFailure.at <= beyond))
            db.commit()
        except DBAPIError:
            db.rollback()
            log.warning("pruning login_failures failed; the next prune retries", exc_info=True)


def progressive_delay(failures: int, limit: int) -> timedelta:
    """The wait after a key's newest failure: none for the first half of its limit, then
    1 s, 2 s, 4 s... (before the limit itself, which waits for the window)."""
    free = limit // 2
    if failures <= free:
        return timedelta(0)
    return timedelta(seconds=2.0 ** min(failures - free - 1, 30))


def _aware(at: datetime) -> datetime:
    # SQLite gives back naive datetimes (stored as UTC)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _key(prefix: str, value: str) -> str:
    key = prefix + value
    if len(key) <= KEY_MAX:
        return key
    return f"{prefix}sha256:{hashlib.sha256(value.encode()).hexdigest()}"
