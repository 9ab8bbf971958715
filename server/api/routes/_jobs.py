"""What the background-job routes share: stopping a queued or running job (an export, a bulk
action) and waiting, a bounded time, for its runner to let go of it."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.orm import Session

from server.errors import Conflict
from server.models import BulkJob, ExportJob
from server.queue.claim_runner import ClaimRunner

CANCEL_WAIT_S = 15.0


def cancel(
    db: Session, job: ExportJob | BulkJob, active: Collection[str], runner: ClaimRunner, what: str
) -> None:
    """Stop ``job`` between two steps of its work (409 when it has already finished) and read
    its row again."""
    if job.state not in active:
        raise Conflict(f"The {what} has already {job.state}.")
    runner.cancel(job.id, wait=CANCEL_WAIT_S)
    db.refresh(job)
