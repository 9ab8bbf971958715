"""User management (admins only)."""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import select

from server.api.deps import AdminUser, RowId, SessionDep
from server.models import User
from server.schemas import UserCreate, UserPublic, UserUpdate
from server.services import users

router = APIRouter(prefix="/api/users", tags=["users"])


@router.get("", response_model=list[UserPublic], summary="List users")
def list_users(db: SessionDep, _: AdminUser) -> list[User]:
    """Every account."""
    return list(db.scalars(select(User).order_by(User.id)))


@router.post("", response_model=UserPublic, status_code=201, summary="Create a user")
def create_user(body: UserCreate, db: SessionDep, _: AdminUser) -> User:
    """A designer or admin account."""
    return users.create_user(db, body)


@router.patch("/{user_id}", response_model=UserPublic, summary="Change a user")
def update_user(user_id: RowId, body: UserUpdate, db: SessionDep, _: AdminUser) -> User:
    """Name, password, role, or deactivate (which ends the user's sessions)."""
    return users.update_user(db, user_id, body)
