"""Bulk actions over many episodes: one code path, run in the request or as a background job.

:func:`apply` works through the ids chunk by chunk (review.BULK_CHUNK), reporting progress
and polling a cancel flag between chunks. The route runs it in the request for a few checked
episodes (``Settings.bulk_inline_max``) and otherwise queues a :class:`BulkJob` row that
:class:`BulkRunner` (server/core/jobs.py, shared with exports) runs in a thread. Chunks are
committed as they go: a canceled or interrupted job has applied the chunks before it, and
says how many episodes it went through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from server.core.jobs import Handle, JobRunner, Outcome
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


@dataclass(frozen=True)
class BulkPayload:
    """What a bulk job needs (the ids were resolved when it was requested)."""

    job_id: int
    study_id: int
    ids: tuple[str, ...]
    action: BulkAction
    user_id: int | None
    data_root: Path


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
    data_root: Path, request: dict[str, Any],
) -> tuple[BulkJob, BulkPayload]:  # fmt: skip
    """A ``queued`` job row and what the runner needs."""
    job = BulkJob(
        study_id=study.id,
        owner_id=user_id,
        state=JobState.queued,
        action=act.action,
        params={"tags": list(act.tags), "outcome": act.outcome, "request": request},
        total=len(ids),
    )
    db.add(job)
    db.commit()
    payload = BulkPayload(job.id, study.id, tuple(ids), act, user_id, Path(data_root))
    return job, payload


def get_job(db: Session, principal: Principal, job_id: int) -> BulkJob:
    """A bulk job of a study the principal manages; 404 otherwise."""
    return studies.get_in_study(db, principal, BulkJob, job_id, "bulk job")


class BulkRunner(JobRunner):
    """Runs bulk jobs in threads (database work: no child process needed)."""

    model = BulkJob
    kind = "bulk"
    restart_message = (
        "The server restarted while this bulk action was running; the episodes counted as "
        "done were changed. Run it again for the rest."
    )
    stop_message = "The server stopped while this bulk action was running; run it again."

    def execute(self, handle: Handle) -> Outcome:
        payload: BulkPayload = handle.payload
        job_id = payload.job_id

        def progress(done: int, changed: int, skipped: int) -> None:
            self.progress(job_id, done=done, changed=changed, skipped_recording=skipped)

        with self.factory() as db:
            study = db.get(Study, payload.study_id)
            if study is None:
                return ("failed", "The study was deleted.")
            try:
                result = apply(
                    db, study, payload.ids, payload.action, payload.user_id, payload.data_root,
                    progress=progress, cancel=handle.cancel.is_set,
                )  # fmt: skip
            except BulkCanceledError:
                return ("canceled",)
            except DomainError as exc:
                return ("failed", exc.message)
        values = {"done": result.matched, "changed": result.changed}
        return ("done", {**values, "skipped_recording": result.skipped_recording})
