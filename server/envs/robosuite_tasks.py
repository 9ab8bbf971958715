"""robosuite's PickPlaceCan (the RLDS paper's robosuite task) and Lift, as Gymnasium envs.

Runs only in the robosuite environment runtime (``requirements/runtimes/robosuite.in``: its
own venv, robosuite 1.5 needs numpy < 2); ``server/envs/__init__`` registers the ids with
string entry points, so this module is imported only where robosuite is installed.

A Panda arm with its parallel-jaw gripper, driven by robosuite's ``BASIC`` composite
controller, whose arm part is ``OSC_POSE`` (operational-space pose control, deltas in the
robot base's frame). The action is a 7-D ``Box(-1, 1)``, robosuite's own::

    [dx, dy, dz, drx, dry, drz, gripper]

- ``dx, dy, dz``: this step's goal is the hand's position plus this, ``1`` = 5 cm
  (robosuite's ``output_max``); the base frame is the world's (the robot sits at -x and
  faces the ``front`` camera): **+x is toward that camera, +y to the right on its picture,
  +z up** (measured: tests/runtime/in_robosuite_runtime.py);
- ``drx, dry, drz``: an axis-angle rotation of the goal about those axes, ``1`` = 0.5 rad;
  +drx swings the fingertips right on the front picture, +dry away from the camera, +drz
  turns the hand counter-clockwise seen from above;
- ``gripper``: only its sign counts (robosuite's Panda gripper): ``> 0`` shuts, ``< 0``
  opens, the fingers moving at a fixed speed (shut in ~10 steps).

The goal is recomputed from where the hand is every step, and the controller gets about a
fifth of the way there in a step: a held 0.5 moves the hand ~11 cm/s.

Observation (a ``Dict`` of fixed shapes)::

    agentview_image          H×W×3 uint8   the "front" camera (robosuite's agentview)
    robot0_eye_in_hand_image H×W×3 uint8   the "wrist" camera
    robot0_eef_pos           (3,) float64  the grip site, world frame (m)
    robot0_eef_quat          (4,) float64  its orientation (x, y, z, w: robosuite's order)
    robot0_gripper_qpos      (2,) float64  the two finger joints
    object-state             (n,) float64  robosuite's: the object's position, quaternion
                                           and pose relative to the hand, in an order of
                                           its own (Lift n = 10, PickPlaceCan n = 14)
    object_pos               (3,) float64  the cube's or can's centre, world frame (m)
    sim_state                (m,) float64  ``sim.get_state().flatten()``: time, qpos, qvel
                                           (Lift m = 32, PickPlaceCan m = 71)

The image keys are robomimic's (its robosuite datasets use the same), the images right side
up (robosuite renders in OpenGL's convention, bottom row first: flipped here).
``sim_state`` lets an episode be replayed the way robomimic replays one:
``sim.set_state_from_flattened(s); sim.forward()`` then render (:meth:`RobosuiteEnv.restore`)
draws each step's images again exactly. (It holds the physics, not the controllers' memory:
the gripper's command, which a replay of actions rebuilds.)

Cameras: :attr:`camera_names` are the friendlier ``("front", "wrist")``; :data:`CAMERAS`
maps them to robosuite's. Both are rendered every step at ``image_size`` px for the
observation; :meth:`render` and :meth:`render_from` draw the streamed camera once more at
``render_size`` px (256: a person steers by it, and 128 px scaled up is a blur), or return
the observation's image when the two sizes agree (no extra render).

On the play path (:meth:`defer_images`, which a worker turns on for a person's episode) a
step draws no observation camera: the images are zeros of their shape (:func:`placeholder`),
and only the streamed camera is drawn, at ``render_size``. They are drawn afterwards, off
that path, from each step's recorded ``sim_state`` (:meth:`restore_observation`;
``server/runtime/_complete_main.py``): the same pixels a step would have drawn (the
observation is of the simulator's state at the step's end, which ``sim_state`` holds).

Rendering is on the CPU (Mesa's EGL, ``MUJOCO_GL=egl``) and is most of a step's cost.
Measured on 2 cores, median step with both cameras (Lift / PickPlaceCan): 128 px 25 / 30 ms,
256 px 32 / 38 ms; shadows and reflections on ~double it (51 / 59 ms at 128 px), MuJoCo's
default 4× multisampling adds 13-27 ms; the physics and controller alone ~4 ms. So shadows,
reflections and multisampling are off (``shadows=True``, ``antialias=True`` turn them on;
the picture stays clear: flat light on a white table, edges a little jagged), and images
are 128 px (``image_size``; at 256 px a step's observation is 4× bigger: ~390 KB of
images, 7.8 MB/s recorded). robosuite's default frame rate, ``control_freq`` 20 Hz, is the
env's (``render_fps``).

Episodes succeed (reward 1 unless shaped, terminated, ``info["is_success"]``) when
robosuite's ``_check_success()`` says so: Lift, the cube is 4 cm above the table;
PickPlaceCan, the can is in its bin. ``reward_shaping=True`` is robosuite's dense reward.
The time limit is Gymnasium's (``max_episode_steps`` of the registration or ``gym.make``);
robosuite's own horizon is off.

Determinism: everything random in robosuite 1.5 (object placement, the arm's initial joint
noise) draws from the env's one ``numpy.random.Generator`` (its ``seed`` argument);
:meth:`reset` reseeds that generator in place from the reset's seed (Gymnasium's
``np_random``), so the same seed and actions give the same episode, images included, in a
fresh env or a reused one. Resets are soft (``hard_reset=False``: the model is built once,
~30 ms a reset instead of ~1 s).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from server.envs._images import placeholder

CONTROL_HZ = 20  # robosuite's default control_freq
TASKS = {"PickPlaceCan": "PickPlaceCan", "Lift": "Lift"}  # ours → robosuite's env names
OBJECTS = {"PickPlaceCan": "Can", "Lift": "cube"}  # the object's observables' prefix
CAMERAS = {"front": "agentview", "wrist": "robot0_eye_in_hand"}  # ours → robosuite's
PROPRIO_KEYS = ("robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos")
OBJECT_KEY = "object-state"


def _image_key(camera: str) -> str:
    return f"{CAMERAS[camera]}_image"


class RobosuiteEnv(gym.Env[dict[str, Any], np.ndarray]):
    """A robosuite task with a Panda on OSC_POSE (see the module doc)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": CONTROL_HZ}
    render_is_pure = True  # drawing reads the simulation, never changes it: a replay need not

    def __init__(
        self,
        task: str = "Lift",
        render_mode: str | None = "rgb_array",
        image_size: int = 128,
        render_size: int = 256,
        reward_shaping: bool = False,
        terminate_on_success: bool = True,
        shadows: bool = False,
        antialias: bool = False,
        camera: str = "front",
    ) -> None:
        os.environ.setdefault("MUJOCO_GL", "egl")  # as server/envs/__init__ does
        if task not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, not {render_mode!r}")
        if not 32 <= image_size <= 512:
            raise ValueError("image_size must be within [32, 512]")
        if not 64 <= render_size <= 1024:
            raise ValueError("render_size must be within [64, 1024]")
        if camera not in CAMERAS:
            raise ValueError(f"camera must be one of {tuple(CAMERAS)}")
        import mujoco
        import robosuite
        from robosuite.controllers import load_composite_controller_config

        # its Panda has no torso, head, base or legs: robosuite warns of each at every build
        logging.getLogger("robosuite_logs").setLevel(logging.ERROR)

        self._mj = mujoco
        self.task = task
        self.render_mode = render_mode
        self.image_size = image_size
        self.render_size = render_size
        self._frames: dict[str, np.ndarray] = {}  # this step's frames drawn at render_size
        self.terminate_on_success = terminate_on_success
        self.shadows = shadows
        self.antialias = antialias
        self.camera_names = tuple(CAMERAS)
        self.render_camera = camera
        controller = load_composite_controller_config(controller="BASIC", robot="Panda")
        self.env = robosuite.make(
            TASKS[task],
            robots="Panda",
            controller_configs=controller,
            has_renderer=False,
            has_offscreen_renderer=True,
            # the cameras are drawn here, at the end of each step (see _observation)
            use_camera_obs=False,
            use_object_obs=True,
            control_freq=CONTROL_HZ,
            reward_shaping=reward_shaping,
            ignore_done=True,  # Gymnasium's TimeLimit ends episodes
            hard_reset=False,
            seed=0,  # reseeded by every reset
        )
        self._obs: dict[str, np.ndarray] | None = None
        self._deferred = False  # the observation's images left to restore_observation
        self._configure_renderer()
        sizes = self._raw_sizes()
        image = spaces.Box(0, 255, shape=(image_size, image_size, 3), dtype=np.uint8)
        obs: dict[str, spaces.Space] = {_image_key(c): image for c in CAMERAS}
        for key in (*PROPRIO_KEYS, OBJECT_KEY, "object_pos", "sim_state"):
            obs[key] = spaces.Box(-np.inf, np.inf, shape=(sizes[key],), dtype=np.float64)
        self.observation_space = spaces.Dict(obs)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(7,), dtype=np.float32)

    # -- gymnasium ---------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        # robosuite's placement samplers and robots hold a reference to env.rng: reseed it
        # in place rather than replacing it
        fresh = np.random.default_rng(int(self.np_random.integers(2**63)))
        self.env.rng.bit_generator.state = fresh.bit_generator.state
        self.env.reset()
        self._set_render_flags(self.shadows)  # the render context lives as long as the sim
        self._obs = self._observation()
        return self._obs, self._info()

    def step(
        self, action: np.ndarray
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        a = np.clip(np.nan_to_num(np.asarray(action, dtype=np.float64).reshape(7)), -1.0, 1.0)
        _raw, reward, _done, _info = self.env.step(a)
        self._obs = self._observation()
        success = self._success()
        terminated = success and self.terminate_on_success
        return self._obs, float(reward), terminated, False, self._info(success)

    def render(self) -> np.ndarray | None:
        """The :attr:`render_camera`'s latest image (None without rgb_array)."""
        if self.render_mode != "rgb_array":
            return None
        return self.render_from(self.render_camera)

    def render_from(self, camera: str) -> np.ndarray:
        """``camera``'s view now, at ``render_size`` px (H×W×3 uint8, right side up): the
        observation's image when the sizes agree, else drawn once per step."""
        if camera not in CAMERAS:
            raise ValueError(f"unknown camera {camera!r}; known: {list(CAMERAS)}")
        if self._obs is None:
            raise RuntimeError("call reset() first")
        if self.render_size == self.image_size and not self._deferred:
            return self._obs[_image_key(camera)]
        if camera not in self._frames:
            self._frames[camera] = self._draw(camera, self.render_size)
        return self._frames[camera]

    def close(self) -> None:
        env = getattr(self, "env", None)
        if env is not None:
            env.close()
            self.env = None

    # -- the play path and replay ----------------------------------------------------------
    def defer_images(self, on: bool = True) -> tuple[str, ...]:
        """With ``on``, the following steps draw no observation image (each is a
        :func:`placeholder` until :meth:`restore_observation` draws it from the step's
        ``sim_state``); the keys deferred (none when turned off)."""
        self._deferred = bool(on)
        return tuple(_image_key(c) for c in CAMERAS) if on else ()

    def restore(self, sim_state: np.ndarray) -> dict[str, np.ndarray]:
        """Set the simulator to a recorded ``sim_state`` (robomimic's way: set the flattened
        state, forward) and return both cameras' images of it, as the observation has them."""
        self._set_state(sim_state)
        return {_image_key(c): self._draw(c) for c in CAMERAS}

    def restore_observation(
        self, sim_state: np.ndarray, first: bool = False
    ) -> dict[str, np.ndarray]:
        """The observation of a recorded ``sim_state``, images drawn: what a step that ended
        in that state observed, but for ``object-state``, left out. (Its object-to-hand
        parts are computed by robosuite from the hand's pose cached at its previous update,
        so they depend on the steps before, not on the state alone; the object's own pose
        is ``object_pos`` and the state.) Call :meth:`reset` once first (it sets the
        renderer's flags)."""
        self._set_state(sim_state)
        deferred, self._deferred = self._deferred, False
        try:
            obs = self._observation()
        finally:
            self._deferred = deferred
        del obs[OBJECT_KEY]
        return obs

    def _set_state(self, sim_state: np.ndarray) -> None:
        sim = self.env.sim
        sim.set_state_from_flattened(np.asarray(sim_state, dtype=np.float64))
        sim.forward()

    def _draw(self, camera: str, size: int | None = None) -> np.ndarray:
        size = size or self.image_size
        image = self.env.sim.render(camera_name=CAMERAS[camera], width=size, height=size)
        return np.ascontiguousarray(image[::-1])

    # -- state -------------------------------------------------------------------------------
    def _configure_renderer(self) -> None:
        """Offscreen buffers of the images' size, without multisampling unless
        ``antialias``: MuJoCo's default 4× MSAA (in a 640×480 buffer) doubles Mesa's CPU
        render time, ~32 → ~15 ms for PickPlaceCan's front camera at 128 px."""
        sim = self.env.sim
        vis = sim.model.vis
        vis.quality.offsamples = 4 if self.antialias else 0
        vis.global_.offwidth = vis.global_.offheight = max(self.image_size, self.render_size)
        context = sim._render_context_offscreen  # noqa: SLF001
        context.gl_ctx.make_current()
        context.con.free()
        context._set_mujoco_context_and_buffers()  # noqa: SLF001

    def _set_render_flags(self, on: bool) -> None:
        context = self.env.sim._render_context_offscreen  # noqa: SLF001
        flags = context.scn.flags
        flags[self._mj.mjtRndFlag.mjRND_SHADOW] = int(on)
        flags[self._mj.mjtRndFlag.mjRND_REFLECTION] = int(on)

    def _raw_sizes(self) -> dict[str, int]:
        """Each vector key's length, from one observation of the just-built env."""
        raw = self.env._get_observations(force_update=True)  # noqa: SLF001
        sizes = {key: int(np.size(raw[key])) for key in (*PROPRIO_KEYS, OBJECT_KEY)}
        sizes["object_pos"] = 3
        sizes["sim_state"] = int(self.env.sim.get_state().flatten().size)
        return sizes

    def _observation(self) -> dict[str, np.ndarray]:
        """The observation of the simulator's state now, at the end of a step.

        robosuite samples its observables at the first physics substep of each control
        step (``Observable.update``), 48 of the step's 50 ms before its end: its own
        observation would show the hand where it was, not where ``sim_state`` has it. Here
        everything (``force_update``, the two cameras) is of the step's end. And MuJoCo's
        step leaves the positions it computed before integrating: ``forward`` first brings
        them to the state's (as a replay's ``forward`` does).
        """
        self.env.sim.forward()
        self._frames = {}
        raw = self.env._get_observations(force_update=True)  # noqa: SLF001
        if self._deferred:
            obs = {_image_key(c): placeholder(self.image_size) for c in CAMERAS}
        else:
            obs = {_image_key(c): self._draw(c) for c in CAMERAS}
        for key in (*PROPRIO_KEYS, OBJECT_KEY):
            obs[key] = np.asarray(raw[key], dtype=np.float64).copy()
        obs["object_pos"] = np.asarray(raw[f"{OBJECTS[self.task]}_pos"], dtype=np.float64).copy()
        obs["sim_state"] = np.asarray(self.env.sim.get_state().flatten(), dtype=np.float64)
        return obs

    def _success(self) -> bool:
        return bool(self.env._check_success())  # noqa: SLF001

    def _info(self, success: bool | None = None) -> dict[str, Any]:
        success = self._success() if success is None else success
        assert self._obs is not None
        height = float(self._obs["object_pos"][2])
        return {"is_success": bool(success), "object_height": round(height, 4)}
