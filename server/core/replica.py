"""This app process's identity among the replicas sharing one database.

Minimal version (the live-dashboard work brings the ``replicas`` table and heartbeats, with
the same ``default_replica_id``): the id names who claimed a job (``export_jobs.claimed_by``)
and which replica answered ``/api/health``.
"""

from __future__ import annotations

import os
import secrets
import socket
from functools import lru_cache

MAX_ID = 128


def default_replica_id() -> str:
    """``<hostname>-<pid>-<6 hex>``, unique per process start."""
    host = socket.gethostname()[: MAX_ID - 20] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


@lru_cache
def replica_id() -> str:
    """``STUDIO_REPLICA_ID`` if set, else :func:`default_replica_id` (once per process)."""
    return os.environ.get("STUDIO_REPLICA_ID", "").strip()[:MAX_ID] or default_replica_id()
