"""Accounts, their logins and the failed logins counted against them."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from server.core.db import Base
from server.models.base import NO_ID_REUSE, TS, utcnow


class Role(enum.StrEnum):
    admin = "admin"
    designer = "designer"


class User(Base):
    __tablename__ = "users"
    __table_args__ = NO_ID_REUSE

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True, index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(16), index=True, default=Role.designer)
    is_active: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class AuthSession(Base):
    """A login: the cookie holds the token, the table only its SHA-256."""

    __tablename__ = "auth_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(TS, index=True)


class LoginFailure(Base):
    """A failed login, counted against its key while it is in the login limits' window.

    Shared by every replica through the database (server/services/login_limit.py); rows older
    than the window are deleted as logins fail.
    """

    __tablename__ = "login_failures"
    __table_args__ = (Index("ix_login_failures_key_at", "key", "at"), NO_ID_REUSE)

    # 64-bit on PostgreSQL: a long password spray must not run out of ids (they are never
    # reused). SQLite's AUTOINCREMENT needs its own INTEGER, which is 64-bit there anyway.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255))  # account:<email> or address:<ip>
    at: Mapped[datetime] = mapped_column(TS, index=True)
