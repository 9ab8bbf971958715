"""Recovery of an episode log whose worker died: the steps of its journal go back in.

A worker killed with its whole process group (a container's death) leaves a readable log
that lacks the steps recorded since its last flush; they are in the episode's step journal
(:mod:`server.recording.journal`). :func:`recover` takes the journal's lock (so it waits
for, or gives up on, a worker that is still alive), reads the log and the journal, and when
the journal holds steps the log lacks, writes the whole episode again beside the folder and
swaps it in. The old folder is kept as ``<episode>.replaced`` until the new one is in place,
so a recovery killed half-way is completed by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from server.recording import journal
from server.recording.writer import WRITER_OPTIONS, _Backend, open_reader

log = logging.getLogger(__name__)
LOCK_WAIT_S = 30.0  # an orphaned worker finalizes its log within this (docs/runtime.md)
_LOG_FILES = ("metadata.riegeli",)


def _never(_data: Any) -> bool:
    return False


def _lock(fd: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def _rewrite(directory: Path, metadata: Any, logged: Any, missing: list[tuple[Any, bool]],
             episode_end: list[Any]) -> None:  # fmt: skip
    """Write the log again, ``logged`` (a sequence of the old log's steps, read one at a
    time) then ``missing`` (encoded steps from the journal), in a sibling folder, and swap
    it in for ``directory``."""
    fresh = directory.with_name(directory.name + ".recovered")
    replaced = directory.with_name(directory.name + ".replaced")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    backend = _Backend(data_directory=str(fresh), metadata=metadata, max_episodes_per_file=1,
                       writer_options=WRITER_OPTIONS, flush_scheduler=_never)  # fmt: skip
    try:
        for index, data in enumerate(logged):
            backend.record_step(data, index == 0)
        for encoded, is_new in missing:
            backend.write_encoded(encoded, is_new)
        if episode_end:
            backend.set_episode_metadata(episode_end[-1])
    finally:
        backend.close()
    for item in directory.iterdir():  # anything else the folder held (not the old log)
        if item.name not in _LOG_FILES and item.name != journal.JOURNAL_NAME and item.is_file():
            shutil.copy2(item, fresh / item.name)
    os.rename(directory, replaced)
    os.rename(fresh, directory)
    shutil.rmtree(replaced)


def _finish_interrupted(directory: Path) -> None:
    """A recovery died between its two renames: put the old folder back (it has the
    journal, so this recovery redoes the work)."""
    replaced = directory.with_name(directory.name + ".replaced")
    if replaced.is_dir():
        if directory.exists():
            shutil.rmtree(replaced)  # the new log was swapped in: only the clean-up was left
        else:
            os.rename(replaced, directory)


def recover(directory: Path | str, wait_s: float = LOCK_WAIT_S) -> int:
    """Put the journaled steps the log lacks back into the log of ``directory``; the number
    of steps added (0: nothing to do, or a live worker still holds the journal)."""
    directory = Path(directory)
    _finish_interrupted(directory)
    path = journal.journal_path(directory)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    try:
        if not _lock(fd, wait_s):
            log.warning("episode log %s: its worker still holds the journal", directory)
            return 0
        if os.fstat(fd).st_nlink == 0:
            return 0  # the worker closed the log (and removed the journal) while we waited
        try:
            metadata, journaled = journal.read(path.read_bytes())
        except ValueError:
            path.unlink()  # the worker died before its first step: nothing was sent
            return 0
        with contextlib.ExitStack() as stack:
            try:
                reader = stack.enter_context(open_reader(directory))
                logged, episode_end = reader.steps, list(reader.episode_metadata())
            except Exception:  # no step reached the log before the worker died
                logged, episode_end = [], []
            have = len(logged)
            missing = [(data, is_new) for index, data, is_new in journaled if index >= have]
            if missing and journaled[0][0] > have:
                log.error("episode log %s lacks steps %d to %d: the journal starts later",
                          directory, have, journaled[0][0] - 1)  # fmt: skip
                missing = []
            if missing:
                _rewrite(directory, metadata, logged, missing, episode_end)
                log.info("episode log %s: %d journaled steps recovered", directory, len(missing))
        if not missing:
            path.unlink(missing_ok=True)
        return len(missing)
    finally:
        os.close(fd)
