"""The catalog's defaults for our PickCube (server/envs/pick_cube.py): controls and settings."""

from __future__ import annotations

from typing import Any

from server.study_spec import AxisBinding, Controls


# Our pick-cube (server/envs/pick_cube.py): [dx, dy, dz, droll, dpitch, dyaw, gripper] in
# [-1, 1]; gripper -1 open, +1 shut. Seen from its ``front`` camera: arrows move the hand over
# the table, W/S up and down, A/D turn it, Q/E and R/F tilt it; Space toggles the gripper shut.
def _pick_cube_controls(move: float = 0.5, turn: float = 0.5) -> Controls:
    keys: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for code, dim, sign, label in (
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
    ):
        vector = [0.0] * 7
        vector[dim] = sign * (move if dim < 3 else turn)
        keys[code], labels[code] = vector, label
    keys["Space"] = [0.0] * 6 + [2.0]
    labels["Space"] = "close / open the gripper (toggle)"
    labels.update({"axis 0": "hand left / right", "axis 1": "hand away / nearer",
                   "axis 3": "hand up / down", "axis 2": "turn (yaw)"})  # fmt: skip
    return Controls(
        keys=keys, toggle=["Space"], labels=labels,
        axes=[AxisBinding(axis=0, dim=0, scale=move), AxisBinding(axis=1, dim=1, scale=-move),
              AxisBinding(axis=3, dim=2, scale=-move), AxisBinding(axis=2, dim=5, scale=-turn)],
        noop=[0.0] * 6 + [-1.0],  # the fingers open unless Space closed them
    )  # fmt: skip


PICK_CUBE_CONTROLS = _pick_cube_controls()
PICK_CUBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reward_type": {"type": "string", "enum": ["sparse", "dense"]},
        "max_episode_steps": {"type": "integer", "minimum": 1},
        "render_size": {"type": "integer", "minimum": 64, "maximum": 1024},
        "image_size": {"type": "integer", "minimum": 0, "maximum": 512},
        "terminate_on_success": {"type": "boolean"},
    },
    "additionalProperties": False,
}
