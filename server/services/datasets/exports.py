"""Exports of a dataset: every episode it selects now, each written to its split (train,
validation, test) in the chosen format, as one export job.

The job's row keeps the episodes and their splits as they were when it was queued, so a later
change to the dataset (its sources, its split) does not change a queued job; the replica that
claims it rebuilds the exporter's inputs from that list (:func:`payload_of`). Each episode's
language instruction comes from its own study's environments. The checks are a study
export's (:mod:`server.services.exports.exports`), with the dataset's own: its environments'
spaces agree (422 ``incompatible_environments`` otherwise), ``split_by_env`` does not apply,
and its splits are written in one process (not on Beam).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.errors import Invalid
from server.export import EpisodeInput, ExportOptions, registry
from server.export.base import SPLITS
from server.export.runner import ExportPayload, export_dir
from server.models import Dataset, Episode, EpisodeStatus, ExportJob, Study
from server.schemas.exports import DatasetExportCreate, ExportOptionsIn
from server.services.datasets import datasets
from server.services.datasets import preview as dataset_preview
from server.services.exports import exports
from server.services.exports import selection as export_selection


def _label(dataset: Dataset, study_ids: list[int]) -> str:
    studies_ = ", ".join(str(i) for i in study_ids)
    return f"dataset {dataset.name} (dataset {dataset.id}; studies {studies_})"


@dataclass(frozen=True)
class Edited:
    """What a dataset's edits change of one episode's export: its trim (RLDS steps dropped
    first and last) and its relabelled instruction (None: its own)."""

    trim: tuple[int, int] = (0, 0)
    instruction: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.trim != (0, 0):
            out["trim"] = list(self.trim)
        if self.instruction is not None:
            out["instruction"] = self.instruction
        return out

    @classmethod
    def of_json(cls, data: dict[str, Any]) -> Edited:
        start, end = data.get("trim", (0, 0))
        instruction = data.get("instruction")
        return cls((int(start), int(end)), None if instruction is None else str(instruction))


def inputs_of(
    db: Session,
    rows: list[Episode],
    splits: dict[str, str],
    secret_key: str,
    data_root: Path,
    edited: dict[str, Edited] | None = None,
) -> list[EpisodeInput]:
    """The exporter's inputs of ``rows`` (in that order), each with its split, its own
    study's instructions and its edits (``edited``: a trim, a relabel's instruction)."""
    edited = edited or {}
    by_study: dict[int, list[Episode]] = {}
    for e in rows:
        by_study.setdefault(e.study_id, []).append(e)
    made: dict[str, EpisodeInput] = {}
    for study_id, group in by_study.items():
        study = db.get(Study, study_id)
        if study is None:  # pragma: no cover (an episode's study cannot go before it)
            raise Invalid(f"Study {study_id} is gone.")
        instructions = export_selection.instructions_of(study)
        inputs = export_selection.episode_inputs(db, group, secret_key, data_root, instructions)
        for e, ep in zip(group, inputs, strict=True):
            edit = edited.get(e.id, Edited())
            instruction = ep.instruction if edit.instruction is None else edit.instruction
            made[e.id] = replace(ep, split=splits[e.id], trim=edit.trim, instruction=instruction)
    return [made[e.id] for e in rows]


def _prepare(
    db: Session,
    dataset: Dataset,
    rows: list[Episode],
    splits: dict[str, str],
    opts: ExportOptionsIn,
    edited: dict[str, Edited],
    *,
    secret_key: str,
    data_root: Path,
    engines: exports.Engines,
) -> tuple[ExportOptions, list[EpisodeInput]]:
    """The exporter's options and inputs of a dataset's episodes with their edits, checked
    (422s naming the field)."""
    trimmed = [i for i, edit in edited.items() if edit.trim != (0, 0)]
    copies_logs = not registry.get(opts.format).applies_trims
    if trimmed and (copies_logs or opts.videos):
        field_, why = (("format", f"the {opts.format} format copies the recorded logs as they are")
                       if copies_logs else
                       ("videos", "episode videos show every recorded step"))  # fmt: skip
        why = f"{why}, so it cannot apply the trim of episode {trimmed[0]}"
        detail = [{"loc": ["body", "options", field_], "msg": why}]
        raise Invalid(f"Cannot export this dataset so: {why}; choose another, or remove "
                      "the trim.", detail=detail)  # fmt: skip
    if opts.split_by_env:
        why = "a dataset's environments share their spaces: it is one dataset"
        loc = ["body", "options", "split_by_env"]
        raise Invalid(f"Cannot split a dataset by environment: {why}.",
                      detail=[{"loc": loc, "msg": why}])  # fmt: skip
    recording = [e.id for e in rows if e.status == EpisodeStatus.recording]
    if recording:
        raise Invalid(
            f"Episode {recording[0]} is still being recorded; export it once it has ended.",
            detail=[{"loc": ["body"], "msg": f"episode {recording[0]} recording"}],
        )
    study_ids = sorted({e.study_id for e in rows})
    options = exports.library_options(dataset, opts, engines, label=_label(dataset, study_ids))
    steps = sum(e.steps - sum(edited.get(e.id, Edited()).trim) for e in rows)
    options = exports.with_engine(options, opts.engine, steps, engines)
    if options.beam is not None and len(set(splits.values())) > 1:
        if opts.engine == "beam":
            why = "a dataset's splits are written in one process"
            raise Invalid(f"Cannot export this dataset on Beam: {why}.",
                          detail=[{"loc": ["body", "options", "engine"], "msg": why}])  # fmt: skip
        options = replace(options, beam=None)  # auto: one process
    inputs = inputs_of(db, rows, splits, secret_key, data_root, edited)
    exports.check(inputs, options)
    if options.regenerate is not None:
        exports.check_regeneration(rows, inputs, options.regenerate)
    export_selection.check_inputs(rows, inputs, options)
    return options, inputs


def prepare(
    db: Session,
    dataset: Dataset,
    opts: ExportOptionsIn,
    *,
    secret_key: str,
    data_root: Path,
    engines: exports.Engines,
) -> tuple[list[Episode], ExportOptions, list[EpisodeInput], dict[str, Edited]]:
    """What ``dataset`` selects now, in split order (train, validation, test), its edits'
    exclusions left out, as the exporter's options and inputs (each with its split, trim and
    relabelled instruction), checked (422s naming the field); with the edits applied."""
    found = dataset_preview.select_members(db, dataset, secret_key, data_root)
    if not found.members:
        raise Invalid(
            dataset_preview.EMPTY,
            detail=[{"loc": ["path", "dataset_id"], "msg": "the dataset selects no episode"}],
        )
    members = sorted(found.members, key=lambda m: SPLITS.index(m.split))
    rows = [m.episode for m in members]
    splits = {m.episode.id: m.split for m in members}
    edited = {m.episode.id: Edited(m.trim, found.edits.instruction(m.episode)) for m in members}
    options, inputs = _prepare(
        db, dataset, rows, splits, opts, edited,
        secret_key=secret_key, data_root=data_root, engines=engines,
    )  # fmt: skip
    return rows, options, inputs, edited


def create_job(
    db: Session,
    dataset: Dataset,
    owner_id: int,
    body: DatasetExportCreate,
    *,
    secret_key: str,
    data_root: Path,
    engines: exports.Engines,
) -> ExportJob:
    """Check the request and queue an export of what ``dataset`` selects now (:func:`prepare`),
    its episodes' splits kept in the job's row."""
    rows, options, inputs, edited = prepare(
        db, dataset, body.options, secret_key=secret_key, data_root=data_root, engines=engines
    )
    per_split = {s: n for s in SPLITS if (n := sum(ep.split == s for ep in inputs))}
    selection: dict[str, Any] = {
        "dataset_id": dataset.id,
        "episodes": [
            {"id": ep.episode_id, "split": ep.split, **edited[ep.episode_id].as_json()}
            for ep in inputs
        ],
        "splits": per_split,
        "steps_total": sum(e.steps - sum(edited[e.id].trim) for e in rows),
    }
    job = exports.queued_job(
        owner_id, body.options, options, selection, len(rows), dataset_id=dataset.id
    )
    db.add(job)
    db.commit()
    return job


def payload_of(
    db: Session, job: ExportJob, *, secret_key: str, data_root: Path, engines: exports.Engines
) -> ExportPayload:
    """What the runner needs for a dataset's job, rebuilt from its row: the episodes and
    splits chosen when it was queued (a 422-style error if one is gone since)."""
    dataset = db.get(Dataset, job.dataset_id)
    if dataset is None:
        raise Invalid("The dataset is gone.")
    try:
        chosen = [(str(x["id"]), str(x["split"])) for x in job.selection["episodes"]]
        edited = {str(x["id"]): Edited.of_json(x) for x in job.selection["episodes"]}
        opts = ExportOptionsIn.model_validate(job.options)
    except (KeyError, TypeError, ValueError) as exc:
        raise Invalid(f"The export job's stored request is not readable ({exc}).") from exc
    ids = [i for i, _ in chosen]
    query = select(Episode).options(*export_selection.LOAD).where(Episode.id.in_(ids))
    found = {e.id: e for e in db.scalars(query)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise Invalid(f"Episode {missing[0]} of this export is gone; export the dataset again.")
    options, inputs = _prepare(
        db, dataset, [found[i] for i in ids], dict(chosen), opts, edited,
        secret_key=secret_key, data_root=data_root, engines=engines,
    )  # fmt: skip
    return ExportPayload(
        job_id=job.id,
        episodes=tuple(inputs),
        options=options,
        archive=opts.archive,
        data_root=Path(data_root),
    )


def jobs_of(db: Session, dataset: Dataset) -> list[ExportJob]:
    """A dataset's export jobs, newest first."""
    query = select(ExportJob).where(ExportJob.dataset_id == dataset.id)
    return list(db.scalars(query.order_by(ExportJob.id.desc())))


def delete_dataset(db: Session, dataset: Dataset, data_root: Path) -> None:
    """Delete the dataset with its export jobs (their rows go by cascade) and outputs."""
    ids = list(db.scalars(select(ExportJob.id).where(ExportJob.dataset_id == dataset.id)))
    datasets.delete_dataset(db, dataset)
    for job_id in ids:
        shutil.rmtree(export_dir(data_root, job_id), ignore_errors=True)
