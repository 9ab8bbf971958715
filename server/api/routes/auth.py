"""Login and logout with an HTTP-only session cookie and a CSRF double-submit token."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from server.api.deps import CurrentUser, SessionDep, SettingsDep
from server.core import security
from server.schemas import LoginIn, LoginOut, UserPublic
from server.services import users

router = APIRouter(prefix="/api/auth", tags=["auth"])


@router.post(
    "/login",
    response_model=LoginOut,
    summary="Log in",
    responses={401: {"description": "Wrong email or password (one message for both)."}},
)
def login(body: LoginIn, response: Response, db: SessionDep, settings: SettingsDep) -> LoginOut:
    """Set the session cookie (HTTP-only) and the CSRF cookie; return the user."""
    user = users.authenticate(db, body.email, body.password)
    token = users.start_login(db, user, settings.session_max_age_s)
    csrf = security.new_token(16)
    secure = settings.environment == "production"
    response.set_cookie(
        security.SESSION_COOKIE,
        token,
        max_age=settings.session_max_age_s,
        httponly=True,
        samesite="lax",
        secure=secure,
    )
    response.set_cookie(
        security.CSRF_COOKIE,
        csrf,
        max_age=settings.session_max_age_s,
        httponly=False,
        samesite="strict",
        secure=secure,
    )
    return LoginOut(user=UserPublic.model_validate(user), csrf_token=csrf)


@router.post("/logout", status_code=204, summary="Log out")
def logout(request: Request, response: Response, db: SessionDep, _: CurrentUser) -> None:
    """Forget the session."""
    users.end_login(db, request.cookies.get(security.SESSION_COOKIE))
    response.delete_cookie(security.SESSION_COOKIE)
    response.delete_cookie(security.CSRF_COOKIE)


@router.get("/me", response_model=UserPublic, summary="The logged-in user")
def me(user: CurrentUser) -> UserPublic:
    """Who the session cookie belongs to."""
    return UserPublic.model_validate(user)
