"""The controls legend names every binding the way a player knows it."""

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
