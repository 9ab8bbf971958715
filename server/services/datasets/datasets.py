"""Datasets' rows: made, changed, listed and deleted by their owner only (another designer's
dataset is a 404, like a missing one); their sources are studies of the owner's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.errors import Invalid, NotFound
from server.models import Dataset, Study
from server.schemas.datasets import DatasetCreate, DatasetSource, DatasetUpdate


def check_sources(db: Session, owner_id: int, sources: Sequence[DatasetSource]) -> list[Study]:
    """The sources' studies: each a play study of ``owner_id``'s, once (422 at
    ``sources.N.study_id`` otherwise; another designer's study reads as absent)."""
    found: list[Study] = []
    seen: set[int] = set()
    for n, source in enumerate(sources):
        study = db.get(Study, source.study_id)
        why = None
        if study is None or study.owner_id != owner_id:
            why = f"there is no study {source.study_id} of yours"
        elif study.kind != "play":
            why = f"study {study.id} is a feedback study: it records no episodes"
        elif study.id in seen:
            why = f"study {study.id} is already a source of this dataset"
        if why is not None or study is None:
            raise Invalid(
                f"This source is not valid: {why}.",
                detail=[{"loc": ["body", "sources", n, "study_id"], "msg": why}],
            )
        seen.add(study.id)
        found.append(study)
    return found


def _check_name(db: Session, owner_id: int, name: str, dataset_id: int | None) -> None:
    taken = db.scalar(select(Dataset.id).where(Dataset.owner_id == owner_id, Dataset.name == name))
    if taken is not None and taken != dataset_id:
        why = f"you already have a dataset named {name!r}"
        raise Invalid(f"Choose another name: {why}.",
                      detail=[{"loc": ["body", "name"], "msg": why}])  # fmt: skip


def _sources_data(sources: Sequence[DatasetSource]) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in sources]


def create_dataset(db: Session, owner_id: int, body: DatasetCreate) -> Dataset:
    """A new dataset of ``owner_id``'s."""
    _check_name(db, owner_id, body.name, None)
    check_sources(db, owner_id, body.sources)
    dataset = Dataset(
        owner_id=owner_id,
        name=body.name,
        description=body.description,
        sources=_sources_data(body.sources),
        split=body.split.model_dump(mode="json"),
    )
    db.add(dataset)
    db.commit()
    return dataset


def update_dataset(db: Session, dataset: Dataset, body: DatasetUpdate) -> Dataset:
    """Change the fields ``body`` gives; the others stay."""
    if body.name is not None:
        _check_name(db, dataset.owner_id, body.name, dataset.id)
        dataset.name = body.name
    if body.description is not None:
        dataset.description = body.description
    if body.sources is not None:
        check_sources(db, dataset.owner_id, body.sources)
        dataset.sources = _sources_data(body.sources)
    if body.split is not None:
        dataset.split = body.split.model_dump(mode="json")
    db.commit()
    return dataset


def delete_dataset(db: Session, dataset: Dataset) -> None:
    db.delete(dataset)
    db.commit()


def datasets_of(db: Session, owner_id: int) -> Sequence[Dataset]:
    """The owner's datasets, newest first."""
    return db.scalars(
        select(Dataset).where(Dataset.owner_id == owner_id).order_by(Dataset.id.desc())
    ).all()


def get_dataset(db: Session, owner_id: int | None, dataset_id: int) -> Dataset:
    """The dataset if ``owner_id`` owns it; 404 otherwise (existence is not leaked)."""
    dataset = db.get(Dataset, dataset_id)
    if dataset is None or dataset.owner_id != owner_id:
        raise NotFound("No such dataset.")
    return dataset
