"""This process's replica identity (several app replicas can share one database).

Minimal version: the id names who claimed a job (``export_jobs.claimed_by``). The
live-dashboard work extends this module with the ``replicas`` table and heartbeats.
"""

from __future__ import annotations

import os
import socket
from functools import lru_cache

MAX_ID_CHARS = 100


@lru_cache
def replica_id() -> str:
    """``STUDIO_REPLICA_ID`` if set, else ``<hostname>-<pid>`` (unique per process)."""
    chosen = os.environ.get("STUDIO_REPLICA_ID", "").strip()
    return (chosen or f"{socket.gethostname()}-{os.getpid()}")[:MAX_ID_CHARS]
