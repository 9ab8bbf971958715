"""Every problem of a study's environments, by field path: the allow-list and settings
(``require_allowed``) and each environment built (``env_validation.validate_study``)."""

from __future__ import annotations

import sys

import pytest

from server.errors import Invalid
from server.services.studies.env_check import allowed_environments, require_allowed
from server.services.studies.env_validation import validate_study
from server.study_spec import StudySpec

CANARY = "tests.runtime._canary"


def _env(env_id: str, source: dict, **fields) -> dict:
    return {"id": env_id, "name": env_id, "source": source, **fields}


def _environment_problems(spec, settings, prefix=("spec",)) -> list[dict]:
    """Every environment's problems, per environment, the source's first."""
    problems = [
        problem
        for report in validate_study(spec, settings, allowed_environments(settings), prefix)
        for problem in report["problems"]
    ]
    problems.sort(key=lambda p: (p["loc"][len(prefix) + 1], p["loc"][len(prefix) + 2] != "source"))
    return problems


def test_each_environment_is_checked_and_named_by_its_path(settings):
    keys = {"keys": {"KeyA": 0}}
    spec = StudySpec.model_validate({"name": "S", "environments": [
        _env("fine", {"kind": "gymnasium", "id": "CartPole-v1"}),
        _env("shell", {"kind": "dm_env", "factory": f"{CANARY}:make"}, controls=keys),
        _env("taxi", {"kind": "gymnasium", "id": "Taxi-v4", "kwargs": {"bogus": 1}},
             controls=keys),
        _env("nosuch", {"kind": "gymnasium", "id": "NoSuchEnv-v9"}),
        _env("keys", {"kind": "gymnasium", "id": "CartPole-v1"},
             controls={"keys": {"ArrowLeft": 99}, "axes": [{"axis": 0, "negative": 5}]}),
    ]})  # fmt: skip
    problems = _environment_problems(spec, settings, prefix=())
    assert [p["loc"] for p in problems] == [
        ["environments", 1, "source", "factory"],
        ["environments", 2, "source", "kwargs", "bogus"],
        ["environments", 3, "source", "id"],
        ["environments", 3, "controls"],
        ["environments", 4, "controls", "keys", "ArrowLeft"],
        ["environments", 4, "controls", "axes", 0, "negative"],
        ["environments", 4, "controls"],  # neither action is reached
    ]
    assert "bogus" in problems[1]["msg"]
    assert "NoSuchEnv-v9" in problems[2]["msg"]
    assert CANARY not in sys.modules


def test_require_allowed_needs_no_worker_and_names_the_field(settings):
    spec = StudySpec.model_validate({"name": "S", "environments": [
        _env("ok", {"kind": "gymnasium", "id": "Taxi-v4"}),
        _env("colon", {"kind": "gymnasium", "id": "os:system"}),
    ]})  # fmt: skip
    with pytest.raises(Invalid) as err:
        require_allowed(spec, allowed_environments(settings))
    assert [d["loc"] for d in err.value.detail] == [["spec", "environments", 1, "source", "id"]]


def test_require_allowed_refuses_settings_outside_the_schema_with_what_is_allowed(settings):
    spec = StudySpec.model_validate({"name": "S", "environments": [
        _env("cart", {"kind": "gymnasium", "id": "CartPole-v1"}),
        _env("brk", {"kind": "gymnasium", "id": "ALE/Breakout-v5",
                     "kwargs": {"frameskip": 20, "mode": 3, "difficulty": 1}}),
    ]})  # fmt: skip
    with pytest.raises(Invalid) as err:
        require_allowed(spec, allowed_environments(settings))
    detail = {tuple(d["loc"]): d["msg"] for d in err.value.detail}
    assert detail == {
        ("spec", "environments", 1, "source", "kwargs", "frameskip"):
            "setting 'frameskip' must be from 1 to 16 (not 20)",
        ("spec", "environments", 1, "source", "kwargs", "mode"):
            "setting 'mode' must be one of 0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44 (not 3)",
    }  # fmt: skip


def test_a_build_error_is_put_on_the_setting_that_caused_it(settings):
    spec = StudySpec.model_validate({"name": "S", "environments": [
        _env("lake", {"kind": "gymnasium", "id": "FrozenLake-v1",
                      "kwargs": {"map_name": "9x9", "is_slippery": False}},
             controls={"keys": {"ArrowLeft": 0}}),
    ]})  # fmt: skip
    (problem,) = _environment_problems(spec, settings, prefix=())
    assert problem["loc"] == ["environments", 0, "source", "kwargs", "map_name"]
    assert problem["msg"].endswith('accepted values: "4x4", "8x8"')


def test_an_empty_package_list_leaves_the_catalog_only(settings):
    strict = settings.model_copy(update={"gym_packages": []})
    spec = StudySpec.model_validate({"name": "S", "environments": [
        _env("cat", {"kind": "gymnasium", "id": "CartPole-v1"}),
        _env("taxi", {"kind": "gymnasium", "id": "Taxi-v4"}, controls={"keys": {"KeyA": 0}}),
    ]})  # fmt: skip
    problems = _environment_problems(spec, strict)
    assert [p["loc"] for p in problems] == [["spec", "environments", 1, "source", "id"]]
    assert "not in the catalog" in problems[0]["msg"]


def test_catalog_thumbnails_are_built_once_at_start(settings, monkeypatch):
    """The start-up warm-up builds each installed entry's first frame once; the catalog's
    thumbnail is then served from the cache."""
    from threading import Event

    from server.runtime import catalog
    from server.services.studies import env_validation

    monkeypatch.setattr(catalog, "CATALOG", {"CartPole": catalog.CATALOG["CartPole"]})
    allowed = allowed_environments(settings)
    assert env_validation.warm_catalog(settings, allowed, Event()) == 1
    spec = env_validation.catalog_spec(catalog.CATALOG["CartPole"])
    assert env_validation.frame_path(settings.data_root, env_validation.cache_key(spec, allowed))
    assert env_validation.warm_catalog(settings, allowed, Event()) == 0  # cached: no worker
    stopped = Event()
    stopped.set()
    assert env_validation.warm_catalog(settings, allowed, stopped) == 0


def test_not_for_players_takes_an_action_by_index_or_by_name():
    from server.services.studies.env_validation import unbound_problem
    from server.study_spec import EnvironmentSpec

    info = {"controls": {"unbound": ["FIRE", "RIGHTFIRE", "LEFTFIRE"]},
            "action_meanings": ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"],
            "action_spec": {"shape": [], "num_values": 6}}  # fmt: skip

    def env(marked: list) -> EnvironmentSpec:
        controls = {"keys": {"ArrowUp": 2}, "noop": 0, "not_for_players": marked}
        return EnvironmentSpec(id="pong", name="Pong", controls=controls,
                               source={"kind": "gymnasium", "id": "ALE/Pong-v5"})  # fmt: skip

    assert unbound_problem(env([1, 4, 5]), info) is None
    assert unbound_problem(env(["FIRE", "RIGHTFIRE", "LEFTFIRE"]), info) is None
    (loc, message) = unbound_problem(env([1, "RIGHTFIRE"]), info)
    assert loc == ("controls",) and "LEFTFIRE" in message and "RIGHTFIRE" not in message


def test_an_unbound_dimension_of_an_arm_is_named_by_its_meaning():
    from server.runtime.catalog import CATALOG
    from server.services.studies.env_validation import unbound_problem
    from server.study_spec import EnvironmentSpec

    source = CATALOG["PickCube"].source().model_dump()
    env = EnvironmentSpec(id="cube", name="Cube", source=source, controls={"keys": {}})
    info = {"controls": {"unbound": [3, 6]}, "action_spec": {"shape": [7]}}
    (loc, message) = unbound_problem(env, info)
    assert message.startswith("Action dimensions 3 (roll), 6 (gripper) have no key")
