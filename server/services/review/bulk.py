"""Bulk actions over many episodes: one code path, run in the request or as a background job.

:func:`apply` works through the ids chunk by chunk (BULK_CHUNK), reporting progress
and polling a cancel flag between chunks. The route runs it in the request for a few checked
episodes (``Settings.bulk_inline_max``) and otherwise queues a :class:`BulkJob` row (the ids
in its ``params``) that one replica's :class:`~server.services.jobs.bulk_runner.BulkRunner`
claims through the database and runs in a thread. Chunks are committed as they go: a
canceled or interrupted job has applied the chunks before it, and says how many episodes it
went through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from server.errors import DomainError
from server.models import (
    BulkJob,
    Episode,
    EpisodeDeletion,
    EpisodeStatus,
    EpisodeTag,
    JobState,
    Study,
    utcnow,
)
from server.principal import Principal
from server.services.review import labels, quality, review
from server.services.studies import studies

ProgressFn = Callable[[int, int, int], None]  # episodes done, changed, skipped (recording)
CancelFn = Callable[[], bool]
ACTIVE = frozenset({JobState.queued, JobState.running})
BULK_CHUNK = 500  # ids per IN (...) list: well under SQLite's and PostgreSQL's parameter caps
T = TypeVar("T")


@dataclass(frozen=True)
class BulkResult:
    """What a bulk action did: episodes matched, changed, and left alone while recording."""

    matched: int
    changed: int
    skipped_recording: int = 0


class BulkCanceledError(Exception):
    """The job was asked to stop between two chunks."""


@dataclass(frozen=True)
class BulkAction:
    """What to do: ``action`` with its tags (add/remove_tags) or outcome (set_outcome)."""

    action: str  # add_tags, remove_tags, delete, set_outcome, exclude, include
    tags: tuple[str, ...] = ()
    outcome: str | None = None


def check(act: BulkAction) -> BulkAction:
    """Refuse (422) bad tag names or outcomes before anything runs (a job would fail late)."""
    names = tuple(dict.fromkeys(labels.check_tag_name(t, "tags") for t in act.tags))
    return BulkAction(act.action, names, labels.check_outcome(act.outcome, "outcome"))


def apply(
    db: Session,
    study: Study,
    ids: Sequence[str],
    act: BulkAction,
    user_id: int | None,
    data_root: Path,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> BulkResult:
    """Apply ``act`` to the episodes ``ids`` of ``study``, a chunk at a time."""
    changed = skipped = done = 0
    record: EpisodeDeletion | None = None
    for chunk in _chunks(ids):
        if cancel is not None and cancel():
            raise BulkCanceledError
        if act.action == "delete":
            result, record = bulk_delete(db, study, chunk, user_id, data_root, record)
            changed += result.changed
            skipped += result.skipped_recording
        elif act.action == "add_tags":
            changed += bulk_add_tags(db, chunk, act.tags, user_id)
        elif act.action == "remove_tags":
            changed += bulk_remove_tags(db, chunk, act.tags)
        elif act.action == "set_outcome":
            changed += bulk_set_outcome(db, chunk, act.outcome)
        elif act.action in ("exclude", "include"):
            changed += bulk_set_excluded(db, chunk, act.action == "exclude")
        else:
            raise DomainError(f"Unknown bulk action {act.action!r}.")
        done += len(chunk)
        if progress is not None:
            progress(done, changed, skipped)
    return BulkResult(matched=len(ids), changed=changed, skipped_recording=skipped)


def create_job(
    db: Session, study: Study, ids: Sequence[str], act: BulkAction, user_id: int | None,
    request: dict[str, Any],
) -> BulkJob:  # fmt: skip
    """A ``queued`` job row holding everything a replica needs to run it (:func:`work_of`)."""
    job = BulkJob(
        study_id=study.id,
        owner_id=user_id,
        state=JobState.queued,
        action=act.action,
        params={
            "tags": list(act.tags),
            "outcome": act.outcome,
            "ids": list(ids),
            "request": request,
        },
        total=len(ids),
    )
    db.add(job)
    db.commit()
    return job


def work_of(job: BulkJob) -> tuple[tuple[str, ...], BulkAction, int | None]:
    """The ids, action and user of a job, rebuilt from its row (KeyError/TypeError/ValueError
    when the row is not readable)."""
    params = job.params
    ids = tuple(str(i) for i in params["ids"])
    act = BulkAction(job.action, tuple(str(t) for t in params["tags"]), params["outcome"])
    return ids, check(act), job.owner_id


def get_job(db: Session, principal: Principal, job_id: int) -> BulkJob:
    """A bulk job of a study the principal manages; 404 otherwise."""
    return studies.get_in_study(db, principal, BulkJob, job_id, "bulk job")


def _chunks(items: Sequence[T]) -> list[Sequence[T]]:
    """``items`` in runs of BULK_CHUNK: ids per IN (...) list, rows per INSERT."""
    return [items[i : i + BULK_CHUNK] for i in range(0, len(items), BULK_CHUNK)]


def matched_ids(
    db: Session, study: Study, episode_ids: Sequence[str] | None, flt: review.EpisodeFilter | None
) -> list[str]:
    """Ids of the study's episodes among ``episode_ids`` (others are not counted), or else
    matching ``flt``."""
    if episode_ids is None:
        query = review.filtered(study.id, flt or review.EpisodeFilter())
        query = query.with_only_columns(Episode.id)
        return list(db.scalars(query.order_by(Episode.id)))
    found: list[str] = []
    for chunk in _chunks(list(dict.fromkeys(episode_ids))):
        where = (Episode.study_id == study.id, Episode.id.in_(chunk))
        found += db.scalars(select(Episode.id).where(*where)).all()
    return found


def bulk_add_tags(
    db: Session, ids: Sequence[str], tags: Sequence[str], author_id: int | None
) -> int:
    """Give every episode every tag; the number of episodes that got at least one.

    One ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` per chunk: the unique (episode,
    name) constraint skips tags already there, and no read first (whose plan a growing tag
    table can make slow before PostgreSQL's statistics catch up)."""
    names = list(dict.fromkeys(labels.check_tag_name(t, "tags") for t in tags))
    insert_of = pg_insert if db.get_bind().dialect.name == "postgresql" else sqlite_insert
    changed: set[str] = set()
    pairs = [(e, n) for e in ids for n in names]
    for chunk in _chunks(pairs):  # 4 parameters a row: well under the caps
        rows = [{"episode_id": e, "name": n, "author_id": author_id, "created_at": utcnow()}
                for e, n in chunk]  # fmt: skip
        stmt = (
            insert_of(EpisodeTag)
            .values(rows)
            .on_conflict_do_nothing(index_elements=["episode_id", "name"])
            .returning(EpisodeTag.episode_id)
        )
        changed.update(db.scalars(stmt))
    db.commit()
    return len(changed)


def bulk_remove_tags(db: Session, ids: Sequence[str], tags: Sequence[str]) -> int:
    """Remove the tags from every episode; the number of episodes that had one."""
    names = list(dict.fromkeys(labels.check_tag_name(t, "tags") for t in tags))
    changed: set[str] = set()
    for chunk in _chunks(ids):
        where = (EpisodeTag.episode_id.in_(chunk), EpisodeTag.name.in_(names))
        changed.update(db.scalars(select(EpisodeTag.episode_id).where(*where)).all())
        db.execute(delete(EpisodeTag).where(*where))
    db.commit()
    return len(changed)


def bulk_set_outcome(db: Session, ids: Sequence[str], outcome: str | None) -> int:
    """Set (or unset, None) the reviewer's outcome; the number of episodes it changed."""
    outcome = labels.check_outcome(outcome, "outcome")
    changed = 0
    for chunk in _chunks(ids):
        differs = Episode.outcome.is_not(None) if outcome is None else (
            Episode.outcome.is_(None) | (Episode.outcome != outcome)
        )  # fmt: skip
        result = db.execute(
            update(Episode).where(Episode.id.in_(chunk), differs).values(outcome=outcome),
            execution_options=_NO_SYNC,
        )
        changed += _rowcount(result)
    db.commit()
    return changed


def bulk_set_excluded(db: Session, ids: Sequence[str], excluded: bool) -> int:
    """Mark (or unmark) the episodes excluded; the number it changed."""
    changed = 0
    for chunk in _chunks(ids):
        where = (Episode.id.in_(chunk), Episode.excluded.is_not(excluded))
        stmt = update(Episode).where(*where).values(excluded=excluded)
        changed += _rowcount(db.execute(stmt, execution_options=_NO_SYNC))
    db.commit()
    return changed


# the rows are not kept in the session: no need to match them against it
_NO_SYNC = {"synchronize_session": False}


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def bulk_delete(
    db: Session,
    study: Study,
    ids: Sequence[str],
    user_id: int | None,
    data_root: Path,
    record: EpisodeDeletion | None = None,
) -> tuple[BulkResult, EpisodeDeletion | None]:
    """Delete the episodes that are not recording (tags, step tags and notes cascade), record
    the deletion (adding to ``record`` when a job deletes chunk by chunk), then remove their
    logs."""
    gone: list[str] = []
    envs: set[int] = set()
    recording = 0
    for chunk in _chunks(ids):
        # a recording episode keeps being written by its worker: never pulled from under it
        where = (Episode.id.in_(chunk), Episode.status != EpisodeStatus.recording)
        ended = db.execute(select(Episode.id, Episode.study_env_id).where(*where)).tuples().all()
        db.execute(delete(Episode).where(*where))
        gone += [episode_id for episode_id, _ in ended]
        envs.update(env_id for _, env_id in ended)
        live = Episode.id.in_(chunk) & (Episode.status == EpisodeStatus.recording)
        recording += db.scalar(select(func.count()).where(live)) or 0
    if gone and record is None:
        record = EpisodeDeletion(study_id=study.id, user_id=user_id, count=len(gone))
        db.add(record)
    elif gone and record is not None:
        record.count += len(gone)
    quality.refresh_medians(db, envs)
    db.commit()
    studies.remove_episode_logs(data_root, study.id, gone)
    return BulkResult(matched=len(ids), changed=len(gone), skipped_recording=recording), record
