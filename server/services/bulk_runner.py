"""Bulk jobs claimed through the database by one replica and run in a thread.

Every replica's :class:`BulkRunner` polls ``bulk_jobs`` like the export manager polls
``export_jobs`` (:mod:`server.core.job_queue`: ``SKIP LOCKED`` on PostgreSQL): it claims a
queued row while it has a free slot, rebuilds the work from the row's ``params`` (the ids
resolved at request time) and runs :func:`server.services.bulk.apply` chunk by chunk. The
running replica heartbeats the row and reads cancel requests from it; a job whose replica
stopped heartbeating is put back in the queue by any other and runs again from its first
chunk (every action is idempotent: chunks done before are matched again and change
nothing, deleted episodes are gone).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from server.core import job_queue
from server.errors import DomainError
from server.models import BulkJob, JobState, Study, utcnow
from server.services import bulk

log = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 30.0
MAX_ATTEMPTS = 3  # runs of a job whose replica died each time before it fails
DEAD_MESSAGE = (
    f"The server running this bulk action stopped {MAX_ATTEMPTS} times during it; the "
    "episodes counted as done were changed. Run it again for the rest."
)
PROGRESS_RESET = {"done": 0, "changed": 0, "skipped_recording": 0}


class _Handle:
    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.cancel = threading.Event()
        self.lost = False  # another replica declared this one dead and took the job back
        self.finished = threading.Event()


class BulkRunner:
    """Claims bulk jobs from the database and runs them in threads (database work only).

    ``start``/``stop`` are reference counted: an app may run its lifespan more than once at
    a time (test clients).
    """

    def __init__(
        self,
        factory: sessionmaker[Session],
        data_root: Path,
        workers: int = 1,
        *,
        poll_s: float = 1.0,
        heartbeat_s: float = 2.0,
        stale_s: float = 30.0,
        replica: str,
    ) -> None:
        self.factory = factory
        self.data_root = Path(data_root)
        self.workers = workers
        self.poll_s = poll_s
        self.heartbeat_s = heartbeat_s
        self.stale_s = stale_s
        self.replica = replica
        self._handles: dict[int, _Handle] = {}
        self._threads: dict[int, threading.Thread] = {}
        self._lock = threading.Lock()
        self._users = 0
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._loops: list[threading.Thread] = []

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Begin polling the queue (on the first start)."""
        with self._lock:
            self._users += 1
            if self._users > 1:
                return
            self._stopping.clear()
            self._loops = [
                threading.Thread(target=self._poll, name="bulk-poller", daemon=True),
                threading.Thread(target=self._heartbeats, name="bulk-heartbeat", daemon=True),
            ]
            loops = list(self._loops)
        for thread in loops:
            thread.start()

    def stop(self) -> None:
        """On the last stop, stop claiming and hand running jobs back to the queue between
        two chunks (another replica, or this one's next start, runs them)."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users:
                return
            self._stopping.set()
            self._wake.set()
            loops, self._loops = self._loops, []
            handles = list(self._handles.values())
            threads = list(self._threads.values())
        for thread in loops:
            thread.join(JOIN_TIMEOUT_S)
        for handle in handles:
            handle.cancel.set()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)

    def submit(self) -> None:
        """A job was queued: look at the queue now rather than at the next poll."""
        self._wake.set()

    def cancel(self, job_id: int, wait: float = 0.0) -> None:
        """Cancel a queued job, or ask the replica running it to stop between two chunks;
        wait up to ``wait`` seconds for the job to end."""
        with self.factory() as db:
            job_queue.request_cancel(db, BulkJob, job_id, "Canceled before it started.")
        with self._lock:
            handle = self._handles.get(job_id)
        if handle is not None:
            handle.cancel.set()
            handle.finished.wait(wait)
            return
        deadline = threading.Event()
        for _ in range(int(wait * 10)):
            with self.factory() as db:
                job = db.get(BulkJob, job_id)
                if job is None or job.state not in bulk.ACTIVE:
                    return
            deadline.wait(0.1)

    # --- the queue ------------------------------------------------------------------------
    def _poll(self) -> None:
        while not self._stopping.is_set():
            try:
                self.reap()
                while self._free_slot() and not self._stopping.is_set():
                    if self.claim_next() is None:
                        break
            except Exception:
                log.exception("bulk jobs: polling the queue failed")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _heartbeats(self) -> None:
        while not self._stopping.wait(self.heartbeat_s):
            try:
                with self._lock:  # before the query: only jobs claimed before it are judged
                    handles = list(self._handles.items())
                with self.factory() as db:
                    claims = job_queue.heartbeat(db, BulkJob, self.replica)
                for job_id, handle in handles:
                    wanted = claims.get(job_id)
                    if wanted is None and not handle.finished.is_set():
                        handle.lost = True
                    if wanted is None or wanted:
                        handle.cancel.set()
            except Exception:
                log.exception("bulk jobs: the heartbeat failed")

    def _free_slot(self) -> bool:
        with self._lock:
            return len(self._handles) < self.workers

    def reap(self) -> list[int]:
        """Put back in the queue the jobs of replicas that stopped heartbeating."""
        with self.factory() as db:
            ids = job_queue.requeue_stale(
                db, BulkJob, self.stale_s, MAX_ATTEMPTS, DEAD_MESSAGE, **PROGRESS_RESET
            )
        for job_id in ids:
            log.warning("bulk job %s: its replica stopped heartbeating; requeued", job_id)
        return ids

    def claim_next(self) -> int | None:
        """Claim the oldest queued job and start it here; its id, or None if none is queued."""
        with self.factory() as db:
            job_id = job_queue.claim_next(db, BulkJob, self.replica, **PROGRESS_RESET)
        if job_id is None:
            return None
        handle = _Handle(job_id)
        thread = threading.Thread(
            target=self._run, args=(handle,), name=f"bulk-{job_id}", daemon=True
        )
        with self._lock:
            self._handles[job_id] = handle
            self._threads[job_id] = thread
        thread.start()
        return job_id

    def _set(self, job_id: int, **values: Any) -> bool:
        with self.factory() as db:
            return job_queue.set_if_claimed(db, BulkJob, job_id, self.replica, **values)

    # --- one job --------------------------------------------------------------------------
    def _run(self, handle: _Handle) -> None:
        job_id = handle.job_id
        try:
            self._finish(handle, self._execute(handle))
        except Exception:
            log.exception("bulk job %s: the runner failed", job_id)
            self._set(
                job_id, state=JobState.failed, message="Internal error.", finished_at=utcnow()
            )
        finally:
            with self._lock:
                self._handles.pop(job_id, None)
                self._threads.pop(job_id, None)
            handle.finished.set()
            self._wake.set()  # a slot is free

    def _execute(self, handle: _Handle) -> tuple[Any, ...]:
        job_id = handle.job_id

        def progress(done: int, changed: int, skipped: int) -> None:
            self._set(job_id, done=done, changed=changed, skipped_recording=skipped)

        with self.factory() as db:
            job = db.get(BulkJob, job_id)
            assert job is not None
            try:
                ids, act, user_id = bulk.work_of(job)
            except (KeyError, TypeError, ValueError) as exc:
                return ("failed", f"The bulk job's stored request is not readable ({exc}).")
            study = db.get(Study, job.study_id)
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
        return ("done", result)

    def _finish(self, handle: _Handle, outcome: tuple[Any, ...]) -> None:
        job_id = handle.job_id
        if handle.lost:
            return  # the job is another run's now: its row is not ours
        if outcome[0] == "done":
            result = outcome[1]
            self._set(
                job_id, state=JobState.succeeded, message=None, finished_at=utcnow(),
                done=result.matched, changed=result.changed,
                skipped_recording=result.skipped_recording,
            )  # fmt: skip
            return
        if outcome[0] == "canceled" and self._stopping.is_set():
            with self.factory() as db:
                job = db.get(BulkJob, job_id)
                if job is not None and not job.cancel_requested:
                    job_queue.release(db, BulkJob, job_id, self.replica, **PROGRESS_RESET)
                    return
        if outcome[0] == "canceled":
            self._set(job_id, state=JobState.canceled, message="Canceled.", finished_at=utcnow())
        else:
            self._set(job_id, state=JobState.failed, message=outcome[1], finished_at=utcnow())
