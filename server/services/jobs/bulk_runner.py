"""Bulk jobs claimed through the database by one replica and run in a thread.

Every replica's :class:`BulkRunner` polls ``bulk_jobs`` like the export manager polls
``export_jobs`` (:class:`~server.queue.claim_runner.ClaimRunner`, ``SKIP LOCKED`` on
PostgreSQL): it claims a queued row while it has a free slot, rebuilds the work from the
row's ``params`` (the ids resolved at request time) and runs
:func:`server.services.review.bulk.apply` chunk by chunk. The running replica heartbeats the row and
reads cancel requests from it; a job whose replica stopped heartbeating is put back in the
queue by any other and runs again from its first chunk (every action is idempotent: chunks
done before are matched again and change nothing, deleted episodes are gone).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from server.errors import DomainError
from server.models import BulkJob, Study
from server.queue.claim_runner import ClaimRunner, Handle, JobRefused, Outcome
from server.services.review import bulk

MAX_ATTEMPTS = 3


class BulkRunner(ClaimRunner):
    """Claims bulk jobs and runs them in threads (database work: no child process)."""

    model = BulkJob
    kind = "bulk"
    max_attempts = MAX_ATTEMPTS
    dead_message = (
        f"The server running this bulk action stopped {MAX_ATTEMPTS} times during it; the "
        "episodes counted as done were changed. Run it again for the rest."
    )
    progress_reset = {"done": 0, "changed": 0, "skipped_recording": 0}

    def prepare(self, db: Session, job: BulkJob) -> Any:
        try:
            return bulk.work_of(job)
        except (KeyError, TypeError, ValueError) as exc:
            raise JobRefused(f"The bulk job's stored request is not readable ({exc}).") from exc
        except DomainError as exc:
            raise JobRefused(exc.message) from exc

    def execute(self, handle: Handle) -> Outcome:
        job_id = handle.job_id
        ids, act, user_id = handle.payload

        def progress(done: int, changed: int, skipped: int) -> None:
            self._set(job_id, done=done, changed=changed, skipped_recording=skipped)

        with self.factory() as db:
            job = db.get(BulkJob, job_id)
            study = None if job is None else db.get(Study, job.study_id)
            if study is None:
                return ("failed", "The study was deleted.")
            try:
                result = bulk.apply(
                    db, study, ids, act, user_id, self.data_root,
                    progress=progress, cancel=handle.cancel.is_set,
                )  # fmt: skip
            except bulk.BulkCanceledError:
                return ("canceled",)
            except DomainError as exc:
                return ("failed", exc.message)
        values = {"done": result.matched, "changed": result.changed}
        return ("done", {**values, "skipped_recording": result.skipped_recording})
