"""Environment runtimes: Python environments, each from its own lock, in which workers of
some suites run (``docs/runtime.md``, "Runtimes").

The app's own environment is the default runtime (``app``). A suite whose dependencies
conflict with the app's lock (Robosuite needs numpy < 2, dm_control a newer MuJoCo than
Fetch's, NetHack an older Gymnasium), or that is too heavy for ``make run`` (MuJoCo for
PickCube and Fetch), runs in a runtime of its own: a virtualenv under
:func:`root` (``STUDIO_RUNTIMES_DIR``) installed from ``requirements/runtimes/<name>.txt``
by ``rlds-studio runtimes install NAME`` (:mod:`server.runtime.runtime_install`). Its
workers are started with that runtime's interpreter and the app's own worker code (the
``server`` package, put on its path, never installed there: :func:`worker_code_path`) and
speak the same protocol; what the worker code needs besides its suite is
``requirements/runtimes/worker.in``, which :func:`check` verifies (versions, and that the
worker code imports) before a runtime is used.

A runtime's :class:`State` is ``installed``, ``not_installed`` (with the command that
installs it), ``outdated`` (installed from another lock) or ``failed`` (why). Nothing here
imports a suite: the checks run in the runtime's interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

APP = "app"  # the app's own environment
REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements" / "runtimes"
WORKER_REQUIREMENTS = REQUIREMENTS / "worker.in"
STAMP = ".lock-sha256"  # in a runtime's venv: the hash of the lock it was installed from
FAILED = ".install-failed"  # beside a runtime's venv: why its last install failed
CHECK_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Runtime:
    """A runtime the app knows: its name, the suites whose workers run in it, what it is."""

    name: str
    suites: tuple[str, ...]
    about: str

    @property
    def lock(self) -> Path:
        return REQUIREMENTS / f"{self.name}.txt"

    @property
    def venv(self) -> Path:
        return root() / self.name

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def install_command(self) -> str:
        return f"rlds-studio runtimes install {self.name}"


RUNTIMES: dict[str, Runtime] = {
    r.name: r
    for r in (
        Runtime("robosuite", ("robosuite",),
                "Robosuite 1.5 (PickPlaceCan, Lift): numpy < 2, as its dependency mink needs"),
        Runtime("dm_control", ("dm_control",),
                "DeepMind Control Suite on MuJoCo 3.17 (the app's Fetch needs MuJoCo 3.11)"),
        Runtime("nethack", ("nethack",), "NetHack and MiniHack: nle pins Gymnasium 1.2"),
        Runtime("robotics", ("studio", "robotics"),
                "PickCube (the app's own arm) and Fetch on MuJoCo 3.11, as gymnasium-robotics "
                "1.4 needs"),
    )
}  # fmt: skip
_SUITE_RUNTIME = {suite: r.name for r in RUNTIMES.values() for suite in r.suites}


def runtime_of_suite(suite: str) -> str:
    """The runtime a suite's workers run in (:data:`APP` for the app's own)."""
    return _SUITE_RUNTIME.get(suite, APP)


_ROOT: Path | None = None


def default_root() -> Path:
    """``STUDIO_RUNTIMES_DIR``, else ``~/.cache/rlds-studio/runtimes`` (shared by checkouts)."""
    configured = os.environ.get("STUDIO_RUNTIMES_DIR")
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "rlds-studio" / "runtimes"


def configure(path: Path | str | None) -> None:
    """Where the runtimes' venvs live (the app's setting ``runtimes_dir``; None: default)."""
    global _ROOT
    _ROOT = Path(path).expanduser() if path else None


def root() -> Path:
    return _ROOT or default_root()


# -- state ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    """Whether a runtime can run workers here, and if not, why and what to do."""

    runtime: str
    state: str  # installed | not_installed | outdated | failed
    message: str = ""
    command: str | None = None  # what installs (or reinstalls) it
    versions: tuple[tuple[str, str], ...] = ()  # its worker packages' versions, when checked

    @property
    def ok(self) -> bool:
        return self.state == "installed"

    def public(self) -> dict[str, Any]:
        return {"name": self.runtime, "state": self.state, "message": self.message or None,
                "command": self.command}  # fmt: skip


APP_STATE = State(APP, "installed", "the app's own environment")
_STATES: dict[str, tuple[Any, State]] = {}  # runtime → (what it was checked against, state)
_LOCK = threading.Lock()


def lock_hash(runtime: Runtime) -> str:
    return hashlib.sha256(runtime.lock.read_bytes()).hexdigest()


def _fingerprint(runtime: Runtime) -> Any:
    """What a runtime's state depends on: its interpreter, stamp and failure note on disk."""
    stats: list[tuple[int, int] | None] = []
    for path in (runtime.python, runtime.venv / STAMP, runtime.venv.with_name(
            runtime.name + FAILED)):  # fmt: skip
        try:
            st = path.stat()
            stats.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stats.append(None)
    return (str(runtime.venv), lock_hash(runtime), tuple(stats))


def fingerprint(name: str) -> Any:
    """What ``name``'s venv is on disk now (None for the app's own environment): a worker
    started before it changed (removed, reinstalled) is of another runtime."""
    runtime = RUNTIMES.get(name)
    return None if runtime is None else _fingerprint(runtime)


def state(name: str) -> State:
    """``name``'s state, checked in its interpreter once per install (then kept)."""
    if name == APP:
        return APP_STATE
    runtime = RUNTIMES.get(name)
    if runtime is None:
        return State(name, "failed", f"unknown runtime {name!r}; known: {sorted(RUNTIMES)}")
    fingerprint = _fingerprint(runtime)
    kept = _STATES.get(name)
    if kept is not None and kept[0] == fingerprint:
        return kept[1]
    with _LOCK:
        kept = _STATES.get(name)
        if kept is not None and kept[0] == fingerprint:
            return kept[1]
        found = _state(runtime)
        _STATES[name] = (fingerprint, found)
        return found


def _state(runtime: Runtime) -> State:
    command = runtime.install_command
    failed = runtime.venv.with_name(runtime.name + FAILED)
    stamp = runtime.venv / STAMP
    current = stamp.exists() and stamp.read_text().strip() == lock_hash(runtime)
    if failed.exists() and not current:  # the venv there, if any, is of another lock
        why = failed.read_text(errors="replace").strip().splitlines()[-1:] or ["unknown"]
        return State(runtime.name, "failed", f"its last install failed: {why[0]}", command)
    if not runtime.python.exists():
        missing = f"the {runtime.name} runtime is not installed: run `{command}`"
        return State(runtime.name, "not_installed", missing, command)
    if not current:
        other = (f"the {runtime.name} runtime was installed from another lock than "
                 f"{runtime.lock.name}: run `{command}`")  # fmt: skip
        return State(runtime.name, "outdated", other, command)
    problems, versions = check(runtime)
    if problems:
        return State(runtime.name, "failed", "; ".join(problems), command, versions)
    return State(runtime.name, "installed", runtime.about, None, versions)


def forget() -> None:
    """Drop the kept states (after an install, or in tests)."""
    _STATES.clear()


# -- the check -----------------------------------------------------------------------------
def worker_requirements() -> list[Any]:
    """The worker code's own dependencies (``requirements/runtimes/worker.in``)."""
    from packaging.requirements import Requirement

    lines = WORKER_REQUIREMENTS.read_text().splitlines()
    return [Requirement(line.split("#")[0].strip()) for line in lines
            if line.split("#")[0].strip()]  # fmt: skip


def check(
    runtime: Runtime, python: Path | None = None
) -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """Run :mod:`server.runtime.runtime_report` in the runtime (or ``python``: a venv being
    installed, not yet in place): ``(problems, versions)``.

    A problem names the package (its version and what the worker code needs), the Python
    version, or the import that failed; an interpreter that is missing, broken or hangs is
    a problem too. Never raises.
    """
    python = python or runtime.python
    requirements = worker_requirements()
    names = [r.name for r in requirements]
    modules = [m for suite in runtime.suites for m in _suite_modules(suite)]
    try:
        done = subprocess.run(
            [str(python), *PYTHON_FLAGS, "-m", "server.runtime.runtime_report",
             json.dumps({"packages": names, "modules": modules})],
            env=worker_env(), capture_output=True, text=True, timeout=CHECK_TIMEOUT_S,
            cwd=tempfile.gettempdir(),
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"its interpreter {python} cannot run: {exc}"], ()
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return [f"its interpreter {python} failed (exit {done.returncode}): {tail}"], ()
    return _problems(report, requirements, modules), tuple(sorted(report["packages"].items()))


def _problems(report: dict[str, Any], requirements: list[Any], modules: list[str]) -> list[str]:
    problems = []
    want = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if report["python"] != want:
        problems.append(f"Python {report['python']} does not fit (the app's worker code and "
                        f"its pickled messages need Python {want})")  # fmt: skip
    for requirement in requirements:
        version = report["packages"].get(requirement.name)
        if version is None:
            problems.append(f"{requirement.name} is missing (the worker needs {requirement})")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name} {version} does not fit (the worker needs "
                            f"{requirement})")  # fmt: skip
    for module in modules:
        if module in report["missing"]:
            problems.append(f"module {module!r} of its suite is missing")
    if report["import_error"]:
        problems.append(f"the worker code does not import there: {report['import_error']}")
    return problems


def _suite_modules(suite: str) -> tuple[str, ...]:
    from server.runtime._catalog_data import SUITES

    return SUITES[suite][0]


# -- starting a worker -----------------------------------------------------------------------
# -P: nothing from the working folder on the path (only the worker code); -s: no user site.
PYTHON_FLAGS = ("-P", "-s")


def worker_code_path() -> Path:
    """A folder holding only the app's ``server`` package (a link to it), for a runtime's
    ``PYTHONPATH``: the runtime runs the app's own worker code, never a copy, and sees none
    of the app's other packages (its numpy, its Gymnasium). One per app checkout, under
    :func:`root`, or a private temporary folder where that is read-only (a container whose
    runtimes were installed by root)."""
    package = Path(__file__).resolve().parents[1]
    folder = root() / ".worker-code" / hashlib.sha256(str(package).encode()).hexdigest()[:16]
    try:
        return _link(folder, package)
    except PermissionError:
        return _link(_private_folder(), package)


def _link(folder: Path, package: Path) -> Path:
    link = folder / "server"
    if not (link.is_symlink() and link.resolve() == package):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".server.{os.getpid()}.{threading.get_ident()}"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(package, target_is_directory=True)
        os.replace(tmp, link)
    return folder


@functools.cache
def _private_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="rlds-studio-worker-code-"))  # mode 0700
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def worker_env() -> dict[str, str]:
    """The environment of a process in a runtime: the app's, with only the worker code on
    the path and headless MuJoCo."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}  # fmt: skip
    env["PYTHONPATH"] = str(worker_code_path())
    env["PYTHONNOUSERSITE"] = "1"
    env.setdefault("MUJOCO_GL", "egl")
    return env


class RuntimeProcess:
    """A worker process in a runtime's interpreter, with the part of
    ``multiprocessing.Process``'s interface that :class:`~server.runtime.worker_process.
    WorkerProcess` uses (``start``, ``is_alive``, ``exitcode``, ``sentinel``, ``kill``,
    ``terminate``, ``join``, ``close``). The worker's end of the socket pair is handed over as
    a file descriptor; its arguments follow as the first message on it."""

    def __init__(self, runtime: Runtime, fd: int, name: str) -> None:
        self.runtime, self.fd, self.name = runtime, fd, name
        self.popen: subprocess.Popen[bytes] | None = None
        self.sentinel = -1
        self.pid: int | None = None

    def start(self) -> None:
        self.popen = subprocess.Popen(
            [str(self.runtime.python), *PYTHON_FLAGS, "-m", "server.runtime._runtime_main",
             str(self.fd)],
            pass_fds=(self.fd,), env=worker_env(), cwd=tempfile.gettempdir(),
            stdin=subprocess.DEVNULL, start_new_session=False,
        )  # fmt: skip
        self.pid = self.popen.pid
        self.sentinel = os.pidfd_open(self.popen.pid)

    def is_alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def exitcode(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def kill(self) -> None:
        if self.is_alive():
            assert self.popen is not None
            self.popen.kill()

    def terminate(self) -> None:
        if self.is_alive():
            assert self.popen is not None
            self.popen.terminate()

    def join(self, timeout: float | None = None) -> None:
        if self.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout)

    def close(self) -> None:
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1


def states() -> dict[str, State]:
    """Every known runtime's state (the app's first)."""
    return {APP: APP_STATE, **{name: state(name) for name in RUNTIMES}}
