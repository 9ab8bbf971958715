"""Only environments the operator allows are built: the worker checks before importing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from server.runtime import EnvWorker, RemoteError
from server.runtime.adapters import build_adapter
from server.runtime.allowlist import AllowedEnvironments, NotAllowed, entry_point_factories
from server.runtime.registration import UnknownEnvironment, ensure_registered
from server.study_spec import DmEnvSource, EnvironmentSpec, GymnasiumSource
from tests.runtime.conftest import ALLOWED, fake_spec, install_plugin, run

CANARY = "tests.runtime._canary"


def _spec(source: dict) -> EnvironmentSpec:
    return EnvironmentSpec(id="e", name="E", source=source, controls={"keys": {"KeyA": 0}})


def test_worker_refuses_a_factory_not_allowed_and_runs_nothing(data_root, tmp_path, no_leaks):
    marker = tmp_path / "ran"
    spec = _spec({"kind": "dm_env", "factory": "subprocess:call",
                  "kwargs": {"args": ["touch", str(marker)]}})  # fmt: skip

    async def scenario():
        with pytest.raises(RemoteError) as err:
            await EnvWorker.start(spec, allowed=ALLOWED, study_id=1, data_root=data_root)
        return err.value

    error = run(scenario())
    assert error.kind == "NotAllowed" and "'subprocess:call' is not allowed" in error.message
    assert not marker.exists()
    no_leaks()


@pytest.mark.parametrize(
    "source",
    [
        DmEnvSource(factory=f"{CANARY}:make"),
        GymnasiumSource(id=f"{CANARY}:make"),  # gymnasium.make imports the module of such ids
    ],
)
def test_adapter_refuses_before_importing(source):
    assert CANARY not in sys.modules
    with pytest.raises(NotAllowed):
        build_adapter(source, ALLOWED)
    assert CANARY not in sys.modules


def test_listed_factory_is_built():
    allowed = AllowedEnvironments.of([], [f"{CANARY}:make"])
    try:
        build_adapter(DmEnvSource(factory=f"{CANARY}:make"), allowed).close()
    finally:
        sys.modules.pop(CANARY, None)  # keep the canary unimported for the other tests


def test_gymnasium_ids_come_from_the_catalog_or_the_listed_packages():
    ensure_registered("CartPole-v1", ())  # a catalog id needs no listed package
    with pytest.raises(UnknownEnvironment, match="not in the catalog"):
        ensure_registered("Taxi-v4", ())
    ensure_registered("Taxi-v4", ("gymnasium",))
    # registered by minigrid, not by gymnasium: listing gymnasium alone does not allow it
    with pytest.raises(UnknownEnvironment):
        ensure_registered("MiniGrid-Empty-5x5-v0", ("gymnasium",))
    ensure_registered("MiniGrid-Empty-5x5-v0", ("gymnasium", "minigrid"))
    with pytest.raises(UnknownEnvironment):
        ensure_registered("NoSuchEnv-v9", ("gymnasium", "ale_py", "minigrid"))


def test_entry_point_factory_is_allowed(tmp_path: Path, monkeypatch, data_root, no_leaks):
    plugged = "tests.runtime.fake_envs:plugged"
    assert plugged not in AllowedEnvironments.of().dm_env_factories
    install_plugin(tmp_path / "site", monkeypatch, lab_counter=plugged, broken="not a factory")
    assert entry_point_factories() == {"lab_counter": plugged}
    allowed = AllowedEnvironments.of()  # no listed factories: the entry point allows it
    assert plugged in allowed.dm_env_factories

    async def scenario():
        spec = fake_spec("plugged")
        worker = await EnvWorker.start(spec, allowed=allowed, study_id=1, data_root=data_root)
        await worker.close()

    run(scenario())
    no_leaks()


def test_catalog_factories_are_always_allowed():
    allowed = AllowedEnvironments.of()
    assert "server.runtime.suites:crafter_env" in allowed.dm_env_factories
    assert allowed.source_problems(DmEnvSource(factory="dm_control.suite:load")) == []
