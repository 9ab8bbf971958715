"""Catalog entries, settings checks and validate_environment's messages."""

from __future__ import annotations

import json

import numpy as np
import pytest

from server.runtime.catalog import (
    CATALOG,
    catalog_public,
    default_controls,
    find_entry,
    validate_environment,
)
from server.study_spec import EnvironmentSpec, GymnasiumSource
from tests.runtime.conftest import ALLOWED

REQUIRED_SUITES = {"classic", "box2d", "minigrid", "atari"}


def env(source: dict, **fields) -> EnvironmentSpec:
    return EnvironmentSpec(id="e", name="E", source=source, **fields)


def test_catalog_covers_the_suites_and_core_ones_are_installed():
    suites = {entry.suite for entry in CATALOG.values()}
    assert suites >= REQUIRED_SUITES | {"mujoco", "crafter", "nethack", "dm_control"}
    for entry in CATALOG.values():
        if entry.suite in REQUIRED_SUITES:
            assert entry.installed(), entry.key
            assert entry.extra is None
        else:  # an optional extra of the app's, or a runtime of its own (not both)
            assert (entry.extra is not None) != (entry.runtime != "app"), entry.key
    public = catalog_public()
    assert json.loads(json.dumps(public))[0]["settings_schema"]["type"] == "object"


@pytest.mark.parametrize("key", [k for k, e in CATALOG.items() if e.installed()])
def test_installed_entries_validate_cleanly(key):
    entry = CATALOG[key]
    assert validate_environment(env(entry.source().model_dump()), ALLOWED) == []


def test_factories_not_allowed_are_refused_by_field():
    for factory in ("os:nope", "no_such_pkg.x:make", "subprocess:call"):
        ((loc, msg),) = validate_environment(
            env({"kind": "dm_env", "factory": factory}, controls={"keys": {"KeyA": 0}}), ALLOWED
        )
        assert loc == ("source", "factory") and "not allowed" in msg, factory


def test_missing_optional_suite_names_the_extra_or_the_runtime():
    for key, entry in CATALOG.items():
        if not entry.installed():
            ((loc, msg),) = validate_environment(env(entry.source().model_dump()), ALLOWED)
            wanted = (f"rlds-studio[{entry.extra}]" if entry.extra
                      else f"rlds-studio runtimes install {entry.runtime}")  # fmt: skip
            assert loc == ("source",) and wanted in msg, key


def test_generic_atari_and_settings_checks():
    entry = find_entry(GymnasiumSource(id="ALE/Tennis-v5"))
    assert entry is not None and entry.suite == "atari"
    problems = validate_environment(
        env({"kind": "gymnasium", "id": "ALE/Tennis-v5", "kwargs": {"frameskip": "4", "x": 1}}),
        ALLOWED,
    )
    assert [loc for loc, _ in problems] == [("source", "kwargs", "frameskip"),
                                           ("source", "kwargs", "x")]  # fmt: skip

    def settings_messages(kwargs: dict) -> list[str]:
        lander = env({"kind": "gymnasium", "id": "LunarLander-v3", "kwargs": kwargs})
        return [message for _, message in validate_environment(lander, ALLOWED)]

    assert settings_messages({"gravity": -5.0, "enable_wind": True}) == []
    assert settings_messages({"gravity": 3}) == [
        "setting 'gravity' must be from -11.99 to -0.01 (not 3)"
    ]
    assert settings_messages({"enable_wind": 1}) == [
        "setting 'enable_wind' must be of type boolean"
    ]


def test_variants_pick_the_most_specific_entry():
    discrete = find_entry(GymnasiumSource(id="CarRacing-v3", kwargs={"continuous": False}))
    assert discrete is not None and discrete.key == "CarRacingDiscrete"
    assert default_controls(GymnasiumSource(id="CarRacing-v3")).keys["ArrowUp"] == [0, 1, 0]


def test_registered_but_uncatalogued_env_needs_controls():
    spec = env({"kind": "gymnasium", "id": "phys2d/CartPole-v1"})
    assert validate_environment(spec, ALLOWED) == [
        (("controls",), "no default controls for this environment: set 'controls'")
    ]
    with_controls = env(
        {"kind": "gymnasium", "id": "phys2d/CartPole-v1"}, controls={"keys": {"KeyA": 0}}
    )
    assert validate_environment(with_controls, ALLOWED) == []


PONG_ACTIONS = ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]


def test_pong_paddle_moves_with_the_up_and_down_arrows():
    """Pong's paddle is vertical: RIGHT moves it up, LEFT down; the labels say so."""
    from dm_env import specs

    from server.runtime.input_mapping import ActionMapper

    controls = CATALOG["Pong"].controls
    mapper = ActionMapper(specs.DiscreteArray(6), controls, PONG_ACTIONS, strict=True)
    assert mapper.issues == []
    press = {
        ("ArrowUp",): "RIGHT", ("ArrowDown",): "LEFT", ("Space",): "FIRE",
        ("ArrowUp", "Space"): "RIGHTFIRE", ("ArrowDown", "Space"): "LEFTFIRE", (): "NOOP",
    }  # fmt: skip
    for keys, meaning in press.items():
        assert PONG_ACTIONS[int(mapper({"keys": list(keys)}))] == meaning, keys
    assert "up" in controls.labels["ArrowUp"] and "down" in controls.labels["ArrowDown"]
    assert "ArrowLeft" not in controls.keys and "ArrowRight" not in controls.keys


def test_catalog_lists_the_action_type():
    types = {entry["key"]: entry["action_type"] for entry in catalog_public()}
    assert types["Pong"] == "discrete" and types["CarRacing"] == "continuous"
    assert types["CarRacingDiscrete"] == "discrete" and types["HalfCheetah"] == "continuous"


# gas, brake and the main engine only go one way (their noop is "off"); the grippers open
# by themselves (their noop) and a key closes them
ONE_WAY = {("CarRacing", 1), ("CarRacing", 2), ("LunarLanderContinuous", 0),
           ("FetchPickAndPlace", 3), ("PickCube", 6), ("Robosuite-PickPlaceCan", 6),
           ("Robosuite-Lift", 6)}  # fmt: skip


def test_every_entry_plays_from_the_keyboard():
    """Installed or not, each entry has keys: a gamepad is never required. Continuous
    entries get a key per direction of every dimension of their actions."""
    for key, entry in CATALOG.items():
        keys = entry.controls.keys
        assert keys, f"{key}: no keyboard controls"
        vectors = [v for v in keys.values() if isinstance(v, list)]
        if vectors:
            dims = len(vectors[0])
            for dim in range(dims):
                ways = [sign for sign in (1, -1) if any(v[dim] * sign > 0 for v in vectors)]
                assert len(ways) == (1 if (key, dim) in ONE_WAY else 2), (key, dim, ways)
    halfcheetah = CATALOG["HalfCheetah"].controls
    assert halfcheetah.keys["KeyQ"] == [1.0, 0, 0, 0, 0, 0]
    assert CATALOG["InvertedPendulum"].controls.keys == {"ArrowRight": [3.0], "ArrowLeft": [-3.0]}


def test_every_setting_says_what_it_does_and_its_default():
    """The editor shows each setting's description, and its real default as the placeholder
    (a default that depends on the entry is given per entry)."""
    for key, entry in CATALOG.items():
        for name, prop in entry.schema.get("properties", {}).items():
            assert prop.get("description"), (key, name)
            if entry.suite not in ("dm_control",):
                assert "default" in prop, (key, name)
            low, high = prop.get("minimum"), prop.get("maximum")
            if "default" in prop and isinstance(prop["default"], int | float):
                assert low is None or prop["default"] >= low, (key, name)
                assert high is None or prop["default"] <= high, (key, name)
    breakout = CATALOG["Breakout"].schema["properties"]
    assert breakout["mode"]["enum"] == [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44]
    assert breakout["frameskip"]["default"] == 4


def test_pick_cube_plays_with_the_mouse_and_a_phone_by_default():
    """PickCube's defaults bind the mouse (drag on the picture, the wheel, Shift+drag, the
    right button) and a paired phone (tilt, twist, Grip), besides its keys: the player shows
    the mouse hint and the pairing panel for it."""
    from dm_env import specs

    from server.player.views import uses_phone
    from server.runtime.input_mapping import ActionMapper

    entry = CATALOG["PickCube"]
    mapper = ActionMapper(specs.BoundedArray((7,), np.float32, -1, 1), entry.controls, strict=True)
    assert mapper.issues == [] and mapper.unbound() == []

    def act(**raw: object) -> list[float]:
        return [round(float(v), 6) for v in mapper({"keys": [], "axes": [], **raw})]

    still = [0.0] * 6 + [-1.0]
    assert act() == still
    # drag right: hand right; drag up (negative y): away; the wheel away: up
    assert act(devices={"mouse": [1.0, 0, 0, 0, 0]}) == [0.5, 0, 0, 0, 0, 0, -1]
    assert act(devices={"mouse": [0, -1.0, 0, 0, 0]}) == [0, 0.5, 0, 0, 0, 0, -1]
    assert act(devices={"mouse": [0, 0, 1.0, 0, 0]}) == [0, 0, 0.5, 0, 0, 0, -1]
    # Shift+drag up: up; Shift+drag right: turn right (yaw −)
    assert act(devices={"mouse": [0, 0, 0, 0, -1.0]}) == [0, 0, 0.5, 0, 0, 0, -1]
    assert act(devices={"mouse": [0, 0, 0, 1.0, 0]}) == [0, 0, 0, 0, 0, -0.5, -1]
    # a phone tipped forward: away; tipped right: right; twisted left: up
    assert act(devices={"phone": [1.0, 0, 0]}) == [0, 0.5, 0, 0, 0, 0, -1]
    assert act(devices={"phone": [0, 1.0, 0]}) == [0.5, 0, 0, 0, 0, 0, -1]
    assert act(devices={"phone": [0, 0, 1.0]}) == [0, 0, 0.5, 0, 0, 0, -1]
    # the right mouse button and the phone's Grip shut the gripper until pressed again
    for button in ("MouseRight", "PhoneGrip"):
        assert act(keys=[button])[6] == 1.0
        assert act()[6] == 1.0  # latched
        assert act(keys=[button])[6] == -1.0  # and open again
        assert act() == still
    env = EnvironmentSpec(id="cube", name="Cube", source=entry.source())
    assert uses_phone(env)  # the pairing panel shows
