"""Export jobs on the app side: the exporter's options and engine, job rows and downloads.

The export itself runs in a background process (:mod:`server.export.runner`); this module
turns a request into a queued job (its selection resolved by
:mod:`server.services.exports.selection`) and refuses bad requests early with a 422 that
says what is wrong: the request is checked by the export's own check
(:func:`server.export.request.check_request`), whose errors name the field.
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
from server.export import EpisodeInput, ExportOptions, registry
from server.export.beam_config import BeamConfig
from server.export.regenerate import Regeneration, settings_for
from server.export.request import RequestError, check_request
from server.export.runner import ExportPayload
from server.models import Dataset, Episode, ExportJob, JobState, Study
from server.principal import Principal
from server.runtime.regeneration import RegenerationRefused
from server.schemas.exports import ExportCreate, ExportOptionsIn, ExportSelection
from server.services.exports import selection as export_selection
from server.services.exports.spaces import spaces_differ
from server.services.studies import studies

ACTIVE = frozenset({JobState.queued, JobState.running})


def dataset_name(study: Study | Dataset, requested: str | None) -> str:
    """The requested name, or a snake_case one made from the study's (dataset's) name."""
    if requested:
        return requested
    slug = re.sub(r"[^a-z0-9]+", "_", study.name.lower()).strip("_")
    if not slug or not slug[0].isalpha():
        prefix = "study" if isinstance(study, Study) else "dataset"
        slug = f"{prefix}_{slug}".rstrip("_")
    return slug[:60]


def library_options(
    study: Study | Dataset,
    opts: ExportOptionsIn,
    engines: Engines | None = None,
    label: str | None = None,
) -> ExportOptions:
    """The exporter's options for the API's (checked with the selection: :func:`check`);
    ``label``: what the card says was exported (default: the study, by name and id)."""
    return ExportOptions(
        name=dataset_name(study, opts.name),
        format=opts.format,
        keep_step_metadata=not opts.strip_step_metadata,
        step_tag_names=tuple(opts.step_tags) if opts.step_tags is not None else None,
        end_tags=tuple(opts.end_tags),
        study=label or f"{study.name} (study {study.id})",
        profile=opts.profile or "",
        videos=opts.videos,
        regenerate=_regeneration(opts, engines),
    )


def _regeneration(opts: ExportOptionsIn, engines: Engines | None) -> Regeneration | None:
    """The regeneration the options ask for, with what the operator allows to be built and
    the replay processes' bounds (from ``engines.settings``; without them, as for a preview,
    a regeneration that cannot run)."""
    if opts.regenerate is None:
        return None
    cameras = opts.regenerate.cameras
    asked = Regeneration(
        image_size=opts.regenerate.image_size,
        cameras=tuple(cameras) if cameras is not None else None,
    )
    settings = engines.settings if engines is not None else None
    if settings is None:
        return asked
    from server.services.studies.env_check import allowed_environments

    return replace(
        asked,
        allowed=allowed_environments(settings),
        timeout_s=settings.replay_check_timeout_s,
        memory_mb=settings.replay_check_memory_mb,
    )


def check_regeneration(
    episodes: list[Episode], inputs: list[EpisodeInput], regen: Regeneration
) -> None:
    """A 422 naming the option unless every selected environment can regenerate as asked
    (checked on one log per environment: the catalog entry's declaration)."""
    seen: set[str] = set()
    for episode, ep in zip(episodes, inputs, strict=True):
        if episode.env_key in seen:
            continue
        seen.add(episode.env_key)
        try:
            settings_for(Path(ep.log_dir), regen)
        except RegenerationRefused as exc:
            loc = ["body", "options", "regenerate", *([exc.field] if exc.field else [])]
            raise Invalid(
                f"Cannot regenerate the observations: {exc}.",
                detail=[{"loc": loc, "msg": str(exc)}],
            ) from exc


def check(inputs: list[EpisodeInput], options: ExportOptions) -> None:
    """The export's request check (:func:`check_request`) as a 422 naming the field."""
    try:
        check_request(inputs, options)
    except RequestError as exc:
        raise _invalid(exc, options) from exc


def _invalid(exc: RequestError, options: ExportOptions) -> Invalid:
    if exc.field == "profile":
        only = f"{' or '.join(registry.with_profiles())} format only"
        return Invalid(
            f"The {options.profile} profile applies to the {only}.",
            detail=[{"loc": ["body", "options", "profile"], "msg": only}],
        )
    if exc.field == "engine":
        beam = f"{' or '.join(registry.on_beam())} format"
        return Invalid(
            f"Only the {beam} runs on Beam; {options.format} exports run in one process.",
            detail=[{"loc": ["body", "options", "engine"], "msg": f"{beam} only"}],
        )
    if exc.field == "name":
        return Invalid(
            f"Bad dataset name: {exc}.",
            detail=[{"loc": ["body", "options", "name"], "msg": str(exc)}],
        )
    return Invalid(
        f"Cannot export this selection: {exc}.",
        detail=[{"loc": ["body", "selection"], "msg": str(exc)}],
    )


@dataclass(frozen=True)
class Engines:
    """When an export runs on Beam, and on which runner (from the STUDIO_BEAM_* settings)."""

    beam: BeamConfig
    beam_min_steps: int = 0  # engine auto: RLDS exports of at least this many steps; 0: never
    # what regenerated observations need: the allow-list and the replay processes' bounds
    settings: Settings | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Engines:
        """The engines the settings describe."""
        config = BeamConfig.from_settings(
            settings.beam_runner,
            settings.beam_options,
            settings.beam_workers,
            settings.beam_running_mode,
        )
        return cls(config, settings.beam_min_steps, settings)


def with_engine(
    options: ExportOptions, requested: str, steps: int, engines: Engines
) -> ExportOptions:
    """The options with the engine that runs them: Beam when asked, or (auto) for an export
    of at least ``engines.beam_min_steps`` steps in a format that runs on Beam (Beam asked
    of another format is refused by the request's check)."""
    beam = registry.get(options.format).on_beam
    auto = beam and engines.beam_min_steps > 0 and steps >= engines.beam_min_steps
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

    An export of environments with different spaces in a format that splits them by itself
    (``Format.splits_by_env``: the envlogger logs) is split by environment
    (``opts.split_by_env`` is set): each environment's folder reads like a single-environment
    export."""
    episodes = export_selection.resolve(db, study, selection)
    options = library_options(study, opts, engines)
    options = with_engine(options, opts.engine, sum(e.steps for e in episodes), engines)
    instructions = export_selection.instructions_of(study)
    inputs = export_selection.episode_inputs(db, episodes, secret_key, data_root, instructions)
    check(inputs, options)
    if options.regenerate is not None:
        check_regeneration(episodes, inputs, options.regenerate)
    if not opts.split_by_env and registry.get(options.format).splits_by_env:
        opts.split_by_env = spaces_differ(episodes, inputs)
    export_selection.check_inputs(episodes, inputs, options, opts.split_by_env)
    return episodes, options, inputs


def queued_job(
    owner_id: int,
    asked: ExportOptionsIn,
    options: ExportOptions,
    selection: dict[str, Any],
    episodes_total: int,
    *,
    study_id: int | None = None,
    dataset_id: int | None = None,
) -> ExportJob:
    """A ``queued`` job row of a study's or a dataset's export: the options as asked, with
    the dataset name and the engine chosen here (the replica that claims it runs that)."""
    return ExportJob(
        study_id=study_id,
        dataset_id=dataset_id,
        owner_id=owner_id,
        state=JobState.queued,
        format=asked.format,
        selection=selection,
        options={
            **asked.model_dump(mode="json"),
            "name": options.name,
            "engine": engine_name(options),
        },
        episodes_total=episodes_total,
    )


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
    job = queued_job(owner_id, body.options, options, selection, len(episodes), study_id=study.id)
    db.add(job)
    db.commit()
    return job


def payload_of(
    db: Session, job: ExportJob, *, secret_key: str, data_root: Path, engines: Engines
) -> ExportPayload:
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
    return ExportPayload(
        job_id=job.id,
        episodes=tuple(inputs),
        options=options,
        archive=opts.archive,
        data_root=Path(data_root),
        env_keys=tuple(e.env_key for e in episodes) if opts.split_by_env else None,
    )


def get_job(db: Session, principal: Principal, job_id: int) -> ExportJob:
    """A job of a study the principal manages, or of a dataset of theirs; 404 otherwise."""
    job = db.get(ExportJob, job_id)
    if job is not None and job.dataset_id is not None:
        dataset = db.get(Dataset, job.dataset_id)
        if dataset is None or principal.user_id is None or dataset.owner_id != principal.user_id:
            raise NotFound("No such export.")
        return job
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
