"""Users and logins: accounts, sessions, the login limits."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from server.core.passwords import MIN_LENGTH as MIN_PASSWORD_LENGTH
from server.models import Role
from server.schemas.base import Public
from server.study_spec import StrictModel

PASSWORD_RULE = (
    f"{MIN_PASSWORD_LENGTH}+ characters; common or easily guessed passwords are refused (422)."
)


class LoginIn(StrictModel):
    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


class LoginLimitPublic(BaseModel):
    """Failed logins of one key in the login limits' window (admins)."""

    model_config = ConfigDict(from_attributes=True)

    key: str = Field(description="Pass it to DELETE /api/users/login-limits to clear it.")
    kind: Literal["account_address", "address"]
    account: str | None = Field(description="None when the key is stored as a digest.")
    address: str | None
    failures: int
    last_failure_at: datetime
    retry_after_s: int = Field(description="0 when a login from there is allowed now.")


class UserCreate(StrictModel):
    email: str = Field(min_length=3, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")
    name: str = Field(default="", max_length=200)
    password: str = Field(
        min_length=MIN_PASSWORD_LENGTH, max_length=1024, description=PASSWORD_RULE
    )
    role: Role = Role.designer


class UserUpdate(StrictModel):
    name: str | None = Field(default=None, max_length=200)
    password: str | None = Field(
        default=None, min_length=MIN_PASSWORD_LENGTH, max_length=1024, description=PASSWORD_RULE
    )
    role: Role | None = None
    is_active: bool | None = None


class UserPublic(Public):
    id: int
    email: str
    name: str
    role: Role
    is_active: bool
    created_at: datetime


class LoginOut(BaseModel):
    user: UserPublic
    csrf_token: str = Field(description="Send back as the X-CSRF-Token header on writes.")
    secure_cookies: bool = Field(
        description="The cookies are Secure: a browser keeps them over HTTPS (and localhost) only."
    )
