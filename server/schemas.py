"""Request and response bodies: a Create / Update / Public family per entity."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from server.core.passwords import MIN_LENGTH as MIN_PASSWORD_LENGTH
from server.models import MAX_DB_INT, EpisodeStatus, JobState, Role, StudyState
from server.study_spec import StrictModel, StudySpec


class _Public(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# --- users and auth -----------------------------------------------------------------------
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
    secure_cookies: bool = Field(
        description="The cookies are Secure: a browser keeps them over HTTPS (and localhost) only."
    )


# --- studies ------------------------------------------------------------------------------
class StudyCreate(StrictModel):
    spec: StudySpec


class StudyUpdate(StrictModel):
    spec: StudySpec


class StudyStateChange(StrictModel):
    state: StudyState


class StudyEnvironmentPublic(_Public):
    env_key: str
    name: str
    source_kind: str
    source_ref: str
    mode: str
    position: int


class StudyRef(_Public):
    """Another study, by id and name (a version's parent, or a study's versions)."""

    id: int
    name: str
    state: StudyState


class StudySummary(_Public):
    id: int
    name: str
    state: StudyState
    owner_id: int
    created_at: datetime
    updated_at: datetime
    environments: list[StudyEnvironmentPublic]
    parent_study_id: int | None = Field(description="The study this one is a new version of.")
    parent: StudyRef | None = None


class StudyPublic(StudySummary):
    spec: StudySpec
    permalink_token: str | None
    versions: list[StudyRef] = Field(
        default_factory=list, description="Studies saved as new versions of this one."
    )


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    version: str
    database: Literal["ok", "unavailable"]
    replica: str = Field(description="Which app replica answered (STUDIO_REPLICA_ID).")


class ErrorOut(BaseModel):
    detail: Any


# --- episodes: review, tags, notes ----------------------------------------------------------
class TagIn(StrictModel):
    name: str = Field(min_length=1, max_length=64)


class StepTagIn(StrictModel):
    name: str = Field(min_length=1, max_length=64)
    start: int = Field(ge=0, description="First tagged step.")
    end: int | None = Field(default=None, ge=0, description="Last tagged step (inclusive).")


class NoteIn(StrictModel):
    body: str = Field(min_length=1, max_length=10_000)


class StepTagPublic(BaseModel):
    id: int
    name: str
    start: int
    end: int


class NotePublic(BaseModel):
    id: int
    body: str
    author_id: int | None
    created_at: datetime


class QualityBadge(BaseModel):
    flag: Literal["idle", "slow", "dropped", "short", "long"]
    label: str = Field(description='What the list shows, e.g. "idle 80%", "p99 140 ms".')


class EpisodeSummary(BaseModel):
    id: str
    study_id: int
    env_key: str
    status: EpisodeStatus
    end_reason: str | None
    participant: str = Field(description="External id, or user:<id> for a designer's play.")
    is_test: bool = Field(description="A designer's test play (not a participant's episode).")
    seed: int | None
    steps: int
    total_reward: float
    started_at: datetime
    ended_at: datetime | None
    duration_s: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    frames_dropped: int
    latency_p99_ms: float | None
    idle_share: float | None = Field(description="Share of actions with no input (0-1).")
    inputs_per_s: float | None = Field(description="Controls newly pressed per second.")
    quality_computed: bool = Field(
        description="False: the signals were never computed (run `rlds-studio quality`)."
    )
    length_ratio: float | None = Field(
        description="Steps / the median steps of the environment's completed episodes."
    )
    badges: list[QualityBadge] = Field(description="Quality flags worth a reviewer's look.")
    tags: list[str]
    player_outcome: Literal["success", "failure"] | None = Field(
        default=None, description="The player's answer at save time (when the study asks)."
    )
    reviewer_outcome: Literal["success", "failure"] | None = Field(
        default=None, description="A reviewer's outcome; it overrides the player's."
    )
    outcome: Literal["success", "failure"] | None = Field(
        default=None, description="Effective outcome: the reviewer's, else the player's."
    )
    excluded: bool = Field(default=False, description="Kept out of exports by default.")


class EpisodeReviewIn(StrictModel):
    """A reviewer's outcome (null unsets it) and/or the excluded mark; absent fields stay."""

    outcome: Literal["success", "failure"] | None = None
    excluded: bool | None = None

    @model_validator(mode="after")
    def _something(self) -> EpisodeReviewIn:
        if not self.model_fields_set & {"outcome", "excluded"}:
            raise ValueError("give outcome and/or excluded")
        return self


OutcomeFilter = Literal["success", "failure", "unset"]


class EpisodeDetail(EpisodeSummary):
    error: str | None
    step_tags: list[StepTagPublic]
    notes: list[NotePublic]


class EpisodeList(BaseModel):
    items: list[EpisodeSummary]
    total: int | None = Field(
        description="Matching episodes (at most the cap unless exact_count; null: count=false)."
    )
    total_exact: bool = Field(description="False: more than total match (counting stopped).")
    offset: int
    limit: int
    next_cursor: str | None = Field(description="after= of the next page; None on the last.")
    tag_names: list[str] = Field(
        description="Every tag name used in the study (empty with count=false)."
    )


MAX_BULK_IDS = 10_000
MAX_BULK_TAGS = 50


class EpisodeFilterIn(StrictModel):
    """The episodes page's filter (empty fields do not filter; no status: every status).

    The one filter model of the list, bulk actions and exports (:class:`ExportSelection`
    extends it); :func:`server.services.exports.selection_filter` turns it into the review
    filter."""

    statuses: list[EpisodeStatus] = Field(default_factory=list)
    environments: list[str] = Field(default_factory=list, description="Environment keys.")
    participants: list[str] = Field(default_factory=list, description="External ids, user:<id>.")
    tags: list[str] = Field(default_factory=list, description="Required episode tags (all).")
    exclude_tags: list[str] = Field(default_factory=list)
    since: datetime | None = Field(default=None, description="Started at or after.")
    until: datetime | None = Field(default=None, description="Started at or before.")
    min_return: float | None = Field(default=None, allow_inf_nan=False, description="Return >=.")
    max_return: float | None = Field(default=None, allow_inf_nan=False, description="Return <=.")
    min_steps: int | None = Field(default=None, ge=0, le=MAX_DB_INT, description="Steps >=.")
    max_steps: int | None = Field(default=None, ge=0, le=MAX_DB_INT, description="Steps <=.")
    p99_over_ms: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Input latency p99 over this (ms)."
    )
    idle_over: float | None = Field(
        default=None, ge=0, le=1, description="Share of actions with no input over this (0-1)."
    )
    under_median: float | None = Field(
        default=None, gt=0, le=1000, description="Steps under this times the env's median."
    )
    over_median: float | None = Field(
        default=None, gt=0, le=1000, description="Steps over this times the env's median."
    )
    include_tests: bool = Field(
        default=False,
        description="Include designers' test plays (left out by default, unless user:<id> "
        "participants are named).",
    )
    outcomes: list[OutcomeFilter] = Field(
        default_factory=list, description="Effective outcomes (unset: neither said)."
    )
    excluded: bool | None = Field(default=None, description="Only excluded (true) or kept.")


class BulkSelection(StrictModel):
    """Exactly one of: explicit episode ids, or a filter over the study's episodes."""

    episode_ids: list[str] | None = Field(
        default=None, min_length=1, max_length=MAX_BULK_IDS, description="These episodes."
    )
    filter: EpisodeFilterIn | None = Field(default=None, description="Every matching episode.")

    @model_validator(mode="after")
    def _one_of(self) -> BulkSelection:
        if (self.episode_ids is None) == (self.filter is None):
            raise ValueError("give either episode_ids or filter")
        return self


class EpisodeBulkIn(StrictModel):
    selection: BulkSelection
    action: Literal["add_tags", "remove_tags", "delete", "set_outcome", "exclude", "include"]
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=MAX_BULK_TAGS, description="For add_tags, remove_tags."
    )
    outcome: Literal["success", "failure"] | None = Field(
        default=None, description="For set_outcome: the reviewer's outcome; null unsets it."
    )

    @model_validator(mode="after")
    def _tags_when_tagging(self) -> EpisodeBulkIn:
        if self.action in ("add_tags", "remove_tags") and not self.tags:
            raise ValueError(f"{self.action} needs at least one tag")
        if self.action != "set_outcome" and self.outcome is not None:
            raise ValueError("outcome is for set_outcome only")
        return self


class EpisodeBulkOut(BaseModel):
    matched: int = Field(description="Episodes the selection matched in this study.")
    changed: int = Field(description="Episodes changed (tagged, untagged or deleted).")
    skipped_recording: int = Field(default=0, description="Still recording: not deleted.")


class BulkJobPublic(BaseModel):
    """A bulk action running in the background (202 from the bulk route)."""

    id: int
    study_id: int
    state: JobState
    action: str
    total: int = Field(description="Episodes the selection matched.")
    done: int = Field(description="Episodes gone through so far.")
    changed: int
    skipped_recording: int
    progress: float = Field(description="done / total, 0..1.")
    message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


# --- export jobs -------------------------------------------------------------------------
class ExportSelection(EpisodeFilterIn):
    """Explicit episode ids, or the episodes page's filter (by default: completed episodes)."""

    episode_ids: list[str] | None = Field(
        default=None, description="Export exactly these episodes (the filter is then ignored)."
    )
    statuses: list[EpisodeStatus] = Field(default_factory=lambda: [EpisodeStatus.completed])
    include_excluded: bool = Field(
        default=False, description="Export episodes marked excluded too (left out by default)."
    )


class ExportOptionsIn(StrictModel):
    """How to export (see docs/export.md)."""

    format: Literal["tfds", "envlogger", "minari", "lerobot"] = Field(
        default="tfds",
        description="tfds: RLDS; envlogger: the logs; minari: Minari (arrow); lerobot: "
        "LeRobot v3.0 (parquet + lossless H.264 videos).",
    )
    strip_step_metadata: bool = False
    step_tags: list[str] | None = Field(
        default=None, description="Step tag names that become tag:<name> fields (None: all)."
    )
    end_tags: list[str] = Field(default_factory=list)
    profile: Literal["oxe"] | None = Field(
        default=None, description="oxe: the Open X-Embodiment profile (tfds format only)."
    )
    archive: Literal["folder", "zip", "tar.gz"] = "zip"
    videos: bool = Field(
        default=False,
        description="Add episode_videos/<episode id>.mp4 per episode (what the player saw).",
    )
    name: str | None = Field(
        default=None, max_length=64, description="Dataset name (snake_case); default from study."
    )
    engine: Literal["auto", "single", "beam"] = Field(
        default="auto",
        description="How the export runs: single (one process), beam (an Apache Beam pipeline "
        "on the configured runner; tfds format only; same output), or auto (beam for a tfds "
        "export of at least STUDIO_BEAM_MIN_STEPS steps). The job's options say which ran.",
    )
    split_by_env: bool = Field(
        default=False,
        description="One dataset per environment (<name>_<env>) in the one output: for "
        "selections whose environments have different spaces.",
    )


class ExportCreate(StrictModel):
    selection: ExportSelection = Field(default_factory=ExportSelection)
    options: ExportOptionsIn = Field(default_factory=ExportOptionsIn)


class ExportPreviewIn(StrictModel):
    """What the episodes page lists (its filter) and what the export would select."""

    listed: EpisodeFilterIn = Field(
        default_factory=EpisodeFilterIn,
        description="The list's filter (ignored when the selection names episode ids).",
    )
    selection: ExportSelection = Field(default_factory=ExportSelection)
    options: ExportOptionsIn | None = Field(
        default=None,
        description="The export's options: with them, the answer's ``spaces`` says whether the "
        "selection's environments share their spaces and what this format does when not.",
    )


class SpacesPreview(BaseModel):
    """Whether one dataset can hold the selection's environments, and what to do if not."""

    mixed: bool = Field(description="Two environments have different spaces.")
    environments: list[str]
    split: Literal["none", "automatic", "offer", "impossible"] = Field(
        description="none: one dataset holds them; automatic: envlogger writes one folder per "
        "environment; offer: one dataset per environment works (options.split_by_env); "
        "impossible: not in this format, even per environment."
    )
    message: str


class LeftOut(BaseModel):
    reason: str
    count: int
    episode_ids: list[str] = Field(description="The first few, sorted.")


class ExportPreviewPublic(BaseModel):
    listed: int
    exported: int
    left_out: list[LeftOut]
    spaces: SpacesPreview | None = Field(default=None, description="When options were sent.")


class ExportJobPublic(BaseModel):
    id: int
    study_id: int
    state: JobState
    format: str
    archive: str
    name: str
    episodes_total: int
    episodes_done: int
    steps_total: int
    steps_done: int
    progress: float
    message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    download_url: str | None
    options: dict[str, Any]
    selection: dict[str, Any]


# --- the player ----------------------------------------------------------------------------
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


# --- study editor: catalog and validation --------------------------------------------------
class CatalogEntryPublic(BaseModel):
    """An environment the operator allows, with the defaults the editor starts from."""

    key: str
    name: str
    suite: str
    action_type: Literal["discrete", "continuous"]
    source: dict[str, Any]
    mode: Literal["sync", "async"]
    fps: int
    pace: str | None = Field(
        None, description="Why fps is slower than the environment's real time (None: real time)."
    )
    controls: dict[str, Any]
    settings_schema: dict[str, Any]
    installed: bool
    extra: str | None
    thumbnail_url: str | None = Field(description="First frame (only when installed).")


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str


class EnvValidationPublic(BaseModel):
    """What building one environment in a worker showed (spaces, frame, speed, issues)."""

    index: int
    id: str
    name: str
    ok: bool = Field(description="True when it built with no problems.")
    cached: bool = Field(description="Served from the validation cache (no worker started).")
    problems: list[ValidationIssue]
    warnings: list[ValidationIssue]
    observation_space: Any = None
    action_space: Any = None
    action_meanings: list[str] | None = None
    cameras: list[str] | None = None
    controls: dict[str, Any] | None = None
    default_controls: dict[str, Any] | None = Field(
        default=None, description="The catalog's controls for this source (empty if none)."
    )
    speed: dict[str, Any] | None = Field(
        default=None,
        description="mode, fps, native_fps, frameskip, effective (1 = real speed), note (why the"
        " catalog slows it down, at its slowed default)",
    )
    frame_url: str | None = None


class StudyValidationPublic(BaseModel):
    ok: bool = Field(description="True when every environment built with no problems.")
    environments: list[EnvValidationPublic]


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
    started_at: datetime
    last_seen_at: datetime | None
    episodes: dict[str, int] = Field(description="Episodes per status.")
    play_time_s: float = Field(description="Summed duration of completed episodes.")
    completed_at: datetime | None
    full_at: datetime | None = Field(description="Done because the study filled up first.")
    outcome: str | None = Field(description="completed, full, screened_out, or null (not yet).")
    completion_code_shown: bool
    assigned_env: str | None
    last_error: str | None = Field(description="The last environment failure they met.")
