"""A worker process in another runtime's interpreter (:class:`server.runtime.runtimes.
RuntimeProcess`): ``python -m server.runtime._runtime_main FD``.

``FD`` is the worker's end of its socket pair; the first message on it is
``(allowed, study_id, data_root, flush_interval_s)``, then the worker protocol goes on exactly
as in a worker forked from the app (:func:`server.runtime._child_loop.worker_main`).
"""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection

from server.runtime._child_loop import worker_main


def main(fd: int) -> None:
    conn = Connection(fd)
    try:
        allowed, study_id, data_root, flush_interval_s = conn.recv()
    except (EOFError, OSError):
        return  # the app went away before it said anything
    worker_main(conn, allowed, study_id, data_root, flush_interval_s)


if __name__ == "__main__":
    main(int(sys.argv[1]))
