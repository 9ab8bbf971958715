"""Studies: CRUD, lifecycle, permalink, YAML import and export."""

from __future__ import annotations

import re
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from sqlalchemy.orm import Session

from server.api.deps import BudgetDep, CurrentPrincipal, RowId, SessionDep, SettingsDep
from server.core.budget import ProcessBudget
from server.core.config import Settings
from server.models import Study, StudyState
from server.principal import Principal
from server.runtime.allowlist import AllowedEnvironments
from server.schemas.studies import (
    ChecklistPublic,
    StudyCreate,
    StudyPublic,
    StudyStateChange,
    StudySummary,
    StudyUpdate,
    StudyValidationPublic,
)
from server.services.studies import (
    env_validation,
    feedback_check,
    studies,
    study_files,
    study_versions,
)
from server.services.studies.env_check import allowed_environments, require_allowed
from server.study_spec import StudySpec

router = APIRouter(prefix="/api/studies", tags=["studies"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"description": "No such study, or not yours."}}
YAML_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/yaml": {"schema": {"type": "string"}}},
    }
}
TOO_LARGE: dict[int | str, dict[str, Any]] = {
    413: {"description": f"The study file is over {study_files.MAX_FILE_BYTES} bytes."}
}
CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"description": "Not allowed in the study's current state."}
}
EDIT_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {
        "description": "Not editable in its state, or `code: needs_new_version`: the change "
        "alters what recorded episodes mean (save it with POST /api/studies/{id}/versions)."
    }
}


def _allowed(settings: SettingsDep) -> AllowedEnvironments:
    # A sync dependency: FastAPI runs it in a thread (it reads installed packages' metadata).
    return allowed_environments(settings)


AllowedDep = Annotated[AllowedEnvironments, Depends(_allowed)]


async def study_file_body(request: Request) -> bytes:
    """The request body, read up to the study-file limit (413 past it, without reading on)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > study_files.MAX_FILE_BYTES:
            raise study_files.too_large()
    return bytes(body)


StudyFileBody = Annotated[bytes, Depends(study_file_body)]


@router.get("", response_model=list[StudySummary], summary="List your studies")
def list_studies(
    db: SessionDep, principal: CurrentPrincipal, state: StudyState | None = None
) -> list[Study]:
    """Your studies (an admin sees everyone's), newest first, optionally of one state."""
    return list(studies.visible_studies(db, principal, state))


@router.post("", response_model=StudyPublic, status_code=201, summary="Create a draft study")
def create_study(
    body: StudyCreate, db: SessionDep, principal: CurrentPrincipal, allowed: AllowedDep
) -> Study:
    """A new draft owned by you; every environment must be one this server allows (422)."""
    assert principal.user_id is not None
    require_allowed(body.spec, allowed)
    return studies.create_study(db, principal.user_id, body.spec)


@router.post(
    "/import",
    response_model=StudyPublic,
    status_code=201,
    summary="Import a study file (YAML)",
    openapi_extra=YAML_BODY,
    responses={**TOO_LARGE, 422: {"description": "Invalid YAML or spec, with the field path."}},
)
def import_study(
    db: SessionDep, principal: CurrentPrincipal, allowed: AllowedDep, body: StudyFileBody
) -> Study:
    """Create a draft from the text of a study file (the ``studies/`` format)."""
    # A sync route: parsing and the database run in the threadpool, never on the event loop.
    spec = study_files.load_bytes(body)
    require_allowed(spec, allowed, prefix=())
    assert principal.user_id is not None
    return studies.create_study(db, principal.user_id, spec)


@router.get("/{study_id}", response_model=StudyPublic, summary="Read a study", responses=NOT_FOUND)
def read_study(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Study:
    """One of your studies with its full spec."""
    return studies.get_study(db, principal, study_id)


@router.put(
    "/{study_id}",
    response_model=StudyPublic,
    summary="Replace a study's spec",
    responses={**NOT_FOUND, **EDIT_CONFLICT},
)
def update_study(
    study_id: RowId,
    body: StudyUpdate,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    allowed: AllowedDep,
) -> Study:
    """Only drafts and paused studies can be edited.

    Removing an environment from a draft deletes its test plays; a paused study keeps all.
    A change to an environment's source, controls, mode, fps or camera once participants
    have played it is refused (409, ``code: needs_new_version``): save it as a new version.
    """
    study = studies.get_study(db, principal, study_id)
    require_allowed(body.spec, allowed)
    return study_versions.update_in_place(db, study, body.spec, settings.data_root)


@router.post(
    "/{study_id}/versions",
    response_model=StudyPublic,
    status_code=201,
    summary="Save a spec as a new version of a study",
    responses=NOT_FOUND,
)
def create_version(
    study_id: RowId, body: StudyUpdate, db: SessionDep, principal: CurrentPrincipal,
    allowed: AllowedDep,
) -> Study:  # fmt: skip
    """A new draft with this spec, linked to the study (``parent_study_id``) and named after
    it with a `` v2``, `` v3``... suffix; the study and its episodes stay as they are."""
    study = studies.get_study(db, principal, study_id)
    require_allowed(body.spec, allowed)
    return study_versions.create_version(db, study, body.spec)


@router.post(
    "/{study_id}/versions/file",
    response_model=StudyPublic,
    status_code=201,
    summary="Save a study file (YAML) as a new version of a study",
    openapi_extra=YAML_BODY,
    responses={**NOT_FOUND, **TOO_LARGE, 422: {"description": "Invalid YAML or spec."}},
)
def create_version_from_file(
    study_id: RowId, db: SessionDep, principal: CurrentPrincipal, allowed: AllowedDep,
    body: StudyFileBody,
) -> Study:  # fmt: skip
    """Like ``POST /api/studies/{id}/versions`` with the spec given as a study file."""
    study = studies.get_study(db, principal, study_id)
    spec = study_files.load_bytes(body)
    require_allowed(spec, allowed, prefix=())
    return study_versions.create_version(db, study, spec)


@router.put(
    "/{study_id}/file",
    response_model=StudyPublic,
    summary="Replace a study's spec from a study file (YAML)",
    openapi_extra=YAML_BODY,
    responses={
        **NOT_FOUND,
        **EDIT_CONFLICT,
        **TOO_LARGE,
        422: {"description": "Invalid YAML or spec."},
    },
)
def replace_study_file(
    study_id: RowId,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    allowed: AllowedDep,
    body: StudyFileBody,
) -> Study:
    """Like ``PUT /api/studies/{id}`` with the spec given as the text of a study file."""
    study = studies.get_study(db, principal, study_id)
    spec = study_files.load_bytes(body)
    require_allowed(spec, allowed, prefix=())
    return study_versions.update_in_place(db, study, spec, settings.data_root)


@router.delete(
    "/{study_id}", status_code=204, summary="Delete a draft", responses={**NOT_FOUND, **CONFLICT}
)
def delete_study(
    study_id: RowId, db: SessionDep, principal: CurrentPrincipal, settings: SettingsDep
) -> None:
    """Only drafts can be deleted (with their test plays); close a started study instead."""
    studies.delete_study(db, studies.get_study(db, principal, study_id), settings.data_root)


def _launch_check(
    spec: StudySpec, settings: Settings, allowed: AllowedEnvironments, budget: ProcessBudget,
    db: Session, owner_id: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """The pre-launch checklist, with each environment built (or its cached validation) and
    a feedback study's source episodes counted."""
    reports = env_validation.validate_study(spec, settings, allowed, budget=budget)
    return feedback_check.checklist(db, spec, reports, owner_id)


def _built(
    study_id: int,
    db: Session,
    principal: Principal,
    settings: Settings,
    allowed: AllowedEnvironments,
    budget: ProcessBudget,
) -> tuple[StudySpec, list[dict[str, Any]]]:
    """The study's spec and each environment built (or its cached validation)."""
    spec = studies.spec_of(studies.get_study(db, principal, study_id))
    db.close()  # building can take a while: do not hold a connection meanwhile
    return spec, env_validation.validate_study(spec, settings, allowed, budget=budget)


@router.post(
    "/{study_id}/state",
    response_model=StudyPublic,
    summary="Move along the lifecycle",
    responses={
        **NOT_FOUND,
        409: {
            "description": "Not allowed in the study's current state; or `code: "
            "unacknowledged_warnings`: the pre-launch checklist has warnings (in `detail`, as "
            "checklist items): send the request again with `acknowledge_warnings: true`."
        },
        422: {
            "description": "`code: not_ready`: the pre-launch checklist has errors; `detail` "
            "lists them as checklist items, each with its fix and field."
        },
    },
)
def change_state(
    study_id: RowId,
    body: StudyStateChange,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    allowed: AllowedDep,
    budget: BudgetDep,
) -> Study:
    """draft → active → paused ↔ active → closed; other moves are refused with 409.

    Activating (and resuming) runs the pre-launch checklist (``GET
    /api/studies/{id}/checklist``): every environment must be allowed and build here with
    controls that fit its actions, and the study must be able to pay and serve its
    participants (a Prolific study needs a completion code or URL, the required play time
    must be reachable...). Errors refuse it with 422 ``not_ready``; warnings with 409
    ``unacknowledged_warnings`` until the request says ``acknowledge_warnings: true``. The
    first activation creates the permalink token. (A sync route: the check builds each
    environment in a worker, off the loop.)
    """
    study = studies.get_study(db, principal, study_id)
    check = partial(_launch_check, settings=settings, allowed=allowed, budget=budget, db=db,
                    owner_id=study.owner_id)  # fmt: skip
    return studies.change_state(
        db, study, body.state, check, acknowledge_warnings=body.acknowledge_warnings
    )


@router.get(
    "/{study_id}/checklist",
    response_model=ChecklistPublic,
    summary="The pre-launch checklist",
    responses=NOT_FOUND,
)
def read_checklist(
    study_id: RowId,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    allowed: AllowedDep,
    budget: BudgetDep,
) -> dict[str, Any]:
    """Every reason the study would fail its participants or its data, as activation sees
    it: each item's ``level`` (``error`` refuses activation, ``warning`` asks once), ``code``,
    ``message``, ``fix``, ``field`` (the spec path, e.g. ``crowd.completion_code``) and the
    editor's ``label`` for it. Builds each environment as Validate does (from the cache when
    unchanged)."""
    spec, reports = _built(study_id, db, principal, settings, allowed, budget)
    owner = studies.get_study(db, principal, study_id).owner_id
    items = feedback_check.checklist(db, spec, reports, owner)
    return {"ready": not any(i["level"] == "error" for i in items), "items": items}


@router.post(
    "/{study_id}/validate",
    response_model=StudyValidationPublic,
    summary="Build each environment and describe it",
    responses=NOT_FOUND,
)
def validate_study(
    study_id: RowId,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
    allowed: AllowedDep,
    budget: BudgetDep,
) -> dict[str, Any]:
    """Builds each environment in a worker (under the start timeout) with its settings.

    Per environment: observation and action spaces, the first frame (``frame_url``), the
    resolved controls, the effective game speed, its shared-autonomy policy's time a step
    against the budget (``policy``: it drives a few steps, not recorded), warnings and
    problems with field paths from the study's root. An environment whose spec has not
    changed since it last built is served from the cache (``cached``) without starting a
    worker. Activation runs the same check: only a study whose environments all build
    (``ok``) can be activated.
    """
    spec, reports = _built(study_id, db, principal, settings, allowed, budget)
    owner = studies.get_study(db, principal, study_id).owner_id
    checklist = feedback_check.checklist(db, spec, reports, owner)
    return {"ok": all(r["ok"] for r in reports), "environments": reports, "checklist": checklist}


@router.post(
    "/{study_id}/permalink",
    response_model=StudyPublic,
    summary="Rotate the permalink token",
    responses={**NOT_FOUND, **CONFLICT},
)
def rotate_permalink(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Study:
    """A new token. The old link stops working: anyone opening it is told it is no longer
    valid, and play tickets issued under it are refused, so a participant playing now keeps
    the game open in their page but needs the new link to reconnect, reload or get their
    completion code (their episodes are kept; the same id continues where it was)."""
    return studies.rotate_permalink(db, studies.get_study(db, principal, study_id))


@router.get(
    "/{study_id}/export",
    summary="Download the study file (YAML)",
    responses={**NOT_FOUND, 200: {"content": {"application/yaml": {}}}},
)
def export_study(study_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Response:
    """The study as a ``studies/`` YAML file."""
    study = studies.get_study(db, principal, study_id)
    slug = re.sub(r"[^a-z0-9]+", "-", study.name.lower()).strip("-") or f"study-{study.id}"
    return Response(
        study_files.dump_yaml(studies.spec_of(study)),
        media_type="application/yaml",
        headers={"Content-Disposition": f'attachment; filename="{slug}.yaml"'},
    )
