"""Dataset edits: trims, relabels and exclusions of a dataset's episodes (never a recorded
value), made, replaced and removed by the dataset's owner only."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from server.api.deps import CurrentPrincipal, RowId, SessionDep, SettingsDep
from server.models import DatasetEdit
from server.schemas.dataset_edits import DatasetEditCreate, DatasetEditPublic, EditValues
from server.services.datasets import datasets, edits

router = APIRouter(tags=["datasets"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such dataset (or edit), or not yours."}
}
INVALID = (
    "A field is not valid (named in `detail`): the episode is not one the dataset selects, a "
    "trim leaves fewer than 2 RLDS steps or falls outside the episode (its step count named), "
    "an empty instruction, an exclusion without a reason, a field another kind takes."
)
TAKEN = (
    "The episode (or task) already has an edit of this kind: the answer names who made it "
    "and when; reload, then replace it (PUT) or remove it (DELETE)."
)


def _out(edit: DatasetEdit) -> dict[str, Any]:
    return {
        **{k: getattr(edit, k) for k in DatasetEditPublic.model_fields if k != "author_email"},
        "author_email": edit.author.email,
    }


@router.get(
    "/api/datasets/{dataset_id}/edits",
    response_model=list[DatasetEditPublic],
    summary="A dataset's edits",
    responses=NOT_FOUND,
)
def list_edits(dataset_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> list[Any]:
    """Its trims, relabels and exclusions, oldest first, each with who made it and when."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    return [_out(e) for e in edits.edits_of(db, dataset)]


@router.post(
    "/api/datasets/{dataset_id}/edits",
    response_model=DatasetEditPublic,
    status_code=201,
    summary="Edit a dataset (trim, relabel or exclude)",
    responses={**NOT_FOUND, 409: {"description": TAKEN}, 422: {"description": INVALID}},
)
def create_edit(
    dataset_id: RowId,
    body: DatasetEditCreate,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """``trim``: drop ``trim_start`` first and ``trim_end`` last RLDS steps of an episode;
    ``relabel``: give an episode (``episode_id``) or every episode of a task (``task_key``)
    a new ``instruction``; ``exclude``: leave an episode out, saying why (``reason``). The
    preview and exports apply them; the recording is never changed."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    assert principal.user_id is not None
    edit = edits.create_edit(
        db, dataset, principal.user_id, body,
        secret_key=settings.secret_key, data_root=settings.data_root,
    )  # fmt: skip
    return _out(edit)


@router.put(
    "/api/datasets/{dataset_id}/edits/{edit_id}",
    response_model=DatasetEditPublic,
    summary="Replace an edit's values",
    responses={**NOT_FOUND, 422: {"description": INVALID}},
)
def replace_edit(
    dataset_id: RowId,
    edit_id: RowId,
    body: EditValues,
    db: SessionDep,
    principal: CurrentPrincipal,
    settings: SettingsDep,
) -> dict[str, Any]:
    """New values of its kind's fields (its kind and episode or task stay); it is then yours,
    made now."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    assert principal.user_id is not None
    edit = edits.update_edit(
        db, dataset, edit_id, principal.user_id, body,
        secret_key=settings.secret_key, data_root=settings.data_root,
    )  # fmt: skip
    return _out(edit)


@router.delete(
    "/api/datasets/{dataset_id}/edits/{edit_id}",
    status_code=204,
    summary="Remove an edit",
    responses=NOT_FOUND,
)
def delete_edit(
    dataset_id: RowId, edit_id: RowId, db: SessionDep, principal: CurrentPrincipal
) -> Response:
    """The episode (or task) is exported as recorded again, as far as this edit goes."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    edits.delete_edit(db, dataset, edit_id)
    return Response(status_code=204)
