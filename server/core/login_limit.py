"""Login brute-force limit: failed logins counted per account and per client address.

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
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, insert, select
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


class LoginLimiter:
    """Sliding-window counts of failed logins, kept in the database and shared by replicas."""

    def __init__(
        self,
        max_per_account: int,
        max_per_address: int,
        window_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_per_account = max_per_account
        self.max_per_address = max_per_address
        self.window_s = window_s
        self._clock = clock  # seconds since the epoch
        self._failures = itertools.count()  # this process's failures, for PRUNE_EVERY

    @staticmethod
    def _keys(account: str, address: str) -> tuple[str, str]:
        return _key("account:", account.strip().lower()), _key("address:", address)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def retry_after(self, db: Session, account: str, address: str) -> int:
        """Seconds until a login for ``account`` from ``address`` is allowed; 0 when it is."""
        now = self._now()
        account_key, address_key = self._keys(account, address)
        wait = max(
            self._wait(db, account_key, self.max_per_account, now),
            self._wait(db, address_key, self.max_per_address, now),
        )
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, db: Session, account: str, address: str) -> None:
        """Count one failed login against the account and the address; commits ``db``."""
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

    def succeeded(self, db: Session, account: str) -> None:
        """A successful login clears the account's failures (not the address's); commits."""
        db.execute(delete(LoginFailure).where(LoginFailure.key == self._keys(account, "")[0]))
        db.commit()

    @property
    def _window(self) -> timedelta:
        return timedelta(seconds=self.window_s)

    def _wait(self, db: Session, key: str, limit: int, now: datetime) -> float:
        # Allowed again when enough of the failures in the window have aged out of it: the
        # limit-th newest one.
        at = db.scalar(
            select(LoginFailure.at)
            .where(LoginFailure.key == key, LoginFailure.at > now - self._window)
            .order_by(LoginFailure.at.desc())
            .offset(limit - 1)
            .limit(1)
        )
        if at is None:
            return 0.0
        return (at + self._window - now).total_seconds()

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


def _key(prefix: str, value: str) -> str:
    key = prefix + value
    if len(key) <= KEY_MAX:
        return key
    return f"{prefix}sha256:{hashlib.sha256(value.encode()).hexdigest()}"
