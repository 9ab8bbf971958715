"""Export jobs on the app side: the exporter's options and engine, job rows and downloads.

The export itself runs in a background process (:mod:`server.export.jobs`); this module
turns a request into a queued job (its selection resolved and checked by
:mod:`server.services.jobs.export_selection`) and refuses bad requests early with a 422 that
says what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.core.config import Settings
from server.errors import DomainError, Invalid, NotFound
from server.export import (
    EpisodeInput,
    ExportError,
    ExportFormat,
    ExportOptions,
)
from server.export.beam_config import BeamConfig
from server.export.jobs import JobPayload
from server.export.tfds_writer import check_dataset_name
from server.models import Episode, ExportJob, JobState, Study
from server.principal import Principal
from server.schemas.exports import ExportCreate, ExportOptionsIn, ExportSelection
from server.services.jobs import export_selection
from server.services.jobs.export_spaces import spaces_differ
from server.services.studies import studies

ACTIVE = frozenset({JobState.queued, JobState.running})
_FORMATS = {
    "tfds": ExportFormat.RLDS,
    "envlogger": ExportFormat.ENVLOGGER,
    "minari": ExportFormat.MINARI,
    "lerobot": ExportFormat.LEROBOT,
}


def dataset_name(study: Study, requested: str | None) -> str:
    """The requested name, or a snake_case one made from the study's name."""
    if requested:
        return requested
    slug = re.sub(r"[^a-z0-9]+", "_", study.name.lower()).strip("_")
    if not slug or not slug[0].isalpha():
        slug = f"study_{slug}".rstrip("_")
    return slug[:60]


def library_options(study: Study, opts: ExportOptionsIn) -> ExportOptions:
    """The exporter's options for the API's."""
    options = ExportOptions(
        name=dataset_name(study, opts.name),
        format=_FORMATS[opts.format],
        keep_step_metadata=not opts.strip_step_metadata,
        step_tag_names=tuple(opts.step_tags) if opts.step_tags is not None else None,
        end_tags=tuple(opts.end_tags),
        study=f"{study.name} (study {study.id})",
        profile=opts.profile or "",
        videos=opts.videos,
    )
    if opts.profile and opts.format != "tfds":
        raise Invalid(
            f"The {opts.profile} profile applies to the tfds format only.",
            detail=[{"loc": ["body", "options", "profile"], "msg": "tfds format only"}],
        )
    try:
        check_dataset_name(options.name, options.version)
    except ExportError as exc:
        raise Invalid(
            f"Bad dataset name: {exc}.",
            detail=[{"loc": ["body", "options", "name"], "msg": str(exc)}],
        ) from exc
    return options


@dataclass(frozen=True)
class Engines:
    """When an export runs on Beam, and on which runner (from the STUDIO_BEAM_* settings)."""

    beam: BeamConfig
    beam_min_steps: int = 0  # engine auto: RLDS exports of at least this many steps; 0: never

    @classmethod
    def from_settings(cls, settings: Settings) -> Engines:
        """The engines the settings describe."""
        config = BeamConfig.from_settings(
            settings.beam_runner,
            settings.beam_options,
            settings.beam_workers,
            settings.beam_running_mode,
        )
        return cls(config, settings.beam_min_steps)


def with_engine(
    options: ExportOptions, requested: str, steps: int, engines: Engines
) -> ExportOptions:
    """The options with the engine that runs them: Beam when asked, or (auto) for an RLDS
    export of at least ``engines.beam_min_steps`` steps; 422 for Beam with another format."""
    rlds = options.format is ExportFormat.RLDS
    if requested == "beam" and not rlds:
        raise Invalid(
            f"Only the tfds format runs on Beam; {options.format} exports run in one process.",
            detail=[{"loc": ["body", "options", "engine"], "msg": "tfds format only"}],
        )
    auto = rlds and engines.beam_min_steps > 0 and steps >= engines.beam_min_steps
    use_beam = requested == "beam" or (requested == "auto" and auto)
    return replace(options, beam=engines.beam if use_beam else None)


def engine_name(options: ExportOptions) -> str:
    """The engine an export runs on, as the job's options record it."""
    return "single" if options.beam is None else "beam"


def prepare(
    db: Session,
    study: Study,
    selection: ExportSelection,
    opts: ExportOptionsIn,
    *,
    secret_key: str,
    data_root: Path,
    engines: Engines,
) -> tuple[list[Episode], ExportOptions, list[EpisodeInput]]:
    """Resolve and check a selection: its episodes, the exporter's options and inputs.

    An envlogger export of environments with different spaces is split by environment
    (``opts.split_by_env`` is set): it only copies logs, so nothing forces them into one
    dataset, and each environment's folder reads like a single-environment export."""
    episodes = export_selection.resolve(db, study, selection)
    options = library_options(study, opts)
    options = with_engine(options, opts.engine, sum(e.steps for e in episodes), engines)
    instructions = export_selection.instructions_of(study)
    inputs = export_selection.episode_inputs(db, episodes, secret_key, data_root, instructions)
    if not opts.split_by_env and options.format is ExportFormat.ENVLOGGER:
        opts.split_by_env = spaces_differ(episodes, inputs)
    export_selection.check_inputs(episodes, inputs, options, opts.split_by_env)
    return episodes, options, inputs


def create_job(
    db: Session,
    study: Study,
    owner_id: int,
    body: ExportCreate,
    *,
    secret_key: str,
    data_root: Path,
    engines: Engines,
) -> ExportJob:
    """Check the request and insert a ``queued`` job row (a replica's runner claims it).

    The row's options record the engine chosen here (``single`` or ``beam``), so the replica
    that claims the job runs it on that engine (with its own runner settings)."""
    episodes, options, _inputs = prepare(
        db,
        study,
        body.selection,
        body.options,
        secret_key=secret_key,
        data_root=data_root,
        engines=engines,
    )
    selection: dict[str, Any] = {
        "request": body.selection.model_dump(mode="json"),
        "episode_ids": [e.id for e in episodes],
        "steps_total": sum(e.steps for e in episodes),
    }
    job = ExportJob(
        study_id=study.id,
        owner_id=owner_id,
        state=JobState.queued,
        format=body.options.format,
        selection=selection,
        options={
            **body.options.model_dump(mode="json"),
            "name": options.name,
            "engine": engine_name(options),
        },
        episodes_total=len(episodes),
    )
    db.add(job)
    db.commit()
    return job


def payload_of(
    db: Session, job: ExportJob, *, secret_key: str, data_root: Path, engines: Engines
) -> JobPayload:
    """What the runner needs, rebuilt from the job's row by the replica that claimed it
    (the episodes chosen when it was queued; a 422-style error if they changed since)."""
    study = db.get(Study, job.study_id)
    try:
        # the episodes chosen when it was queued (excluded ones were left out then)
        selection = ExportSelection(
            episode_ids=list(job.selection["episode_ids"]), include_excluded=True
        )
        opts = ExportOptionsIn.model_validate(job.options)
    except (KeyError, TypeError, ValueError) as exc:
        raise Invalid(f"The export job's stored request is not readable ({exc}).") from exc
    if study is None:
        raise Invalid("The study is gone.")
    episodes, options, inputs = prepare(
        db, study, selection, opts, secret_key=secret_key, data_root=data_root, engines=engines
    )
    return JobPayload(
        job_id=job.id,
        episodes=tuple(inputs),
        options=options,
        archive=opts.archive,
        data_root=Path(data_root),
        env_keys=tuple(e.env_key for e in episodes) if opts.split_by_env else None,
    )


def get_job(db: Session, principal: Principal, job_id: int) -> ExportJob:
    """A job of a study the principal manages; 404 otherwise."""
    return studies.get_in_study(db, principal, ExportJob, job_id, "export")


def jobs_of(db: Session, study: Study) -> list[ExportJob]:
    """A study's export jobs, newest first."""
    query = select(ExportJob).where(ExportJob.study_id == study.id).order_by(ExportJob.id.desc())
    return list(db.scalars(query))


def output_file(job: ExportJob, data_root: Path) -> Path:
    """The finished job's output, refused (400) unless it is inside the data root."""
    if job.state != JobState.succeeded or not job.output_path:
        raise DomainError(f"The export is {job.state}: there is nothing to download.")
    root = Path(data_root).resolve()
    path = (root / job.output_path).resolve()
    if not path.is_relative_to(root):
        raise DomainError("The export's output is not inside the data root.")
    if not path.exists():
        raise NotFound("The export's output is gone.")
    return path
