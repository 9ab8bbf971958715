"""Accounts and logins."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from server.core import security
from server.core.passwords import password_problem
from server.errors import Conflict, Invalid, NotFound, Unauthorized
from server.models import AuthSession, Role, User, utcnow
from server.schemas.users import UserCreate, UserUpdate

BAD_LOGIN = "Wrong email or password."


def check_password(password: str, *user_inputs: str) -> None:
    """422 naming the problem when ``password`` is too short, common or easy to guess."""
    problem = password_problem(password, user_inputs)
    if problem:
        raise Invalid(
            problem, detail=[{"loc": ["body", "password"], "msg": problem, "type": "value_error"}]
        )


def create_user(db: Session, body: UserCreate) -> User:
    """A new account; the email must be unused and the password strong enough."""
    email = body.email.strip().lower()
    check_password(body.password, email, body.name)
    if db.scalar(select(User.id).where(User.email == email)) is not None:
        raise Conflict(f"A user with email {email} already exists.")
    user = User(
        email=email,
        name=body.name,
        role=body.role,
        password_hash=security.hash_password(body.password),
    )
    db.add(user)
    db.commit()
    return user


def update_user(db: Session, user_id: int, body: UserUpdate) -> User:
    """Change name, password, role or active flag; the last active admin stays one (409)."""
    user = db.get(User, user_id)
    if user is None:
        raise NotFound("No such user.")
    leaves_admins = (
        user.role == Role.admin
        and user.is_active
        and ((body.role is not None and body.role != Role.admin) or body.is_active is False)
    )
    if leaves_admins and not _other_active_admins(db, user.id):
        raise Conflict(
            f"{user.email} is the only active admin: make another user an admin first, "
            "so the studio keeps one."
        )
    if body.name is not None:
        user.name = body.name
    if body.password is not None:
        check_password(body.password, user.email, body.name or user.name)
        user.password_hash = security.hash_password(body.password)
        db.execute(delete(AuthSession).where(AuthSession.user_id == user.id))
    if body.role is not None:
        user.role = body.role
    if body.is_active is not None:
        user.is_active = body.is_active
        if not body.is_active:
            db.execute(delete(AuthSession).where(AuthSession.user_id == user.id))
    db.commit()
    return user


def _other_active_admins(db: Session, user_id: int) -> int:
    """How many active admins besides ``user_id``.

    The rows are locked (PostgreSQL) so two admins demoting each other at once cannot both
    see the other one as the remaining admin.
    """
    query = (
        select(User.id)
        .where(User.role == Role.admin, User.is_active.is_(True), User.id != user_id)
        .with_for_update()
    )
    return len(db.scalars(query).all())


def authenticate(db: Session, email: str, password: str) -> User:
    """The active user with these credentials; one uniform error otherwise."""
    user = db.scalar(select(User).where(User.email == email.strip().lower()))
    ok = security.verify_password(password, user.password_hash if user else None)
    if not ok or user is None or not user.is_active:
        raise Unauthorized(BAD_LOGIN)
    return user


def start_login(db: Session, user: User, max_age_s: int) -> str:
    """Create a login session and return its token (the cookie value)."""
    token = security.new_token()
    now = utcnow()
    db.execute(delete(AuthSession).where(AuthSession.expires_at < now))
    db.add(
        AuthSession(
            token_hash=security.token_digest(token),
            user_id=user.id,
            expires_at=now + timedelta(seconds=max_age_s),
        )
    )
    db.commit()
    return token


def user_for_token(db: Session, token: str | None) -> User | None:
    """The active user behind a session token, or None."""
    if not token:
        return None
    row = db.get(AuthSession, security.token_digest(token))
    if row is None:
        return None
    if row.expires_at < utcnow():
        return None
    user = db.get(User, row.user_id)
    return user if user is not None and user.is_active else None


def end_login(db: Session, token: str | None) -> None:
    """Forget a session token."""
    if token:
        db.execute(
            delete(AuthSession).where(AuthSession.token_hash == security.token_digest(token))
        )
        db.commit()


def ensure_admin(db: Session, email: str, password: str | None) -> str | None:
    """Create the first admin when there are no users; return a generated password, if any."""
    if db.scalar(select(func.count(User.id))):
        return None
    generated = None
    if not password:
        generated = password = security.new_token(12)
        while password_problem(password):  # 16 random characters: a retry is very unlikely
            generated = password = security.new_token(12)
    elif problem := password_problem(password, email):
        raise Invalid(f"STUDIO_ADMIN_PASSWORD is refused: {problem}")
    create_user(db, UserCreate(email=email, name="Admin", password=password, role=Role.admin))
    return generated
