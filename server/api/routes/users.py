"""User management (admins only)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from sqlalchemy import select

from server.api.deps import AdminUser, RowId, SessionDep
from server.models import User
from server.schemas.users import LoginLimitPublic, UserCreate, UserPublic, UserUpdate
from server.services import users
from server.services.login_limit import Limit, LoginLimiter

router = APIRouter(prefix="/api/users", tags=["users"])


@router.get("", response_model=list[UserPublic], summary="List users")
def list_users(db: SessionDep, _: AdminUser) -> list[User]:
    """Every account."""
    return list(db.scalars(select(User).order_by(User.id)))


@router.post("", response_model=UserPublic, status_code=201, summary="Create a user")
def create_user(body: UserCreate, db: SessionDep, _: AdminUser) -> User:
    """A designer or admin account."""
    return users.create_user(db, body)


@router.get("/login-limits", response_model=list[LoginLimitPublic], summary="List login limits")
def list_login_limits(request: Request, db: SessionDep, _: AdminUser) -> list[Limit]:
    """Failed logins in the window per (account, address) and per address, newest first."""
    limiter: LoginLimiter = request.app.state.login_limiter
    return limiter.limits(db)


@router.delete("/login-limits", status_code=204, summary="Clear login limits")
def clear_login_limits(
    request: Request,
    db: SessionDep,
    _: AdminUser,
    key: str | None = Query(default=None, max_length=300, description="One key; all if none."),
) -> None:
    """Forget failed logins: one key's (from the list), or all."""
    limiter: LoginLimiter = request.app.state.login_limiter
    limiter.clear(db, key)


@router.patch("/{user_id}", response_model=UserPublic, summary="Change a user")
def update_user(user_id: RowId, body: UserUpdate, db: SessionDep, _: AdminUser) -> User:
    """Name, password, role, or deactivate (which ends the user's sessions)."""
    return users.update_user(db, user_id, body)
