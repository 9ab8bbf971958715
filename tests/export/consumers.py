"""The consumer venvs' check scripts (consumer_check.py, lerobot_check.py, minari_check.py,
control_check.py), as a researcher's Python runs them: each in the venv of its library.

One long-lived process per venv and test process (tests/export/consumer_serve.py) runs the
checks one after another, so TensorFlow, torch and lerobot are imported once per pass
instead of once per check (3 to 8 CPU-seconds each, about 100 s of a pass). A check that
fails or runs over its time ends its process; the next check starts a fresh one.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SERVE = HERE / "consumer_serve.py"
VENVS = {
    "rlds": ROOT / ".consumer-venv",
    "lerobot": ROOT / ".consumer-venv-lerobot",
    "minari": ROOT / ".consumer-venv-minari",
}
CHECKS = {
    "rlds": HERE / "consumer_check.py",
    "lerobot": HERE / "lerobot_check.py",
    "minari": HERE / "minari_check.py",
    "control": HERE / "control_check.py",
}


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict:
        """The JSON object on the last line of the output."""
        return dict(json.loads(self.stdout.strip().splitlines()[-1]))


_running: dict[str, subprocess.Popen[str]] = {}
_home = tempfile.mkdtemp(prefix="consumers-")  # HOME and HF_HOME of every consumer process


def python_of(venv: str) -> Path:
    """The venv's interpreter; fails (not skips) the test when the venv is absent."""
    python = VENVS[venv] / "bin" / "python"
    if not python.exists():
        pytest.fail(
            f"the consumer venv {VENVS[venv]} is missing: run `make consumer-venv` "
            "(make test builds it)"
        )
    return python


def _process(venv: str) -> subprocess.Popen[str]:
    proc = _running.get(venv)
    if proc is None or proc.poll() is not None:
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": _home,
            "HF_HOME": os.path.join(_home, ".hf"),
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "CUDA_VISIBLE_DEVICES": "",
        }
        proc = subprocess.Popen(
            [str(python_of(venv)), "-u", str(SERVE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # a library's own C-level logging; the checks' is kept
            text=True,
            env=env,
        )
        _running[venv] = proc
    return proc


def _stop(venv: str) -> None:
    proc = _running.pop(venv, None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def run_check(venv: str, check: str, *args: str, timeout: float = 280) -> Result:
    """Run ``CHECKS[check]`` with ``args`` in ``venv``'s Python and return what it printed."""
    proc = _process(venv)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"script": str(CHECKS[check]), "args": list(args)}) + "\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if not line:  # over its time, or the process died (a crash in a library)
        code = proc.poll()
        _stop(venv)
        pytest.fail(
            f"{check} check in {venv} " + (f"died ({code})" if code else f"ran over {timeout} s")
        )
    answer = json.loads(line)
    if answer["code"] != 0:
        _stop(venv)  # what the failed check left imported or half-done goes with it
    return Result(answer["code"], answer["stdout"], answer["stderr"])


def check_ok(venv: str, check: str, *args: str, timeout: float = 280) -> Result:
    """``run_check`` that fails the test, with the check's output, unless it succeeded."""
    result = run_check(venv, check, *args, timeout=timeout)
    assert result.returncode == 0, (
        f"{check} check failed in {venv}:\n{result.stdout}\n{result.stderr[-5000:]}"
    )
    return result


@atexit.register
def _stop_all() -> None:
    for venv in list(_running):
        _stop(venv)
