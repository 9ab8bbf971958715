"""Fixtures for runtime tests: specs for the fake envs, and a leak check."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from server.recording.writer import open_reader
from server.runtime.allowlist import ENTRY_POINT_GROUP, AllowedEnvironments
from server.study_spec import EnvironmentSpec
from tests.runtime.fake_envs import FACTORIES

FAKE = "tests.runtime.fake_envs"
# What the runtime tests allow: the default packages, the catalog and the fake envs.
ALLOWED = AllowedEnvironments.of(["gymnasium", "ale_py", "minigrid"], FACTORIES)


def install_plugin(site: Path, monkeypatch: pytest.MonkeyPatch, **entry_points: str) -> None:
    """An installed distribution (a dist-info folder on ``sys.path``) registering
    ``entry_points`` (name → ``module:function``) in the environments' entry-point group;
    importlib.metadata reads it like any installed package's."""
    info = site / "lab_envs-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-envs\nVersion: 0.1\n")
    lines = [f"{name} = {value}" for name, value in entry_points.items()]
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + "\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(site))


def fake_spec(factory: str = "counter", **fields: Any) -> EnvironmentSpec:
    """An EnvironmentSpec building one of ``fake_envs``' factories."""
    kwargs = fields.pop("kwargs", {})
    controls = fields.pop("controls", {"keys": {"KeyA": 1, "KeyB": 2, "KeyA+KeyB": 0}, "noop": 0})
    return EnvironmentSpec(
        id="fake",
        name="Fake",
        source={"kind": "dm_env", "factory": f"{FAKE}:{factory}", "kwargs": kwargs},
        controls=controls,
        **fields,
    )


async def log_holds(path: Path, steps: int, seconds: float = 30.0) -> None:
    """Until the episode's envlogger log on disk (``path``) holds ``steps`` steps: the worker
    has flushed them (a fixed sleep would guess how long that takes)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        try:
            with open_reader(path) as reader:
                if len(list(reader.steps)) >= steps:
                    return
        except Exception:  # not written yet
            pass
        await asyncio.sleep(0.05)
    raise AssertionError(f"the log at {path} did not reach {steps} steps in {seconds} s")


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run one async scenario to completion."""
    return asyncio.run(coro)


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def no_leaks() -> Callable[[], None]:
    """Call at the end of a test: no child process left, no file descriptors gained."""
    # the forkserver (started once, kept) may open its fds during the test
    before = _fds()

    def check() -> None:
        children = [p for p in multiprocessing.active_children() if p.name.startswith("env-worker")]
        assert children == []
        assert _fds() <= before + 3  # forkserver pipes on first use

    return check
