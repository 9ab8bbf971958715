"""Installing an environment runtime from its lock: ``rlds-studio runtimes install NAME``
(:func:`install`; what a runtime is: :mod:`server.runtime.runtimes`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from server.runtime.runtimes import (
    FAILED,
    RUNTIMES,
    STAMP,
    Runtime,
    State,
    check,
    forget,
    lock_hash,
    root,
    state,
)

PIP_VERSION = "26.3"  # as the app's venv (Makefile)


def install(name: str, say: Callable[[str], None] = print) -> State:
    """Install (or reinstall) runtime ``name`` from its lock; its state after.

    Builds a new venv beside the old one with the app's Python, installs the lock into it
    (pip, no resolution beyond the lock), checks it, and only then puts it in place: a failed
    install leaves the old runtime as it was and a note of why (shown by the catalog). One
    install of a runtime at a time (a lock file beside it). Nothing is done when the runtime
    is installed from the same lock and passes its check.
    """
    runtime = RUNTIMES.get(name)
    if runtime is None:
        raise KeyError(f"unknown runtime {name!r}; known: {', '.join(sorted(RUNTIMES))}")
    root().mkdir(parents=True, exist_ok=True)
    with open(root() / f".{name}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        forget()
        current = state(name)
        if current.ok:
            say(f"{name}: installed from {runtime.lock.name}, checked ({runtime.venv})")
            return current
        failed = runtime.venv.with_name(name + FAILED)
        building = runtime.venv.with_name(f".{name}.building")
        shutil.rmtree(building, ignore_errors=True)
        started = time.monotonic()
        try:
            _build(runtime, building, say)
        except _InstallError as exc:
            shutil.rmtree(building, ignore_errors=True)
            failed.write_text(str(exc) + "\n")
            forget()
            say(f"{name}: install failed: {exc}")
            return state(name)
        shutil.rmtree(runtime.venv, ignore_errors=True)
        # A venv's scripts name its folder; its interpreter (bin/python) is a link that does
        # not, and it is all the app runs, so the finished venv is moved into place.
        os.replace(building, runtime.venv)
        _fix_pyvenv(runtime.venv, building)
        with contextlib.suppress(FileNotFoundError):
            failed.unlink()
        forget()
        found = state(name)
        took = time.monotonic() - started
        say(f"{name}: {found.state} in {took:.0f} s ({runtime.venv}){_why(found)}")
        return found


def _why(found: State) -> str:
    return "" if found.ok else f": {found.message}"


class _InstallError(RuntimeError):
    pass


def _run(step: str, args: list[str], say: Callable[[str], None]) -> None:
    started = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        tail = [line for line in (done.stderr or done.stdout).splitlines()
                if line.strip() and not line.startswith("WARNING: Location")]  # fmt: skip
        raise _InstallError(f"{step} failed (exit {done.returncode}): "
                            f"{tail[-1] if tail else 'no output'}")  # fmt: skip
    say(f"  {step}: {time.monotonic() - started:.0f} s")


def _build(runtime: Runtime, venv: Path, say: Callable[[str], None]) -> None:
    packages = sum(1 for line in runtime.lock.read_text().splitlines()
                   if line and not line.startswith((" ", "#", "-")))  # fmt: skip
    say(f"{runtime.name}: installing {packages} packages from "
        f"requirements/runtimes/{runtime.lock.name} into {runtime.venv}")  # fmt: skip
    base = getattr(sys, "_base_executable", sys.executable)
    _run("1/4 venv", [base, "-m", "venv", str(venv)], say)
    python = str(venv / "bin" / "python")
    _run("2/4 pip", [python, "-m", "pip", "install", "-q", f"pip=={PIP_VERSION}"], say)
    _run("3/4 the lock", [python, "-m", "pip", "install", "-q", "-r", str(runtime.lock)], say)
    (venv / STAMP).write_text(lock_hash(runtime) + "\n")
    problems, _ = check(runtime, venv / "bin" / "python")  # before it is put in place
    if problems:
        raise _InstallError("; ".join(problems))
    say("  4/4 check: the worker code imports, versions fit")


def _fix_pyvenv(venv: Path, was: Path) -> None:
    """Point a moved venv's pip and scripts at its new place (only ``python -m`` is used)."""
    for script in (venv / "bin").iterdir():
        if script.is_file() and not script.is_symlink():
            with contextlib.suppress(UnicodeDecodeError, OSError):
                text = script.read_text()
                if str(was) in text:
                    script.write_text(text.replace(str(was), str(venv)))
