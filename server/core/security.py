"""Passwords (argon2), login tokens, CSRF tokens and permalink tokens."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
# Verified against when the email is unknown, so both paths cost one argon2 verification.
# Made when a server starts (``dummy_hash``), not at import: every process that imports this
# module (the CLI, each export, each worker's parent) would spend a quarter of a CPU-second.
_DUMMY_HASH: str | None = None


def dummy_hash() -> str:
    """The hash verified against for unknown emails (made once, on the first call)."""
    global _DUMMY_HASH
    if _DUMMY_HASH is None:
        _DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))
    return _DUMMY_HASH


SESSION_COOKIE = "studio_session"
CSRF_COOKIE = "studio_csrf"
CSRF_HEADER = "X-CSRF-Token"


def hash_password(password: str) -> str:
    """An argon2id hash of ``password``."""
    return _hasher.hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    """True when ``password`` matches; with no hash, spends the same time and says False."""
    try:
        return _hasher.verify(password_hash or dummy_hash(), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def new_token(nbytes: int = 32) -> str:
    """A URL-safe random token."""
    return secrets.token_urlsafe(nbytes)


def token_digest(token: str) -> str:
    """What the database stores of a bearer token."""
    return hashlib.sha256(token.encode()).hexdigest()


def tokens_equal(a: str | None, b: str | None) -> bool:
    """Constant-time comparison that is False when either side is missing."""
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))


def salted_hash(secret_key: str, value: str) -> str:
    """A stable pseudonym for ``value`` (agent ids in exports)."""
    return hmac.new(secret_key.encode(), value.encode(), hashlib.sha256).hexdigest()[:32]
