"""Starting the verification process of one episode (:mod:`server.runtime._replay_main`) in
its environment's runtime, bounded in time and memory, and reading its verdict.

The app's runtime runs it with the app's interpreter; another runtime with its own
(:mod:`server.runtime.runtimes`), exactly as its workers run. The process runs at the lowest
CPU priority, so players' workers always come first, and within a share of a core
(``STUDIO_REPLAY_CHECK_CPU_SHARE``), so that they find a core free when they wake; it is
killed past ``timeout_s`` or on ``cancel``.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from server.runtime import runtimes
from server.runtime.allowlist import AllowedEnvironments

POLL_S = 0.25
_TAIL = 2000  # characters of the process's stderr kept for a message


class Unavailable(Exception):
    """The episode's runtime cannot run here now (not installed, broken): try again later."""


def _command(runtime: str) -> tuple[list[str], dict[str, str], str | None]:
    module = ["-m", "server.runtime._replay_main"]
    if runtime == runtimes.APP:
        env = dict(os.environ)
        env.setdefault("MUJOCO_GL", "egl")
        return [sys.executable, *module], env, None
    state = runtimes.state(runtime)
    if not state.ok:
        raise Unavailable(state.message)
    python = runtimes.RUNTIMES[runtime].python
    return (
        [str(python), *runtimes.PYTHON_FLAGS, *module],
        runtimes.worker_env(),
        tempfile.gettempdir(),
    )


def runtime_command(runtime: str, module: str) -> tuple[list[str], dict[str, str], str | None]:
    """``(argv, environment, cwd)`` that run ``python -m module`` in ``runtime`` as the
    verification process runs (the regeneration process's: server/export/regenerate.py).
    Raises :class:`Unavailable` when the runtime cannot run."""
    argv, env, cwd = _command(runtime)
    return [*argv[:-1], module], env, cwd


def verify_log(
    log_dir: Path,
    runtime: str,
    allowed: AllowedEnvironments,
    *,
    end_reason: str | None,
    timeout_s: float,
    memory_mb: int | None,
    cancel: threading.Event | None = None,
    expected_steps: int | None = None,
    cpu_share: float | None = None,
) -> dict[str, Any] | None:
    """The verdict of replaying the log at ``log_dir`` (see :mod:`._replay_main`; a log of
    fewer timesteps than ``expected_steps``, the episode row's, is truncated); None when
    ``cancel`` was set first. ``cpu_share``: the most of one core the process uses (None:
    no limit beyond its nice level). Raises :class:`Unavailable` when the runtime cannot
    run."""
    payload = (allowed, str(log_dir), end_reason, memory_mb, expected_steps, cpu_share)
    done = run_module(runtime, "server.runtime._replay_main", payload, timeout_s, cancel)
    if done is None:
        return None
    if done == TIMED_OUT:
        return {
            "verdict": "not_replayable",
            "reason": "timeout",
            "message": f"the replay did not finish within {timeout_s:g} s",
        }
    return _verdict(*done, memory_mb)


TIMED_OUT = (-1, b"", b"timeout")


def run_module(
    runtime: str,
    module: str,
    payload: Any,
    timeout_s: float,
    cancel: threading.Event | None = None,
) -> tuple[int, bytes, bytes] | None:
    """Run ``python -m module`` in ``runtime`` with ``payload`` pickled on its stdin, as the
    verification process runs: ``(exit code, stdout, stderr)``, :data:`TIMED_OUT` past
    ``timeout_s`` (the process killed), None when ``cancel`` was set first. Raises
    :class:`Unavailable` when the runtime cannot run."""
    argv, env, cwd = runtime_command(runtime, module)
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    data: bytes | None = pickle.dumps(payload)
    try:
        while True:
            try:
                out, err = proc.communicate(data, timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                data = None
            if cancel is not None and cancel.is_set():
                return None
            if time.monotonic() - started > timeout_s:
                return TIMED_OUT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def _verdict(code: int, out: bytes, err: bytes, memory_mb: int | None) -> dict[str, Any]:
    lines = out.decode(errors="replace").strip().splitlines()
    if code == 0 and lines:
        try:
            result = json.loads(lines[-1])
        except ValueError:
            result = None
        if isinstance(result, dict) and result.get("verdict"):
            return result
    tail = err.decode(errors="replace")[-_TAIL:].strip().splitlines()
    last = tail[-1] if tail else f"exit code {code}"
    if "MemoryError" in last or "std::bad_alloc" in last or "Cannot allocate memory" in last:
        return {
            "verdict": "not_replayable",
            "reason": "out_of_memory",
            "message": f"the replay needed more than {memory_mb} MB: {last}",
        }
    return {
        "verdict": "not_replayable",
        "reason": "crashed",
        "message": f"the replay process ended without a verdict: {last}",
    }
