"""Export jobs: each runs in its own spawned process; the app's job manager follows it.

The child calls :func:`write_output` and reports ``("progress", episodes_done, total,
steps_done)`` then one of ``("done", path)``, ``("canceled",)`` or ``("failed", message)``
through a pipe. A thread in the app per job reads the pipe and updates the ExportJob row, so
the event loop never waits on an export. Output goes to ``export_dir(data_root, job_id)``;
a failed or canceled job leaves that folder absent.
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
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.export.errors import ExportCanceledError, ExportError
from server.export.export_job import (
    CancelFn,
    EpisodeInput,
    ExportOptions,
    ProgressFn,
    export_dataset,
)
from server.export.packaging import ARCHIVE_FORMATS, make_archive
from server.models import ExportJob, JobState, utcnow
from server.recording.format import export_dir

log = logging.getLogger(__name__)

ARCHIVES = ("folder", *ARCHIVE_FORMATS)
CANCEL_GRACE_S = 10.0  # a canceled child that has not stopped by then is terminated
JOIN_TIMEOUT_S = 10.0
RESTART_MESSAGE = "The server restarted while this export was queued or running; start it again."
STOP_MESSAGE = "The server stopped while this export was running; start it again."


@dataclass(frozen=True)
class JobPayload:
    """Everything the child needs (picklable: it crosses a spawn boundary)."""

    job_id: int
    episodes: tuple[EpisodeInput, ...]
    options: ExportOptions
    archive: str
    data_root: Path


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
) -> Path:
    """Export into the folder ``dest``, or pack it into the archive ``dest`` (zip/tar.gz).

    All or nothing: the dataset folder is built in a hidden sibling, archives are written
    under a temporary name; on any error nothing is left at ``dest``.
    """
    if archive not in ARCHIVES:
        raise ExportError(f"archive must be one of {ARCHIVES}, not {archive!r}")
    dest = Path(dest)
    if dest.exists():
        raise ExportError(f"{dest} already exists")
    if archive == "folder":
        export_dataset(episodes, options, dest, progress, cancel)
        return dest
    work = dest.with_name(f".{dest.name}.work-{uuid.uuid4().hex[:8]}")
    try:
        folder = work / options.name
        export_dataset(episodes, options, folder, progress, cancel)
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
        )
        conn.send(("done", dest.relative_to(payload.data_root).as_posix()))
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
        self.finished = threading.Event()
        self.thread: threading.Thread | None = None


class JobManager:
    """Runs export jobs in background processes and keeps their rows up to date.

    ``start``/``stop`` are reference counted: an app may run its lifespan more than once at
    a time (test clients); only the first start recovers jobs a previous run left behind.
    """

    def __init__(self, data_root: Path, factory: sessionmaker[Session], workers: int = 1):
        self.data_root = Path(data_root)
        self.factory = factory
        self._slots = threading.Semaphore(workers)
        self._handles: dict[int, _Handle] = {}
        self._lock = threading.Lock()
        self._users = 0
        self._stopping = False

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
        """On the last stop, cancel running jobs and wait for their processes."""
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
        """Mark queued/running jobs failed (their process is gone) and remove their output."""
        with self.factory() as db:
            jobs = db.scalars(
                select(ExportJob).where(ExportJob.state.in_([JobState.queued, JobState.running]))
            ).all()
            for job in jobs:
                job.state = JobState.failed
                job.message = RESTART_MESSAGE
                job.finished_at = utcnow()
                shutil.rmtree(export_dir(self.data_root, job.id), ignore_errors=True)
            db.commit()
            return len(jobs)

    # --- jobs -----------------------------------------------------------------------------
    def submit(self, payload: JobPayload) -> None:
        """Queue a job whose row exists in state ``queued``."""
        handle = _Handle(payload)
        handle.thread = threading.Thread(
            target=self._run, args=(handle,), name=f"export-{payload.job_id}", daemon=True
        )
        with self._lock:
            self._handles[payload.job_id] = handle
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
        """Whether the job is queued or running in this manager."""
        with self._lock:
            return job_id in self._handles

    def _update(self, job_id: int, **values: Any) -> None:
        with self.factory() as db:
            job = db.get(ExportJob, job_id)
            if job is not None:
                for key, value in values.items():
                    setattr(job, key, value)
                db.commit()

    def _run(self, handle: _Handle) -> None:
        job_id = handle.payload.job_id
        try:
            with self._slots:
                if handle.cancel.is_set():
                    state = JobState.failed if self._stopping else JobState.canceled
                    msg = STOP_MESSAGE if self._stopping else "Canceled before it started."
                    self._update(job_id, state=state, message=msg, finished_at=utcnow())
                    return
                self._update(job_id, state=JobState.running, started_at=utcnow())
                outcome = self._follow(handle)
                self._finish(handle, outcome)
        except Exception:
            log.exception("export job %s: the manager failed", job_id)
            shutil.rmtree(export_dir(self.data_root, job_id), ignore_errors=True)
            self._update(
                job_id, state=JobState.failed, message="Internal error.", finished_at=utcnow()
            )
        finally:
            with self._lock:
                self._handles.pop(job_id, None)
            handle.finished.set()

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
                        self._update(
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
        if outcome[0] == "done":
            self._update(
                job_id,
                state=JobState.succeeded,
                output_path=outcome[1],
                message=None,
                finished_at=utcnow(),
            )
            return
        shutil.rmtree(export_dir(self.data_root, job_id), ignore_errors=True)
        if outcome[0] == "canceled" and self._stopping:
            outcome = ("failed", STOP_MESSAGE)
        if outcome[0] == "canceled":
            self._update(job_id, state=JobState.canceled, message="Canceled.", finished_at=utcnow())
        else:
            self._update(job_id, state=JobState.failed, message=outcome[1], finished_at=utcnow())
