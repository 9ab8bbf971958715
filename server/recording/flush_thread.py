"""One flush thread per process: the episode logs' background flushes, one after another.

A worker process holds several sessions, each with a log that flushes every
``writer.FLUSH_INTERVAL_S``. A thread per flush made the step loop wait in
``Thread.start`` for each new thread to run, which it does only once the running flush
gives the GIL back (envlogger's flush holds it): in a profile of 8 sessions, as long as on
the steps' JPEGs (docs/performance.md, "A flush thread per process, ticks on a grid"). So
a process has one thread, started with its first flush, that runs every writer's flushes
in turn, and is drained at exit.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
from typing import Protocol


class Job(Protocol):
    """A flush to run (it reports its own outcome)."""

    def run(self) -> None: ...


_JOBS: tuple[int, queue.SimpleQueue[Job | None]] | None = None  # (pid, its queue)


def submit(job: Job) -> None:
    """Run ``job`` in this process's flush thread (a forked child starts its own)."""
    global _JOBS
    if _JOBS is None or _JOBS[0] != os.getpid():
        jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        thread = threading.Thread(target=_serve, args=(jobs,), name="log-flush", daemon=True)
        thread.start()
        atexit.register(_stop, jobs, thread)
        _JOBS = (os.getpid(), jobs)
    _JOBS[1].put(job)


def _serve(jobs: queue.SimpleQueue[Job | None]) -> None:
    while (job := jobs.get()) is not None:
        job.run()


def _stop(jobs: queue.SimpleQueue[Job | None], thread: threading.Thread) -> None:
    """At exit: the flushes asked for are done before the interpreter stops its threads
    (a writer closed later, by its ``__del__``, flushes in place)."""
    global _JOBS
    jobs.put(None)
    thread.join()
    _JOBS = None
