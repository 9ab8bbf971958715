"""Participants and the player page: permalink preview, joining, consent, the participants list."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from server.schemas.feedback_results import ParticipantJudging
from server.study_spec import StrictModel


class PreviewIn(StrictModel):
    """A first look at a permalink: no participant is made."""

    token: str = Field(min_length=1, max_length=64, description="The study's permalink token.")


JOIN_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "workerId", "assignmentId", "hitId",
               "turkSubmitTo")  # fmt: skip


class JoinIn(StrictModel):
    """A participant arriving through a permalink: the platform's URL parameters, a typed id,
    or neither (anonymous, when the study allows it)."""

    token: str = Field(min_length=1, max_length=64, description="The study's permalink token.")
    participant_id: str | None = Field(
        default=None, max_length=1000,
        description="A typed id: 1-200 characters, no spaces or control characters, not "
                    "starting with 'user:' (designers' test plays).",
    )  # fmt: skip
    browser_key: str | None = Field(
        default=None, max_length=200,
        description="The browser key this browser was given (codes are shown only to it).",
    )  # fmt: skip
    params: dict[str, Annotated[str, Field(max_length=1000)]] = Field(
        default_factory=dict, max_length=32,
        description="The permalink's URL query: " + ", ".join(JOIN_PARAMS) + " (others ignored).",
    )  # fmt: skip


class PreviewAsIn(StrictModel):
    """A designer previewing their study as a participant arriving from ``platform``."""

    platform: Literal["prolific", "mturk", "direct"] = Field(
        description="Where the made-up participant comes from: Prolific and MTurk hand over "
        "TEST- ids in the link; direct takes the id typed (TEST- is put in front)."
    )
    participant_id: str | None = Field(
        default=None, max_length=1000,
        description="direct: the id typed on the entry form (checked like a participant's).",
    )  # fmt: skip


class ConsentIn(StrictModel):
    accept: bool
    at: Literal["consent", "device"] = Field(
        default="consent",
        description="Where a participant who does not accept leaves: at the consent form, or "
        "at the device check before it (the device cannot play the study).",
    )


class PlayerStudyOut(BaseModel):
    """What the player page needs: the study, its environments, and how to connect."""

    study: dict[str, Any]
    ticket: str | None = None
    participant_id: str | None = None
    participant: dict[str, Any] | None = Field(
        default=None, description="ParticipantState (docs/protocol.md)."
    )
    browser_key: str | None = Field(
        default=None, description="A new browser key: keep it and send it back (codes are "
        "shown only to the browser that holds it).",
    )  # fmt: skip
    protocol: int = Field(description="The play protocol's version (docs/protocol.md).")


class PreviewOut(BaseModel):
    study: dict[str, Any]
    state: Literal["active", "paused", "closed", "full"]


class ParticipantRow(BaseModel):
    """One participant as the designer's participants page lists it."""

    id: int
    external_id: str
    platform: str
    platform_study_id: str | None
    platform_session_id: str | None
    consented_at: datetime | None
    screened_out_at: datetime | None
    screenout_reason: str | None = Field(
        description="Why screened out: declined (the consent), device (left at the device "
        "check, before the consent) or gold (a feedback study's gold answers fell below its "
        "threshold); null: not screened out, or before this was recorded."
    )
    started_at: datetime
    last_seen_at: datetime | None
    episodes: dict[str, int] = Field(description="Episodes per status.")
    episodes_verified: int = Field(
        default=0, description="Completed episodes whose replay verified (docs/review.md)."
    )
    episodes_by_task: dict[str, int] = Field(
        default_factory=dict,
        description="Completed episodes per task id (tasks with none "
        "and episodes without a task are not listed).",
    )
    play_time_s: float = Field(description="Summed duration of completed episodes.")
    completed_at: datetime | None
    full_at: datetime | None = Field(description="Done because the study filled up first.")
    outcome: str | None = Field(description="completed, full, screened_out, or null (not yet).")
    completion_code_shown: bool
    assigned_env: str | None
    last_error: str | None = Field(description="The last environment failure they met.")
    judging: ParticipantJudging | None = Field(
        default=None, description="A feedback study's judge: judgements, gold, agreement "
        "(null in a play study). A judge screened out by gold has screenout_reason gold.",
    )  # fmt: skip


class PhoneCodeIn(StrictModel):
    """The code the player page shows, as typed on the phone."""

    code: str = Field(min_length=1, max_length=20, examples=["KX4-7RA"])


class PhoneTicketOut(BaseModel):
    """The phone's ticket: offer it as the ``ticket.<ticket>`` subprotocol of
    ``/ws/phone?replica=<replica>``."""

    ticket: str
    replica: str = Field(description="The replica that runs the session (its HAProxy server "
                         "name): open the phone's socket as /ws/phone?replica=<replica>, which "
                         "the load balancer routes on (docs/deploy.md).")  # fmt: skip
