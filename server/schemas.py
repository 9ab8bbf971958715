"""Request and response bodies: a Create / Update / Public family per entity."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from server.models import Role, StudyState
from server.study_spec import StudySpec


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Public(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# --- users and auth -----------------------------------------------------------------------
class LoginIn(_Body):
    email: str = Field(min_length=3, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


class UserCreate(_Body):
    email: str = Field(min_length=3, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")
    name: str = Field(default="", max_length=200)
    password: str = Field(min_length=8, max_length=1024)
    role: Role = Role.designer


class UserUpdate(_Body):
    name: str | None = Field(default=None, max_length=200)
    password: str | None = Field(default=None, min_length=8, max_length=1024)
    role: Role | None = None
    is_active: bool | None = None


class UserPublic(_Public):
    id: int
    email: str
    name: str
    role: Role
    is_active: bool
    created_at: datetime


class LoginOut(BaseModel):
    user: UserPublic
    csrf_token: str = Field(description="Send back as the X-CSRF-Token header on writes.")


# --- studies ------------------------------------------------------------------------------
class StudyCreate(_Body):
    spec: StudySpec


class StudyUpdate(_Body):
    spec: StudySpec


class StudyStateChange(_Body):
    state: StudyState


class StudyEnvironmentPublic(_Public):
    env_key: str
    name: str
    source_kind: str
    source_ref: str
    mode: str
    position: int


class StudySummary(_Public):
    id: int
    name: str
    state: StudyState
    owner_id: int
    created_at: datetime
    updated_at: datetime
    environments: list[StudyEnvironmentPublic]


class StudyPublic(StudySummary):
    spec: StudySpec
    permalink_token: str | None


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    database: Literal["ok", "unavailable"]


class ErrorOut(BaseModel):
    detail: Any
