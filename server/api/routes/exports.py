"""Export jobs: start one for a study or a dataset, follow its progress, cancel it, download
the result."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse, StreamingResponse

from server.api.deps import CurrentPrincipal, RowId, SessionDep, SettingsDep
from server.api.routes import _jobs
from server.export.packaging import archive_members
from server.export.runner import ExportRunner, export_dir
from server.models import ExportJob, JobState
from server.schemas.exports import (
    DatasetExportCreate,
    ExportCreate,
    ExportJobPublic,
    ExportPreviewIn,
    ExportPreviewPublic,
)
from server.services.datasets import datasets
from server.services.datasets import exports as dataset_exports
from server.services.exports import exports
from server.services.exports import preview as export_preview
from server.services.studies import studies

router = APIRouter(tags=["exports"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such export, or not yours."}}
_CHUNK = 1 << 16
LISTS = ("episode_ids", "episodes")  # the job's episodes: not repeated in every answer


def public(job: ExportJob) -> ExportJobPublic:
    """The job as the API shows it (``progress`` in 0..1)."""
    total = job.episodes_total or 0
    done = job.episodes_done or 0
    progress = 1.0 if job.state == JobState.succeeded else (done / total if total else 0.0)
    return ExportJobPublic(
        id=job.id,
        study_id=job.study_id,
        dataset_id=job.dataset_id,
        state=JobState(job.state),
        format=job.format,
        archive=str(job.options.get("archive", "zip")),
        name=str(job.options.get("name", "")),
        episodes_total=total,
        episodes_done=done,
        steps_total=int(job.selection.get("steps_total", 0)),
        steps_done=job.steps_done or 0,
        progress=progress,
        message=job.message,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        download_url=f"/api/exports/{job.id}/download" if job.state == JobState.succeeded else None,
        options=job.options,
        selection={k: v for k, v in job.selection.items() if k not in LISTS},
    )


def _manager(request: Request) -> ExportRunner:
    manager: ExportRunner = request.app.state.export_jobs
    return manager


@router.post(
    "/api/studies/{study_id}/exports",
    response_model=ExportJobPublic,
    status_code=202,
    summary="Start an export",
    responses={
        404: {"description": "No such study, or not yours."},
        422: {"description": "Empty selection, unknown episode, incompatible environments."},
    },
)
def create_export(
    study_id: RowId,
    body: ExportCreate,
    request: Request,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> ExportJobPublic:
    """Queue an export of the selected episodes; poll ``GET /api/exports/{id}``."""
    study = studies.get_study(db, principal, study_id)
    assert principal.user_id is not None
    job = exports.create_job(
        db,
        study,
        principal.user_id,
        body,
        secret_key=settings.secret_key,
        data_root=settings.data_root,
        engines=exports.Engines.from_settings(settings),
    )
    _manager(request).submit()
    return public(job)


@router.post(
    "/api/studies/{study_id}/exports/preview",
    response_model=ExportPreviewPublic,
    summary="What an export would leave out of the list, and why",
    responses={404: {"description": "No such study, or not yours."}},
)
def preview_export(
    study_id: RowId, body: ExportPreviewIn, db: SessionDep, principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:  # fmt: skip
    """Of the episodes the page lists, how many the selection exports and, per reason
    (status, excluded, still recording), the ones it leaves out; with ``options``, whether
    the environments' spaces fit one dataset and what the format does when not (``spaces``:
    the dialog offers one dataset per environment before it starts). Starts nothing."""
    study = studies.get_study(db, principal, study_id)
    sel = body.selection
    listed = sel.episode_ids if sel.episode_ids is not None else body.listed
    out = export_preview.export_preview(db, study, listed, sel)
    if body.options is not None:
        out["spaces"] = export_preview.spaces_preview(
            db, study, sel, body.options,
            secret_key=settings.secret_key, data_root=settings.data_root,
        )  # fmt: skip
    return out


@router.get(
    "/api/studies/{study_id}/exports",
    response_model=list[ExportJobPublic],
    summary="List a study's exports",
    responses={404: {"description": "No such study, or not yours."}},
)
def list_exports(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> list[Any]:
    """The study's export jobs, newest first."""
    study = studies.get_study(db, principal, study_id)
    return [public(j) for j in exports.jobs_of(db, study)]


DATASET_INVALID = (
    "The dataset selects no episode (at `path.dataset_id`), an option is not valid (named in "
    "`detail`: `split_by_env`, `engine` beam with several splits...), a source study is gone, "
    "or its environments' spaces differ (`code`: `incompatible_environments`)."
)


@router.post(
    "/api/datasets/{dataset_id}/exports",
    response_model=ExportJobPublic,
    status_code=202,
    summary="Start an export of a dataset",
    responses={
        404: {"description": "No such dataset, or not yours."},
        422: {"description": DATASET_INVALID},
    },
)
def create_dataset_export(
    dataset_id: RowId,
    body: DatasetExportCreate,
    request: Request,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> ExportJobPublic:
    """Queue an export of every episode the dataset selects now, each in its split (train,
    validation, test; see docs/export.md); poll ``GET /api/exports/{id}``."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    assert principal.user_id is not None
    job = dataset_exports.create_job(
        db, dataset, principal.user_id, body,
        secret_key=settings.secret_key, data_root=settings.data_root,
        engines=exports.Engines.from_settings(settings),
    )  # fmt: skip
    _manager(request).submit()
    return public(job)


@router.get(
    "/api/datasets/{dataset_id}/exports",
    response_model=list[ExportJobPublic],
    summary="List a dataset's exports",
    responses={404: {"description": "No such dataset, or not yours."}},
)
def list_dataset_exports(
    dataset_id: RowId, db: SessionDep, principal: CurrentPrincipal
) -> list[Any]:
    """The dataset's export jobs, newest first."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    return [public(j) for j in dataset_exports.jobs_of(db, dataset)]


@router.get(
    "/api/exports/{job_id}",
    response_model=ExportJobPublic,
    summary="An export's state and progress",
    responses=NOT_FOUND,
)
def read_export(job_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> ExportJobPublic:
    """State, episodes and steps done, and the download link once it succeeded."""
    return public(exports.get_job(db, principal, job_id))


@router.post(
    "/api/exports/{job_id}/cancel",
    response_model=ExportJobPublic,
    summary="Cancel an export",
    responses={**NOT_FOUND, 409: {"description": "The export has already finished."}},
)
def cancel_export(
    job_id: RowId, request: Request, db: SessionDep, principal: CurrentPrincipal
) -> ExportJobPublic:
    """Stop a queued or running export; its output is removed."""
    job = exports.get_job(db, principal, job_id)
    _jobs.cancel(db, job, exports.ACTIVE, _manager(request), "export")
    return public(job)


@router.delete(
    "/api/exports/{job_id}",
    status_code=204,
    summary="Cancel or delete an export",
    responses=NOT_FOUND,
)
def delete_export(
    job_id: RowId,
    request: Request,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> Response:
    """Cancel an active export, or delete a finished one and its output."""
    job = exports.get_job(db, principal, job_id)
    if job.state in exports.ACTIVE:
        _manager(request).cancel(job.id, wait=_jobs.CANCEL_WAIT_S)
        return Response(status_code=204)
    shutil.rmtree(export_dir(settings.data_root, job.id), ignore_errors=True)
    db.delete(job)
    db.commit()
    return Response(status_code=204)


def _zip_stream(folder: Path) -> Iterator[bytes]:
    """A zip of ``folder`` produced while it is sent (no temporary file)."""

    class _Sink:
        def __init__(self) -> None:
            self.parts: list[bytes] = []

        def write(self, data: bytes) -> int:
            self.parts.append(bytes(data))
            return len(data)

        def flush(self) -> None:
            pass

    sink = _Sink()
    with zipfile.ZipFile(cast(IO[bytes], sink), "w", compression=zipfile.ZIP_STORED) as zf:
        for path, arcname in archive_members(folder):
            with open(path, "rb") as src, zf.open(arcname, "w", force_zip64=True) as dst:
                while chunk := src.read(_CHUNK):
                    dst.write(chunk)
                    if sink.parts:
                        yield b"".join(sink.parts)
                        sink.parts.clear()
    if sink.parts:
        yield b"".join(sink.parts)


@router.get(
    "/api/exports/{job_id}/download",
    summary="Download an export",
    response_class=Response,
    responses={
        **NOT_FOUND,
        400: {"description": "Not finished, or its output is outside the data root."},
        200: {"content": {"application/zip": {}, "application/gzip": {}}},
    },
)
def download_export(
    job_id: RowId, db: SessionDep, principal: CurrentPrincipal, settings: SettingsDep
) -> Response:
    """The archive (zip or tar.gz); a folder export is streamed as a zip made on the fly."""
    job = exports.get_job(db, principal, job_id)
    path = exports.output_file(job, settings.data_root)
    if path.is_dir():
        return StreamingResponse(
            _zip_stream(path),
            media_type="application/zip",
            headers={"Content-Disposition": f'attachment; filename="{path.name}.zip"'},
        )
    media = "application/zip" if path.suffix == ".zip" else "application/gzip"
    return FileResponse(path, media_type=media, filename=path.name)
