"""Login and logout with an HTTP-only session cookie and a CSRF double-submit token."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Request, Response

from server.api.deps import CurrentUser, SessionDep, SettingsDep
from server.core import security
from server.errors import Unauthorized
from server.schemas.users import LoginIn, LoginOut, UserPublic
from server.services import users
from server.services.login_limit import LoginLimiter

router = APIRouter(prefix="/api/auth", tags=["auth"])


@router.post(
    "/login",
    response_model=LoginOut,
    summary="Log in",
    responses={
        401: {"description": "Wrong email or password (one message for both)."},
        429: {
            "description": "Too many failed logins for this account from this address, or "
            "from this address; "
            "the Retry-After header gives the seconds to wait."
        },
    },
)
def login(
    body: LoginIn, request: Request, response: Response, db: SessionDep, settings: SettingsDep
) -> LoginOut:
    """Set the session cookie (HTTP-only) and the CSRF cookie; return the user.

    Failed logins are limited per (account, client address) and per client address, with
    delays that grow before the limit (429 with Retry-After), counted in the database so that
    every replica sees them; while limited, even the right password is refused from that
    address. Nothing limits an account from every address: strangers cannot lock its owner
    out (docs/security.md).
    """
    limiter: LoginLimiter = request.app.state.login_limiter
    # The peer address; behind STUDIO_TRUSTED_PROXIES the app has already put the client's
    # address from X-Forwarded-For here (server.main), and nothing else reads that header.
    address = request.client.host if request.client else ""
    wait = limiter.retry_after(db, body.email, address)
    if wait:
        raise HTTPException(
            429,
            detail=f"Too many failed logins. Try again in {_minutes(wait)}.",
            headers={"Retry-After": str(wait)},
        )
    try:
        user = users.authenticate(db, body.email, body.password)
    except Unauthorized:
        limiter.failed(db, body.email, address)  # commits: the 401 rolls the session back
        raise
    limiter.succeeded(db, body.email, address)
    token = users.start_login(db, user, settings.session_max_age_s)
    csrf = security.new_token(16)
    secure = settings.secure_cookies
    # the session cookie is hidden from scripts; the CSRF token is read by the page's script
    cookies: tuple[tuple[str, str, bool, Literal["lax", "strict"]], ...] = (
        (security.SESSION_COOKIE, token, True, "lax"),
        (security.CSRF_COOKIE, csrf, False, "strict"),
    )
    for name, value, httponly, samesite in cookies:
        response.set_cookie(
            name,
            value,
            max_age=settings.session_max_age_s,
            httponly=httponly,
            samesite=samesite,
            secure=secure,
        )
    return LoginOut(user=UserPublic.model_validate(user), csrf_token=csrf, secure_cookies=secure)


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


def _minutes(seconds: int) -> str:
    minutes = -(-seconds // 60)
    return f"{seconds} seconds" if seconds < 60 else f"{minutes} minute{'s' * (minutes > 1)}"
