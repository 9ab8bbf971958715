"""Background jobs whose rows the app keeps up to date: exports and bulk actions share this.

A job row (ExportJob, BulkJob) has ``state``, ``message``, ``started_at`` and
``finished_at``. :class:`JobRunner` runs each submitted job in a thread of its own, at most
``workers`` at a time; a subclass's :meth:`JobRunner.execute` does the work (in the thread, or
by following a child process) and returns its outcome: ``("done", {column: value})``,
``("canceled",)`` or ``("failed", message)``. Rows left queued or running by a previous run
are failed on the first start; cancel and stop are cooperative (``handle.cancel``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, ClassVar, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import JobState, utcnow

log = logging.getLogger(__name__)

CANCEL_GRACE_S = 10.0  # a canceled job that has not stopped by then is given up on
JOIN_TIMEOUT_S = 10.0
Outcome = tuple[Any, ...]


class Payload(Protocol):
    @property
    def job_id(self) -> int: ...


class Handle:
    """One submitted job: its payload, cancel flag and thread."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload
        self.cancel = threading.Event()
        self.canceled_at: float | None = None
        self.finished = threading.Event()
        self.thread: threading.Thread | None = None

    @property
    def job_id(self) -> int:
        return int(self.payload.job_id)


class JobRunner:
    """Runs jobs in background threads and keeps their rows up to date.

    ``start``/``stop`` are reference counted: an app may run its lifespan more than once at
    a time (test clients); only the first start recovers jobs a previous run left behind.
    """

    model: ClassVar[Any]  # the row class
    kind: ClassVar[str] = "job"
    restart_message: ClassVar[str] = "The server restarted while this job was queued or running."
    stop_message: ClassVar[str] = "The server stopped while this job was running."

    def __init__(self, factory: sessionmaker[Session], workers: int = 1) -> None:
        self.factory = factory
        self._slots = threading.Semaphore(workers)
        self._handles: dict[int, Handle] = {}
        self._lock = threading.Lock()
        self._users = 0
        self._stopping = False

    # --- what subclasses provide -----------------------------------------------------------
    def execute(self, handle: Handle) -> Outcome:
        """Do the job (``self.progress`` along the way); its outcome (see the module doc)."""
        raise NotImplementedError

    def cleanup(self, job_id: int) -> None:
        """Remove what a job that did not succeed left behind."""

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Begin serving; on the first start, fail jobs a previous run left unfinished."""
        with self._lock:
            self._users += 1
            first = self._users == 1
            self._stopping = False
        if first:
            self.recover()

    def stop(self) -> None:
        """On the last stop, cancel running jobs and wait for them."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users:
                return
            self._stopping = True
            handles = list(self._handles.values())
        for handle in handles:
            handle.cancel.set()
        for handle in handles:
            if handle.thread is not None:
                handle.thread.join(CANCEL_GRACE_S + JOIN_TIMEOUT_S)

    def recover(self) -> int:
        """Mark queued/running jobs failed (nothing runs them any more) and clean them up."""
        with self.factory() as db:
            active = [JobState.queued, JobState.running]
            jobs = db.scalars(select(self.model).where(self.model.state.in_(active))).all()
            for job in jobs:
                job.state = JobState.failed
                job.message = self.restart_message
                job.finished_at = utcnow()
                self.cleanup(job.id)
            db.commit()
            return len(jobs)

    # --- jobs -----------------------------------------------------------------------------
    def submit(self, payload: Any) -> None:
        """Queue a job whose row exists in state ``queued``."""
        handle = Handle(payload)
        handle.thread = threading.Thread(
            target=self._run, args=(handle,), name=f"{self.kind}-{handle.job_id}", daemon=True
        )
        with self._lock:
            self._handles[handle.job_id] = handle
        handle.thread.start()

    def cancel(self, job_id: int, wait: float = 0.0) -> bool:
        """Ask a queued or running job to stop; True if it was active here."""
        with self._lock:
            handle = self._handles.get(job_id)
        if handle is None:
            return False
        handle.canceled_at = time.monotonic()
        handle.cancel.set()
        if wait:
            handle.finished.wait(wait)
        return True

    def is_active(self, job_id: int) -> bool:
        """Whether the job is queued or running in this runner."""
        with self._lock:
            return job_id in self._handles

    def progress(self, job_id: int, **values: Any) -> None:
        """Write progress columns of a job's row."""
        self._update(job_id, **values)

    def _update(self, job_id: int, **values: Any) -> None:
        with self.factory() as db:
            job = db.get(self.model, job_id)
            if job is not None:
                for key, value in values.items():
                    setattr(job, key, value)
                db.commit()

    def _run(self, handle: Handle) -> None:
        job_id = handle.job_id
        try:
            with self._slots:
                if handle.cancel.is_set():
                    state = JobState.failed if self._stopping else JobState.canceled
                    msg = self.stop_message if self._stopping else "Canceled before it started."
                    self._update(job_id, state=state, message=msg, finished_at=utcnow())
                    return
                self._update(job_id, state=JobState.running, started_at=utcnow())
                self._finish(job_id, self.execute(handle))
        except Exception:
            log.exception("%s %s: the runner failed", self.kind, job_id)
            self.cleanup(job_id)
            self._update(
                job_id, state=JobState.failed, message="Internal error.", finished_at=utcnow()
            )
        finally:
            with self._lock:
                self._handles.pop(job_id, None)
            handle.finished.set()

    def _finish(self, job_id: int, outcome: Outcome) -> None:
        if outcome[0] == "done":
            values = outcome[1] if len(outcome) > 1 else {}
            self._update(
                job_id, state=JobState.succeeded, message=None, finished_at=utcnow(), **values
            )
            return
        self.cleanup(job_id)
        if outcome[0] == "canceled" and self._stopping:
            outcome = ("failed", self.stop_message)
        if outcome[0] == "canceled":
            self._update(job_id, state=JobState.canceled, message="Canceled.", finished_at=utcnow())
        else:
            self._update(job_id, state=JobState.failed, message=outcome[1], finished_at=utcnow())
