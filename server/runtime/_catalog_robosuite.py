"""The catalog's robosuite tasks (server/envs/robosuite_tasks.py): controls and settings.

They build only in the robosuite environment runtime (requirements/runtimes/robosuite.in).
"""

from __future__ import annotations

from typing import Any

from server.runtime._catalog_pick_cube import end_effector_keys, touch_axes
from server.runtime.regeneration import Regenerable
from server.study_spec import AxisBinding, Controls

ROBOSUITE_FPS = 20  # robosuite's control_freq (the env's render_fps)
ROBOSUITE_MAX_STEPS = 1200  # a minute at 20 steps a second (the registrations' time limit)


# robosuite's OSC_POSE action: [dx, dy, dz, drx, dry, drz, gripper] in [-1, 1], deltas in the
# robot base's frame (1 = 5 cm or 0.5 rad of goal; the hand gets ~a fifth of it a step),
# gripper: its sign, -1 open, +1 shut. The robot faces the ``front`` camera (robosuite's
# agentview), so on its picture +x comes toward the camera, +y goes right, +z up (measured by
# rendering: tests/runtime/in_robosuite_runtime.py). Arrows move the hand over the table as
# seen from that camera, W/S up and down, A/D turn it, Q/E and R/F tilt it; Space toggles
# the gripper shut. A held arrow (0.5) moves the hand ~11 cm/s. The same moves from a
# gamepad (sticks; RT pulled past half way shuts: the gripper takes only the sign), the
# mouse (drag on the picture, the wheel or Shift+drag up and down, Shift+drag sideways turns
# it, the right button toggles the gripper), a SpaceMouse (all six axes, its left button
# toggles the gripper) and a paired phone (tipped forward: away, tipped right: right,
# twisted left: up, as Fetch's; its Grip toggles the gripper) and a touch screen (pads and
# tilt as PickCube's, touch button A toggles the gripper): docs/study-format.md, "Devices".
def _robosuite_controls(move: float = 0.5, turn: float = 0.3) -> Controls:
    toggles = ["Space", "MouseRight", "SpaceMouseLeft", "PhoneGrip", "TouchA"]  # one latch
    keys, labels = end_effector_keys(
        (
            ("ArrowRight", 1, 1, "hand right"),
            ("ArrowLeft", 1, -1, "hand left"),
            ("ArrowUp", 0, -1, "hand away"),
            ("ArrowDown", 0, 1, "hand nearer"),
            ("KeyW", 2, 1, "hand up"),
            ("KeyS", 2, -1, "hand down"),
            ("KeyQ", 4, 1, "tilt fingers away"),
            ("KeyE", 4, -1, "tilt fingers nearer"),
            ("KeyR", 3, -1, "tilt fingers left"),
            ("KeyF", 3, 1, "tilt fingers right"),
            ("KeyA", 5, 1, "turn left (yaw)"),
            ("KeyD", 5, -1, "turn right (yaw)"),
        ),
        move,
        turn,
        tuple(toggles),
    )
    labels.update({"7": "close the gripper (pulled past half way)",
                   "axis 0": "hand left / right", "axis 1": "hand away / nearer",
                   "axis 3": "hand up / down", "axis 2": "turn (yaw)",
                   "mouse 0": "hand left / right", "mouse 1": "hand away / nearer",
                   "mouse 2": "hand up / down", "mouse 3": "turn (yaw)",
                   "mouse 4": "hand up / down",
                   "spacemouse 0": "hand left / right", "spacemouse 1": "hand away / nearer",
                   "spacemouse 2": "hand up / down", "spacemouse 3": "tilt fingers away / nearer",
                   "spacemouse 4": "tilt fingers left / right", "spacemouse 5": "turn (yaw)",
                   "phone 0": "hand away / nearer", "phone 1": "hand right / left",
                   "phone 2": "hand up / down", "TouchA": "gripper: close / open",
                   "touch 0": "hand left / right", "touch 1": "hand away / nearer",
                   "touch 2": "turn (yaw)", "touch 3": "hand up / down",
                   "touch 4": "hand away / nearer", "touch 5": "hand right / left"})  # fmt: skip
    sm = 0.05  # the SpaceMouse's dead zone (as Fetch's)
    return Controls(
        keys=keys, toggle=toggles, labels=labels,
        buttons={7: [0.0] * 6 + [2.0]},  # RT
        analog=[7],
        axes=[# sticks: left x right, left y (down +) nearer, right y (down +) down, right x yaw
              AxisBinding(axis=0, dim=1, scale=move), AxisBinding(axis=1, dim=0, scale=move),
              AxisBinding(axis=3, dim=2, scale=-move), AxisBinding(axis=2, dim=5, scale=-turn),
              # drag right: right; drag down: nearer; the wheel away or Shift+drag up: up;
              # Shift+drag right: turn right
              AxisBinding(source="mouse", axis=0, dim=1, scale=move),
              AxisBinding(source="mouse", axis=1, dim=0, scale=move),
              AxisBinding(source="mouse", axis=2, dim=2, scale=move),
              AxisBinding(source="mouse", axis=3, dim=5, scale=-turn),
              AxisBinding(source="mouse", axis=4, dim=2, scale=-move),
              # SpaceMouse: x right +, y toward you +, z down +; rx tilts about its x (the
              # picture's right: dim 4), ry about its y (toward you: dim 3), rz twists
              AxisBinding(source="spacemouse", axis=0, dim=1, scale=move, deadzone=sm),
              AxisBinding(source="spacemouse", axis=1, dim=0, scale=move, deadzone=sm),
              AxisBinding(source="spacemouse", axis=2, dim=2, scale=-move, deadzone=sm),
              AxisBinding(source="spacemouse", axis=3, dim=4, scale=turn, deadzone=sm),
              AxisBinding(source="spacemouse", axis=4, dim=3, scale=turn, deadzone=sm),
              AxisBinding(source="spacemouse", axis=5, dim=5, scale=-turn, deadzone=sm),
              # a paired phone: tipped forward = away, tipped right = right, twisted left = up
              AxisBinding(source="phone", axis=0, dim=0, scale=-move),
              AxisBinding(source="phone", axis=1, dim=1, scale=move),
              AxisBinding(source="phone", axis=2, dim=2, scale=move),
              # touch: pad 1 right = right (+y), down = nearer (+x); pad 2 down = down
              *touch_axes(x=(1, move), y=(0, move), up=(2, -move), turn=(5, -turn))],
        noop=[0.0] * 6 + [-1.0],  # the fingers open unless Space closed them
    )  # fmt: skip


ROBOSUITE_CONTROLS = _robosuite_controls()
ROBOSUITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "max_episode_steps": {"type": "integer", "minimum": 1, "maximum": 72000},
        # both cameras are drawn every step: 128 px 25-30 ms a step on 2 CPU cores, 256 px
        # ~7 ms more and 4x the recorded images (server/envs/robosuite_tasks.py)
        "image_size": {"type": "integer", "minimum": 32, "maximum": 512},
        "render_size": {"type": "integer", "minimum": 64, "maximum": 1024},
        "reward_shaping": {"type": "boolean"},
        "terminate_on_success": {"type": "boolean"},
        "shadows": {"type": "boolean"},  # shadows and reflections: ~2x the step time
        "antialias": {"type": "boolean"},  # 4x MSAA: +13-27 ms a step
        "camera": {"type": "string", "enum": ["front", "wrist"]},
    },
    "additionalProperties": False,
}
# an export draws both cameras' images again at another size (server/runtime/regeneration.py)
ROBOSUITE_REGENERATE = Regenerable("image_size", (32, 512))
ROBOSUITE_DEFAULTS: dict[str, Any] = {"max_episode_steps": ROBOSUITE_MAX_STEPS, "image_size": 128}
