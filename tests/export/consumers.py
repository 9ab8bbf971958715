"""The consumer venvs' check scripts (consumer_check.py, lerobot_check.py, minari_check.py,
control_check.py, judgements_check.py, preferences_check.py, ending_check.py,
splits_check.py), as a researcher's Python runs them: each in the venv of its library.

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
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

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
    "regenerated": HERE / "regenerated_check.py",
    "judgements": HERE / "judgements_check.py",
    "preferences": HERE / "preferences_check.py",
    "ending": HERE / "ending_check.py",
    "splits": HERE / "splits_check.py",
}


_running: dict[str, subprocess.Popen[str]] = {}
_home: list[str] = []  # HOME and HF_HOME of the consumer processes, made with the first


def _home_dir() -> str:
    if not _home:
        _home.append(tempfile.mkdtemp(prefix="consumers-"))
    return _home[0]


def _python(venv: str) -> Path:
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
        home = _home_dir()
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": home,
            "HF_HOME": os.path.join(home, ".hf"),
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "CUDA_VISIBLE_DEVICES": "",
        }
        proc = subprocess.Popen(
            [str(_python(venv)), "-u", str(SERVE)],
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


def check_report(venv: str, check: str, *args: str, timeout: float = 280) -> dict[str, Any]:
    """Run ``CHECKS[check]`` with ``args`` in ``venv``'s Python; its report (the JSON object
    on the last line it printed). The test fails, with the check's output, unless it
    succeeded."""
    proc = _process(venv)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"script": str(CHECKS[check]), "args": list(args)}) + "\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if not line:  # over its time, or the process died (a crash in a library)
        code = proc.poll()
        _stop(venv)
        why = f"ran over {timeout} s" if code is None else f"died (exit {code})"
        pytest.fail(f"{check} check in {venv} {why}")
    answer = json.loads(line)
    if answer["code"] != 0:
        _stop(venv)  # what the failed check left imported or half-done goes with it
    assert answer["code"] == 0, (
        f"{check} check failed in {venv}:\n{answer['stdout']}\n{answer['stderr'][-5000:]}"
    )
    return dict(json.loads(answer["stdout"].strip().splitlines()[-1]))


@atexit.register
def _stop_all() -> None:
    for venv in list(_running):
        _stop(venv)
    for home in _home:
        shutil.rmtree(home, ignore_errors=True)
