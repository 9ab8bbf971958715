"""Bulk actions over a study's episodes, and the background jobs that run the large ones."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from server.api.deps import CurrentPrincipal, RowId, SessionDep, SettingsDep
from server.api.routes import _jobs
from server.models import BulkJob, JobState
from server.schemas.bulk import BulkJobPublic, EpisodeBulkIn, EpisodeBulkOut
from server.services.exports import selection as export_selection
from server.services.jobs.bulk_runner import BulkRunner
from server.services.review import bulk
from server.services.studies import studies

router = APIRouter(tags=["episodes"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such study, or not yours."}}


def bulk_public(job: BulkJob) -> BulkJobPublic:
    """A bulk job as the API shows it."""
    total = job.total or 0
    progress = 1.0 if job.state == JobState.succeeded else ((job.done or 0) / total if total else 0)
    return BulkJobPublic(
        id=job.id, study_id=job.study_id, state=JobState(job.state), action=job.action,
        total=total, done=job.done or 0, changed=job.changed or 0,
        skipped_recording=job.skipped_recording or 0, progress=progress, message=job.message,
        created_at=job.created_at, started_at=job.started_at, finished_at=job.finished_at,
    )  # fmt: skip


def _bulk_runner(request: Request) -> BulkRunner:
    runner: BulkRunner = request.app.state.bulk_jobs
    return runner


@router.post(
    "/api/studies/{study_id}/episodes/bulk",
    response_model=EpisodeBulkOut | BulkJobPublic,
    summary="Tag, untag, set the outcome of, exclude, include or delete many episodes",
    responses={
        **NOT_FOUND,
        202: {"model": BulkJobPublic, "description": "Queued as a background job."},
        422: {"description": "Unknown action, bad tag, too many ids."},
    },
)
def bulk_episodes(
    study_id: RowId,
    body: EpisodeBulkIn,
    request: Request,
    response: Response,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> EpisodeBulkOut | BulkJobPublic:
    """Apply one action to the checked episodes or to every episode matching a filter.

    Up to ``bulk_inline_max`` checked episodes (default 500) are done in the request (200,
    counts). A filter ("all N matching") or more checked episodes queue a background job:
    202 with the job; follow it at ``GET /api/bulk-jobs/{id}``. ``set_outcome`` sets the
    reviewer's outcome (``outcome``: success, failure, or null to unset); ``exclude`` and
    ``include`` set the mark that keeps episodes out of exports. ``delete`` removes the rows
    (tags, step tags, notes) and logs of ended episodes, skips those still recording and
    records who deleted how many (docs/export.md)."""
    study = studies.get_study(db, principal, study_id)
    sel = body.selection
    flt = export_selection.selection_filter(sel.filter) if sel.filter is not None else None
    ids = bulk.matched_ids(db, study, sel.episode_ids, flt)
    act = bulk.check(bulk.BulkAction(body.action, tuple(body.tags), body.outcome))
    if flt is None and len(ids) <= settings.bulk_inline_max:
        done = bulk.apply(db, study, ids, act, principal.user_id, settings.data_root)
        return EpisodeBulkOut(**vars(done))
    job = bulk.create_job(
        db, study, ids, act, principal.user_id,
        body.model_dump(mode="json", exclude={"selection": {"episode_ids"}}),
    )  # fmt: skip
    _bulk_runner(request).submit()
    response.status_code = 202
    return bulk_public(job)


@router.get(
    "/api/bulk-jobs/{job_id}",
    response_model=BulkJobPublic,
    summary="A bulk action's state and progress",
    responses={404: {"description": "No such bulk job, or not yours."}},
)
def read_bulk_job(job_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> BulkJobPublic:
    """State, episodes done and changed; ``message`` says why a job failed."""
    return bulk_public(bulk.get_job(db, principal, job_id))


@router.post(
    "/api/bulk-jobs/{job_id}/cancel",
    response_model=BulkJobPublic,
    summary="Stop a bulk action",
    responses={
        404: {"description": "No such bulk job, or not yours."},
        409: {"description": "The job has already finished."},
    },
)
def cancel_bulk_job(
    job_id: RowId, request: Request, db: SessionDep, principal: CurrentPrincipal
) -> BulkJobPublic:
    """Stop a queued or running bulk action between two chunks (the chunks done stay done)."""
    job = bulk.get_job(db, principal, job_id)
    _jobs.cancel(db, job, bulk.ACTIVE, _bulk_runner(request), "bulk job")
    return bulk_public(job)
