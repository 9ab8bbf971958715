"""Dependencies: settings, a database session per request, and who is asking."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path, Request
from sqlalchemy.orm import Session

from server.core import security
from server.core.budget import ProcessBudget
from server.core.config import Settings
from server.core.db import session_scope
from server.errors import Forbidden, Unauthorized
from server.models import MAX_DB_INT, Role, User
from server.principal import Principal
from server.runtime.warm_pool import WarmPool
from server.services import users

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
RowId = Annotated[int, Path(ge=1, le=MAX_DB_INT)]


def get_settings(request: Request) -> Settings:
    """The app's settings (set by ``create_app``)."""
    settings: Settings = request.app.state.settings
    return settings


def get_db(request: Request) -> Iterator[Session]:
    """One session per request, closed afterwards."""
    yield from session_scope(request.app.state.sessionmaker)


def get_budget(request: Request) -> ProcessBudget:
    """The app's budget for background work (validation builds, video encodes)."""
    budget: ProcessBudget = request.app.state.budget
    return budget


def get_warm(request: Request) -> WarmPool | None:
    """The app's warm workers (None: an app without a player registry's pool)."""
    return getattr(request.app.state.player_registry, "warm", None)


SettingsDep = Annotated[Settings, Depends(get_settings)]
WarmDep = Annotated[WarmPool | None, Depends(get_warm)]
BudgetDep = Annotated[ProcessBudget, Depends(get_budget)]
SessionDep = Annotated[Session, Depends(get_db)]


def optional_user(request: Request, db: SessionDep) -> User | None:
    """The logged-in user, or None; writes must carry the CSRF header matching its cookie."""
    user = users.user_for_token(db, request.cookies.get(security.SESSION_COOKIE))
    if user is not None and request.method not in SAFE_METHODS:
        if not security.tokens_equal(
            request.headers.get(security.CSRF_HEADER), request.cookies.get(security.CSRF_COOKIE)
        ):
            raise Forbidden("Missing or wrong CSRF token (send the X-CSRF-Token header).")
    return user


def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    """A logged-in user, or 401."""
    if user is None:
        raise Unauthorized("Log in first.")
    return user


def current_principal(user: Annotated[User, Depends(current_user)]) -> Principal:
    """The logged-in user as a principal."""
    return Principal.for_user(user.id, user.role)


def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    """An admin, or 403."""
    if user.role != Role.admin:
        raise Forbidden("Only admins can do this.")
    return user


CurrentUser = Annotated[User, Depends(current_user)]
CurrentPrincipal = Annotated[Principal, Depends(current_principal)]
AdminUser = Annotated[User, Depends(admin_user)]
