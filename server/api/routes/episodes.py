"""Episodes: list and filter a study's episodes, read one, set its outcome, tag it, take notes.

Their replay (frames, steps, observations, rewards, video) is in :mod:`server.api.routes.replay`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from sqlalchemy.orm import Session

from server.api.deps import CurrentPrincipal, RowId, SessionDep
from server.models import MAX_DB_INT, Episode, EpisodeStatus
from server.schemas.episodes import (
    NO_TASK,
    TASK_FILTER,
    EpisodeDetail,
    EpisodeJudgementList,
    EpisodeList,
    EpisodeReviewIn,
    EpisodeSummary,
    NoteIn,
    NotePublic,
    OutcomeFilter,
    ReplayVerdictName,
    StepTagIn,
    StepTagPublic,
    TagIn,
)
from server.services.feedback import results as feedback_results
from server.services.review import judgements, labels, quality, review, verdicts
from server.services.studies import studies

router = APIRouter(tags=["episodes"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such episode or study, or not yours."}
}


def _summary(
    episode: Episode,
    externals: dict[int, str],
    medians: dict[int, float],
    judged: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    median = medians.get(episode.study_env_id)
    return {
        "id": episode.id,
        "study_id": episode.study_id,
        "env_key": episode.env_key,
        "status": episode.status,
        "end_reason": episode.end_reason,
        "ended_by": episode.ended_by,
        "env_outcome": episode.env_outcome,
        "participant": review.agent_key(episode, externals),
        "task_key": episode.task_key,
        "instruction": episode.instruction,
        "is_test": episode.is_test,
        "seed": episode.seed,
        "steps": episode.steps,
        "actions": max(episode.steps - 1, 0),
        "total_reward": episode.total_reward,
        "started_at": episode.started_at,
        "ended_at": episode.ended_at,
        "duration_s": episode.duration_s,
        "latency_p50_ms": episode.latency_p50_ms,
        "latency_p95_ms": episode.latency_p95_ms,
        "frames_dropped": episode.frames_dropped,
        "latency_p99_ms": episode.latency_p99_ms,
        "idle_share": episode.idle_share,
        "inputs_per_s": episode.inputs_per_s,
        "interventions": episode.interventions,
        "intervention_share": episode.intervention_share,
        "policy_error": episode.policy_error,
        "quality_computed": episode.quality_at is not None,
        "length_ratio": episode.steps / median if median else None,
        "badges": quality.badges(episode, median),
        "tags": sorted(t.name for t in episode.tags),
        "player_outcome": episode.player_outcome,
        "reviewer_outcome": episode.outcome,
        "outcome": review.effective_outcome(episode),
        "excluded": episode.excluded,
        **verdicts.verdict(episode),  # in the replay's (RLDS) step numbers
        "judgements": judged.get(episode.id),
    }


def _detail(db: Session, episode: Episode) -> EpisodeDetail:
    base = _summary(
        episode,
        review.external_ids(db, [episode]),
        quality.medians(db, episode.study_id),
        feedback_results.episode_summaries(db, [episode.id]),
    )
    step_tags = sorted(episode.step_tags, key=lambda t: (t.start_step, t.end_step, t.id))
    return EpisodeDetail(
        **base,
        error=episode.error,
        replay_checked_at=episode.replay_checked_at,
        step_tags=[
            StepTagPublic(id=t.id, name=t.name, start=t.start_step, end=t.end_step)
            for t in step_tags
        ],
        notes=[
            NotePublic.model_validate(n, from_attributes=True) for n in labels.notes_of(episode)
        ],
    )


# --- routes -------------------------------------------------------------------------------
@router.get(
    "/api/studies/{study_id}/episodes",
    response_model=EpisodeList,
    summary="List a study's episodes",
    responses=NOT_FOUND,
)
def list_episodes(
    study_id: RowId,
    db: SessionDep,
    principal: CurrentPrincipal,
    status: Annotated[list[EpisodeStatus] | None, Query()] = None,
    env: Annotated[list[str] | None, Query(description="Environment keys")] = None,
    participant: Annotated[list[str] | None, Query(description="External ids or user:<id>")] = None,
    tag: Annotated[list[str] | None, Query(description="Required episode tags (all)")] = None,
    exclude_tag: Annotated[list[str] | None, Query(description="Excluded episode tags")] = None,
    since: datetime | None = None,
    until: datetime | None = None,
    min_return: Annotated[float | None, Query(allow_inf_nan=False)] = None,
    max_return: Annotated[float | None, Query(allow_inf_nan=False)] = None,
    min_steps: Annotated[int | None, Query(ge=0, le=MAX_DB_INT, description="Steps >=")] = None,
    max_steps: Annotated[int | None, Query(ge=0, le=MAX_DB_INT, description="Steps <=")] = None,
    p99_over_ms: Annotated[
        float | None,
        Query(ge=0, allow_inf_nan=False, description="Flag: input latency p99 over this (ms)"),
    ] = None,
    idle_over: Annotated[
        float | None, Query(ge=0, le=1, description="Flag: share of actions with no input over")
    ] = None,
    under_median: Annotated[
        float | None, Query(gt=0, le=1000, description="Flag: steps under k x the env's median")
    ] = None,
    over_median: Annotated[
        float | None, Query(gt=0, le=1000, description="Flag: steps over k x the env's median")
    ] = None,
    include_tests: Annotated[
        bool, Query(description="Include designers' test plays (left out by default)")
    ] = False,
    outcome: Annotated[
        list[OutcomeFilter] | None, Query(description="Effective outcomes; unset: neither said")
    ] = None,
    excluded: Annotated[bool | None, Query(description="Only excluded (true) or kept")] = None,
    replay_verdict: Annotated[
        list[ReplayVerdictName] | None,
        Query(description="Replay verdicts (verified, diverged, not_replayable, pending)"),
    ] = None,
    task: Annotated[
        str | None,
        Query(
            max_length=64,
            pattern=TASK_FILTER,
            description=f"A task id (the episodes that drew it); {NO_TASK}: episodes without a "
            "task. A task no episode drew lists none.",
        ),
    ] = None,  # fmt: skip
    sort: Annotated[
        str, Query(description=f"One of {sorted(review.SORTS)}; a - prefix sorts descending")
    ] = review.DEFAULT_SORT,
    offset: Annotated[
        int, Query(ge=0, le=MAX_DB_INT, description="Rows to skip (echoed, not used, with after)")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=review.MAX_PAGE)] = 50,
    after: Annotated[
        str | None,
        Query(
            max_length=400,
            description="A next_cursor: the page after that row (keyset paging: as fast on "
            "page 2,000 as on page 1). Same sort and filters; not with sort=participant.",
        ),
    ] = None,
    exact_count: Annotated[
        bool,
        Query(
            description=f"Count every match (default: up to {review.COUNT_CAP:,}, then "
            "total_exact is false)"
        ),
    ] = False,
    count: Annotated[
        bool,
        Query(
            description="False: neither count (total is null) nor list tag names (empty): "
            "later pages keep the first page's"
        ),
    ] = True,
) -> EpisodeList:
    """Episodes of one of your studies, filtered (repeat a parameter for several values)."""
    study = studies.get_study(db, principal, study_id)
    flt = review.EpisodeFilter(
        statuses=[str(s) for s in status or []],
        env_keys=env or [],
        participants=participant or [],
        tags=tag or [],
        exclude_tags=exclude_tag or [],
        since=since,
        until=until,
        min_return=min_return,
        max_return=max_return,
        min_steps=min_steps,
        max_steps=max_steps,
        p99_over_ms=p99_over_ms,
        idle_over=idle_over,
        under_median=under_median,
        over_median=over_median,
        include_tests=include_tests,
        outcomes=outcome or [],
        excluded=excluded,
        replay_verdicts=replay_verdict or [],
        task=task,
    )
    page = review.list_episodes(
        db, study, flt, sort=sort, offset=offset, limit=limit, after=after,
        count_cap=None if exact_count else review.COUNT_CAP, count=count,
    )  # fmt: skip
    externals = review.external_ids(db, page.items)
    medians = quality.medians(db, study.id)
    judged = feedback_results.episode_summaries(db, [e.id for e in page.items])  # one query
    return EpisodeList(
        items=[EpisodeSummary(**_summary(e, externals, medians, judged)) for e in page.items],
        total=page.total,
        total_exact=page.total_exact,
        offset=page.offset,
        limit=page.limit,
        next_cursor=page.next_cursor,
        tag_names=labels.tag_names(db, study.id) if count else [],
    )


@router.patch(
    "/api/episodes/{episode_id}",
    response_model=EpisodeDetail,
    summary="Set the reviewer's outcome or the excluded mark",
    responses={**NOT_FOUND, 422: {"description": "Neither field given, or a bad value."}},
)
def review_episode(
    episode_id: str, body: EpisodeReviewIn, db: SessionDep, principal: CurrentPrincipal
) -> EpisodeDetail:
    """``outcome``: success, failure, or null to unset the reviewer's (the player's shows
    again); ``excluded``: keep the episode out of exports by default."""
    episode = review.get_episode(db, principal, episode_id)
    outcome = body.outcome if "outcome" in body.model_fields_set else False
    labels.set_review(db, episode, outcome=outcome, excluded=body.excluded)
    return _detail(db, episode)


@router.get(
    "/api/episodes/{episode_id}",
    response_model=EpisodeDetail,
    summary="Read an episode",
    responses=NOT_FOUND,
)
def read_episode(episode_id: str, db: SessionDep, principal: CurrentPrincipal) -> EpisodeDetail:
    """An episode with its tags, step tags and notes."""
    return _detail(db, review.get_episode(db, principal, episode_id))


@router.post(
    "/api/episodes/{episode_id}/tags",
    response_model=EpisodeDetail,
    status_code=201,
    summary="Tag an episode",
    responses=NOT_FOUND,
)
def add_tag(
    episode_id: str, body: TagIn, db: SessionDep, principal: CurrentPrincipal
) -> EpisodeDetail:
    """Add an episode tag (adding it twice keeps one)."""
    episode = review.get_episode(db, principal, episode_id)
    labels.add_tag(db, episode, body.name, principal.user_id)
    return _detail(db, episode)


@router.delete(
    "/api/episodes/{episode_id}/tags/{name}",
    status_code=204,
    summary="Remove an episode tag",
    responses=NOT_FOUND,
)
def remove_tag(episode_id: str, name: str, db: SessionDep, principal: CurrentPrincipal) -> Response:
    """Remove an episode tag."""
    labels.remove_tag(db, review.get_episode(db, principal, episode_id), name)
    return Response(status_code=204)


@router.post(
    "/api/episodes/{episode_id}/step-tags",
    response_model=StepTagPublic,
    status_code=201,
    summary="Tag a step or a range of steps",
    responses={**NOT_FOUND, 422: {"description": "The range is outside the episode's steps."}},
)
def add_step_tag(
    episode_id: str, body: StepTagIn, db: SessionDep, principal: CurrentPrincipal
) -> StepTagPublic:
    """Tag step ``start`` or steps ``start..end`` (inclusive, within 0..steps-1)."""
    episode = review.get_episode(db, principal, episode_id)
    tag = labels.add_step_tag(db, episode, body.name, body.start, body.end, principal.user_id)
    return StepTagPublic(id=tag.id, name=tag.name, start=tag.start_step, end=tag.end_step)


@router.delete(
    "/api/episodes/{episode_id}/step-tags/{tag_id}",
    status_code=204,
    summary="Remove a step tag",
    responses=NOT_FOUND,
)
def remove_step_tag(
    episode_id: str, tag_id: RowId, db: SessionDep, principal: CurrentPrincipal
) -> Response:
    """Remove one step tag."""
    labels.remove_step_tag(db, review.get_episode(db, principal, episode_id), tag_id)
    return Response(status_code=204)


@router.get(
    "/api/episodes/{episode_id}/notes",
    response_model=list[NotePublic],
    summary="List an episode's notes",
    responses=NOT_FOUND,
)
def list_notes(episode_id: str, db: SessionDep, principal: CurrentPrincipal) -> list[NotePublic]:
    """The episode's notes, oldest first."""
    episode = review.get_episode(db, principal, episode_id)
    return [NotePublic.model_validate(n, from_attributes=True) for n in labels.notes_of(episode)]


@router.post(
    "/api/episodes/{episode_id}/notes",
    response_model=NotePublic,
    status_code=201,
    summary="Add a note",
    responses=NOT_FOUND,
)
def add_note(
    episode_id: str, body: NoteIn, db: SessionDep, principal: CurrentPrincipal
) -> NotePublic:
    """A note on the episode (exported with it)."""
    episode = review.get_episode(db, principal, episode_id)
    note = labels.add_note(db, episode, body.body, principal.user_id)
    return NotePublic.model_validate(note, from_attributes=True)


@router.get(
    "/api/episodes/{episode_id}/judgements",
    response_model=EpisodeJudgementList,
    summary="List an episode's judgements in feedback studies",
    responses=NOT_FOUND,
)
def list_judgements(
    episode_id: str, db: SessionDep, principal: CurrentPrincipal
) -> EpisodeJudgementList:
    """Every answered judgement of a clip of the episode, newest first (at most 500): the
    feedback study, the question, the answer (compare: won, lost, tie or cant_tell from this
    episode's side; rate: the rating; narrate: the text), the judge's external id, when,
    whether it was gold and whether it counts in the summary. Only the study's owner (or an
    admin) may read it."""
    episode = review.get_episode(db, principal, episode_id)
    listed = judgements.episode_judgements(db, episode)
    summary = feedback_results.episode_summaries(db, [episode.id]).get(episode.id)
    return EpisodeJudgementList.model_validate({**listed, "summary": summary})
