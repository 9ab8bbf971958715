"""Pick up a cube with a floating parallel-jaw gripper: a small MuJoCo task of our own.

A table, a 4 cm cube placed from the seed, and a gripper body welded to a mocap target. The
action is a 7-D ``Box(-1, 1)``::

    [dx, dy, dz, droll, dpitch, dyaw, gripper]

- ``dx, dy, dz``: the target's move this step, in the world frame, ``1`` = :data:`POS_STEP`
  metres (x is to the right seen from the ``front`` camera, y away from it, z up);
- ``droll, dpitch, dyaw``: an axis-angle rotation about the world x, y and z axes applied to
  the target's orientation, ``1`` = :data:`ROT_STEP` radians;
- ``gripper``: where the fingers go, absolute: ``-1`` wide open, ``+1`` shut (in between:
  in between).

The target stays inside :data:`WORKSPACE`; the gripper follows it through a weld, so it
stops at the table and the cube. The episode succeeds (reward 1, terminated, ``info
["is_success"]``) when the cube's centre is :data:`LIFT_HEIGHT` above its resting height;
``reward_type="dense"`` adds the shaping ``-distance(fingertips, cube) + height lifted``.

The observation holds the state vector (:data:`STATE_FIELDS`) and, unless ``image_size`` is
0, one image per camera of ``image_cameras`` (by default both, ``front`` and ``wrist``), so
what a policy sees does not depend on the camera a person watched, and ``sim_state``: MuJoCo's
integration state (``mj_getState``, ``mjSTATE_INTEGRATION``: time, qpos, qvel, warm start,
controls, mocap...) at the start of the step's last physics substep, the state whose
positions the observation shows (MuJoCo's step leaves the positions it computed before
integrating). ``render()`` draws :attr:`render_camera` at ``render_size`` px;
:meth:`render_from` any camera. Everything is deterministic from the reset's seed.

On the play path (:meth:`defer_images`) a step draws no observation image (zeros of their
shape); :meth:`restore_observation` draws them afterwards from the step's ``sim_state``: the
state set and the last substep run again, which gives the step's observation bit for bit.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from server.envs._images import placeholder

POS_STEP = 0.02  # m per step at |action| = 1 (0.5 m/s at 25 steps/s)
ROT_STEP = 0.1  # rad per step at |action| = 1
FINGER_OPEN = 0.04  # m each finger travels: an 8 cm opening
CUBE_HALF = 0.02  # m
LIFT_HEIGHT = 0.08  # m above the cube's resting height counts as lifted
CONTROL_HZ = 25
PHYSICS_DT = 0.002
SUBSTEPS = round(1 / (CONTROL_HZ * PHYSICS_DT))
START = np.array([0.0, 0.0, 0.25])  # the gripper's starting position (fingers pointing down)
WORKSPACE = (np.array([-0.3, -0.3, 0.08]), np.array([0.3, 0.3, 0.45]))
CUBE_RANGE = 0.12  # the cube starts in [-r, r]² on the table
CAMERAS = ("front", "wrist")
# the cube's colour (a setting that tasks can vary: "pick up the blue cube")
CUBE_COLORS = {
    "red": (0.85, 0.2, 0.15, 1.0),
    "green": (0.2, 0.7, 0.25, 1.0),
    "blue": (0.15, 0.35, 0.9, 1.0),
    "yellow": (0.95, 0.8, 0.1, 1.0),
}
STATE_FIELDS = (
    "tcp_pos(3) hand_quat_wxyz(4) finger_opening(1) cube_pos(3) cube_quat_wxyz(4) cube_minus_tcp(3)"
)
TCP_OFFSET = -0.085  # the fingertips, below the hand's origin (hand frame z)

_FINGER = """
      <body name="{side}_finger" pos="0 0 -0.015" gravcomp="1">
        <joint name="{side}" type="slide" axis="{sign}1 0 0" range="0 {open}" damping="5"/>
        <geom name="{side}_pad" type="box" size="0.005 0.012 0.035" pos="{sign}0.005 0 -0.035"
              rgba="0.25 0.25 0.28 1" mass="0.05" friction="1.5 0.01 0.001"/>
      </body>"""

MJCF = f"""
<mujoco model="rlds_studio_pick_cube">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{PHYSICS_DT}" integrator="implicitfast" cone="elliptic" impratio="10"/>
  <visual>
    <global offwidth="{{size}}" offheight="{{size}}"/>
    <quality shadowsize="0" offsamples="0"/>
    <headlight ambient="0.45 0.45 0.45" diffuse="0.55 0.55 0.55" specular="0 0 0"/>
  </visual>
  <asset>
    <texture name="wood" type="2d" builtin="checker" rgb1="0.62 0.5 0.38"
             rgb2="0.58 0.46 0.34" width="64" height="64"/>
    <texture name="sky" type="skybox" builtin="gradient" rgb1="0.78 0.84 0.9" rgb2="0.35 0.4 0.48"
             width="32" height="32"/>
    <material name="wood" texture="wood" texrepeat="6 6"/>
  </asset>
  <worldbody>
    <light pos="0.3 -0.3 1.5" dir="-0.2 0.2 -1" castshadow="false" diffuse="0.4 0.4 0.4"/>
    <geom name="floor" type="plane" size="2 2 0.1" pos="0 0 -0.75" rgba="0.3 0.32 0.36 1"/>
    <geom name="table" type="box" size="0.45 0.45 0.025" pos="0 0 -0.025" material="wood"/>
    <camera name="front" pos="0 -0.55 0.45" xyaxes="1 0 0 0 0.482 0.876" fovy="50"/>
    <body name="cube" pos="0 0 {CUBE_HALF}">
      <freejoint name="cube"/>
      <geom name="cube" type="box" size="{CUBE_HALF} {CUBE_HALF} {CUBE_HALF}"
            rgba="0.85 0.2 0.15 1" mass="0.05" friction="1.5 0.01 0.001"/>
    </body>
    <body name="target" mocap="true" pos="{START[0]} {START[1]} {START[2]}"/>
    <body name="hand" pos="{START[0]} {START[1]} {START[2]}" gravcomp="1">
      <freejoint name="hand"/>
      <geom name="palm" type="box" size="0.055 0.015 0.015" rgba="0.72 0.72 0.78 1" mass="0.4"/>
      <geom name="wrist_link" type="cylinder" size="0.022 0.04" pos="0 0 0.055"
            rgba="0.42 0.44 0.5 1" mass="0.2"/>
      <site name="tcp" pos="0 0 {TCP_OFFSET}" size="0.004" rgba="1 1 0 0"/>
      <camera name="wrist" pos="0 -0.06 0" xyaxes="1 0 0 0 0.87 0.5" fovy="75"/>
      {_FINGER.format(side="left", sign="", open=FINGER_OPEN)}
      {_FINGER.format(side="right", sign="-", open=FINGER_OPEN)}
    </body>
  </worldbody>
  <contact><exclude body1="left_finger" body2="right_finger"/></contact>
  <equality><weld body1="target" body2="hand" solref="0.02 1"/></equality>
  <actuator>
    <position name="left" joint="left" kp="300" ctrlrange="0 {FINGER_OPEN}" forcerange="-20 20"/>
    <position name="right" joint="right" kp="300" ctrlrange="0 {FINGER_OPEN}" forcerange="-20 20"/>
  </actuator>
</mujoco>
"""


class PickCubeEnv(gym.Env[dict[str, Any], np.ndarray]):
    """Lift a cube with a 6-DoF floating gripper (see the module doc for the action)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": CONTROL_HZ}
    render_is_pure = True  # drawing reads the simulation, never changes it: a replay need not

    def __init__(
        self,
        render_mode: str | None = "rgb_array",
        render_size: int = 256,
        image_size: int = 128,
        reward_type: str = "sparse",
        terminate_on_success: bool = True,
        camera: str = "front",
        image_cameras: tuple[str, ...] | list[str] = CAMERAS,
        cube_color: str = "red",
    ) -> None:
        os.environ.setdefault("MUJOCO_GL", "egl")  # as server/envs/__init__ does
        import mujoco

        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, not {render_mode!r}")
        if not 64 <= render_size <= 1024:
            raise ValueError("render_size must be within [64, 1024]")
        if image_size != 0 and not 32 <= image_size <= 512:
            raise ValueError("image_size must be 0 (no images) or within [32, 512]")
        if reward_type not in ("sparse", "dense"):
            raise ValueError("reward_type must be 'sparse' or 'dense'")
        if camera not in CAMERAS:
            raise ValueError(f"camera must be one of {CAMERAS}")
        if cube_color not in CUBE_COLORS:
            raise ValueError(f"cube_color must be one of {tuple(CUBE_COLORS)}")
        chosen = set(image_cameras)
        if not chosen or not chosen <= set(CAMERAS) or len(chosen) != len(image_cameras):
            raise ValueError(f"image_cameras must be some of {CAMERAS}, each once")
        self._mj = mujoco
        self.render_mode = render_mode
        self.render_size = render_size
        self.image_size = image_size
        self.reward_type = reward_type
        self.terminate_on_success = terminate_on_success
        self.camera_names = CAMERAS
        # the cameras whose images the observation holds (in CAMERAS' order)
        self.image_cameras = tuple(c for c in CAMERAS if c in chosen)
        self.render_camera = camera
        size = max(render_size, image_size)
        self.model = mujoco.MjModel.from_xml_string(MJCF.replace("{size}", str(size)))
        self.model.geom_rgba[self.model.geom("cube").id] = CUBE_COLORS[cube_color]
        self.cube_color = cube_color
        self.data = mujoco.MjData(self.model)
        self._ids = {
            "hand": self.model.body("hand").id,
            "cube": self.model.body("cube").id,
            "tcp": self.model.site("tcp").id,
            "left": self.model.joint("left").qposadr[0],
            "right": self.model.joint("right").qposadr[0],
            "cube_qpos": self.model.joint("cube").qposadr[0],
        }
        self._renderers: dict[int, Any] = {}
        # everything a step from it needs to be bit-exact (MuJoCo's "integration" state)
        self._spec = int(mujoco.mjtState.mjSTATE_INTEGRATION)
        self._state = np.zeros(mujoco.mj_stateSize(self.model, self._spec))
        self._first = True  # the reset's state, not a step's (restore_observation)
        self._deferred = False  # the observation's images left to restore_observation
        self.action_space = spaces.Box(-1.0, 1.0, shape=(7,), dtype=np.float32)
        obs: dict[str, spaces.Space] = {
            "state": spaces.Box(-np.inf, np.inf, shape=(18,), dtype=np.float64),
            "sim_state": spaces.Box(-np.inf, np.inf, shape=self._state.shape, dtype=np.float64),
        }
        if image_size:
            shape = (image_size, image_size, 3)
            image = spaces.Box(0, 255, shape=shape, dtype=np.uint8)
            obs.update(dict.fromkeys(self.image_cameras, image))
        self.observation_space = spaces.Dict(obs)

    # -- gymnasium ---------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        mj, m, d = self._mj, self.model, self.data
        mj.mj_resetData(m, d)
        xy = self.np_random.uniform(-CUBE_RANGE, CUBE_RANGE, size=2)
        yaw = self.np_random.uniform(-np.pi, np.pi)
        q = self._ids["cube_qpos"]
        d.qpos[q : q + 3] = [xy[0], xy[1], CUBE_HALF]
        d.qpos[q + 3 : q + 7] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]
        d.mocap_pos[0] = START
        d.mocap_quat[0] = [1.0, 0.0, 0.0, 0.0]
        d.ctrl[:] = FINGER_OPEN
        d.qpos[self._ids["left"]] = d.qpos[self._ids["right"]] = FINGER_OPEN
        mj.mj_forward(m, d)
        mj.mj_getState(m, d, self._state, self._spec)
        self._first = True
        return self._observation(), self._info()

    def step(
        self, action: np.ndarray
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        mj, d = self._mj, self.data
        a = np.clip(np.nan_to_num(np.asarray(action, dtype=np.float64).reshape(7)), -1.0, 1.0)
        d.mocap_pos[0] = np.clip(d.mocap_pos[0] + a[:3] * POS_STEP, *WORKSPACE)
        turn = np.zeros(4)
        angle = float(np.linalg.norm(a[3:6])) * ROT_STEP
        if angle > 0:
            mj.mju_axisAngle2Quat(turn, a[3:6] / np.linalg.norm(a[3:6]), angle)
            quat = np.zeros(4)
            mj.mju_mulQuat(quat, turn, d.mocap_quat[0])
            mj.mju_normalize4(quat)
            d.mocap_quat[0] = quat
        d.ctrl[:] = (1.0 - a[6]) / 2.0 * FINGER_OPEN
        # the state before the last substep is the one the observation shows (MuJoCo's step
        # leaves the positions it computed before integrating): recorded as ``sim_state``
        mj.mj_step(self.model, d, nstep=SUBSTEPS - 1)
        mj.mj_getState(self.model, d, self._state, self._spec)
        mj.mj_step(self.model, d)
        success = self._lifted()
        reward = 1.0 if success else 0.0
        if self.reward_type == "dense":
            reward += -self._tcp_to_cube() + self._height()
        terminated = success and self.terminate_on_success
        return self._observation(), reward, terminated, False, self._info()

    def render(self) -> np.ndarray | None:
        """The :attr:`render_camera`'s view at ``render_size`` px (None without rgb_array)."""
        if self.render_mode != "rgb_array":
            return None
        return self.render_from(self.render_camera)

    def render_from(self, camera: str, size: int | None = None) -> np.ndarray:
        """One camera's view (H×W×3 uint8), ``size`` px a side (``render_size`` by default)."""
        if camera not in CAMERAS:
            raise ValueError(f"unknown camera {camera!r}; known: {list(CAMERAS)}")
        size = size or self.render_size
        renderer = self._renderers.get(size)
        if renderer is None:
            renderer = self._renderers[size] = self._mj.Renderer(self.model, size, size)
        renderer.update_scene(self.data, camera=camera)
        return renderer.render()

    def close(self) -> None:
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()

    # -- state -------------------------------------------------------------------------------
    def _observation(self) -> dict[str, np.ndarray]:
        d, ids = self.data, self._ids
        tcp = d.site_xpos[ids["tcp"]]
        cube = d.xpos[ids["cube"]]
        state = np.concatenate([
            tcp, d.xquat[ids["hand"]], [self.finger_opening()], cube, d.xquat[ids["cube"]],
            cube - tcp,
        ])  # fmt: skip
        obs = {"state": state.astype(np.float64), "sim_state": self._state.copy()}
        if self.image_size and self._deferred:
            obs.update({c: placeholder(self.image_size) for c in self.image_cameras})
        elif self.image_size:
            obs.update({c: self.render_from(c, self.image_size).copy() for c in self.image_cameras})
        return obs

    # -- the play path and replay ----------------------------------------------------------
    def defer_images(self, on: bool = True) -> tuple[str, ...]:
        """With ``on``, the following steps draw no observation image (zeros of their shape
        until :meth:`restore_observation` draws them); the keys deferred (none when off)."""
        self._deferred = bool(on) and bool(self.image_size)
        return self.image_cameras if self._deferred else ()

    def restore_observation(self, sim_state: np.ndarray, first: bool = False) -> dict[str, Any]:
        """The observation of a step whose recorded ``sim_state`` this is, images drawn: the
        state set, then the step's last physics substep run again (``first``: a reset's
        state, observed as it is)."""
        mj, m, d = self._mj, self.model, self.data
        mj.mj_setState(m, d, np.asarray(sim_state, dtype=np.float64), self._spec)
        mj.mj_forward(m, d) if first else mj.mj_step(m, d)
        self._state[:] = sim_state
        deferred, self._deferred = self._deferred, False
        try:
            return self._observation()
        finally:
            self._deferred = deferred

    def finger_opening(self) -> float:
        """The gap between the fingers' pads, in metres (0 = shut)."""
        return float(self.data.qpos[self._ids["left"]] + self.data.qpos[self._ids["right"]])

    def _height(self) -> float:
        return float(self.data.xpos[self._ids["cube"]][2] - CUBE_HALF)

    def _lifted(self) -> bool:
        return self._height() >= LIFT_HEIGHT

    def _tcp_to_cube(self) -> float:
        d = self.data
        return float(np.linalg.norm(d.xpos[self._ids["cube"]] - d.site_xpos[self._ids["tcp"]]))

    def _info(self) -> dict[str, Any]:
        return {"is_success": self._lifted(), "cube_height": round(self._height(), 4),
                "finger_opening": round(self.finger_opening(), 4)}  # fmt: skip
