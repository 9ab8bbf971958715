"""The legend a person reads: keys as printed on them, one row per thing the bindings do,
grouped by meaning from the catalog's dimension names, each device in its own words."""

import gymnasium as gym
import numpy as np
from dm_env import specs

from server.player.legend import binding_input, key_name, legend_groups, merge_labels
from server.player.views import env_ready
from server.runtime.catalog import CATALOG, action_dimensions
from server.runtime.input_mapping import ActionMapper
from server.runtime.space_specs import space_to_spec
from server.study_spec import Controls


def _groups(controls: Controls, spec, meanings=None, dims=()):  # type: ignore[no-untyped-def]
    info = {
        "controls": ActionMapper(spec, controls, meanings).resolved(),
        "action_meanings": meanings,
    }
    return legend_groups(info, dims)


def _rows(groups) -> dict[str, list[tuple[str, dict]]]:  # type: ignore[no-untyped-def]
    return {g["name"]: [(r["label"], r["inputs"]) for r in g["rows"]] for g in groups}


def test_keys_are_named_as_printed_on_them():
    names = [
        key_name(c)
        for c in (
            "KeyW",
            "ArrowRight",
            "ArrowUp",
            "Space",
            "Digit1",
            "Semicolon",
            "Escape",
            "ShiftLeft",
            "Numpad7",
            "F5",
        )
    ]
    assert names == ["W", "→", "↑", "Space", "1", ";", "Esc", "Shift", "Num 7", "F5"]


def test_each_device_in_its_own_words():
    assert binding_input("ArrowUp+Space") == ("keyboard", ["↑", "Space"])
    assert binding_input("button 7") == ("gamepad", ["RT"])
    assert binding_input("axis 0-") == ("gamepad", ["left stick ←"])
    assert binding_input("MouseRight") == ("mouse", ["right button"])
    assert binding_input("mouse axis 2+") == ("mouse", ["wheel +"])
    assert binding_input("PhoneGrip") == ("phone", ["Grip"])  # the phone page's button
    assert binding_input("SpaceMouseLeft") == ("spacemouse", ["left button"])


def test_labels_of_a_pair_say_their_shared_words_once():
    assert merge_labels(["hand left", "hand right"]) == "hand left / right"
    assert merge_labels(["turn left (yaw)", "turn right (yaw)"]) == "turn left / right (yaw)"
    assert merge_labels(["fire", "jump"]) == "fire / jump"
    assert merge_labels(["up", "up"]) == "up"
    assert merge_labels(["a", "b", "c"]) == "a / b / c"


def test_an_arms_bindings_are_grouped_by_the_catalogs_dimension_names():
    entry = CATALOG["PickCube"]
    spec = specs.BoundedArray((7,), np.float32, -1.0, 1.0)
    dims = action_dimensions(entry.source())
    assert dims == ("x", "y", "z", "roll", "pitch", "yaw", "gripper")
    rows = _rows(_groups(entry.controls, spec, dims=dims))
    assert list(rows) == ["Move", "Rotate", "Gripper"]
    assert [label for label, _ in rows["Move"]] == [
        "hand left / right",
        "hand away / nearer",
        "hand up / down",
    ]
    assert [label for label, _ in rows["Rotate"]] == [
        "tilt fingers away / nearer (roll)",
        "tilt fingers left / right (pitch)",
        "turn left / right (yaw)",
    ]
    left_right, _, up_down = (inputs for _, inputs in rows["Move"])
    assert left_right["keyboard"] == [["←"], ["→"]]  # the pair read left to right
    assert left_right["gamepad"] == [["left stick ←→"]]
    assert left_right["mouse"] == [["drag ←→"]]
    assert up_down["keyboard"] == [["W"], ["S"]]  # upper key first
    assert up_down["mouse"] == [["wheel"], ["Shift+drag ↑↓"]]
    [(grip, inputs)] = rows["Gripper"]
    assert grip == "close / open the gripper (toggle)"
    assert inputs == {
        "keyboard": [["Space"]],
        "mouse": [["right button"]],
        "phone": [["Grip"]],
        "touch": [["button A"]],
    }


def test_robosuite_reads_as_the_same_arm_in_its_own_frame():
    entry = CATALOG["Robosuite-PickPlaceCan"]
    dims = action_dimensions(entry.source())
    spec = specs.BoundedArray((7,), np.float32, -1.0, 1.0)
    rows = _rows(_groups(entry.controls, spec, dims=dims))
    assert [label for label, _ in rows["Move"]] == [
        "hand away / nearer",  # its x comes toward the camera
        "hand left / right",
        "hand up / down",
    ]
    roll, pitch, yaw = rows["Rotate"]
    assert roll[0] == "tilt fingers left / right"
    assert roll[1] == {"keyboard": [["R"], ["F"]], "spacemouse": [["roll"]]}
    assert pitch[0] == "tilt fingers away / nearer" and yaw[0] == "turn left / right (yaw)"


def test_fetch_names_its_four_dimensions_and_its_trigger():
    entry = CATALOG["FetchPickAndPlace"]
    dims = action_dimensions(entry.source())
    assert dims == ("x", "y", "z", "gripper")
    rows = _rows(_groups(entry.controls, specs.BoundedArray((4,), np.float32, -1, 1), dims=dims))
    assert list(rows) == ["Move", "Gripper"]
    assert rows["Gripper"][0][1]["gamepad"] == [["RT"]]  # RT squeezes the same gripper
    assert rows["Gripper"][0][1]["spacemouse"] == [["left button"]]


def test_a_games_actions_share_a_row_per_action_with_its_keys_in_bound_order():
    entry = CATALOG["LunarLander"]
    rows = _rows(_groups(entry.controls, specs.DiscreteArray(4)))
    assert list(rows) == ["Actions"]
    assert rows["Actions"] == [
        ("main engine", {"keyboard": [["↑"]], "gamepad": [["D-pad up"], ["A"]]}),
        ("left engine", {"keyboard": [["←"]], "gamepad": [["D-pad left"], ["left stick ←"]]}),
        ("right engine", {"keyboard": [["→"]], "gamepad": [["D-pad right"], ["left stick →"]]}),
    ]


def test_a_combination_says_what_its_keys_do_and_an_unlabelled_action_its_meaning():
    entry = CATALOG["Pong"]
    meanings = ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]
    labels = [
        label
        for label, _ in _rows(_groups(entry.controls, specs.DiscreteArray(6), meanings))["Actions"]
    ]
    assert labels == [
        "paddle up (RIGHT)",
        "paddle down (LEFT)",
        "serve (FIRE)",
        "paddle up (RIGHT) + serve (FIRE)",
        "paddle down (LEFT) + serve (FIRE)",
    ]
    bare = Controls(keys={"KeyA": 1, "KeyB": 2}, noop=0)
    rows = _rows(_groups(bare, specs.DiscreteArray(3), ["NOOP", "JUMP_HIGH", "DUCK"]))
    assert [label for label, _ in rows["Actions"]] == ["jump high", "duck"]


def test_unnamed_dimensions_and_unlabelled_keys_say_which_way_they_push():
    controls = Controls(keys={"KeyJ": [1.0, 0.0], "KeyL": [-1.0, 0.0], "KeyI": [0.0, 1.0]})
    rows = _rows(_groups(controls, space_to_spec(gym.spaces.Box(-1, 1, (2,)))))
    assert rows["Actions"] == [
        ("dimension 0 + / −", {"keyboard": [["J"], ["L"]]}),
        ("dimension 1 +", {"keyboard": [["I"]]}),
    ]


def test_a_row_says_whether_its_inputs_push_one_way_and_back_or_each_do_it_all():
    arm = _groups(CATALOG["PickCube"].controls, specs.BoundedArray((7,), np.float32, -1, 1))
    game = _groups(CATALOG["LunarLander"].controls, specs.DiscreteArray(4))
    both = Controls(keys={"KeyK": [1.0, 1.0]})
    vector = _groups(both, space_to_spec(gym.spaces.Box(-1, 1, (2,))))
    assert {r["kind"] for g in arm for r in g["rows"]} == {"dimension"}
    assert {r["kind"] for g in game for r in g["rows"]} == {"action"}
    assert [(r["kind"], r["inputs"]) for r in vector[0]["rows"]] == [
        ("vector", {"keyboard": [["K"]]})
    ]


def test_env_ready_carries_the_groups():
    entry = CATALOG["PickCube"]
    mapper = ActionMapper(specs.BoundedArray((7,), np.float32, -1, 1), entry.controls)
    ready = env_ready(
        "cube", {"controls": mapper.resolved()}, 1.0, "medium", action_dimensions(entry.source())
    )
    assert [g["name"] for g in ready["controls"]["groups"]] == ["Move", "Rotate", "Gripper"]
    assert ready["controls"]["legend"]  # each binding, as before (the mouse's hint reads it)
