"""The catalog's defaults for our PickCube (server/envs/pick_cube.py): controls and settings."""

from __future__ import annotations

from typing import Any

from server.runtime.regeneration import Regenerable
from server.study_spec import AxisBinding, Controls


def end_effector_keys(
    table: tuple[tuple[str, int, int, str], ...],
    move: float,
    turn: float,
    toggles: tuple[str, ...],
) -> tuple[dict[str, Any], dict[str, str]]:
    """Keys and labels of a 7-D end-effector action (3 moves, 3 turns, the gripper): each
    ``(code, dim, sign, label)`` of ``table`` moves dimension ``dim`` by ``sign`` × ``move``
    (``turn`` for a rotation); each of ``toggles`` adds 2 to the gripper's open -1 (a latch
    that shuts it)."""
    keys: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for code, dim, sign, label in table:
        vector = [0.0] * 7
        vector[dim] = sign * (move if dim < 3 else turn)
        keys[code], labels[code] = vector, label
    for code in toggles:  # one latch: any of them shuts, opens
        keys[code], labels[code] = [0.0] * 6 + [2.0], "close / open the gripper (toggle)"
    return keys, labels


# Our pick-cube (server/envs/pick_cube.py): [dx, dy, dz, droll, dpitch, dyaw, gripper] in
# [-1, 1]; gripper -1 open, +1 shut. Seen from its ``front`` camera: arrows move the hand over
# the table, W/S up and down, A/D turn it, Q/E and R/F tilt it; Space toggles the gripper shut.
# The same moves from a gamepad (sticks), the mouse (drag on the picture over the table, the
# wheel or Shift+drag up/down, Shift+drag sideways turns it, the right button toggles the
# gripper) and a paired phone (tipped forward: away, tipped right: right, twisted left: up,
# as Fetch's; its Grip toggles the gripper) and a touch screen (pad 1 moves the hand over the
# table as the mouse's drag does, pad 2 up / down and turns it, touch button A toggles the
# gripper, tipped forward: away, tipped right: right): docs/study-format.md, "Devices".
def _pick_cube_controls(move: float = 0.5, turn: float = 0.5) -> Controls:
    keys, labels = end_effector_keys(
        (
            ("ArrowRight", 0, 1, "hand right"),
            ("ArrowLeft", 0, -1, "hand left"),
            ("ArrowUp", 1, 1, "hand away"),
            ("ArrowDown", 1, -1, "hand nearer"),
            ("KeyW", 2, 1, "hand up"),
            ("KeyS", 2, -1, "hand down"),
            ("KeyQ", 3, 1, "tilt fingers away (roll)"),
            ("KeyE", 3, -1, "tilt fingers nearer (roll)"),
            ("KeyR", 4, 1, "tilt fingers left (pitch)"),
            ("KeyF", 4, -1, "tilt fingers right (pitch)"),
            ("KeyA", 5, 1, "turn left (yaw)"),
            ("KeyD", 5, -1, "turn right (yaw)"),
        ),
        move,
        turn,
        ("Space", "MouseRight", "PhoneGrip", "TouchA"),
    )
    labels["TouchA"] = "gripper: close / open"
    labels.update({"axis 0": "hand left / right", "axis 1": "hand away / nearer",
                   "axis 3": "hand up / down", "axis 2": "turn (yaw)",
                   "mouse 0": "hand left / right", "mouse 1": "hand away / nearer",
                   "mouse 2": "hand up / down", "mouse 3": "turn (yaw)",
                   "mouse 4": "hand up / down", "phone 0": "hand away / nearer",
                   "phone 1": "hand right / left", "phone 2": "hand up / down",
                   "touch 0": "hand left / right", "touch 1": "hand away / nearer",
                   "touch 2": "turn (yaw)", "touch 3": "hand up / down",
                   "touch 4": "hand away / nearer", "touch 5": "hand right / left"})  # fmt: skip
    return Controls(
        keys=keys, toggle=["Space", "MouseRight", "PhoneGrip", "TouchA"], labels=labels,
        axes=[AxisBinding(axis=0, dim=0, scale=move), AxisBinding(axis=1, dim=1, scale=-move),
              AxisBinding(axis=3, dim=2, scale=-move), AxisBinding(axis=2, dim=5, scale=-turn),
              # drag right: right; drag down: nearer; the wheel away or Shift+drag up: up;
              # Shift+drag right: turn right
              AxisBinding(source="mouse", axis=0, dim=0, scale=move),
              AxisBinding(source="mouse", axis=1, dim=1, scale=-move),
              AxisBinding(source="mouse", axis=2, dim=2, scale=move),
              AxisBinding(source="mouse", axis=3, dim=5, scale=-turn),
              AxisBinding(source="mouse", axis=4, dim=2, scale=-move),
              # a paired phone: tipped forward = away, tipped right = right, twisted left = up
              AxisBinding(source="phone", axis=0, dim=1, scale=move),
              AxisBinding(source="phone", axis=1, dim=0, scale=move),
              AxisBinding(source="phone", axis=2, dim=2, scale=move),
              *touch_axes(x=(0, move), y=(1, -move), up=(2, -move), turn=(5, -turn))],
        noop=[0.0] * 6 + [-1.0],  # the fingers open unless Space closed them
    )  # fmt: skip


def touch_axes(
    x: tuple[int, float],
    y: tuple[int, float],
    up: tuple[int, float],
    turn: tuple[int, float] | None = None,
) -> list[AxisBinding]:
    """An arm's touch controls (web/player/touchpad.js): pad 1 drives ``x`` (dragged right)
    and ``y`` (dragged down), pad 2 ``up`` (dragged down) and ``turn`` (dragged right), each
    a ``(dim, scale)``; tipped forward moves as pad 1 dragged up, tipped right as dragged
    right."""
    (xd, xs), (yd, ys), (ud, us) = x, y, up
    axes = [
        AxisBinding(source="touch", axis=0, dim=xd, scale=xs),
        AxisBinding(source="touch", axis=1, dim=yd, scale=ys),
        AxisBinding(source="touch", axis=3, dim=ud, scale=us),
        AxisBinding(source="touch", axis=4, dim=yd, scale=-ys),
        AxisBinding(source="touch", axis=5, dim=xd, scale=xs),
    ]
    if turn is not None:
        axes.insert(2, AxisBinding(source="touch", axis=2, dim=turn[0], scale=turn[1]))
    return axes


PICK_CUBE_CONTROLS = _pick_cube_controls()
PICK_CUBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reward_type": {"type": "string", "enum": ["sparse", "dense"]},
        "max_episode_steps": {"type": "integer", "minimum": 1},
        "render_size": {"type": "integer", "minimum": 64, "maximum": 1024},
        "image_size": {"type": "integer", "minimum": 0, "maximum": 512},
        "terminate_on_success": {"type": "boolean"},
        "image_cameras": {"type": "array", "items": {"type": "string", "enum": ["front", "wrist"]}},
        "cube_color": {"type": "string", "enum": ["red", "green", "blue", "yellow"]},
    },
    "additionalProperties": False,
}
# an export draws the observation's images again at another size, from other cameras
# (server/runtime/regeneration.py); 0 (no images) is not a size to regenerate at
PICK_CUBE_REGENERATE = Regenerable("image_size", (32, 512), "image_cameras", ("front", "wrist"))
