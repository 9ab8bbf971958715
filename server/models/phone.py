"""A phone's pairing codes and the wrong codes guessed, shared by every replica."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, utcnow


class PhoneCode(Base):
    """A code a player page shows, until a phone redeems it (the row is deleted), it expires,
    the session shows a new one or the session ends (server/services/crowd/phone_codes.py).

    ``replica_id`` runs the session: the phone's socket must reach it (docs/deploy.md). No
    foreign keys: the session's end deletes the row, and a dead replica's rows expire.
    """

    __tablename__ = "phone_codes"

    code: Mapped[str] = mapped_column(String(8), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(32), index=True)
    replica_id: Mapped[str] = mapped_column(String(128))
    ticket: Mapped[str] = mapped_column(String(400))  # the phone's, given for the code
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(TS, index=True)


class PhoneCodeFailure(Base):
    """A wrong pairing code from a client address, counted while it is in the window."""

    __tablename__ = "phone_code_failures"
    __table_args__ = (Index("ix_phone_code_failures_address_at", "address", "at"), NO_ID_REUSE)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    address: Mapped[str] = mapped_column(String(255))
    at: Mapped[datetime] = mapped_column(TS, index=True)
