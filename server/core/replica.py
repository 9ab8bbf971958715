"""This app process's identity among the replicas sharing one database.

Each process serving the app is a *replica*: it registers a row in ``replicas``, heartbeats
it, stamps the episodes it records with its id (server/services/live/replicas.py), names itself
as the claimer of the jobs it runs (``export_jobs.claimed_by``) and in ``/api/health``. The
id is ``settings.replica_id``: ``STUDIO_REPLICA_ID``, or made here once per process from the
host name, the process id and a random suffix, so that a restarted process (even with the
same pid, as pid 1 in a container) is a new one.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

MAX_ID = 128


def default_replica_id() -> str:
    """``<hostname>-<pid>-<6 hex>``, unique per process start."""
    host = socket.gethostname()[: MAX_ID - 20] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


@lru_cache
def process_replica_id() -> str:
    """:func:`default_replica_id`, made once per process (every Settings of it agrees)."""
    return default_replica_id()


@dataclass(frozen=True)
class ReplicaInfo:
    """Who this process is: its id, host, pid and the address it serves on."""

    id: str
    host: str
    pid: int
    address: str

    @classmethod
    def current(cls, replica_id: str, address: str) -> ReplicaInfo:
        """This process as the replica ``replica_id`` serving at ``address``."""
        return cls(id=replica_id, host=socket.gethostname(), pid=os.getpid(), address=address)


def live_cutoff(dead_after_s: float, now: datetime | None = None) -> datetime:
    """Heartbeats older than this are of dead replicas."""
    return (now or datetime.now(UTC)) - timedelta(seconds=dead_after_s)


def process_alive(pid: int) -> bool:
    """Whether a process with ``pid`` runs on this host (this process counts as not: a row
    with our own pid but another replica id is a previous incarnation of this process)."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
