"""Fixtures for runtime tests: specs for the fake envs, and a leak check."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from server.study_spec import EnvironmentSpec

FAKE = "tests.runtime.fake_envs"


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
