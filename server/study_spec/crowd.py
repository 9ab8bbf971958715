"""Crowd settings: consent, assignment, completion codes and what participants must do."""

from __future__ import annotations

import unicodedata
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator

from server.study_spec.base import StrictModel

CODE = r"^[A-Za-z0-9_-]{0,64}$"


def check_url(value: str) -> str:
    """An http(s) URL with a host, or empty; anything else (javascript:, data:...) is refused."""
    if not value:
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL")
    if any(ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in value):
        raise ValueError("must not contain spaces or control characters")
    return value


class Requirements(StrictModel):
    """What a participant must have done, on top of the per-environment quotas."""

    min_episodes: int = Field(default=0, ge=0, le=10_000, description="Completed episodes.")
    min_play_time_s: float = Field(
        default=0, ge=0, le=24 * 3600, description="Active play time (completed episodes)."
    )


Input = Literal["keyboard", "gamepad", "touch"]  # what a participant may play with
MAX_TOUCH_BUTTONS = 8  # key bindings an environment may have to get on-screen touch buttons


# Where participants come from: Prolific, MTurk, or the link shared any other way (a typed
# id, or anonymous). Said by the designer for the pre-launch checklist and the editor only.
PlatformName = Literal["prolific", "mturk", "direct"]


def _default_inputs() -> list[Input]:
    return ["keyboard", "gamepad"]


class CrowdSettings(StrictModel):
    """How crowd workers (Prolific, MTurk, a typed id) take part: see docs/study-format.md."""

    consent: str = Field(
        default="", max_length=50_000, description="Markdown; must be accepted when set."
    )
    assignment: Literal["choice", "balanced"] = "choice"
    allow_anonymous: bool = Field(default=False, description="No id needed: one is made up.")
    completion_code: str = Field(default="", pattern=CODE)
    screenout_code: str = Field(default="", pattern=CODE)
    completion_url: str = Field(
        default="", max_length=2000, description="http(s); {code} is replaced by the code."
    )
    screenout_url: str = Field(
        default="", max_length=2000, description="http(s); {code} is replaced by the code."
    )
    full_code: str = Field(
        default="", pattern=CODE,
        description="The code of a participant for whom the study filled up before they "
        "finished (Prolific: a screen-out or no-code return); empty: no code.",
    )  # fmt: skip
    full_url: str = Field(
        default="", max_length=2000,
        description="Where to send them (http(s); {code} is replaced by the code).",
    )  # fmt: skip
    requirements: Requirements = Field(default_factory=Requirements)
    inputs: list[Input] = Field(
        default_factory=_default_inputs, min_length=1, max_length=3,
        description="What participants may play with. A device with none of these (a phone, "
        "where touch is not listed) is told so before consent. With touch, environments with "
        f"at most {MAX_TOUCH_BUTTONS} key bindings get on-screen buttons.",
    )  # fmt: skip

    platforms: list[PlatformName] = Field(
        default_factory=list, max_length=3,
        description="Where participants come from: prolific, mturk, direct (the link shared "
        "any other way: a typed id, or anonymous). Empty: not said. Read by the pre-launch "
        "checklist (a Prolific study needs a completion code or URL); anyone holding the link "
        "may still join.",
    )  # fmt: skip

    @field_validator("inputs", "platforms")
    @classmethod
    def _listed_once(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"{info.field_name} lists an entry twice")
        return value

    @field_validator("completion_url", "screenout_url", "full_url")
    @classmethod
    def _http_only(cls, value: str) -> str:
        return check_url(value)
