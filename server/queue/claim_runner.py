"""The loop every replica runs over a table of claimable jobs (:mod:`server.queue.job_queue`).

:class:`ClaimRunner` polls the table, claims queued rows while it has a free slot, runs each
in a thread of its own, heartbeats its claims (a cancel requested through the row, by any
replica, or a claim lost to another replica stops the job) and puts back in the queue the
jobs of replicas that stopped heartbeating. A subclass says what a job is: :meth:`prepare`
rebuilds the work from the row, :meth:`execute` does it and returns ``("done", {column:
value})``, ``("canceled",)`` or ``("failed", message)``. Exports (server/export/runner.py) and
bulk episode actions (server/services/jobs/bulk_runner.py) are the two kinds.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.orm import Session, sessionmaker

from server.core.budget import ProcessBudget
from server.models import JobState, utcnow
from server.queue import job_queue

log = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 10.0
Outcome = tuple[Any, ...]


class JobRefused(Exception):
    """:meth:`ClaimRunner.prepare` cannot rebuild the job: it fails with this message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Handle:
    """One claimed job running here: its payload, cancel flag and thread."""

    def __init__(self, job_id: int, payload: Any) -> None:
        self.job_id = job_id
        self.payload = payload
        self.cancel = threading.Event()
        self.canceled_at: float | None = None
        self.lost = False  # another replica declared this one dead and took the job back
        self.finished = threading.Event()
        self.thread: threading.Thread | None = None
        self.slot = False  # holds a slot of the runner's budget (given back when it ends)


class ClaimRunner:
    """Claims jobs of ``model`` from the database and runs them here.

    ``start``/``stop`` are reference counted: an app may run its lifespan more than once at
    a time (test clients).
    """

    model: ClassVar[Any]
    kind: ClassVar[str] = "job"
    max_attempts: ClassVar[int] = 3  # runs of a job whose replica died each time
    dead_message: ClassVar[str] = "The server running this job stopped too often; run it again."
    progress_reset: ClassVar[dict[str, Any]] = {}  # columns a new run starts from
    stop_grace_s: ClassVar[float] = JOIN_TIMEOUT_S  # how long a stopped job may take to end

    def __init__(
        self,
        data_root: Path,
        factory: sessionmaker[Session],
        workers: int = 1,
        *,
        poll_s: float = 1.0,
        heartbeat_s: float = 2.0,
        stale_s: float = 30.0,
        replica: str,
        budget: ProcessBudget | None = None,
    ) -> None:
        self.data_root = Path(data_root)
        self.budget = budget  # each running job holds one of its slots (export processes)
        self.factory = factory
        self.workers = workers
        self.poll_s = poll_s
        self.heartbeat_s = heartbeat_s
        self.stale_s = stale_s
        self.replica = replica
        self._handles: dict[int, Handle] = {}
        self._lock = threading.Lock()
        self._users = 0
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- what subclasses provide -----------------------------------------------------------
    def prepare(self, db: Session, job: Any) -> Any:
        """The job's payload rebuilt from its row (:class:`JobRefused` fails the job)."""
        raise NotImplementedError

    def execute(self, handle: Handle) -> Outcome:
        """Do the job (``handle.cancel`` asks it to stop); its outcome."""
        raise NotImplementedError

    def cleanup(self, job_id: int) -> None:
        """Remove what a run that did not succeed left behind."""

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Begin polling the queue (on the first start)."""
        with self._lock:
            self._users += 1
            if self._users > 1:
                return
            self._stopping.clear()
            self._threads = [
                threading.Thread(target=self._poll, name=f"{self.kind}-poller", daemon=True),
                threading.Thread(
                    target=self._heartbeats, name=f"{self.kind}-heartbeat", daemon=True
                ),
            ]
            threads = list(self._threads)
        for thread in threads:
            thread.start()

    def stop(self) -> None:
        """On the last stop, stop claiming, hand running jobs back to the queue (another
        replica, or this one's next start, runs them) and wait for them."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users:
                return
            self._stopping.set()
            self._wake.set()
            handles = list(self._handles.values())
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
        for handle in handles:
            handle.cancel.set()
        for handle in handles:
            if handle.thread is not None:
                handle.thread.join(self.stop_grace_s + JOIN_TIMEOUT_S)

    def submit(self) -> None:
        """A job was queued: look at the queue now rather than at the next poll."""
        self._wake.set()

    # --- the queue ------------------------------------------------------------------------
    def _poll(self) -> None:
        while not self._stopping.is_set():
            try:
                self.reap()
                while self._free_slot() and not self._stopping.is_set():
                    slot = self.budget is not None
                    if self.budget is not None and not self.budget.try_take():
                        break  # players or other background work fill the budget: later
                    if not self.claim_next(holding_slot=slot):
                        break
            except Exception:
                log.exception("%s jobs: polling the queue failed", self.kind)
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _heartbeats(self) -> None:
        """Refresh this replica's claims; stop a job whose cancel was requested (by any
        replica) or whose claim was lost (this replica was taken for dead)."""
        while not self._stopping.wait(self.heartbeat_s):
            try:
                with self._lock:  # before the query: only jobs claimed before it are judged
                    handles = list(self._handles.items())
                with self.factory() as db:
                    claims = job_queue.heartbeat(db, self.model, self.replica)
                for job_id, handle in handles:
                    wanted = claims.get(job_id)
                    if wanted is None and not handle.finished.is_set():
                        handle.lost = True
                    if wanted is None or wanted:
                        handle.canceled_at = handle.canceled_at or time.monotonic()
                        handle.cancel.set()
            except Exception:
                log.exception("%s jobs: the heartbeat failed", self.kind)

    def _free_slot(self) -> bool:
        with self._lock:
            return len(self._handles) < self.workers

    def reap(self) -> list[int]:
        """Put back in the queue the jobs of replicas that stopped heartbeating."""
        with self.factory() as db:
            ids = job_queue.requeue_stale(
                db, self.model, self.stale_s, self.max_attempts, self.dead_message,
                **self.progress_reset,
            )  # fmt: skip
        for job_id in ids:
            log.warning("%s job %s: its replica stopped heartbeating; requeued", self.kind, job_id)
            self.cleanup(job_id)
        return ids

    def claim_next(self, holding_slot: bool = False) -> int | None:
        """Claim the oldest queued job and start it here; its id, or None if none is queued.

        ``holding_slot``: the caller took a slot of the budget for it; the job gives it back
        when it ends (at once when nothing is queued or the job is refused)."""
        started = False
        try:
            with self.factory() as db:
                job_id = job_queue.claim_next(db, self.model, self.replica, **self.progress_reset)
                if job_id is None:
                    return None
                job = db.get(self.model, job_id)
                assert job is not None
                try:
                    payload = self.prepare(db, job)
                except JobRefused as exc:
                    self._finish(Handle(job_id, None), ("failed", exc.message))
                    return job_id
            handle = Handle(job_id, payload)
            handle.slot = holding_slot
            handle.thread = threading.Thread(
                target=self._run, args=(handle,), name=f"{self.kind}-{job_id}", daemon=True
            )
            with self._lock:
                self._handles[job_id] = handle
            handle.thread.start()
            started = True
            return job_id
        finally:
            if holding_slot and not started and self.budget is not None:
                self.budget.give_back()

    def cancel(self, job_id: int, wait: float = 0.0) -> None:
        """Cancel a queued job, or ask the replica running it to stop; wait up to ``wait``
        seconds for the job to end."""
        with self.factory() as db:
            job_queue.request_cancel(db, self.model, job_id, "Canceled before it started.")
        with self._lock:
            handle = self._handles.get(job_id)
        if handle is not None:
            handle.canceled_at = time.monotonic()
            handle.cancel.set()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with self.factory() as db:
                job = db.get(self.model, job_id)
                if job is None or job.state not in (JobState.queued, JobState.running):
                    return
            time.sleep(0.1)

    def is_active(self, job_id: int) -> bool:
        """Whether the job runs here."""
        with self._lock:
            return job_id in self._handles

    def _set(self, job_id: int, **values: Any) -> bool:
        with self.factory() as db:
            return job_queue.set_if_claimed(db, self.model, job_id, self.replica, **values)

    # --- one job --------------------------------------------------------------------------
    def _run(self, handle: Handle) -> None:
        job_id = handle.job_id
        try:
            self._finish(handle, self.execute(handle))
        except Exception:
            log.exception("%s job %s: the runner failed", self.kind, job_id)
            self.cleanup(job_id)
            self._set(
                job_id, state=JobState.failed, message="Internal error.", finished_at=utcnow()
            )
        finally:
            with self._lock:
                self._handles.pop(job_id, None)
            if handle.slot and self.budget is not None:
                self.budget.give_back()
            handle.finished.set()
            self._wake.set()  # a slot is free

    def _cancel_asked(self, handle: Handle) -> bool:
        """Whether a cancel reached this job (here, or through its row from any replica)."""
        if handle.cancel.is_set():
            return True
        with self.factory() as db:
            job = db.get(self.model, handle.job_id)
            return job is not None and bool(job.cancel_requested)

    def _finish(self, handle: Handle, outcome: Outcome) -> None:
        job_id = handle.job_id
        if handle.lost:
            return  # the job is another run's now: its row and output are not ours
        if outcome[0] == "done" and self._cancel_asked(handle):
            outcome = ("canceled",)  # the cancel was accepted (200) while the job finished
        if outcome[0] == "done":
            values = {"message": None, **(outcome[1] if len(outcome) > 1 else {})}
            self._set(job_id, state=JobState.succeeded, finished_at=utcnow(), **values)
            return
        self.cleanup(job_id)
        if outcome[0] == "canceled" and self._stopping.is_set():
            with self.factory() as db:
                job = db.get(self.model, job_id)
                if job is not None and not job.cancel_requested:
                    job_queue.release(db, self.model, job_id, self.replica, **self.progress_reset)
                    return
        if outcome[0] == "canceled":
            self._set(job_id, state=JobState.canceled, message="Canceled.", finished_at=utcnow())
        else:
            self._set(job_id, state=JobState.failed, message=outcome[1], finished_at=utcnow())
