"""Continuous control from the browser's devices: axes of the mouse, a SpaceMouse or a phone
(``source``), device buttons as reserved key codes, analog gamepad triggers, dead zones and
clamps on them, :meth:`ActionMapper.human_active`; ``devices`` validated by the protocol."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from dm_env import specs
from pydantic import ValidationError

from server.player.protocol import BadMessage, parse_client
from server.player.views import axis_name, controls_legend
from server.runtime.catalog import CATALOG
from server.runtime.input_mapping import ActionMapper
from server.study_spec import AxisBinding, Controls, StudySpec

FETCH = specs.BoundedArray((4,), np.float32, -1.0, 1.0)
STEP = 0.3


def fetch() -> ActionMapper:
    mapper = ActionMapper(FETCH, CATALOG["FetchPickAndPlace"].controls, strict=True)
    assert mapper.issues == [] and mapper.unbound() == []
    return mapper


def dev(**devices) -> dict:
    return {"keys": [], "buttons": {}, "axes": [], "devices": devices}


def test_each_source_drives_its_own_dimensions():
    m = fetch()
    # mouse: drag right and down (toward the viewer) = +y and +x; the wheel up = hand up
    np.testing.assert_allclose(m(dev(mouse=[0.5, 1.0, 0, 0, 0])), [STEP, 0.5 * STEP, 0, 1])
    np.testing.assert_allclose(m(dev(mouse=[0, 0, 1.0])), [0, 0, STEP, 1])
    np.testing.assert_allclose(m(dev(mouse=[0, 0, 0, 0, -1.0])), [0, 0, STEP, 1])  # Shift+drag up
    # SpaceMouse: x right, y toward you, z down (pushed down = hand down)
    np.testing.assert_allclose(m(dev(spacemouse=[1.0, 0, 0.5, 0, 0, 0])), [0, STEP, -0.15, 1])
    # a paired phone: tipped forward = away (-x), tipped right = +y, twisted left = up
    np.testing.assert_allclose(m(dev(phone=[1.0, 1.0, 1.0])), [-STEP, STEP, STEP, 1], rtol=1e-6)
    # the gamepad's axes are not a device's: the same list under a source no binding reads
    # moves nothing
    np.testing.assert_allclose(m({"devices": {"keyboard": [1.0, 1.0, 1.0]}}), [0, 0, 0, 1])
    # sources add up, and the clamp (the action's bounds here) holds
    both = {**dev(mouse=[1.0], spacemouse=[1.0]), "axes": [1.0], "keys": ["ArrowRight"]}
    np.testing.assert_allclose(m(both), [0, 1.0, 0, 1])


def test_device_dead_zones_are_per_source_and_axis():
    controls = Controls(
        axes=[AxisBinding(source="spacemouse", axis=0, dim=0, deadzone=0.2),
              AxisBinding(axis=0, dim=1), AxisBinding(source="mouse", axis=0, dim=2)],
        deadzone=0.1,
    )  # fmt: skip
    m = ActionMapper(FETCH, controls)
    np.testing.assert_allclose(m(dev(spacemouse=[0.15], mouse=[0.15])), [0, 0, 0.15, 0])
    np.testing.assert_allclose(m(dev(spacemouse=[0.3])), [0.3, 0, 0, 0])
    np.testing.assert_allclose(m({"axes": [0.15]}), [0, 0.15, 0, 0])  # the gamepad: 0.1


def test_designer_clamp_caps_device_axes():
    controls = Controls(axes=[AxisBinding(source="spacemouse", axis=2, dim=2, scale=4.0)],
                        clamp=[[-1, 1], [-1, 1], [-0.25, 0.5], [-1, 1]])  # fmt: skip
    m = ActionMapper(FETCH, controls)
    np.testing.assert_allclose(m(dev(spacemouse=[0, 0, 1.0])), [0, 0, 0.5, 0])
    np.testing.assert_allclose(m(dev(spacemouse=[0, 0, -1.0])), [0, 0, -0.25, 0])


@pytest.mark.parametrize(
    "bad", [[math.nan], [math.inf], [1e9], ["1"], [None], "x", {"0": 1}, [[1.0]]]
)
def test_malformed_device_values_never_drive_past_the_bounds(bad):
    m = fetch()
    for raw in (dev(mouse=bad), {"devices": bad}, {"devices": {"spacemouse": bad}}):
        action = m(raw)
        assert np.all(np.isfinite(action)) and np.all(np.abs(action) <= 1)


def test_device_buttons_are_reserved_key_codes_and_toggle():
    m = fetch()
    shut = [float(m({"keys": k})[3]) for k in (["MouseRight"], [], ["SpaceMouseLeft"], [])]
    assert shut == [-1, -1, 1, 1]  # the right mouse button shut it, the SpaceMouse opened it
    # both at once count as one press of the one latch
    assert float(m({"keys": ["MouseRight", "SpaceMouseLeft", "Space"]})[3]) == -1


def test_analog_trigger_scales_its_vector():
    m = fetch()
    # RT pulled halfway: the gripper's command 1 - 2 * 0.5 = 0 (hold); fully: shut
    assert [float(m({"buttons": {"7": v}})[3]) for v in (0.1, 0.5, 1.0)] == [1.0, 0.0, -1.0]
    on_off = ActionMapper(FETCH, Controls(buttons={7: [0, 0, 0, -2.0]}, noop=[0, 0, 0, 1]))
    assert [float(on_off({"buttons": {"7": v}})[3]) for v in (0.4, 0.6)] == [1.0, -1.0]


def test_bad_sources_and_analog_buttons_are_reported_with_their_field():
    controls = Controls(
        keys={"KeyA": [1, 0, 0, 0]}, buttons={0: [0, 1, 0, 0]}, analog=[0, 3],
        axes=[AxisBinding(source="mouse", axis=9, dim=0),
              AxisBinding(source="phone", axis=0, dim=7)],
    )  # fmt: skip
    m = ActionMapper(FETCH, controls, strict=True)
    assert [loc for loc, _ in m.issues] == [("axes", 0, "axis"), ("axes", 1, "dim"), ("analog", 1)]
    assert "mouse axis 9 out of range" in m.issues[0][1]
    discrete = ActionMapper(specs.DiscreteArray(3), Controls(buttons={0: 1}, analog=[0]))
    assert [loc for loc, _ in discrete.issues] == [("analog", 0)]
    # a discrete action reads a device axis's directions like a stick's
    d = ActionMapper(
        specs.DiscreteArray(3),
        Controls(axes=[AxisBinding(source="spacemouse", axis=5, negative=1, positive=2)], noop=0),
    )
    assert [int(d(dev(spacemouse=[0, 0, 0, 0, 0, v]))) for v in (-0.9, 0.1, 0.9)] == [1, 0, 2]


def test_human_active_sees_keys_buttons_and_bound_axes_past_their_dead_zone():
    m = fetch()
    idle = [dev(), dev(mouse=[0.1]), dev(spacemouse=[0, 0, 0.04]), {"buttons": {"7": 0.1}},
            {"axes": [0, 0, 0.9]},  # the right stick's x: no binding reads it
            dev(spacemouse=[0, 0, 0, 0.9]), dev(phone=[0.1]), {"devices": {"mouse": [math.nan]}},
            None, "junk"]  # fmt: skip
    active = [{"keys": ["MouseLeft"]}, {"keys": ["KeyQ"]}, {"buttons": {"0": 1.0}},
              {"buttons": {"7": 0.3}}, {"axes": [0.5]}, dev(mouse=[0, 0, -0.2]),
              dev(spacemouse=[0, 0.06]), dev(phone=[1.0]), {"keys": ["PhoneClutch"]}]  # fmt: skip
    assert [m.human_active(raw) for raw in idle] == [False] * len(idle)
    assert [m.human_active(raw) for raw in active] == [True] * len(active)


def test_the_legend_names_the_devices_and_their_axes():
    m = fetch()
    legend = controls_legend({"controls": json.loads(json.dumps(m.resolved()))})
    assert legend["devices"] == ["mouse", "phone", "spacemouse", "touch"]
    rows = {(r["input"], r["label"]) for r in legend["legend"]}
    assert ("mouse drag ←→", "hand left / right") in rows
    assert ("SpaceMouse up / down", "hand up / down") in rows
    assert ("right mouse button", "close / open the gripper (toggle)") in rows
    assert ("gamepad RT", "close the gripper (as far as pulled)") in rows
    assert ("phone tilt forward / back", "hand away / nearer") in rows
    # device buttons are no keyboard keys and no on-screen buttons; the touch controls play
    # instead of the 7 key buttons a touch screen would have had
    assert "MouseRight" not in legend["keys"] and legend["touch"] == []
    assert legend["touch_controls"]["buttons"] == [
        {"key": "TouchA", "label": "gripper: close / open"}
    ]
    assert sorted(legend["touch_controls"]["axes"]) == ["0", "1", "3", "4", "5"]
    # the WebXR move's axes (3-5) by name, as the phone page shows them
    assert [axis_name("phone", a) for a in (3, 4, 5)] == [
        "phone moved right / left",
        "phone moved away / nearer",
        "phone moved up / down",
    ]


@pytest.mark.parametrize(
    "devices",
    [
        '{"mouse": [NaN]}',
        '{"mouse": [Infinity]}',
        '{"spacemouse": [1.5]}',
        '{"mouse": [-1.01]}',
        '{"mouse": [1e400]}',
        '{"mouse": [0,0,0,0,0,0,0,0,0]}',
        '{"keyboard": [0]}',
        '{"mouse": 1}',
        "[0.5]",
    ],
)
def test_the_protocol_refuses_bad_devices(devices):
    text = '{"type": "input", "client_ms": 1, "devices": ' + devices + "}"
    with pytest.raises(BadMessage) as refused:
        parse_client(text)
    assert refused.value.code == "invalid" and "devices" in refused.value.message


def test_the_protocol_takes_devices_into_the_raw_input():
    msg = parse_client(
        json.dumps(
            {
                "type": "input",
                "client_ms": 1,
                "keys": ["MouseLeft"],
                "devices": {"mouse": [0.5, -1, 0], "spacemouse": [1] * 6},
            }
        )
    )
    raw = msg.raw()
    assert raw["devices"] == {"mouse": [0.5, -1, 0], "spacemouse": [1] * 6}
    assert parse_client('{"type": "input", "client_ms": 1}').raw()["devices"] == {}
    np.testing.assert_allclose(fetch()(raw), [0, 1.5 * STEP, -STEP, 1], rtol=1e-6)


def test_the_study_file_refuses_an_unknown_source_with_its_path():
    source = CATALOG["FetchPickAndPlace"].source().model_dump()
    axes = [{"axis": 0}, {"axis": 1, "source": "mouse"}, {"axis": 0, "source": "keyboard"}]
    with pytest.raises(ValidationError) as refused:
        StudySpec(name="S", environments=[
            {"id": "e", "name": "E", "source": source, "controls": {"axes": axes}}])  # fmt: skip
    (error,) = refused.value.errors()
    assert ".".join(map(str, error["loc"])) == "environments.0.controls.axes.2.source"
    assert "mouse" in error["msg"] and "spacemouse" in error["msg"]
