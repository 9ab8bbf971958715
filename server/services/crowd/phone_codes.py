"""Phone pairing codes and the limit on wrong guesses, in the database so that every replica
sees them: a phone is another browser, which the load balancer may send to any replica.

A code (table ``phone_codes``) names the session it pairs with, the replica that runs that
session (the phone's socket must reach it, docs/deploy.md) and the phone's ticket. It is
redeemed once: ``DELETE ... WHERE code = ? AND expires_at > now RETURNING ...`` is one
statement, atomic on SQLite (one writer at a time) and on PostgreSQL (a second delete of the
row waits for the first's commit, then finds it gone), so of two phones racing one code
exactly one gets the ticket. A session's new code deletes its earlier ones, and its end
deletes them all; expired rows go as codes are added.

Wrong codes (table ``phone_code_failures``) are counted per client address and over every
address, in a sliding window, across replicas: with N replicas an attacker still gets the
limits once, not N times. Two replicas checking at the same instant may each let one more
guess through; the overshoot is bounded by the requests in flight, not by N.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, delete, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.models import PhoneCode, PhoneCodeFailure, utcnow

# 24 letters and digits no one confuses (no 0/O/Q, 1/I/L, 2/Z, 5/S, 6/G, 8/B): 24**6, about
# 191 million codes, against a few hundred guesses in ten minutes (GuessLimit).
CODE_ALPHABET = "ACDEFHJKMNPRTUVWXY345789"
CODE_LENGTH = 6
ATTEMPTS = 5  # a new code that is some live session's already: draw again


def new_code() -> str:
    """A random pairing code."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(text: str) -> str | None:
    """The code as typed (any case, spaces or dashes between), or None when it cannot be one."""
    code = "".join(ch for ch in text.upper() if ch not in " -")
    if len(code) != CODE_LENGTH or any(ch not in CODE_ALPHABET for ch in code):
        return None
    return code


@dataclass(frozen=True)
class Redeemed:
    """What a redeemed code gave: its session, the replica that runs it, the phone's ticket."""

    session_id: str
    replica_id: str
    ticket: str


def add(db: Session, session_id: str, replica_id: str, ticket: str, expires: float) -> str:
    """A fresh code for a pairing of ``session_id`` (on ``replica_id``) until ``expires``
    (seconds since the epoch); the session's earlier codes are dropped. Committed."""
    now = utcnow()
    db.execute(delete(PhoneCode).where(PhoneCode.expires_at <= now))
    db.execute(delete(PhoneCode).where(PhoneCode.session_id == session_id))
    db.commit()
    row = {"session_id": session_id, "replica_id": replica_id, "ticket": ticket,
           "created_at": now, "expires_at": datetime.fromtimestamp(expires, UTC)}  # fmt: skip
    for attempt in range(ATTEMPTS):
        code = new_code()
        try:
            db.execute(insert(PhoneCode).values(code=code, **row))
            db.commit()
            return code
        except IntegrityError:  # another session holds this code now
            db.rollback()
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def redeem(db: Session, code: str) -> Redeemed | None:
    """The pairing of a live code, which is used up (by this call only); None when there is
    none (wrong, expired, used, or its session ended). Committed."""
    found = db.execute(
        delete(PhoneCode)
        .where(PhoneCode.code == code, PhoneCode.expires_at > utcnow())
        .returning(PhoneCode.session_id, PhoneCode.replica_id, PhoneCode.ticket)
    ).one_or_none()
    db.commit()
    return None if found is None else Redeemed(*found)


def drop_session(db: Session, session_id: str) -> None:
    """Forget a session's codes (it ended). Committed."""
    db.execute(delete(PhoneCode).where(PhoneCode.session_id == session_id))
    db.commit()


class GuessLimit:
    """Wrong codes in a sliding window, per client address and over all addresses.

    Per address: ``per_address`` wrong codes in ``window_s``; over every address together
    ``overall`` (a botnet's many addresses share it). Codes last ten minutes and are 1 in
    191 million: at these limits a guess succeeds about once in many thousand days."""

    def __init__(self, per_address: int = 10, overall: int = 200, window_s: float = 600.0) -> None:
        self.per_address, self.overall = per_address, overall
        self.window = timedelta(seconds=window_s)

    def retry_after(self, db: Session, address: str) -> int:
        """Seconds until ``address`` may guess again (0: now)."""
        now = utcnow()
        waits = [self._wait(db, now, PhoneCodeFailure.address == address, self.per_address),
                 self._wait(db, now, None, self.overall)]  # fmt: skip
        wait = max(waits)
        return max(1, math.ceil(wait)) if wait > 0 else 0

    def failed(self, db: Session, address: str) -> None:
        """One more wrong code from ``address`` (rows out of the window go). Committed."""
        now = utcnow()
        db.execute(delete(PhoneCodeFailure).where(PhoneCodeFailure.at <= now - self.window))
        db.execute(insert(PhoneCodeFailure).values(address=address[:255], at=now))
        db.commit()

    def _wait(self, db: Session, now: datetime, which: ColumnElement[bool] | None,
              cap: int) -> float:  # fmt: skip
        query = select(PhoneCodeFailure.at).where(PhoneCodeFailure.at > now - self.window)
        if which is not None:
            query = query.where(which)
        newest = list(db.scalars(query.order_by(PhoneCodeFailure.at.desc()).limit(cap)))
        if len(newest) < cap:
            return 0.0
        # allowed again once the cap-th newest failure leaves the window
        oldest = newest[cap - 1]
        return (oldest + self.window - now).total_seconds()
