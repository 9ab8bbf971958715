"""Continuous teleoperation controls: held keys as end-effector velocities, a gripper toggle,
the designer's clamp and per-axis dead zones; bad axes and bad settings refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from dm_env import specs
from pydantic import ValidationError

from server.player.protocol import BadMessage, parse_client
from server.runtime.catalog import CATALOG
from server.runtime.input_mapping import ActionMapper
from server.study_spec import AxisBinding, Controls, EnvironmentSpec

# Fetch's action: [dx, dy, dz, gripper], each in [-1, 1]
FETCH = specs.BoundedArray((4,), np.float32, -1.0, 1.0)


def fetch_mapper(**changes) -> ActionMapper:
    controls = CATALOG["FetchPickAndPlace"].controls.model_copy(update=changes)
    mapper = ActionMapper(FETCH, controls, strict=True)
    assert mapper.issues == []
    return mapper


def keys(*held: str) -> dict:
    return {"keys": list(held)}


def test_held_keys_drive_each_axis_and_combine():
    m = fetch_mapper()
    step = 0.3
    assert m(keys()).tolist() == [0, 0, 0, 1]  # nothing held: still, the gripper open
    np.testing.assert_allclose(m(keys("ArrowUp")), [-step, 0, 0, 1])
    np.testing.assert_allclose(m(keys("ArrowDown")), [step, 0, 0, 1])
    np.testing.assert_allclose(m(keys("ArrowRight")), [0, step, 0, 1])
    np.testing.assert_allclose(m(keys("KeyS")), [0, 0, -step, 1])
    # two held keys move diagonally; opposite keys cancel
    np.testing.assert_allclose(m(keys("ArrowUp", "ArrowLeft", "KeyW")), [-step, -step, step, 1])
    np.testing.assert_allclose(m(keys("ArrowLeft", "ArrowRight")), [0, 0, 0, 1])
    assert m(keys()).dtype == np.float32


def test_gripper_toggle_latches_until_pressed_again():
    m = fetch_mapper()
    gripper = [float(m(raw)[3]) for raw in (
        keys("Space"),               # pressed: shut
        keys("Space"),               # still held (a long press): still shut, no flip
        keys(),                      # released: stays shut
        keys("ArrowUp"),             # moving with it shut
        keys("ArrowUp", "Space"),    # pressed again: open
        keys("ArrowUp"),
        keys("Space"),               # and shut again
    )]  # fmt: skip
    assert gripper == [-1, -1, -1, -1, 1, 1, -1]
    m.reset()  # a new episode starts open
    assert float(m(keys())[3]) == 1.0


def test_clamp_caps_the_action_inside_its_bounds():
    clamp = [[-0.2, 0.2], [-0.2, 0.2], [-0.1, 1.0], [-1.0, 1.0]]
    m = fetch_mapper(clamp=clamp)
    np.testing.assert_allclose(m(keys("ArrowUp", "KeyS")), [-0.2, 0, -0.1, 1])
    m2 = fetch_mapper(clamp=clamp, axes=[AxisBinding(axis=0, dim=2, scale=5.0)])
    np.testing.assert_allclose(m2({"axes": [1.0]}), [0, 0, 1.0, 1])  # the clamp's high
    np.testing.assert_allclose(m2({"axes": [-1.0]}), [0, 0, -0.1, 1])
    # wider than the action's own bounds: the bounds still hold
    wide = ActionMapper(FETCH, Controls(keys={"KeyA": [5.0, 0, 0, 0]}, clamp=[[-9, 9]] * 4))
    assert wide.issues == [] and float(wide(keys("KeyA"))[0]) == 1.0


def test_axis_dead_zone_and_scale_per_axis():
    axes = [AxisBinding(axis=0, dim=0, scale=0.5, deadzone=0.4), AxisBinding(axis=1, dim=1)]
    m = ActionMapper(FETCH, Controls(axes=axes, deadzone=0.1))
    np.testing.assert_allclose(m({"axes": [0.3, 0.3]}), [0, 0.3, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(m({"axes": [0.6, 0.05]}), [0.3, 0, 0, 0], rtol=1e-6)
    discrete = ActionMapper(
        specs.DiscreteArray(3),
        Controls(axes=[AxisBinding(axis=0, negative=1, positive=2, deadzone=0.5)], noop=0),
    )
    assert int(discrete({"axes": [0.4]})) == 0 and int(discrete({"axes": [0.6]})) == 2


@pytest.mark.parametrize(
    "axes", [[math.nan], [math.inf], [-math.inf], [1e9], [-1e9], ["1"], [None]]
)
def test_non_finite_and_out_of_range_axes_never_drive_past_the_bounds(axes):
    m = fetch_mapper(axes=[AxisBinding(axis=0, dim=0, scale=1.0)])
    action = m({"axes": axes})
    assert np.all(np.isfinite(action)) and np.all(np.abs(action) <= 1)
    assert abs(float(action[0])) in (0.0, 1.0)  # NaN/strings count as 0, huge ones as ±1


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1.5", "-1.0001", "1e400"])
def test_the_protocol_refuses_non_finite_and_out_of_range_axes(value):
    text = '{"type": "input", "client_ms": 1, "keys": ["ArrowUp"], "axes": [' + value + "]}"
    with pytest.raises(BadMessage) as refused:
        parse_client(text)
    assert refused.value.code == "invalid" and "axes" in refused.value.message
    assert parse_client(json.dumps({"type": "input", "client_ms": 1, "axes": [-1, 0.5]}))


def test_bad_toggle_and_clamp_are_reported_with_their_field():
    controls = Controls(
        keys={"Space": [0, 0, 0, -2.0]}, toggle=["Space", "KeyG"], clamp=[[-1, 1]] * 3
    )
    m = ActionMapper(FETCH, controls, strict=True)
    assert [loc for loc, _ in m.issues] == [("toggle", 1), ("clamp",)]
    assert "not a key" in m.issues[0][1] and "3 [low, high] pairs" in m.issues[1][1]
    empty = ActionMapper(FETCH, Controls(clamp=[[2, 3], [-1, 1], [-1, 1], [-1, 1]]))
    assert [loc for loc, _ in empty.issues] == [("clamp", 0)]
    discrete = ActionMapper(specs.DiscreteArray(3), Controls(keys={"KeyA": 1}, toggle=["KeyA"]))
    assert [loc for loc, _ in discrete.issues] == [("toggle", 0)]


@pytest.mark.parametrize(
    "controls",
    [
        {"clamp": [[-1.0, math.nan]] * 4},
        {"clamp": [[-math.inf, 1.0]] * 4},
        {"clamp": [[0.0]] * 4},
        {"axes": [{"axis": 0, "scale": math.inf}]},
        {"axes": [{"axis": 0, "deadzone": 1.0}]},
        {"axes": [{"axis": 0, "deadzone": -0.1}]},
    ],
)
def test_study_file_refuses_non_finite_or_out_of_range_settings(controls):
    source = CATALOG["FetchPickAndPlace"].source().model_dump()
    with pytest.raises(ValidationError):
        EnvironmentSpec(id="e", name="E", source=source, controls=controls)


def test_resolved_controls_show_the_toggle_and_clamp():
    m = fetch_mapper(clamp=[[-0.5, 0.5]] * 4)
    resolved = json.loads(json.dumps(m.resolved()))
    assert resolved["toggle"] == ["MouseRight", "PhoneGrip", "Space", "SpaceMouseLeft", "TouchA"]
    assert resolved["clamp"] == [[-0.5, 0.5]] * 4
    assert "toggle" in resolved["labels"]["Space"] and resolved["unbound"] == []
