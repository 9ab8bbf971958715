"""Episodes and their review: the list, its filter, tags, notes, outcomes, judgements."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from server.models import MAX_DB_INT, EpisodeStatus
from server.study_spec import StrictModel

# The task filter's value for episodes without a task (not a task id: those are slugs, which
# start with a letter or digit).
NO_TASK = "-"
TASK_FILTER = r"^(-|[a-z0-9][a-z0-9_-]{0,63})$"


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
    flag: Literal[
        "idle", "slow", "dropped", "short", "long", "intervened", "policy_failed", "diverged"
    ]
    label: str = Field(description='What the list shows, e.g. "idle 80%", "p99 140 ms".')


# server.models.ReplayVerdict's values (docs/review.md, "Replay verification")
ReplayVerdictName = Literal["pending", "verified", "diverged", "not_replayable"]
EndedByName = Literal["environment", "time_limit", "participant", "canceled", "abandoned",
                      "failed"]  # fmt: skip


class ReplayDifference(BaseModel):
    """Where a replay first differed from the log (server/runtime/replay_check.py)."""

    step: int
    field: str = Field(description='"reward", "discount", "is_last", "observation/<key>"...')
    recorded: str = Field(description="The recorded value, as text (long arrays summarised).")
    replayed: str = Field(description="The replayed value, as text.")
    amount: float | None = Field(default=None, description="The largest absolute difference.")
    count: int | None = Field(default=None, description="How many array elements differ.")
    message: str | None = None


class EpisodeJudgements(BaseModel):
    """What feedback studies' judgements say of an episode (counted: not gold, not a test
    participant's, not a screened-out one's)."""

    wins: int = Field(ge=0, description="Compare answers that preferred this episode's clip.")
    losses: int = Field(ge=0, description="Compare answers that preferred the other clip.")
    ties: int = Field(ge=0, description='Compare answers "equally good".')
    ratings: int = Field(ge=0, description="Ratings of its clips.")
    mean_rating: float | None = Field(description="Their mean (null: no rating).")


class EpisodeSummary(BaseModel):
    id: str
    study_id: int
    env_key: str
    status: EpisodeStatus
    end_reason: str | None
    ended_by: EndedByName | None = Field(
        default=None,
        description="Who ended its steps: environment, time_limit, participant (\"I'm "
        'done"), canceled, abandoned or failed (null: still recording).',
    )
    env_outcome: Literal["success", "failure"] | None = Field(
        default=None,
        description="What the environment reported at its last step (info is_success; null: "
        "it reports none).",
    )
    participant: str = Field(description="External id, or user:<id> for a designer's play.")
    task_key: str | None = Field(
        default=None, description="The task the episode drew (null: its environment lists none)."
    )
    instruction: str | None = Field(
        default=None, description="The task's instruction as the participant was shown it."
    )
    is_test: bool = Field(description="A designer's test play (not a participant's episode).")
    seed: int | None
    steps: int = Field(
        description="RLDS steps: one per observation, the final one included (actions + 1)."
    )
    actions: int = Field(
        description="Actions taken: what the pages count as the episode's steps (steps - 1)."
    )
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
    interventions: int | None = Field(
        default=None, description="Shared autonomy: times the player took over (null: no policy)."
    )
    intervention_share: float | None = Field(
        default=None, description="Shared autonomy: share of actions the player drove (0-1)."
    )
    policy_error: str | None = Field(
        default=None, description="Why the policy stopped driving (it raised or was too slow)."
    )
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
    replay_verdict: ReplayVerdictName = Field(
        default="pending",
        description="Re-simulating the episode from its log: verified (every step replayed "
        "to the recorded values), diverged (a step differed), not_replayable (it could not "
        "be replayed), pending (not checked yet, or again).",
    )
    replay_step: int | None = Field(
        default=None,
        description="diverged: the first step (as the replay and exports count them) whose "
        "values differed; a reward or discount is the step whose action earned it. "
        "not_replayable: the step whose action the environment raised at.",
    )
    replay_message: str | None = Field(
        default=None,
        description='What the check found, e.g. "step 3, reward: recorded 1.0, replayed '
        '2.0", or why the episode could not be replayed (or is still waiting).',
    )
    judgements: EpisodeJudgements | None = Field(
        default=None,
        description="The summary of its judgements in feedback studies (the same as every "
        "export's episode metadata); null: never judged. The list reads every row's in "
        "one query; GET /api/episodes/{id}/judgements lists them one by one.",
    )


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
    replay_reason: str | None = Field(
        default=None,
        description='Why a replay could not run or is waiting ("no_log", "timeout"...).',
    )
    replay_difference: ReplayDifference | None = Field(
        default=None, description="diverged: the first difference, field by field."
    )
    replay_checked_at: datetime | None = Field(
        default=None, description="When the verdict was reached (null: pending)."
    )
    step_tags: list[StepTagPublic]
    notes: list[NotePublic]


class EpisodeJudgementPublic(BaseModel):
    """One answered judgement of a clip of the episode."""

    id: int
    study_id: int = Field(description="The feedback study it was made in.")
    study_name: str
    question_id: str
    question_kind: Literal["compare", "rate", "narrate"]
    question: str | None = Field(description="The prompt (null: the study no longer asks it).")
    start: int | None = Field(description="The clip's first step (RLDS steps).")
    end: int | None = Field(description="The clip's last step (inclusive).")
    other_episode: str | None = Field(description="compare: the episode it was shown beside.")
    outcome: Literal["won", "lost", "tie", "cant_tell"] | None = Field(
        description="compare, from this episode's side; null for rate and narrate."
    )
    rating: float | None = Field(description="rate: the answer.")
    text: str | None = Field(description="narrate: the answer.")
    participant: str = Field(description="The judge's external id (as in the participants CSV).")
    answered_at: datetime
    answer_ms: int | None = Field(description="From the item's assignment to the answer.")
    is_gold: bool = Field(description="A gold question (a known answer; never counted).")
    correct: bool | None = Field(description="Gold: whether the answer was the known one.")
    counted: bool = Field(
        description="Counted in the summary (not gold, not a test, not screened out)."
    )


class EpisodeJudgementList(BaseModel):
    items: list[EpisodeJudgementPublic] = Field(description="Newest first.")
    more: bool = Field(description="More than these were made (the newest 500 are listed).")
    summary: EpisodeJudgements | None = Field(description="As in the episodes list.")


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


class EpisodeFilterIn(StrictModel):
    """The episodes page's filter (empty fields do not filter; no status: every status).

    The one filter model of the list, bulk actions and exports (:class:`ExportSelection`
    extends it); :func:`server.services.jobs.export_selection.selection_filter` turns it
    into the review filter."""

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
    replay_verdicts: list[ReplayVerdictName] = Field(
        default_factory=list,
        description='Replay verdicts (e.g. ["verified"]: only episodes whose replay matched '
        "their log); empty: any.",
    )
    task: str | None = Field(
        default=None, max_length=64, pattern=TASK_FILTER,
        description=f'A task id: only the episodes that drew it ("{NO_TASK}": only those '
        "without a task); a task no episode drew selects none.",
    )  # fmt: skip
