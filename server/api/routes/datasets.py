"""Datasets: a designer's named selections of episodes across their studies, and the preview
of what each selects and how its split divides it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from server.api.deps import CurrentPrincipal, RowId, SessionDep, SettingsDep
from server.models import Dataset
from server.schemas.datasets import (
    DatasetCreate,
    DatasetPreviewPublic,
    DatasetPublic,
    DatasetUpdate,
)
from server.services.datasets import datasets
from server.services.datasets import exports as dataset_exports
from server.services.datasets import preview as dataset_preview

router = APIRouter(tags=["datasets"])

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such dataset, or not yours."}
}
INVALID = (
    "A field is not valid (named in `detail`), the name is taken, or a source is not a "
    "study of yours (at `sources.N.study_id`)."
)


@router.get("/api/datasets", response_model=list[DatasetPublic], summary="List my datasets")
def list_datasets(db: SessionDep, principal: CurrentPrincipal) -> list[Dataset]:
    """Your datasets, newest first."""
    assert principal.user_id is not None
    return list(datasets.datasets_of(db, principal.user_id))


@router.post(
    "/api/datasets",
    response_model=DatasetPublic,
    status_code=201,
    summary="Create a dataset",
    responses={422: {"description": INVALID}},
)
def create_dataset(body: DatasetCreate, db: SessionDep, principal: CurrentPrincipal) -> Dataset:
    """A named selection of episodes from one or more of your studies (a filter per study)
    and its train/validation/test split; ``GET /api/datasets/{id}/preview`` counts it."""
    assert principal.user_id is not None
    return datasets.create_dataset(db, principal.user_id, body)


@router.get(
    "/api/datasets/{dataset_id}",
    response_model=DatasetPublic,
    summary="A dataset",
    responses=NOT_FOUND,
)
def read_dataset(dataset_id: RowId, db: SessionDep, principal: CurrentPrincipal) -> Dataset:
    """Its name, sources (study and filter) and split."""
    return datasets.get_dataset(db, principal.user_id, dataset_id)


@router.patch(
    "/api/datasets/{dataset_id}",
    response_model=DatasetPublic,
    summary="Change a dataset",
    responses={**NOT_FOUND, 422: {"description": INVALID}},
)
def update_dataset(
    dataset_id: RowId, body: DatasetUpdate, db: SessionDep, principal: CurrentPrincipal
) -> Dataset:
    """Change the fields given (name, description, sources, split); the others stay."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    return datasets.update_dataset(db, dataset, body)


@router.delete(
    "/api/datasets/{dataset_id}",
    status_code=204,
    summary="Delete a dataset",
    responses=NOT_FOUND,
)
def delete_dataset(
    dataset_id: RowId, db: SessionDep, principal: CurrentPrincipal, settings: SettingsDep
) -> Response:
    """Delete the dataset and its exports (its studies and episodes stay)."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    dataset_exports.delete_dataset(db, dataset, settings.data_root)
    return Response(status_code=204)


@router.get(
    "/api/datasets/{dataset_id}/preview",
    response_model=DatasetPreviewPublic,
    summary="What a dataset selects and how its split divides it",
    responses={
        **NOT_FOUND,
        422: {
            "description": "A source study is gone (at `sources.N.study_id`), or the "
            "environments' spaces differ (`code`: `incompatible_environments`, naming the "
            "environments and fields)."
        },
    },
)
def preview_dataset(
    dataset_id: RowId, db: SessionDep, principal: CurrentPrincipal, settings: SettingsDep
) -> dict[str, Any]:
    """The episodes the sources select now (completed, not excluded, by default), each
    with its split, counted per split, study, environment, task and participant
    (pseudonymous agent ids, as exports write them). Empty: counts of 0 and a message."""
    dataset = datasets.get_dataset(db, principal.user_id, dataset_id)
    return dataset_preview.preview(
        db, dataset, secret_key=settings.secret_key, data_root=settings.data_root
    )
