"""Export jobs: claimed through the database by one replica, run in a spawned process.

Every replica's :class:`JobManager` polls ``export_jobs`` and claims queued rows while it has
a free slot (:mod:`server.core.job_queue`: ``SKIP LOCKED`` on PostgreSQL); the payload is
rebuilt from the row, so any replica can run a job another one accepted.

The child calls :func:`write_output` and reports ``("progress", episodes_done, total,
steps_done)`` then one of ``("done", path)``, ``("canceled",)`` or ``("failed", message)``
through a pipe. A thread in the app per job reads the pipe and updates the ExportJob row, so
the event loop never waits on an export. Output goes to ``export_dir(data_root, job_id)``;
a failed or canceled job leaves that folder absent. The running replica heartbeats the row
(and reads cancel requests from it); a job whose replica stopped heartbeating is put back in
the queue by any other.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import shutil
import signal
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from server.core import job_queue
from server.errors import DomainError
from server.export.errors import ExportCanceledError, ExportError
from server.export.export_job import (
    CancelFn,
    EpisodeInput,
    ExportOptions,
    ProgressFn,
    export_dataset,
)
from server.export.packaging import ARCHIVE_FORMATS, make_archive
from server.export.split import export_split
from server.models import ExportJob, JobState, utcnow
from server.recording.format import export_dir

log = logging.getLogger(__name__)

ARCHIVES = ("folder", *ARCHIVE_FORMATS)
CANCEL_GRACE_S = 10.0  # a canceled child that has not stopped by then is terminated
JOIN_TIMEOUT_S = 10.0
MAX_ATTEMPTS = 3  # runs of a job whose replica died each time before it fails
DEAD_MESSAGE = (
    f"The server running this export stopped {MAX_ATTEMPTS} times during it; start it again."
)
PROGRESS_RESET = {"episodes_done": 0, "steps_done": 0}


@dataclass(frozen=True)
class JobPayload:
    """Everything the child needs (picklable: it crosses a spawn boundary)."""

    job_id: int
    episodes: tuple[EpisodeInput, ...]
    options: ExportOptions
    archive: str
    data_root: Path
    env_keys: tuple[str, ...] | None = None  # per episode: split into one dataset per env


def output_name(options: ExportOptions, archive: str) -> str:
    """File or folder name of an export's output."""
    return options.name if archive == "folder" else f"{options.name}.{archive}"


def write_output(
    episodes: tuple[EpisodeInput, ...] | list[EpisodeInput],
    options: ExportOptions,
    archive: str,
    dest: Path,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    env_keys: tuple[str, ...] | None = None,
) -> Path:
    """Export into the folder ``dest``, or pack it into the archive ``dest`` (zip/tar.gz).

    With ``env_keys`` (one per episode) the folder holds one dataset per environment
    (server/export/split.py). All or nothing: the dataset folder is built in a hidden
    sibling, archives are written under a temporary name; on any error nothing is left at
    ``dest``.
    """

    def export(folder: Path) -> None:
        if env_keys is None:
            export_dataset(episodes, options, folder, progress, cancel)
        else:
            export_split(episodes, env_keys, options, folder, progress, cancel)

    if archive not in ARCHIVES:
        raise ExportError(f"archive must be one of {ARCHIVES}, not {archive!r}")
    dest = Path(dest)
    if dest.exists():
        raise ExportError(f"{dest} already exists")
    if archive == "folder":
        export(dest)
        return dest
    work = dest.with_name(f".{dest.name}.work-{uuid.uuid4().hex[:8]}")
    try:
        folder = work / options.name
        export(folder)
        if cancel is not None and cancel():
            raise ExportCanceledError("the export was canceled")
        make_archive(folder, archive, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _child(payload: JobPayload, conn: Connection, canceled: Any) -> None:
    """Child process body: run the export and report through ``conn``.

    The child leads a process group of its own, so that stopping it also stops the worker
    processes a Beam export starts (see :func:`_stop_group`).
    """
    os.setpgid(0, 0)
    job_dir = export_dir(payload.data_root, payload.job_id)
    try:
        job_dir.mkdir(parents=True, exist_ok=False)
        dest = job_dir / output_name(payload.options, payload.archive)
        write_output(
            payload.episodes,
            payload.options,
            payload.archive,
            dest,
            progress=lambda done, total, steps: conn.send(("progress", done, total, steps)),
            cancel=canceled.is_set,
            env_keys=payload.env_keys,
        )
        conn.send(("done", dest.relative_to(payload.data_root).as_posix()))
    except (BrokenPipeError, ConnectionResetError):
        # The replica died: the job goes back to the queue and its next run owns job_dir
        # (write_output removed this run's partial output already).
        return
    except ExportCanceledError:
        shutil.rmtree(job_dir, ignore_errors=True)
        conn.send(("canceled",))
    except ExportError as exc:
        shutil.rmtree(job_dir, ignore_errors=True)
        conn.send(("failed", str(exc)))
    except BaseException as exc:
        shutil.rmtree(job_dir, ignore_errors=True)
        traceback.print_exc()
        conn.send(("failed", f"unexpected error: {type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _stop_group(pgid: int) -> None:
    """Kill what is left of an export child's process group (a Beam export's workers)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left (or the child died before it made its group)


class _Handle:
    def __init__(self, payload: JobPayload) -> None:
        self.payload = payload
        self.cancel = threading.Event()
        self.canceled_at: float | None = None
        self.lost = False  # another replica declared this one dead and took the job back
        self.finished = threading.Event()
        self.thread: threading.Thread | None = None


PayloadFn = Callable[[Session, ExportJob], JobPayload]


class JobManager:
    """Claims export jobs from the database, runs them in background processes and keeps
    their rows up to date.

    ``payload_of`` rebuilds a job's payload from its row (it raises a
    :class:`~server.errors.DomainError` or :class:`ExportError` that fails the job).
    ``start``/``stop`` are reference counted: an app may run its lifespan more than once at
    a time (test clients).
    """

    def __init__(
        self,
        data_root: Path,
        factory: sessionmaker[Session],
        payload_of: PayloadFn,
        workers: int = 1,
        *,
        poll_s: float = 1.0,
        heartbeat_s: float = 2.0,
        stale_s: float = 30.0,
        replica: str,
    ) -> None:
        self.data_root = Path(data_root)
        self.factory = factory
        self.payload_of = payload_of
        self.workers = workers
        self.poll_s = poll_s
        self.heartbeat_s = heartbeat_s
        self.stale_s = stale_s
        self.replica = replica
        self._handles: dict[int, _Handle] = {}
        self._lock = threading.Lock()
        self._users = 0
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Begin polling the queue (on the first start)."""
        with self._lock:
            self._users += 1
            if self._users > 1:
                return
            self._stopping.clear()
            self._threads = [
                threading.Thread(target=self._poll, name="export-poller", daemon=True),
                threading.Thread(target=self._heartbeats, name="export-heartbeat", daemon=True),
            ]
            threads = list(self._threads)
        for thread in threads:
            thread.start()

    def stop(self) -> None:
        """On the last stop, stop claiming, hand running jobs back to the queue (another
        replica, or this one's next start, runs them) and wait for their processes."""
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
                handle.thread.join(CANCEL_GRACE_S + JOIN_TIMEOUT_S)

    def submit(self) -> None:
        """A job was queued: look at the queue now rather than at the next poll."""
        self._wake.set()

    # --- the queue ------------------------------------------------------------------------
    def _poll(self) -> None:
        while not self._stopping.is_set():
            try:
                self.reap()
                while self._free_slot() and not self._stopping.is_set():
                    if not self.claim_next():
                        break
            except Exception:
                log.exception("export jobs: polling the queue failed")
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
                    claims = job_queue.heartbeat(db, ExportJob, self.replica)
                for job_id, handle in handles:
                    wanted = claims.get(job_id)
                    if wanted is None and not handle.finished.is_set():
                        handle.lost = True
                    if wanted is None or wanted:
                        handle.canceled_at = handle.canceled_at or time.monotonic()
                        handle.cancel.set()
            except Exception:
                log.exception("export jobs: the heartbeat failed")

    def _free_slot(self) -> bool:
        with self._lock:
            return len(self._handles) < self.workers

    def reap(self) -> list[int]:
        """Put back in the queue the jobs of replicas that stopped heartbeating."""
        with self.factory() as db:
            ids = job_queue.requeue_stale(
                db, ExportJob, self.stale_s, MAX_ATTEMPTS, DEAD_MESSAGE, **PROGRESS_RESET
            )
        for job_id in ids:
            log.warning("export job %s: its replica stopped heartbeating; requeued", job_id)
            shutil.rmtree(export_dir(self.data_root, job_id), ignore_errors=True)
        return ids

    def claim_next(self) -> int | None:
        """Claim the oldest queued job and start it here; its id, or None if none is queued."""
        with self.factory() as db:
            job_id = job_queue.claim_next(db, ExportJob, self.replica, **PROGRESS_RESET)
            if job_id is None:
                return None
            job = db.get(ExportJob, job_id)
            assert job is not None
            try:
                payload = self.payload_of(db, job)
            except (DomainError, ExportError) as exc:
                message = exc.message if isinstance(exc, DomainError) else str(exc)
                self._set(job_id, state=JobState.failed, message=message, finished_at=utcnow())
                return job_id
        handle = _Handle(payload)
        handle.thread = threading.Thread(
            target=self._run, args=(handle,), name=f"export-{job_id}", daemon=True
        )
        with self._lock:
            self._handles[job_id] = handle
        handle.thread.start()
        return job_id

    def cancel(self, job_id: int, wait: float = 0.0) -> None:
        """Cancel a queued job, or ask the replica running it to stop; wait up to ``wait``
        seconds for the job to end."""
        with self.factory() as db:
            job_queue.request_cancel(db, ExportJob, job_id, "Canceled before it started.")
        with self._lock:
            handle = self._handles.get(job_id)
        if handle is not None:
            handle.canceled_at = time.monotonic()
            handle.cancel.set()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with self.factory() as db:
                job = db.get(ExportJob, job_id)
                if job is None or job.state not in (JobState.queued, JobState.running):
                    return
            time.sleep(0.1)

    def is_active(self, job_id: int) -> bool:
        """Whether the job runs in this manager."""
        with self._lock:
            return job_id in self._handles

    def _set(self, job_id: int, **values: Any) -> bool:
        with self.factory() as db:
            return job_queue.set_if_claimed(db, ExportJob, job_id, self.replica, **values)

    # --- one job --------------------------------------------------------------------------
    def _run(self, handle: _Handle) -> None:
        job_id = handle.payload.job_id
        try:
            outcome = self._follow(handle)
            self._finish(handle, outcome)
        except Exception:
            log.exception("export job %s: the manager failed", job_id)
            shutil.rmtree(export_dir(self.data_root, job_id), ignore_errors=True)
            self._set(
                job_id, state=JobState.failed, message="Internal error.", finished_at=utcnow()
            )
        finally:
            with self._lock:
                self._handles.pop(job_id, None)
            handle.finished.set()
            self._wake.set()  # a slot is free

    def _follow(self, handle: _Handle) -> tuple[Any, ...]:
        ctx = mp.get_context("spawn")
        reader, writer = ctx.Pipe(duplex=False)
        event = ctx.Event()
        proc = ctx.Process(target=_child, args=(handle.payload, writer, event), daemon=True)
        proc.start()
        writer.close()
        outcome: tuple[Any, ...] | None = None
        try:
            while outcome is None:
                if handle.cancel.is_set():
                    event.set()
                    since = handle.canceled_at or time.monotonic()
                    handle.canceled_at = since
                    if time.monotonic() - since > CANCEL_GRACE_S:
                        outcome = ("canceled",)
                        break
                if reader.poll(0.2):
                    try:
                        message = reader.recv()
                    except EOFError:
                        break
                    if message[0] == "progress":
                        _, done, total, steps = message
                        self._set(
                            handle.payload.job_id,
                            episodes_done=done,
                            episodes_total=total,
                            steps_done=steps,
                        )
                    else:
                        outcome = message
                elif not proc.is_alive() and not reader.poll(0):
                    break
        finally:
            proc.join(JOIN_TIMEOUT_S)
            if proc.is_alive():
                proc.terminate()
                proc.join(JOIN_TIMEOUT_S)
            if proc.exitcode != 0 and proc.pid is not None:
                _stop_group(proc.pid)
            reader.close()
        if outcome is None:
            return ("failed", f"the export process ended unexpectedly (exit code {proc.exitcode})")
        return outcome

    def _finish(self, handle: _Handle, outcome: tuple[Any, ...]) -> None:
        job_id = handle.payload.job_id
        if handle.lost:
            return  # the job is another run's now: its row and folder are not ours
        if outcome[0] == "done":
            self._set(
                job_id,
                state=JobState.succeeded,
                output_path=outcome[1],
                message=None,
                finished_at=utcnow(),
            )
            return
        shutil.rmtree(export_dir(self.data_root, job_id), ignore_errors=True)
        if outcome[0] == "canceled" and self._stopping.is_set():
            with self.factory() as db:
                job = db.get(ExportJob, job_id)
                if job is not None and not job.cancel_requested:
                    job_queue.release(db, ExportJob, job_id, self.replica, **PROGRESS_RESET)
                    return
        if outcome[0] == "canceled":
            self._set(job_id, state=JobState.canceled, message="Canceled.", finished_at=utcnow())
        else:
            self._set(job_id, state=JobState.failed, message=outcome[1], finished_at=utcnow())
