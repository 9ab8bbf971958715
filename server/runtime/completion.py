"""Completing a log recorded on the play path: its deferred observation images drawn from
the recorded simulator states (:mod:`server.runtime._complete_main`, in the environment's
runtime at the lowest CPU priority, bounded in time and memory), then the complete log put
in the recorded one's place (:mod:`server.recording.deferred`; docs/runtime.md, "The play
path").

The background replay check runs it first, in the same background slot, before it verifies
the episode (server/services/jobs/replay_checks.py): an episode is exportable once its log
is complete. The complete log is written beside the recorded one, then takes its folder
(two renames: the recorded one moved aside, the new one moved in); a process that died
between them is finished by the next call (:func:`settle`).
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

from server.recording import deferred
from server.recording.format import completing_dir, replaced_dir
from server.runtime import replay_process
from server.runtime.allowlist import AllowedEnvironments

MODULE = "server.runtime._complete_main"
_TAIL = 2000  # characters of the process's stderr kept for a message


def settle(log_dir: Path) -> None:
    """Finish a swap a dead process left half done, and drop what it left beside the log."""
    new, old = completing_dir(log_dir), replaced_dir(log_dir)
    if not log_dir.exists() and new.is_dir() and old.is_dir():
        new.rename(log_dir)  # the complete log was written: the recorded one was moved aside
    if log_dir.is_dir():
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(new, ignore_errors=True)


def complete_log(
    log_dir: Path,
    runtime: str,
    allowed: AllowedEnvironments,
    *,
    timeout_s: float,
    memory_mb: int | None,
    cancel: threading.Event | None = None,
    cpu_share: float | None = None,
) -> dict[str, Any] | None:
    """Draw the deferred keys of the log at ``log_dir`` into it: ``{"result": "completed",
    "steps", "seconds"}`` (also when there was nothing to draw: ``steps`` None), or
    ``{"result": "diverged" | "not_replayable", "message", ...}`` with the log left as it
    was; None when ``cancel`` was set first. Raises
    :class:`~server.runtime.replay_process.Unavailable` when the runtime cannot run."""
    settle(log_dir)
    keys = deferred.pending(log_dir)
    if not keys:
        return {"result": "completed", "steps": None}
    new = completing_dir(log_dir)
    shutil.rmtree(new, ignore_errors=True)
    payload = (allowed, str(log_dir), str(new), keys, memory_mb, cpu_share)
    done = replay_process.run_module(runtime, MODULE, payload, timeout_s, cancel)
    if done is None:
        shutil.rmtree(new, ignore_errors=True)
        return None
    result = _result(done, timeout_s)
    if result.get("result") != "completed":
        shutil.rmtree(new, ignore_errors=True)
        return result
    old = replaced_dir(log_dir)
    shutil.rmtree(old, ignore_errors=True)
    log_dir.rename(old)
    new.rename(log_dir)
    shutil.rmtree(old, ignore_errors=True)
    return result


def _result(done: tuple[int, bytes, bytes], timeout_s: float) -> dict[str, Any]:
    if done == replay_process.TIMED_OUT:
        return {"result": "not_replayable", "reason": "timeout",
                "message": f"drawing the images did not finish within {timeout_s:g} s"}  # fmt: skip
    code, out, err = done
    for line in reversed(out.decode(errors="replace").strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict) and "result" in found:
            return found
    tail = err.decode(errors="replace")[-_TAIL:].strip().splitlines()
    why = tail[-1] if tail else f"exit code {code}"
    return {"result": "not_replayable", "reason": "crashed",
            "message": f"the process drawing the images ended without a result: {why}"}  # fmt: skip
