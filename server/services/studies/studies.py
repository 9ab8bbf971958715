"""Studies: ownership, the draft/active/paused/closed lifecycle, permalinks."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload

from server.core.security import new_token
from server.errors import Conflict, Invalid, NotFound
from server.export.runner import export_dir
from server.models import Episode, ExportJob, Study, StudyEnvironment, StudyState, utcnow
from server.principal import Principal
from server.recording.format import episode_dir, episode_video_lock, episode_videos
from server.services.studies import launch_check, study_files
from server.study_spec import StudySpec

# state -> states it may move to
TRANSITIONS: dict[StudyState, frozenset[StudyState]] = {
    StudyState.draft: frozenset({StudyState.active}),
    StudyState.active: frozenset({StudyState.paused, StudyState.closed}),
    StudyState.paused: frozenset({StudyState.active, StudyState.closed}),
    StudyState.closed: frozenset(),
}
EDITABLE = frozenset({StudyState.draft, StudyState.paused})

# The pre-launch checklist of a spec (the route wires in the environments' validation):
# items as server.services.studies.launch_check makes them.
LaunchCheck = Callable[[StudySpec], list[dict]]


def _a(state: str) -> str:
    """'a draft', 'an active' study."""
    return f"an {state}" if state[0] in "aeiou" else f"a {state}"


def _sync_environments(study: Study, spec: StudySpec) -> None:
    """Mirror the spec's environments into rows, keeping ids of those that stay."""
    existing = {env.env_key: env for env in study.environments}
    rows = []
    for position, env in enumerate(spec.environments):
        row = existing.pop(env.id, None) or StudyEnvironment(env_key=env.id)
        row.position = position
        row.name = env.name
        row.source_kind = env.source.kind
        row.source_ref = env.source.id if env.source.kind == "gymnasium" else env.source.factory
        row.mode = env.mode
        rows.append(row)
    study.environments = rows


def check_sources(db: Session, owner_id: int, spec: StudySpec, study_id: int | None) -> None:
    """A feedback study judges episodes of its owner's own play studies (422 otherwise,
    naming the study id; another owner's study reads as absent)."""
    if spec.judging is None:
        return
    for n, source_id in enumerate(spec.judging.source.studies):
        source = db.get(Study, source_id)
        why = None
        if source is None or source.owner_id != owner_id:
            why = f"there is no study {source_id} of yours"
        elif source.id == study_id or spec_of(source).judging is not None:
            why = f"study {source_id} is a feedback study: judge the episodes of a play study"
        if why is not None:
            loc = ["body", "spec", "feedback", "source", "studies", n]
            raise Invalid(f"The feedback source is not valid: {why}.",
                          detail=[{"loc": loc, "msg": why}])  # fmt: skip


def create_study(
    db: Session, owner_id: int, spec: StudySpec, parent_study_id: int | None = None
) -> Study:
    """A new draft owned by ``owner_id`` (a new version of ``parent_study_id`` when given)."""
    check_sources(db, owner_id, spec, None)
    study = Study(
        name=spec.name,
        owner_id=owner_id,
        state=StudyState.draft,
        spec=study_files.spec_data(spec),
        parent_study_id=parent_study_id,
    )
    _sync_environments(study, spec)
    db.add(study)
    db.commit()
    return study


def visible_studies(
    db: Session, principal: Principal, state: StudyState | None = None
) -> Sequence[Study]:
    """Studies the principal may manage: their own, or all for an admin."""
    query = (
        select(Study)
        .options(selectinload(Study.environments), selectinload(Study.parent))
        .order_by(Study.id.desc())
    )
    if not principal.is_admin:
        query = query.where(Study.owner_id == principal.user_id)
    if state is not None:
        query = query.where(Study.state == state)
    return db.scalars(query).all()


def get_study(db: Session, principal: Principal, study_id: int) -> Study:
    """The study if the principal may manage it; 404 otherwise (existence is not leaked)."""
    study = db.get(Study, study_id)
    if study is None or not principal.can_manage(study):
        raise NotFound("No such study.")
    return study


class _InStudy(Protocol):
    study_id: Any


RowT = TypeVar("RowT", bound=_InStudy)


def get_in_study(
    db: Session, principal: Principal, model: type[RowT], row_id: Any, what: str
) -> RowT:
    """A row (episode, export job) of a study the principal manages; 404 otherwise."""
    row = db.get(model, row_id)
    study = db.get(Study, row.study_id) if row is not None else None
    if row is None or study is None or not principal.can_manage(study):
        raise NotFound(f"No such {what}.")
    return row


def update_study(db: Session, study: Study, spec: StudySpec, data_root: Path) -> Study:
    """Replace the spec of a draft or paused study.

    Environments removed from a draft take their test plays along (logs included), as
    deleting the whole draft does; a started study keeps every environment.
    """
    if study.state not in EDITABLE:
        raise Conflict(f"{_a(study.state).capitalize()} study cannot be edited; pause it first.")
    if study.state != StudyState.draft and spec.kind != spec_of(study).kind:
        raise Conflict("A started study keeps its kind (play or feedback).")
    check_sources(db, study.owner_id, spec, study.id)
    kept = {env.id for env in spec.environments}
    removed = [env.id for env in study.environments if env.env_key not in kept]
    if removed and study.state != StudyState.draft:
        raise Conflict("Environments of a started study cannot be removed.")
    gone: Sequence[str] = []
    if removed:
        # Episodes point at environment rows: a draft's (all test plays) go before their rows.
        gone = db.scalars(select(Episode.id).where(Episode.study_env_id.in_(removed))).all()
        db.execute(delete(Episode).where(Episode.study_env_id.in_(removed)))
    study.spec = study_files.spec_data(spec)
    study.name = spec.name
    _sync_environments(study, spec)
    study.updated_at = utcnow()
    db.commit()
    remove_episode_logs(data_root, study.id, gone)
    return study


def remove_episode_logs(data_root: Path, study_id: int, episode_ids: Iterable[str]) -> None:
    """Remove the log folders of episodes whose rows are gone, and their videos (committed
    first: a failed commit must not leave rows without their logs)."""
    for episode_id in episode_ids:
        folder = episode_dir(data_root, study_id, episode_id)
        shutil.rmtree(folder, ignore_errors=True)
        for video in episode_videos(folder):
            video.unlink(missing_ok=True)
        episode_video_lock(folder).unlink(missing_ok=True)


def delete_study(db: Session, study: Study, data_root: Path) -> None:
    """Delete a draft with its test-play episodes and exports, their logs and export outputs
    included (other states keep theirs)."""
    if study.state != StudyState.draft:
        raise Conflict("Only draft studies can be deleted; close it instead.")
    job_ids = db.scalars(select(ExportJob.id).where(ExportJob.study_id == study.id))
    folders = [episode_dir(data_root, study.id, "")]
    folders += [export_dir(data_root, job_id) for job_id in job_ids]
    # Episodes point at the study's environment rows, which go with the study: the episodes
    # (a designer may test-play a draft) must go first.
    db.execute(delete(Episode).where(Episode.study_id == study.id))
    db.delete(study)
    db.commit()
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def change_state(
    db: Session,
    study: Study,
    target: StudyState,
    check: LaunchCheck | None = None,
    *,
    acknowledge_warnings: bool = False,
) -> Study:
    """Move along the lifecycle; the first activation creates the permalink token.

    Activating (or resuming) runs ``check``: its errors refuse the move (422), its warnings
    too (409) unless ``acknowledge_warnings``."""
    current = StudyState(study.state)
    if target not in TRANSITIONS[current]:
        raise Conflict(f"{_a(current).capitalize()} study cannot become {target}.")
    if target == StudyState.active and check is not None:
        launch_check.enforce(check(spec_of(study)), acknowledge_warnings)
    study.state = target
    if target == StudyState.active and study.permalink_token is None:
        study.permalink_token = new_token(16)
    study.updated_at = utcnow()
    db.commit()
    return study


def rotate_permalink(db: Session, study: Study) -> Study:
    """Replace the permalink token: the old link stops working, and every play ticket issued
    under it is refused from then on (a socket already open plays on; see docs/protocol.md)."""
    if study.permalink_token is None:
        raise Conflict("The study has no permalink yet: activate it first.")
    study.permalink_token = new_token(16)
    db.commit()
    return study


def spec_of(study: Study) -> StudySpec:
    """The validated spec stored with a study."""
    return StudySpec.model_validate(study.spec)


def study_by_token(db: Session, token: str) -> Study | None:
    """The study behind a permalink token, whatever its state."""
    if not token:
        return None
    return db.scalar(select(Study).where(Study.permalink_token == token))
