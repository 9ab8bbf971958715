"""The controls legend names every binding the way a player knows it."""

import numpy as np
import pytest

from server.player.views import controls_legend, input_name
from server.runtime.input_mapping import ActionMapper
from server.study_spec import Controls


def test_gamepad_names():
    assert input_name("button 0") == "gamepad A"
    assert input_name("button 15") == "gamepad D-pad right"
    assert input_name("button 42") == "gamepad button 42"
    assert input_name("axis 0-") == "left stick ←"
    assert input_name("axis 1+") == "left stick ↓"
    assert input_name("ArrowUp+Space") == "ArrowUp+Space"


def test_both_axis_directions_are_in_the_legend():
    import gymnasium as gym

    from server.runtime.space_specs import space_to_spec  # the worker's own spec conversion

    controls = Controls(
        keys={"ArrowLeft": 3},
        axes=[{"axis": 0, "negative": 3, "positive": 2}],
        labels={"ArrowLeft": "left"},
    )
    mapper = ActionMapper(space_to_spec(gym.spaces.Discrete(4)), controls, None)
    legend = controls_legend(
        {"controls": mapper.resolved(), "action_meanings": ["NOOP", "FIRE", "RIGHT", "LEFT"]}
    )
    rows = {row["input"]: row["label"] for row in legend["legend"]}
    assert rows == {"ArrowLeft": "left", "left stick ←": "left", "left stick →": "right"}
    assert legend["keys"] == ["ArrowLeft"]


def _resolved(keys: dict[str, int]) -> dict:
    from dm_env import specs

    spec = specs.DiscreteArray(num_values=16)
    return {"controls": ActionMapper(spec, Controls(keys=keys, buttons={0: 1})).resolved(),
            "action_meanings": []}  # fmt: skip


def test_touch_buttons_one_per_key_binding_with_its_keys():
    legend = controls_legend(_resolved({"ArrowUp+Space": 3, "KeyA": 1}))
    assert legend["touch"] == [  # gamepad bindings get none
        {"keys": ["ArrowUp", "Space"], "input": "ArrowUp+Space", "label": "action 3"},
        {"keys": ["KeyA"], "input": "KeyA", "label": "action 1"},
    ]


def test_no_touch_buttons_past_eight_key_bindings():
    eight = {f"Digit{i}": i for i in range(8)}
    assert len(controls_legend(_resolved(eight))["touch"]) == 8
    assert controls_legend(_resolved({**eight, "KeyZ": 9}))["touch"] == []


def _arm() -> tuple[Controls, dict]:
    """The catalog's PickCube controls, resolved by the worker's own mapper."""
    from dm_env import specs

    from server.runtime.catalog import CATALOG, default_controls

    controls = default_controls(CATALOG["PickCube"].source())
    spec = specs.BoundedArray((7,), float, -1.0, 1.0)
    return controls, {"controls": ActionMapper(spec, controls).resolved(), "action_meanings": []}


def test_an_arm_gets_touch_controls_instead_of_key_buttons():
    controls, info = _arm()
    legend = controls_legend(info)
    assert legend["touch"] == []  # 12 moves and a gripper: no key buttons, the pads instead
    touch = legend["touch_controls"]
    assert touch["axes"] == {
        "0": "hand left / right",
        "1": "hand away / nearer",
        "2": "turn (yaw)",
        "3": "hand up / down",
        "4": "hand away / nearer",
        "5": "hand right / left",
    }
    assert touch["buttons"] == [{"key": "TouchA", "label": "gripper: close / open"}]
    assert "touch" in legend["devices"]
    rows = {row["input"]: row["label"] for row in legend["legend"]}
    assert rows["pad 1 ←→"] == "hand left / right" and rows["touch button A"].startswith("grip")


def test_touch_pads_and_the_gripper_drive_the_arm():
    controls, _ = _arm()
    from dm_env import specs

    mapper = ActionMapper(specs.BoundedArray((7,), float, -1.0, 1.0), controls)
    assert mapper({"devices": {"touch": [1, 0, 0, 0]}}).tolist() == [0.5, 0, 0, 0, 0, 0, -1]
    assert mapper({"devices": {"touch": [0, 0, 0, -1]}}).tolist() == [0, 0, 0.5, 0, 0, 0, -1]
    assert mapper({"devices": {"touch": [0, 0, 0, 0, 1, 0]}}).tolist()[1] == 0.5  # tipped away
    assert mapper({"keys": ["TouchA"]}).tolist()[6] == 1  # shut, and it stays shut
    assert mapper({}).tolist()[6] == 1
    # what a browser never sends (the protocol refuses it) maps to the bounds, never past
    assert mapper({"devices": {"touch": [9, float("nan"), "x"]}}).tolist()[:2] == [0.5, 0]


def test_an_environment_is_playable_by_touch_when_a_touch_binding_reaches_it():
    from server.player.views import environment_view
    from server.runtime.catalog import CATALOG
    from server.study_spec import EnvironmentSpec

    def env(**fields):
        return EnvironmentSpec(id="e", name="E", source=CATALOG["PickCube"].source(), **fields)

    assert environment_view(env())["touch"] is True  # the catalog's touch pads
    thirteen = {"keys": {f"Digit{i}": [0.0] * 6 + [1.0] for i in range(9)}}
    assert environment_view(env(controls=thirteen))["touch"] is False
    assert environment_view(env(controls={"keys": {"KeyA": [1.0] + [0.0] * 6}}))["touch"] is True
    pad = {"axes": [{"source": "touch", "axis": 0, "dim": 0}]}
    assert environment_view(env(controls=pad))["touch"] is True


@pytest.mark.parametrize("key", ["PickCube", "Robosuite-Lift", "FetchPickAndPlace"])
def test_each_arms_touch_controls_move_as_its_keys_do(key):
    """Pad 1 dragged right moves as → does, dragged down as ↓, pad 2 dragged up as W, the
    tilt forward as ↑, and TouchA latches the gripper as Space does (catalog defaults)."""
    from dm_env import specs

    from server.runtime.catalog import CATALOG, default_controls

    controls = default_controls(CATALOG[key].source())
    size = len(controls.noop)
    mapper = ActionMapper(specs.BoundedArray((size,), float, -1.0, 1.0), controls)

    def act(raw):
        mapper.reset()
        return np.sign(mapper(raw) - mapper({}))

    for touch, keys in [
        ([1, 0, 0, 0], "ArrowRight"),
        ([0, 1, 0, 0], "ArrowDown"),
        ([0, 0, 0, -1], "KeyW"),
        ([0, 0, 0, 0, 1, 0], "ArrowUp"),
        ([0, 0, 0, 0, 0, 1], "ArrowRight"),
    ]:
        assert act({"devices": {"touch": touch}}).tolist() == act({"keys": [keys]}).tolist()
    assert act({"keys": ["TouchA"]}).tolist() == act({"keys": ["Space"]}).tolist()
