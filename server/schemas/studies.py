"""Studies and the study editor: specs, states, versions, the catalog, validation."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from server.models import StudyState
from server.schemas.base import Public
from server.study_spec import StrictModel, StudySpec


class StudyCreate(StrictModel):
    spec: StudySpec


class StudyUpdate(StrictModel):
    spec: StudySpec


class StudyStateChange(StrictModel):
    state: StudyState
    acknowledge_warnings: bool = Field(
        default=False,
        strict=True,
        description="Activate (or resume) although the pre-launch checklist has warnings; "
        "its errors still refuse the move.",
    )


class StudyEnvironmentPublic(Public):
    env_key: str
    name: str
    source_kind: str
    source_ref: str
    mode: str
    position: int


class StudyRef(Public):
    """Another study, by id and name (a version's parent, or a study's versions)."""

    id: int
    name: str
    state: StudyState


class StudySummary(Public):
    id: int
    name: str
    state: StudyState
    owner_id: int
    created_at: datetime
    updated_at: datetime
    kind: Literal["play", "feedback"] = Field(
        description="play: participants play its environments; feedback: they judge recorded "
        "episodes of other studies (it has no environments)."
    )
    environments: list[StudyEnvironmentPublic]
    parent_study_id: int | None = Field(description="The study this one is a new version of.")
    parent: StudyRef | None = None


class StudyPublic(StudySummary):
    spec: StudySpec
    permalink_token: str | None
    versions: list[StudyRef] = Field(
        default_factory=list, description="Studies saved as new versions of this one."
    )


class RuntimeStatePublic(BaseModel):
    """The environment runtime an entry's workers run in (docs/runtime.md, "Runtimes")."""

    name: str = Field(description="`app` (the app's own environment) or a runtime's name.")
    state: Literal["installed", "not_installed", "outdated", "failed"]
    message: str | None = Field(description="Why it cannot be used, and what to do.")
    command: str | None = Field(description="What installs it (None when installed).")


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
    dimensions: list[str] = Field(
        default_factory=list,
        description="What each dimension of a vector action means (an arm's x, y, z, roll, "
        "pitch, yaw, gripper); empty when the catalog does not say.",
    )
    settings_schema: dict[str, Any]
    installed: bool
    extra: str | None = Field(
        description="The optional-dependency group that installs its suite in the app's "
        "environment (None: core, or a runtime's)."
    )
    runtime: RuntimeStatePublic
    allow_end: bool = Field(
        default=False,
        description="The default of an environment's allow_end: participants may end its "
        'episodes ("I\'m done"); on for manipulation tasks.',
    )
    thumbnail_url: str | None = Field(description="First frame (only when installed).")
    replays: bool | None = Field(
        default=None,
        description="Whether its default settings replay from a seed and actions, as Validate "
        "found (None: not built yet here, or the check could not run).",
    )


class PolicyPublic(BaseModel):
    """A shared-autonomy policy installed on this server, which a study's environment may name."""

    id: str = Field(description="What a study's `policy.id` names.")
    description: str | None = Field(
        description="The first paragraph of its factory's docstring (None: it has none)."
    )
    origin: str = Field(
        description="Where the operator installed it: `package <name>` (an entry point of "
        "the `rlds_studio.policies` group) or `STUDIO_POLICIES`."
    )


class ValidationIssue(BaseModel):
    loc: list[str | int]
    msg: str


class PolicyTrialPublic(BaseModel):
    """How an environment's shared-autonomy policy did when Validate let it drive a few
    steps (not recorded; docs/runtime.md, "Policies")."""

    id: str = Field(description="The environment's `policy.id`.")
    steps: int = Field(description="Proposals timed (up to 10; fewer when it stopped).")
    median_ms: float | None = Field(description="Median time of a proposal (None: none).")
    worst_ms: float | None = Field(description="Longest proposal (None: none).")
    budget_ms: float = Field(description="The operator's STUDIO_POLICY_STEP_BUDGET_MS.")
    error: str | None = Field(description="Why the policy stopped (None: it worked).")
    failed: bool = Field(
        description="It raised, proposed something that is no action, or could not be built."
    )
    over_budget: bool = Field(
        description="Its median proposal is past the budget, or it did not answer at all."
    )


class ReplayTrialPublic(BaseModel):
    """Whether the environment replays: Validate ran it on trial actions from a seed, then a
    fresh copy of it on the same seed and actions (docs/review.md, "Replay verification")."""

    replays: bool | None = Field(description="Both runs agreed (None: the check could not run).")
    declared: bool = Field(description="The environment declares it is not deterministic.")
    steps: int = Field(description="Trial steps compared.")
    difference: dict[str, Any] | None = Field(
        default=None, description="Where the runs first differed: step, field, values, message."
    )
    error: str | None = Field(default=None, description="Why the check could not compare.")


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
    policy: PolicyTrialPublic | None = Field(
        default=None, description="Its policy's timing (None without a policy, or unbuilt)."
    )
    replay: ReplayTrialPublic | None = Field(
        default=None, description="Whether it replays from a seed and actions (None: unbuilt)."
    )


class ChecklistItem(BaseModel):
    """A reason the study would fail its participants or its data, and what to do."""

    level: Literal["error", "warning"] = Field(
        description="error: activation is refused; warning: it asks once (acknowledge_warnings)."
    )
    code: str = Field(description="What kind of item, e.g. no_completion_code, unbound_action.")
    message: str = Field(description="What would go wrong, in the designer's words.")
    fix: str = Field(description="What to do about it (empty when the message says).")
    field: str = Field(description="The spec path it is about, e.g. crowd.completion_code.")
    label: str = Field(description="The editor form's label for that field.")
    loc: list[str | int] = Field(description='["spec", *the path]: as a 422\'s detail.')
    msg: str = Field(description="The message again, as a 422's detail.")


class ChecklistPublic(BaseModel):
    ready: bool = Field(description="No errors: activation would go ahead (warnings asked once).")
    items: list[ChecklistItem] = Field(description="Errors first, then warnings.")


class StudyValidationPublic(BaseModel):
    ok: bool = Field(description="True when every environment built with no problems.")
    environments: list[EnvValidationPublic]
    checklist: list[ChecklistItem] = Field(
        default_factory=list,
        description="The pre-launch checklist of this spec (what activation would say).",
    )
