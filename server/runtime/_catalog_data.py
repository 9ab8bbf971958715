"""The environments known to work here: default controls, mode, fps and settings schemas."""

from __future__ import annotations

from typing import Any

from server.runtime._catalog_pick_cube import (
    PICK_CUBE_CONTROLS,
    PICK_CUBE_REGENERATE,
    PICK_CUBE_SCHEMA,
    touch_axes,
)
from server.runtime._catalog_robosuite import (
    ROBOSUITE_CONTROLS,
    ROBOSUITE_DEFAULTS,
    ROBOSUITE_FPS,
    ROBOSUITE_REGENERATE,
    ROBOSUITE_SCHEMA,
)
from server.study_spec import AxisBinding, Controls


def _schema(**props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "additionalProperties": False}


BOOL = {"type": "boolean"}


def _entry(**fields: Any) -> dict[str, Any]:
    """One catalog entry's fields (see ``catalog.CatalogEntry``)."""
    return fields


def num(lo: float | None = None, hi: float | None = None, **extra: Any) -> dict[str, Any]:
    """A JSON Schema number with optional bounds."""
    out: dict[str, Any] = {"type": "number", **extra}
    if lo is not None:
        out["minimum"] = lo
    if hi is not None:
        out["maximum"] = hi
    return out


def integer(lo: int | None = None, hi: int | None = None) -> dict[str, Any]:
    """A JSON Schema integer with optional bounds."""
    return {**num(lo, hi), "type": "integer"}


ARROWS = {"ArrowLeft": "left", "ArrowRight": "right", "ArrowUp": "up", "ArrowDown": "down"}


def _atari_keys() -> dict[str, str]:
    """Keyboard combos → ALE action meanings (combos on arrows and Space)."""
    keys = {"Space": "FIRE"}
    dirs = {"UP": "ArrowUp", "DOWN": "ArrowDown", "LEFT": "ArrowLeft", "RIGHT": "ArrowRight"}
    names = list(dirs) + ["UPRIGHT", "UPLEFT", "DOWNRIGHT", "DOWNLEFT"]
    for name in names:
        parts = [dirs[d] for d in ("UP", "DOWN") if name.startswith(d)]
        parts += [dirs[d] for d in ("LEFT", "RIGHT") if name.endswith(d)]
        keys["+".join(parts)] = name
        keys["+".join([*parts, "Space"])] = name + "FIRE"
    return keys


ATARI_CONTROLS = Controls(
    keys=_atari_keys(),
    # Standard gamepad: A=0 fires, d-pad 12-15.
    buttons={0: "FIRE", 12: "UP", 13: "DOWN", 14: "LEFT", 15: "RIGHT"},
    axes=[
        AxisBinding(axis=0, negative="LEFT", positive="RIGHT"),
        AxisBinding(axis=1, negative="UP", positive="DOWN"),
    ],
    noop="NOOP",
    labels={"Space": "fire", **ARROWS},
)
# The action sets of the named games (ALE's minimal action sets), so that their default
# controls bind only actions the game has: no key that does nothing.
_FIRE_LR = ("NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE")
ATARI_ACTIONS: dict[str, tuple[str, ...]] = {
    "Breakout": ("NOOP", "FIRE", "RIGHT", "LEFT"),
    "SpaceInvaders": _FIRE_LR,
    "MsPacman": ("NOOP", "UP", "RIGHT", "LEFT", "DOWN", "UPRIGHT", "UPLEFT", "DOWNRIGHT",
                 "DOWNLEFT"),
    "Freeway": ("NOOP", "UP", "DOWN"),
}  # fmt: skip


def atari_controls(game: str) -> Controls:
    """The generic Atari controls cut down to ``game``'s actions (all of them if unknown)."""
    actions = ATARI_ACTIONS.get(game)
    if actions is None:
        return ATARI_CONTROLS
    c = ATARI_CONTROLS
    axes = [
        a.model_copy(update={"negative": a.negative if a.negative in actions else None,
                             "positive": a.positive if a.positive in actions else None})
        for a in c.axes
    ]  # fmt: skip
    keys = {k: v for k, v in c.keys.items() if v in actions}
    return Controls(
        keys=keys,
        buttons={b: v for b, v in c.buttons.items() if v in actions},
        axes=[a for a in axes if a.negative is not None or a.positive is not None],
        noop="NOOP",
        labels={k: v for k, v in c.labels.items() if k in keys},
    )


# Pong's paddle is vertical: ALE's RIGHT moves it up and LEFT moves it down.
PONG_CONTROLS = Controls(
    keys={"ArrowUp": "RIGHT", "ArrowDown": "LEFT", "Space": "FIRE",
          "ArrowUp+Space": "RIGHTFIRE", "ArrowDown+Space": "LEFTFIRE"},
    buttons={0: "FIRE", 12: "RIGHT", 13: "LEFT"},
    axes=[AxisBinding(axis=1, negative="RIGHT", positive="LEFT")],
    noop="NOOP",
    labels={"ArrowUp": "paddle up (RIGHT)", "ArrowDown": "paddle down (LEFT)",
            "Space": "serve (FIRE)"},
)  # fmt: skip
ATARI_SCHEMA = _schema(
    mode=integer(0),
    difficulty=integer(0),
    repeat_action_probability=num(0, 1, default=0.25),
    frameskip=integer(1, 16),
    full_action_space=BOOL,
    max_num_frames_per_episode=integer(1),
)

MINIGRID_CONTROLS = Controls(
    keys={
        "ArrowLeft": 0,
        "ArrowRight": 1,
        "ArrowUp": 2,
        "KeyP": 3,
        "KeyD": 4,
        "Space": 5,
        "Enter": 6,
    },
    buttons={14: 0, 15: 1, 12: 2, 0: 5, 2: 3, 1: 4},
    labels={
        "ArrowLeft": "turn left",
        "ArrowRight": "turn right",
        "ArrowUp": "forward",
        "KeyP": "pick up",
        "KeyD": "drop",
        "Space": "toggle / open",
        "Enter": "done",
    },
)
MINIGRID_SCHEMA = _schema(max_steps=integer(1), see_through_walls=BOOL, agent_view_size=integer(3))


def _lr(left: Any, right: Any, noop: Any, **labels: str) -> Controls:
    return Controls(
        keys={"ArrowLeft": left, "ArrowRight": right},
        buttons={14: left, 15: right},
        axes=[AxisBinding(axis=0, negative=left, positive=right)]
        if isinstance(left, int)
        else [AxisBinding(axis=0, dim=0, scale=float(right[0]))],
        noop=noop,
        labels=labels or {"ArrowLeft": "left", "ArrowRight": "right"},
    )


def _joint_controls(
    joints: list[tuple[str, str, str]], amount: float = 1.0, axes: bool = True
) -> Controls:
    """A key pair per action dimension (``+``/``-`` ``amount`` on it), and a stick axis each."""
    keys: dict[str, Any] = {}
    labels: dict[str, str] = {}
    dims = len(joints)
    for dim, (plus, minus, joint) in enumerate(joints):
        keys[plus] = [amount if i == dim else 0.0 for i in range(dims)]
        keys[minus] = [-amount if i == dim else 0.0 for i in range(dims)]
        labels[plus], labels[minus] = f"{joint} +", f"{joint} -"
    sticks = [AxisBinding(axis=i, dim=i, scale=amount) for i in range(dims)] if axes else []
    return Controls(keys=keys, axes=sticks, labels=labels)


def _walker_controls() -> Controls:
    return _joint_controls(
        [("KeyQ", "KeyA", "hip 1"), ("KeyW", "KeyS", "knee 1"), ("KeyO", "KeyL", "hip 2")]
        + [("KeyP", "Semicolon", "knee 2")]
    )


# Key pairs for MuJoCo's joints, one pair per action dimension (upper row +, middle row -).
_ROWS = [("KeyQ", "KeyA"), ("KeyW", "KeyS"), ("KeyE", "KeyD"), ("KeyR", "KeyF"),
         ("KeyT", "KeyG"), ("KeyY", "KeyH")]  # fmt: skip


def _mujoco_controls(dims: int, amount: float) -> Controls:
    if dims == 1:  # one force: the arrows
        return _joint_controls([("ArrowRight", "ArrowLeft", "push")], amount)
    return _joint_controls(
        [(plus, minus, f"joint {i + 1}") for i, (plus, minus) in enumerate(_ROWS[:dims])], amount
    )


# Fetch pick-and-place: the action is [dx, dy, dz, gripper] in [-1, 1] (1 = 5 cm per step;
# the gripper's value is added to its fingers' position each step: +1 opens, -1 closes).
# Seen from the front of the table (FETCH_CAMERA), the arrows move the hand on the screen's
# plane over the table, W/S raise and lower it; Space toggles the gripper shut and open.
# The same moves from a gamepad (left stick over the table, right stick up/down, RT squeezes
# the gripper as far as it is pulled), the mouse (drag on the picture over the table, the
# wheel or Shift+drag up/down, the right button toggles the gripper) and a SpaceMouse (its
# cap moves the hand as it is pushed: 3Dconnexion's axes are x right, y toward you, z down;
# its left button toggles the gripper).
FETCH_STEP = 0.3  # 1.5 cm per step at 25 steps/s: 37 cm/s, slow enough to line up a 5 cm cube
FETCH_SHUT = [0.0, 0.0, 0.0, -2.0]
FETCH_CONTROLS = Controls(
    keys={"ArrowUp": [-FETCH_STEP, 0.0, 0.0, 0.0], "ArrowDown": [FETCH_STEP, 0.0, 0.0, 0.0],
          "ArrowLeft": [0.0, -FETCH_STEP, 0.0, 0.0], "ArrowRight": [0.0, FETCH_STEP, 0.0, 0.0],
          "KeyW": [0.0, 0.0, FETCH_STEP, 0.0], "KeyS": [0.0, 0.0, -FETCH_STEP, 0.0],
          "Space": FETCH_SHUT, "MouseRight": FETCH_SHUT, "SpaceMouseLeft": FETCH_SHUT,
          "PhoneGrip": FETCH_SHUT, "TouchA": FETCH_SHUT},
    toggle=["Space", "MouseRight", "SpaceMouseLeft", "PhoneGrip", "TouchA"],
    buttons={7: FETCH_SHUT},  # RT
    analog=[7],
    axes=[AxisBinding(axis=0, dim=1, scale=FETCH_STEP),
          AxisBinding(axis=1, dim=0, scale=FETCH_STEP),
          AxisBinding(axis=3, dim=2, scale=-FETCH_STEP),
          AxisBinding(source="mouse", axis=0, dim=1, scale=FETCH_STEP),
          AxisBinding(source="mouse", axis=1, dim=0, scale=FETCH_STEP),
          AxisBinding(source="mouse", axis=2, dim=2, scale=FETCH_STEP),
          AxisBinding(source="mouse", axis=4, dim=2, scale=-FETCH_STEP),
          AxisBinding(source="spacemouse", axis=0, dim=1, scale=FETCH_STEP, deadzone=0.05),
          AxisBinding(source="spacemouse", axis=1, dim=0, scale=FETCH_STEP, deadzone=0.05),
          AxisBinding(source="spacemouse", axis=2, dim=2, scale=-FETCH_STEP, deadzone=0.05),
          # a paired phone (docs/study-format.md, "A paired phone"): tipped forward = away,
          # tipped right = right, twisted left (counter-clockwise) = up
          AxisBinding(source="phone", axis=0, dim=0, scale=-FETCH_STEP),
          AxisBinding(source="phone", axis=1, dim=1, scale=FETCH_STEP),
          AxisBinding(source="phone", axis=2, dim=2, scale=FETCH_STEP),
          # a touch screen (docs/study-format.md, "Touch"): pad 1 over the table, pad 2 up
          # and down, touch button A toggles the gripper
          *touch_axes(x=(1, FETCH_STEP), y=(0, FETCH_STEP), up=(2, -FETCH_STEP))],
    noop=[0.0, 0.0, 0.0, 1.0],  # the fingers open unless Space closed them
    labels={"ArrowUp": "hand away (toward the robot)", "ArrowDown": "hand nearer",
            "ArrowLeft": "hand left", "ArrowRight": "hand right", "KeyW": "hand up",
            "KeyS": "hand down", "Space": "close / open the gripper (toggle)",
            "MouseRight": "close / open the gripper (toggle)",
            "SpaceMouseLeft": "close / open the gripper (toggle)",
            "7": "close the gripper (as far as pulled)",
            "axis 0": "hand left / right", "axis 1": "hand away / nearer",
            "axis 3": "hand up / down", "mouse 0": "hand left / right",
            "mouse 1": "hand away / nearer", "mouse 2": "hand up / down",
            "mouse 4": "hand up / down", "spacemouse 0": "hand left / right",
            "spacemouse 1": "hand away / nearer", "spacemouse 2": "hand up / down",
            "PhoneGrip": "close / open the gripper (toggle)", "phone 0": "hand away / nearer",
            "phone 1": "hand right / left", "phone 2": "hand up / down",
            "TouchA": "gripper: close / open", "touch 0": "hand left / right",
            "touch 1": "hand away / nearer", "touch 3": "hand up / down",
            "touch 4": "hand away / nearer", "touch 5": "hand right / left"},
)  # fmt: skip
# A view from the front of the table, facing the robot (the env's own is from its side).
FETCH_CAMERA = {"distance": 1.5, "azimuth": 180.0, "elevation": -35.0,
                "lookat": [1.3, 0.75, 0.45]}  # fmt: skip
FETCH_SCHEMA = _schema(
    reward_type={"type": "string", "enum": ["sparse", "dense"]},
    max_episode_steps=integer(1),
    width=integer(64, 1024),
    height=integer(64, 1024),
    default_camera_config={"type": "object"},
)


DMC_SCHEMA = _schema(
    domain_name={"type": "string"},
    task_name={"type": "string"},
    task_kwargs={"type": "object"},
    environment_kwargs={"type": "object"},
)
CART_CONTROLS = Controls(
    keys={"ArrowLeft": [-1.0], "ArrowRight": [1.0]},
    axes=[AxisBinding(axis=0, dim=0)],
    labels={"ArrowLeft": "push left", "ArrowRight": "push right"},
)
# Seen from the task's first camera (point_mass: from above; ball_in_cup: from the front):
# +x right, +y (or +z) up on the screen; a gamepad's stick y is +1 down.
PLANE_CONTROLS = Controls(
    keys={"ArrowRight": [1.0, 0.0], "ArrowLeft": [-1.0, 0.0],
          "ArrowUp": [0.0, 1.0], "ArrowDown": [0.0, -1.0]},
    axes=[AxisBinding(axis=0, dim=0), AxisBinding(axis=1, dim=1, scale=-1.0)],
    labels={"ArrowRight": "right", "ArrowLeft": "left", "ArrowUp": "up", "ArrowDown": "down"},
)  # fmt: skip


# An arm's end-effector action, by dimension: the moves, the turns, the gripper.
ARM_POSE = ("x", "y", "z", "roll", "pitch", "yaw", "gripper")
ARM_XYZ = ("x", "y", "z", "gripper")

# Each entry: key, suite, Gymnasium id or dm_env factory, fixed kwargs, mode, fps, controls,
# settings schema, and ``defaults``: settings its source starts with (the editor's; a study
# may change or drop them). An async entry's fps is the environment's real pace (Gymnasium's
# ``render_fps``; 60 Hz / frameskip for Atari), unless a person cannot play it at that pace:
# then fps is slower and ``pace`` says why (the editor shows it instead of a speed warning).
# tests/runtime/test_conformance.py checks both.
ENTRIES: list[dict[str, Any]] = [
    # -- classic control -------------------------------------------------------------------
    _entry(key="CartPole", suite="classic", id="CartPole-v1", mode="async", fps=20,
         controls=_lr(0, 1, 0), schema=_schema(sutton_barto_reward=BOOL),
         pace="slowed to 0.4× real time on purpose: at its real 50 steps/s the pole falls "
              "within half a second, before a person can react (set fps 50 for real time)"),
    _entry(key="MountainCar", suite="classic", id="MountainCar-v0", mode="async", fps=30,
         controls=_lr(0, 2, 1), schema=_schema(goal_velocity=num(0))),
    _entry(key="MountainCarContinuous", suite="classic", id="MountainCarContinuous-v0",
         mode="async", fps=30, controls=_lr([-1.0], [1.0], [0.0]),
         schema=_schema(goal_velocity=num(0))),
    _entry(key="Acrobot", suite="classic", id="Acrobot-v1", mode="async", fps=15,
         controls=_lr(0, 2, 1, ArrowLeft="torque -1", ArrowRight="torque +1"), schema=_schema()),
    _entry(key="Pendulum", suite="classic", id="Pendulum-v1", mode="async", fps=30,
         controls=_lr([-2.0], [2.0], [0.0]), schema=_schema(g=num(0, 20))),
    # -- Box2D ------------------------------------------------------------------------------
    _entry(key="LunarLander", suite="box2d", id="LunarLander-v3", mode="async", fps=50,
         controls=Controls(
             keys={"ArrowUp": 2, "ArrowLeft": 1, "ArrowRight": 3},
             buttons={12: 2, 0: 2, 14: 1, 15: 3},
             axes=[AxisBinding(axis=0, negative=1, positive=3)],
             noop=0,
             labels={"ArrowUp": "main engine", "ArrowLeft": "left engine",
                     "ArrowRight": "right engine"}),
         schema=_schema(gravity=num(-11.99, -0.01), enable_wind=BOOL, wind_power=num(0, 20),
                        turbulence_power=num(0, 2))),
    _entry(key="LunarLanderContinuous", suite="box2d", id="LunarLanderContinuous-v3",
         mode="async", fps=50,
         controls=Controls(
             keys={"ArrowUp": [1.0, 0.0], "ArrowLeft": [0.0, -1.0], "ArrowRight": [0.0, 1.0]},
             axes=[AxisBinding(axis=1, dim=0, scale=-1.0), AxisBinding(axis=0, dim=1)],
             noop=[-1.0, 0.0],
             labels={"ArrowUp": "main engine", "ArrowLeft": "left engine",
                     "ArrowRight": "right engine"}),
         schema=_schema(gravity=num(-11.99, -0.01), enable_wind=BOOL, wind_power=num(0, 20),
                        turbulence_power=num(0, 2))),
    _entry(key="CarRacing", suite="box2d", id="CarRacing-v3", mode="async", fps=50,
         controls=Controls(
             keys={"ArrowLeft": [-1.0, 0.0, 0.0], "ArrowRight": [1.0, 0.0, 0.0],
                   "ArrowUp": [0.0, 1.0, 0.0], "ArrowDown": [0.0, 0.0, 0.8]},
             buttons={7: [0.0, 1.0, 0.0], 6: [0.0, 0.0, 0.8]},
             axes=[AxisBinding(axis=0, dim=0)],
             labels={"ArrowLeft": "steer left", "ArrowRight": "steer right",
                     "ArrowUp": "gas", "ArrowDown": "brake"}),
         schema=_schema(lap_complete_percent=num(0, 1), domain_randomize=BOOL)),
    _entry(key="CarRacingDiscrete", suite="box2d", id="CarRacing-v3",
         kwargs={"continuous": False}, mode="async", fps=50,
         controls=Controls(
             keys={"ArrowRight": 2, "ArrowLeft": 1, "ArrowUp": 3, "ArrowDown": 4},
             buttons={15: 2, 14: 1, 7: 3, 6: 4}, noop=0,
             labels={"ArrowLeft": "steer left", "ArrowRight": "steer right",
                     "ArrowUp": "gas", "ArrowDown": "brake"}),
         schema=_schema(continuous=BOOL, lap_complete_percent=num(0, 1), domain_randomize=BOOL)),
    _entry(key="BipedalWalker", suite="box2d", id="BipedalWalker-v3", mode="async", fps=50,
         controls=_walker_controls(), schema=_schema(hardcore=BOOL)),
    # -- MiniGrid ---------------------------------------------------------------------------
    *[
        _entry(key=gid.removesuffix("-v0"), suite="minigrid", id=gid, mode="sync", fps=10,
             controls=MINIGRID_CONTROLS, schema=MINIGRID_SCHEMA)
        for gid in ("MiniGrid-Empty-8x8-v0", "MiniGrid-Empty-16x16-v0",
                    "MiniGrid-DoorKey-8x8-v0", "MiniGrid-FourRooms-v0",
                    "MiniGrid-LavaGapS7-v0")
    ],
    # -- Atari (named ones; any other ALE/<Game>-v5 gets the same defaults) -----------------
    *[
        # fps 15 × ALE's default frameskip 4 = the Atari's 60 Hz: real speed
        _entry(key=game, suite="atari", id=f"ALE/{game}-v5", mode="async", fps=15,
             controls=PONG_CONTROLS if game == "Pong" else atari_controls(game),
             schema=ATARI_SCHEMA)
        for game in ("Pong", "Breakout", "SpaceInvaders", "MsPacman", "Seaquest", "Freeway")
    ],
    # -- optional suites ----------------------------------------------------------------------
    *[
        # fps = 1 / dt (Hopper's dt of 8 ms is faster than the 120 fps limit: not real speed)
        _entry(key=name, suite="mujoco", id=f"{name}-v5", mode="async", fps=fps,
             controls=_mujoco_controls(dims, amount), pace=pace,
             schema=_schema(frame_skip=integer(1), reset_noise_scale=num(0)))
        # action bounds: InvertedPendulum's force is in [-3, 3], the others' torques [-1, 1]
        for name, dims, fps, amount, pace in (
            ("InvertedPendulum", 1, 25, 3.0, None), ("HalfCheetah", 6, 20, 1.0, None),
            ("Hopper", 3, 20, 1.0, "slowed to 0.2× real time: its real 125 steps/s is past "
             "the 120 fps limit, and too fast for a person to steer its joints by keys"))
    ],
    # 25 Hz is Fetch's control rate (20 physics steps of 2 ms); 256 px keeps step + render
    # near 10 ms (docs/runtime.md, "Robot manipulation"); 1500 steps = a minute (its own
    # limit of 50 steps is 2 s, made for agents).
    _entry(key="FetchPickAndPlace", suite="robotics", id="FetchPickAndPlace-v4", mode="async",
         fps=25, controls=FETCH_CONTROLS, schema=FETCH_SCHEMA, dimensions=ARM_XYZ,
         defaults={"max_episode_steps": 1500, "width": 256, "height": 256,
                   "default_camera_config": FETCH_CAMERA}, manipulation=True),
    # ours: 25 Hz like Fetch; step + 2 images of 128 px + a 256 px frame cost ~5 ms
    # (docs/runtime.md, "Robot manipulation")
    _entry(key="PickCube", suite="studio", id="RLDSStudio/PickCube-v0", mode="async", fps=25,
         controls=PICK_CUBE_CONTROLS, schema=PICK_CUBE_SCHEMA, regenerate=PICK_CUBE_REGENERATE,
         dimensions=ARM_POSE, manipulation=True),
    # robosuite 1.5 (its own runtime): the RLDS paper's PickPlaceCan and Lift, the Panda arm
    # on an operational-space pose controller, 20 steps/s (its control rate), two cameras
    # (docs/runtime.md, "Robosuite")
    *[
        _entry(key=f"Robosuite-{task}", suite="robosuite", id=f"RLDSStudio/Robosuite-{task}-v0",
             mode="async", fps=ROBOSUITE_FPS, controls=ROBOSUITE_CONTROLS,
             schema=ROBOSUITE_SCHEMA, defaults=dict(ROBOSUITE_DEFAULTS),
             regenerate=ROBOSUITE_REGENERATE, dimensions=ARM_POSE, manipulation=True)
        for task in ("PickPlaceCan", "Lift")
    ],
    _entry(key="Crafter", suite="crafter", factory="server.runtime.suites:crafter_env",
         mode="sync", fps=10,
         controls=Controls(
             keys={"ArrowLeft": 1, "ArrowRight": 2, "ArrowUp": 3, "ArrowDown": 4,
                   "Space": 5, "Tab": 6, "KeyT": 8, "KeyR": 7, "Digit1": 9, "Digit2": 10,
                   "Digit3": 11, "Digit4": 12, "Digit5": 13, "Digit6": 14, "KeyQ": 15,
                   "KeyE": 16},
             noop=0,
             labels={"Space": "collect / attack", "Tab": "sleep", "KeyR": "place stone",
                     "KeyT": "place table"}),
         schema=_schema(area=integer(16), size=integer(64, 1024), length=integer(1))),
    _entry(key="MiniHack-Room", suite="nethack", id="MiniHack-Room-5x5-v0",
         # the 9×9 tiles round the hero (144 px, the whole 5×5 room): "pixel", the whole
         # 79×21 map, is a 1264×336 frame and 1.3 MB of observation a step
         kwargs={"render_mode": None, "observation_keys": ["glyphs", "pixel_crop"]},
         mode="sync", fps=10,
         # NetHack's compass: N E S W, then NE SE SW NW (two arrows at once, or its y u b n)
         controls=Controls(keys={"ArrowUp": 0, "ArrowRight": 1, "ArrowDown": 2, "ArrowLeft": 3,
                                 "ArrowUp+ArrowRight": 4, "ArrowDown+ArrowRight": 5,
                                 "ArrowDown+ArrowLeft": 6, "ArrowUp+ArrowLeft": 7,
                                 "KeyU": 4, "KeyN": 5, "KeyB": 6, "KeyY": 7},
                           buttons={12: 0, 15: 1, 13: 2, 14: 3},
                           labels={"ArrowUp": "north", "ArrowRight": "east", "ArrowDown": "south",
                                   "ArrowLeft": "west", "KeyU": "north-east",
                                   "KeyN": "south-east", "KeyB": "south-west",
                                   "KeyY": "north-west"}),
         schema=_schema(max_episode_steps=integer(1))),
    # dm_control (its own runtime): a 480 px frame from the task's first camera; 25 steps/s
    # of 40 ms, real time where the task's control step can be set to 40 ms
    _entry(key="dm_control-cartpole-swingup", suite="dm_control", factory="dm_control.suite:load",
         kwargs={"domain_name": "cartpole", "task_name": "swingup"}, mode="async", fps=25,
         defaults={"environment_kwargs": {"control_timestep": 0.04}},  # 4 physics steps of 10 ms
         controls=CART_CONTROLS, schema=DMC_SCHEMA),
    _entry(key="dm_control-cartpole-balance", suite="dm_control", factory="dm_control.suite:load",
         kwargs={"domain_name": "cartpole", "task_name": "balance"}, mode="async", fps=25,
         defaults={"environment_kwargs": {"control_timestep": 0.04}},
         controls=CART_CONTROLS, schema=DMC_SCHEMA),
    # [x, y] forces seen from above; 2 physics steps of 20 ms a step
    _entry(key="dm_control-point_mass-easy", suite="dm_control", factory="dm_control.suite:load",
         kwargs={"domain_name": "point_mass", "task_name": "easy"}, mode="async", fps=25,
         defaults={"environment_kwargs": {"control_timestep": 0.04}},
         controls=PLANE_CONTROLS, schema=DMC_SCHEMA),
    # [x, z] forces on the cup; its loader fixes the control step at 20 ms (50 steps/s)
    _entry(key="dm_control-ball_in_cup-catch", suite="dm_control",
         factory="dm_control.suite:load",
         kwargs={"domain_name": "ball_in_cup", "task_name": "catch"}, mode="async", fps=25,
         pace="slowed to 0.5× real time: its real 50 steps/s leaves 20 ms a step, less than "
              "its 480 px frame costs on the CPU renderer",
         controls=PLANE_CONTROLS, schema=DMC_SCHEMA),
]  # fmt: skip

# suite → (modules that must import, pyproject optional-dependency group that installs it in
# the app's environment, or None: core, or a runtime's)
SUITES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "classic": (("gymnasium", "pygame"), None),
    "box2d": (("gymnasium", "Box2D"), None),
    "minigrid": (("minigrid",), None),
    "atari": (("ale_py",), None),
    "mujoco": (("mujoco",), "mujoco"),
    "crafter": (("crafter",), "crafter"),
    # these run in runtimes of their own (server/runtime/runtimes.py), not the app's
    "robotics": (("gymnasium_robotics", "mujoco"), None),
    "studio": (("mujoco",), None),  # server/envs/pick_cube.py: ours, in the robotics runtime
    "nethack": (("nle", "minihack"), None),
    "dm_control": (("dm_control",), None),
    "robosuite": (("robosuite",), None),
}
