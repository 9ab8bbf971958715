"""The export's runner: export jobs claimed through the database by one replica, each run in
a spawned process (its run: server/export/run.py).

Every replica's :class:`ExportRunner` polls ``export_jobs`` and claims queued rows while it has
a free slot (:mod:`server.queue.job_queue`: ``SKIP LOCKED`` on PostgreSQL); the payload is
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
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from server.errors import DomainError
from server.export.base import CancelFn, EpisodeInput, ExportOptions, ProgressFn
from server.export.errors import ExportCanceledError, ExportError
from server.export.packaging import ARCHIVE_FORMATS, make_archive
from server.export.run import export_dataset
from server.export.split import export_split
from server.models import ExportJob
from server.queue.claim_runner import ClaimRunner, Handle, JobRefused, Outcome

log = logging.getLogger(__name__)

ARCHIVES = ("folder", *ARCHIVE_FORMATS)
CANCEL_GRACE_S = 10.0  # a canceled child that has not stopped by then is terminated
JOIN_TIMEOUT_S = 10.0
MAX_ATTEMPTS = 3  # runs of a job whose replica died each time before it fails
DEAD_MESSAGE = (
    f"The server running this export stopped {MAX_ATTEMPTS} times during it; start it again."
)
PROGRESS_RESET = {"episodes_done": 0, "steps_done": 0}
EXPORTS_DIR = "exports"


def export_dir(data_root: Path, job_id: int | str) -> Path:
    """Folder of one export job's output."""
    return Path(data_root) / EXPORTS_DIR / str(job_id)


@dataclass(frozen=True)
class ExportPayload:
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


def _child(payload: ExportPayload, conn: Connection, canceled: Any) -> None:
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


PayloadFn = Callable[[Session, ExportJob], ExportPayload]


class ExportRunner(ClaimRunner):
    """Claims export jobs from the database, runs each in a background process and keeps
    its row up to date (the claiming, heartbeats and requeues: :class:`ClaimRunner`).

    ``payload_of`` rebuilds a job's payload from its row (it raises a
    :class:`~server.errors.DomainError` or :class:`ExportError` that fails the job).
    """

    model = ExportJob
    kind = "export"
    max_attempts = MAX_ATTEMPTS
    dead_message = DEAD_MESSAGE
    progress_reset = PROGRESS_RESET
    stop_grace_s = CANCEL_GRACE_S

    def __init__(
        self,
        data_root: Path,
        factory: sessionmaker[Session],
        payload_of: PayloadFn,
        workers: int = 1,
        **options: Any,
    ) -> None:
        """``options``: :class:`ClaimRunner`'s keyword arguments (poll_s, replica, budget…)."""
        super().__init__(data_root, factory, workers, **options)
        self.payload_of = payload_of

    def prepare(self, db: Session, job: ExportJob) -> ExportPayload:
        try:
            return self.payload_of(db, job)
        except (DomainError, ExportError) as exc:
            raise JobRefused(exc.message if isinstance(exc, DomainError) else str(exc)) from exc

    def cleanup(self, job_id: int) -> None:
        """A failed, canceled or requeued export leaves no output folder."""
        shutil.rmtree(export_dir(self.data_root, job_id), ignore_errors=True)

    def execute(self, handle: Handle) -> Outcome:
        outcome = self._follow(handle)
        if outcome[0] == "done":
            return ("done", {"output_path": outcome[1]})
        return outcome

    def _follow(self, handle: Handle) -> Outcome:
        ctx = mp.get_context("spawn")
        reader, writer = ctx.Pipe(duplex=False)
        event = ctx.Event()
        proc = ctx.Process(target=_child, args=(handle.payload, writer, event), daemon=True)
        proc.start()
        writer.close()
        outcome: Outcome | None = None
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
                            handle.job_id,
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
