"""Browser input → actions, for each kind of action spec, and malformed input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dm_env import specs

from server.runtime.input_mapping import ActionMapper
from server.study_spec import AxisBinding, Controls

DISCRETE = specs.DiscreteArray(6, dtype=np.int64)
ATARI = ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]


def discrete_mapper(**controls):
    keys = {"ArrowLeft": 3, "ArrowRight": 2, "Space": 1, "ArrowRight+Space": 4}
    return ActionMapper(DISCRETE, Controls(keys=keys, noop=0, **controls))


def test_discrete_single_key_and_noop():
    m = discrete_mapper()
    assert m({"keys": ["ArrowLeft"]}) == 3
    assert m({"keys": []}) == 0
    assert m({}) == 0


def test_a_held_input_maps_again_to_its_action_and_a_new_one_is_mapped_afresh():
    """The async clock applies the held input at every step: its action is kept, and any
    other input (even the one before it again) is mapped on its own."""
    m = discrete_mapper()
    left, right = {"keys": ["ArrowLeft"]}, {"keys": ["ArrowRight"]}
    actions = [m(left), m(left), m(right), m(right), m(left), m(None), m(None)]
    assert actions == [3, 3, 2, 2, 3, 0, 0]
    assert m(left) is m(left)  # the same held input: no new mapping


def test_discrete_most_specific_combo_wins():
    m = discrete_mapper()
    assert m({"keys": ["ArrowRight", "Space"]}) == 4
    assert m({"keys": ["Space", "ArrowRight"]}) == 4


def test_discrete_tie_goes_to_the_last_pressed_key():
    m = discrete_mapper()
    assert m({"keys": ["ArrowLeft", "Space"]}) == 1
    assert m({"keys": ["Space", "ArrowLeft"]}) == 3


def test_discrete_buttons_and_axes():
    m = discrete_mapper(
        buttons={0: 1, 15: 2}, axes=[AxisBinding(axis=0, negative=3, positive=2)], deadzone=0.2
    )
    assert m({"buttons": {"0": 1.0}}) == 1
    assert m({"buttons": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]}) == 2
    assert m({"axes": [-0.9]}) == 3
    assert m({"axes": [0.1]}) == 0  # inside the dead zone


def test_discrete_action_meanings():
    controls = Controls(keys={"Space": "FIRE", "ArrowUp": "UP", "KeyX": "7"}, noop="NOOP")
    m = ActionMapper(DISCRETE, controls, ATARI)
    assert m({"keys": ["Space"]}) == 1
    assert m({"keys": ["ArrowUp"]}) == 0  # UP is not an action of this game: ignored
    assert any("KeyX" in p for p in m.problems)  # 7 is out of range


def test_multidiscrete_and_multibinary():
    md = specs.BoundedArray((2,), np.int64, 0, [2, 4])
    m = ActionMapper(md, Controls(keys={"KeyA": [1, 0], "KeyB": [0, 3], "KeyC": [5, 9]}))
    assert m({"keys": ["KeyA", "KeyB"]}).tolist() == [1, 3]
    assert m({"keys": ["KeyC"]}).tolist() == [2, 4]  # clipped
    mb = specs.BoundedArray((3,), np.int8, 0, 1)
    m = ActionMapper(mb, Controls(keys={"KeyA": [1, 0, 0], "KeyB": [1, 0, 1]}))
    out = m({"keys": ["KeyA", "KeyB"]})
    assert out.dtype == np.int8 and out.tolist() == [1, 0, 1]


def test_box_keys_axes_deadzone_and_clipping():
    box = specs.BoundedArray((3,), np.float32, [-1, 0, 0], [1, 1, 1])
    controls = Controls(
        keys={"ArrowLeft": [-1.0, 0, 0], "ArrowUp": [0, 1.0, 0], "ArrowDown": [0, 0, 0.8]},
        axes=[AxisBinding(axis=0, dim=0, scale=1.0), AxisBinding(axis=1, dim=1, scale=-2.0)],
        deadzone=0.1,
    )
    m = ActionMapper(box, controls)
    assert m({}).tolist() == [0, 0, 0]
    np.testing.assert_allclose(m({"keys": ["ArrowLeft", "ArrowUp"]}), [-1, 1, 0])
    np.testing.assert_allclose(m({"axes": [0.5, -0.3]}), [0.5, 0.6, 0], rtol=1e-6)
    np.testing.assert_allclose(m({"axes": [0.05, 0.0]}), [0, 0, 0])
    np.testing.assert_allclose(m({"keys": ["ArrowLeft"], "axes": [-1.0]}), [-1, 0, 0])
    assert m({}).dtype == np.float32


def test_combo_suppresses_its_parts_in_vector_spaces():
    box = specs.BoundedArray((2,), np.float64, -5, 5)
    controls = Controls(keys={"KeyA": [1, 0], "KeyB": [0, 1], "KeyA+KeyB": [3, 3]})
    m = ActionMapper(box, controls)
    assert m({"keys": ["KeyA", "KeyB"]}).tolist() == [3, 3]


def test_dict_and_tuple_actions():
    spec = {
        "move": specs.BoundedArray((2,), np.float32, -1, 1),
        "jump": specs.BoundedArray((), np.int64, 0, 1),
    }
    m = ActionMapper(spec, Controls(keys={"Space": [0, 0, 1], "ArrowLeft": [-1, 0, 0]}))
    out = m({"keys": ["Space", "ArrowLeft"]})
    assert out["move"].tolist() == [-1, 0] and int(out["jump"]) == 1
    tup = (specs.DiscreteArray(3), specs.BoundedArray((1,), np.float32, 0, 1))
    out = ActionMapper(tup, Controls(keys={"KeyA": [2, 0.5]}))({"keys": ["KeyA"]})
    assert int(out[0]) == 2 and out[1].tolist() == [0.5]


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "keys",
        [1, 2],
        {"keys": "ArrowLeft"},
        {"keys": [None, 3, {"a": 1}, "x" * 1000, "NoSuchKey"]},
        {"buttons": {"0": "pressed", "x": None, "99": math.nan}},
        {"buttons": "A"},
        {"axes": [math.nan, math.inf, "1", None, -math.inf]},
        {"axes": {"0": 1}},
        {"keys": ["ArrowLeft"] * 10_000},
    ],
)
def test_malformed_input_never_raises(raw):
    discrete = discrete_mapper(axes=[AxisBinding(axis=0, negative=3, positive=2)])
    box = ActionMapper(
        specs.BoundedArray((2,), np.float32, -1, 1),
        Controls(keys={"ArrowLeft": [-1, 0]}, axes=[AxisBinding(axis=0, dim=1, scale=1e9)]),
    )
    action = discrete(raw)
    assert 0 <= int(action) < 6
    vec = box(raw)
    assert np.all(np.isfinite(vec)) and np.all(np.abs(vec) <= 1)


def test_invalid_bindings_are_reported_not_raised():
    controls = Controls(keys={"KeyA": [1.0, 2.0], "KeyB": 99, "KeyC": 2.5}, noop=42)
    m = ActionMapper(DISCRETE, controls)
    assert len(m.problems) == 4
    assert m({"keys": ["KeyA", "KeyB"]}) == 0
    box = ActionMapper(specs.BoundedArray((2,), np.float32, -1, 1), Controls(keys={"K": [1]}))
    assert box.problems and box({"keys": ["K"]}).tolist() == [0, 0]


def test_resolved_controls_are_json():
    import json

    m = discrete_mapper()
    resolved = m.resolved()
    assert json.loads(json.dumps(resolved))["bindings"]["ArrowRight+Space"] == 4


def test_issues_name_the_field_and_strict_controls_refuse_missing_names():
    controls = Controls(
        keys={"ArrowLeft": 99, "Space": "FIRE", "ArrowUp": "UP"},
        buttons={3: -1},
        axes=[AxisBinding(axis=0, negative=1, positive=7)],
        noop=2.5,
    )
    lenient = ActionMapper(DISCRETE, controls, ATARI)
    strict = ActionMapper(DISCRETE, controls, ATARI, strict=True)
    common = [("keys", "ArrowLeft"), ("buttons", 3), ("axes", 0, "positive"), ("noop",)]
    assert [loc for loc, _ in lenient.issues] == common
    assert [loc for loc, _ in strict.issues] == [common[0], ("keys", "ArrowUp"), *common[1:]]
    assert strict.problems[1] == (
        f"control 'ArrowUp': 'UP' is not an action of this environment: use 0..5 or one of {ATARI}"
    )
    assert strict.resolved()["issues"][0] == {"loc": ["keys", "ArrowLeft"],
                                              "msg": strict.problems[0]}  # fmt: skip
    box = ActionMapper(specs.BoundedArray((2,), np.float32, -1, 1),
                       Controls(keys={"K": [1]}, axes=[AxisBinding(axis=0, dim=5)]))  # fmt: skip
    assert [loc for loc, _ in box.issues] == [("keys", "K"), ("axes", 0, "dim")]
