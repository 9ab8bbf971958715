"""Bulk actions over many episodes: one code path, run in the request or as a background job.

:func:`apply` works through the ids chunk by chunk (review.BULK_CHUNK), reporting progress
and polling a cancel flag between chunks. The route runs it in the request for a few checked
episodes (``Settings.bulk_inline_max``) and otherwise queues a :class:`BulkJob` row (the ids
in its ``params``) that one replica's :class:`~server.services.bulk_runner.BulkRunner`
claims through the database and runs in a thread. Chunks are committed as they go: a
canceled or interrupted job has applied the chunks before it, and says how many episodes it
went through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from server.errors import DomainError
from server.models import BulkJob, EpisodeDeletion, JobState, Study
from server.principal import Principal
from server.services import review, studies

ProgressFn = Callable[[int, int, int], None]  # episodes done, changed, skipped (recording)
CancelFn = Callable[[], bool]
ACTIVE = frozenset({JobState.queued, JobState.running})


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
    names = tuple(dict.fromkeys(review.check_tag_name(t, "tags") for t in act.tags))
    return BulkAction(act.action, names, review.check_outcome(act.outcome, "outcome"))


def apply(
    db: Session,
    study: Study,
    ids: Sequence[str],
    act: BulkAction,
    user_id: int | None,
    data_root: Path,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> review.BulkResult:
    """Apply ``act`` to the episodes ``ids`` of ``study``, a chunk at a time."""
    changed = skipped = done = 0
    record: EpisodeDeletion | None = None
    for chunk in [ids[i : i + review.BULK_CHUNK] for i in range(0, len(ids), review.BULK_CHUNK)]:
        if cancel is not None and cancel():
            raise BulkCanceledError
        if act.action == "delete":
            result, record = review.bulk_delete(db, study, chunk, user_id, data_root, record)
            changed += result.changed
            skipped += result.skipped_recording
        elif act.action == "add_tags":
            changed += review.bulk_add_tags(db, chunk, act.tags, user_id)
        elif act.action == "remove_tags":
            changed += review.bulk_remove_tags(db, chunk, act.tags)
        elif act.action == "set_outcome":
            changed += review.bulk_set_outcome(db, chunk, act.outcome)
        elif act.action in ("exclude", "include"):
            changed += review.bulk_set_excluded(db, chunk, act.action == "exclude")
        else:
            raise DomainError(f"Unknown bulk action {act.action!r}.")
        done += len(chunk)
        if progress is not None:
            progress(done, changed, skipped)
    return review.BulkResult(matched=len(ids), changed=changed, skipped_recording=skipped)


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
