"""Export jobs on the app side: what to export, checks before queuing, rows and downloads.

The export itself runs in a background process (:mod:`server.export.jobs`); this module
turns a designer's selection into the exporter's inputs and refuses bad requests early with a
422 that says what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from server.core.config import Settings
from server.core.security import salted_hash
from server.errors import DomainError, Invalid, NotFound
from server.export import (
    EpisodeInput,
    ExportError,
    ExportFormat,
    ExportOptions,
    IncompatibleEnvironmentsError,
    StepTag,
    check_compatible,
)
from server.export.beam_config import BeamConfig
from server.export.export_job import check_format
from server.export.jobs import JobPayload
from server.export.tfds_writer import check_dataset_name
from server.models import Episode, EpisodeStatus, ExportJob, JobState, Study
from server.principal import Principal
from server.schemas import EpisodeFilterIn, ExportCreate, ExportOptionsIn, ExportSelection
from server.services.export_spaces import one_log_per_env, spaces_differ
from server.services.review import labels, review
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


def selection_filter(sel: EpisodeFilterIn) -> review.EpisodeFilter:
    """The review filter of the page's filter fields (an export selection is one too)."""
    return review.EpisodeFilter(
        statuses=[str(s) for s in sel.statuses],
        env_keys=sel.environments,
        participants=sel.participants,
        tags=sel.tags,
        exclude_tags=sel.exclude_tags,
        since=sel.since,
        until=sel.until,
        min_return=sel.min_return,
        max_return=sel.max_return,
        min_steps=sel.min_steps,
        max_steps=sel.max_steps,
        p99_over_ms=sel.p99_over_ms,
        idle_over=sel.idle_over,
        under_median=sel.under_median,
        over_median=sel.over_median,
        include_tests=sel.include_tests,
        outcomes=sel.outcomes,
        excluded=_excluded(sel) if isinstance(sel, ExportSelection) else sel.excluded,
    )


def _excluded(sel: ExportSelection) -> bool | None:
    """Exports leave excluded episodes out unless asked to include them (or ask for them:
    ``excluded``, the page's filter)."""
    if sel.excluded is not None:
        return sel.excluded
    return None if sel.include_excluded else False


def resolve(db: Session, study: Study, sel: ExportSelection) -> list[Episode]:
    """The selected episodes of ``study``; 422 naming what is wrong when there are none."""
    load = (
        selectinload(Episode.tags),
        selectinload(Episode.step_tags),
        selectinload(Episode.notes),
    )
    if sel.episode_ids is not None:
        ids = list(dict.fromkeys(sel.episode_ids))
        if not ids:
            raise Invalid(
                "Select at least one episode.",
                detail=[{"loc": ["body", "selection", "episode_ids"], "msg": "empty selection"}],
            )
        rows = db.scalars(
            select(Episode).options(*load).where(Episode.id.in_(ids), Episode.study_id == study.id)
        ).all()
        found = {e.id: e for e in rows}
        missing = [i for i in ids if i not in found]
        if missing:
            raise Invalid(
                f"No episode {', '.join(missing[:5])} in this study.",
                detail=[
                    {"loc": ["body", "selection", "episode_ids"], "msg": f"unknown episode {i}"}
                    for i in missing
                ],
            )
        episodes = [found[i] for i in ids]
        if not sel.include_excluded:
            episodes = [e for e in episodes if not e.excluded]
            if not episodes:
                raise Invalid(
                    "Every selected episode is marked excluded; include excluded episodes "
                    "to export them.",
                    detail=[{"loc": ["body", "selection"], "msg": "only excluded episodes"}],
                )
    else:
        query = review.filtered(study.id, selection_filter(sel))
        episodes = list(db.scalars(query.options(*load).order_by(Episode.started_at, Episode.id)))
        if not episodes:
            raise Invalid(
                "No episode matches the selection (only completed episodes are exported "
                "unless you choose other statuses; excluded ones only when included).",
                detail=[{"loc": ["body", "selection"], "msg": "matches no episode"}],
            )
    recording = [e.id for e in episodes if e.status == EpisodeStatus.recording]
    if recording:
        raise Invalid(
            f"Episode {recording[0]} is still being recorded; export it once it has ended.",
            detail=[{"loc": ["body", "selection"], "msg": f"episode {recording[0]} recording"}],
        )
    return episodes


def instructions_of(study: Study) -> dict[str, str]:
    """Each environment's instructions, else the study's (the OXE language instruction)."""
    spec = studies.spec_of(study)
    return {env.id: (env.instructions or spec.instructions).strip() for env in spec.environments}


def episode_inputs(
    db: Session,
    episodes: list[Episode],
    secret_key: str,
    data_root: Path,
    instructions: dict[str, str] | None = None,
) -> list[EpisodeInput]:
    """The exporter's inputs: log folders, pseudonymous agent ids, tags, notes, instructions."""
    externals = review.external_ids(db, episodes)
    inputs = []
    for e in episodes:
        inputs.append(
            EpisodeInput(
                log_dir=review.log_dir(e, data_root),
                episode_id=e.id,
                agent_id=salted_hash(secret_key, review.agent_key(e, externals)),
                status=str(e.status),
                tags=tuple(sorted(t.name for t in e.tags)),
                step_tags=tuple(
                    StepTag(t.name, t.start_step, t.end_step)
                    for t in sorted(e.step_tags, key=lambda t: (t.start_step, t.id))
                ),
                notes="\n\n".join(n.body for n in labels.notes_of(e)),
                instruction=(instructions or {}).get(e.env_key, ""),
                outcome=review.effective_outcome(e) or "",
                player_outcome=e.player_outcome or "",
                reviewer_outcome=e.outcome or "",
            )
        )
    return inputs


INCOMPATIBLE = "incompatible_environments"


def check_inputs(
    episodes: list[Episode],
    inputs: list[EpisodeInput],
    options: ExportOptions,
    split_by_env: bool = False,
) -> None:
    """Cheap checks before queuing: logs exist; one log per environment has the same spaces
    (each environment its own, when split by environment), which the format can hold.

    Environments with different spaces answer a 422 with ``code`` ``incompatible_environments``
    and the environments in ``environments``: the page offers to split by environment."""
    for ep in inputs:
        if not ep.log_dir.is_dir():
            raise Invalid(
                f"Episode {ep.episode_id} has no log on disk; it cannot be exported.",
                detail=[{"loc": ["body", "selection"], "msg": f"episode {ep.episode_id}: no log"}],
            )
    one_per_env = one_log_per_env(episodes, inputs)
    groups = [[ep] for ep in one_per_env.values()] if split_by_env else [list(one_per_env.values())]
    try:
        used = sorted({t.name for ep in inputs for t in ep.step_tags})
        names = used if options.step_tag_names is None else sorted(set(options.step_tag_names))
        for group in groups:
            check_format(check_compatible(group), options, names)
    except IncompatibleEnvironmentsError as exc:
        raise Invalid(
            f"Cannot export this selection: {exc}.",
            detail=[{"loc": ["body", "selection"], "msg": "environments with different spaces",
                     "environments": sorted(one_per_env)}],
            code=INCOMPATIBLE,
        ) from exc  # fmt: skip
    except ExportError as exc:
        raise Invalid(
            f"Cannot export this selection: {exc}.",
            detail=[{"loc": ["body", "selection"], "msg": str(exc)}],
        ) from exc


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
    episodes = resolve(db, study, selection)
    options = library_options(study, opts)
    options = with_engine(options, opts.engine, sum(e.steps for e in episodes), engines)
    inputs = episode_inputs(db, episodes, secret_key, data_root, instructions_of(study))
    if not opts.split_by_env and options.format is ExportFormat.ENVLOGGER:
        opts.split_by_env = spaces_differ(episodes, inputs)
    check_inputs(episodes, inputs, options, opts.split_by_env)
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
