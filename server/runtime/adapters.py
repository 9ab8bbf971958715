"""One dm_env interface over Gymnasium and dm_env environments.

:func:`build_adapter` turns an :class:`~server.study_spec.EnvironmentSpec` source into an
:class:`EnvAdapter`: a ``dm_env.Environment`` (so envlogger can record it) that also renders
frames per camera, takes a seed for the next reset, keeps the last ``info`` and knows why an
episode ended (:data:`END_TERMINATED`, :data:`END_TRUNCATED`, :data:`END_MAX_STEPS`,
:data:`END_MAX_DURATION`). Heavy suites are imported here, in the worker, only when used.
"""

from __future__ import annotations

import os
import time
from typing import Any

import dm_env
import numpy as np
from dm_env import specs

from server.recording.format import (  # re-exported for the runtime
    END_MAX_DURATION,
    END_MAX_STEPS,
    END_TERMINATED,
    END_TRUNCATED,
)
from server.runtime import space_specs
from server.runtime.allowlist import AllowedEnvironments, NotAllowed
from server.runtime.registration import (
    BadSettings,
    EnvBuildError,
    ensure_registered,
    import_module,
)
from server.study_spec import DmEnvSource, GymnasiumSource

DEFAULT_CAMERA = "default"
ALE_HZ = 60.0  # the Atari 2600's frame rate (NTSC)
_RENDER_SIZE = 480  # physics-rendered frames (dm_control), pixels per side

REWARD_SPEC = specs.Array((), np.float64, name="reward")
DISCOUNT_SPEC = specs.BoundedArray((), np.float64, 0.0, 1.0, name="discount")


class EnvAdapter(dm_env.Environment):
    """Base adapter: limits, end reasons, and the extras the worker needs."""

    def __init__(self) -> None:
        self.cameras: list[str] = [DEFAULT_CAMERA]
        self.camera = DEFAULT_CAMERA
        self.last_info: dict[str, Any] = {}
        self.end_reason: str | None = None
        self.action_meanings: list[str] | None = None
        self.max_steps: int | None = None
        self.max_duration_s: float | None = None
        self._seed: int | None = None
        self._steps = 0
        self._started = 0.0

    # -- what subclasses implement ------------------------------------------------------
    def _reset(self, seed: int | None) -> dm_env.TimeStep:
        raise NotImplementedError

    def _step(self, action: Any) -> dm_env.TimeStep:
        raise NotImplementedError

    def frame(self) -> np.ndarray:
        """The current frame (H×W×3 uint8) from :attr:`camera`."""
        raise NotImplementedError

    def native_rate(self) -> tuple[float | None, float | None]:
        """``(steps per second of real time, frames per step)``; None where unknown."""
        return None, None

    def replay_frame(self) -> None:
        """Do to the simulation what drawing the current frame does, without drawing where
        that is known: a replay compares observations, and needs a render's effects on the
        state (Fetch's moves its target site and runs ``mj_forward``), not its pixels."""
        self.frame()

    def defer_images(self, on: bool = True) -> tuple[str, ...]:
        """Leave the observation's images out of the following steps (placeholders of their
        shape), where the environment can draw them afterwards from its recorded state:
        the keys deferred; () when it cannot (or ``on`` is False)."""
        return ()

    # -- dm_env ---------------------------------------------------------------------------
    def set_seed(self, seed: int | None) -> None:
        """Seed used by the next :meth:`reset`."""
        self._seed = seed

    def set_camera(self, camera: str) -> None:
        """Switch the rendered view (ValueError for an unknown camera)."""
        if camera not in self.cameras:
            raise ValueError(f"unknown camera {camera!r}; known: {self.cameras}")
        self.camera = camera

    def reset(self) -> dm_env.TimeStep:
        self.end_reason = None
        self._steps = 0
        self._started = time.monotonic()
        return self._reset(self._seed)

    def start_clock(self) -> None:
        """The episode's ``max_duration_s`` counts from now (its player is ready)."""
        self._started = time.monotonic()

    def step(self, action: Any) -> dm_env.TimeStep:
        timestep = self._step(action)
        self._steps += 1
        if timestep.last():
            if self.end_reason is None:
                self.end_reason = END_TRUNCATED if timestep.discount else END_TERMINATED
            return timestep
        if self.max_steps is not None and self._steps >= self.max_steps:
            self.end_reason = END_MAX_STEPS
        elif (
            self.max_duration_s is not None
            and time.monotonic() - self._started >= self.max_duration_s
        ):
            self.end_reason = END_MAX_DURATION
        else:
            return timestep
        return dm_env.truncation(timestep.reward, timestep.observation)

    def reward_spec(self) -> Any:
        return REWARD_SPEC

    def discount_spec(self) -> Any:
        return DISCOUNT_SPEC


class GymnasiumAdapter(EnvAdapter):
    """A Gymnasium env seen as dm_env (terminated → discount 0, truncated → discount 1)."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        super().__init__()
        import gymnasium as gym

        kwargs = dict(kwargs)
        kwargs.setdefault("render_mode", "rgb_array")
        try:
            self.env = gym.make(env_id, **kwargs)
        except gym.error.Error as exc:
            raise EnvBuildError(f"cannot make {env_id!r}: {exc}") from exc
        except TypeError as exc:
            raise BadSettings(f"bad settings for {env_id!r}: {exc}") from exc
        self.space = self.env.action_space
        self._obs_spec = space_specs.space_to_spec(self.env.observation_space, "observation")
        self._image = _image_path(self._obs_spec)  # where frame() looks without rgb_array
        self._act_spec = space_specs.space_to_spec(self.space, "action")
        self._last_obs: Any = None
        # An Atari game observed in RGB renders exactly its observation: the frame is then
        # the observation's copy (no second palette pass and copy per step). Checked again at
        # every reset, so a wrapper that changes observations turns it off.
        unwrapped = self.env.unwrapped
        self._rgb_atari = (
            hasattr(unwrapped, "ale")
            and getattr(unwrapped, "_obs_type", None) == "rgb"
            and self.env.observation_space == unwrapped.observation_space
            and self.env.render_mode == "rgb_array"
        )
        self._frame_is_obs = False
        meanings = getattr(unwrapped, "get_action_meanings", None)
        if callable(meanings):
            self.action_meanings = list(meanings())
        # an env with several cameras names them (``camera_names``) and draws any of them
        # (``render_from(name)``), as server/envs/ do
        names = getattr(unwrapped, "camera_names", None)
        self._render_from = callable(getattr(unwrapped, "render_from", None)) and bool(names)
        if self._render_from and self.env.render_mode == "rgb_array":
            self.cameras = [str(c) for c in names or ()]
            start = getattr(unwrapped, "render_camera", None)
            self.camera = start if start in self.cameras else self.cameras[0]

    def observation_spec(self) -> Any:
        return self._obs_spec

    def action_spec(self) -> Any:
        return self._act_spec

    def _reset(self, seed: int | None) -> dm_env.TimeStep:
        obs, info = self.env.reset(seed=seed)
        self.last_info = dict(info)
        self._last_obs = space_specs.to_spec_value(obs, self._obs_spec)
        self._frame_is_obs = self._rgb_atari and np.array_equal(
            np.asarray(self.env.render()), self._last_obs
        )
        return dm_env.restart(self._last_obs)

    def _step(self, action: Any) -> dm_env.TimeStep:
        obs, reward, terminated, truncated, info = self.env.step(
            space_specs.from_spec_value(action, self.space)
        )
        self.last_info = dict(info)
        obs = self._last_obs = space_specs.to_spec_value(obs, self._obs_spec)
        if terminated:
            return dm_env.termination(float(reward), obs)
        if truncated:
            return dm_env.truncation(float(reward), obs)
        return dm_env.transition(float(reward), obs)

    def replay_frame(self) -> None:
        """gymnasium-robotics' envs: their render is ``_render_callback`` (the target site,
        ``mj_forward``) then drawing; ours (``render_is_pure``) only read the simulation."""
        unwrapped = self.env.unwrapped
        if self.env.render_mode == "rgb_array" and not self._frame_is_obs:
            callback = getattr(unwrapped, "_render_callback", None)
            if callable(callback) and hasattr(unwrapped, "mujoco_renderer"):
                callback()
                return
            if getattr(unwrapped, "render_is_pure", False) is True:
                return
        self.frame()

    def defer_images(self, on: bool = True) -> tuple[str, ...]:
        """The environment's own ``defer_images`` (server/envs/robosuite_tasks.py)."""
        defer = getattr(self.env.unwrapped, "defer_images", None)
        return tuple(defer(on)) if callable(defer) else ()

    def native_rate(self) -> tuple[float | None, float | None]:
        """ALE: 60 Hz over the frameskip; else the env's ``render_fps`` (its real pace)."""
        unwrapped = self.env.unwrapped
        if hasattr(unwrapped, "ale"):
            skip = getattr(unwrapped, "_frameskip", 1)
            # a (low, high) frameskip is drawn uniformly from [low, high)
            frames = (skip[0] + skip[1] - 1) / 2 if isinstance(skip, tuple) else float(skip)
            return ALE_HZ / frames, frames
        fps = self.env.metadata.get("render_fps")
        return (float(fps), None) if isinstance(fps, int | float) and fps > 0 else (None, None)

    def frame(self) -> np.ndarray:
        if self._frame_is_obs:
            return self._last_obs
        if self.env.render_mode == "rgb_array" and self._render_from:
            return _as_rgb(getattr(self.env.unwrapped, "render_from")(self.camera))  # noqa: B009
        if self.env.render_mode == "rgb_array":
            return _as_rgb(self.env.render())
        # Suites without rgb_array rendering (NetHack's "pixel" observation): use the image
        # inside the last observation.
        if self._image is None:
            raise RuntimeError("the environment has no rgb_array render and no image observation")
        value = self._last_obs
        for key in self._image:
            value = value[key]
        return _as_rgb(value)

    def close(self) -> None:
        self.env.close()


class DmEnvAdapter(EnvAdapter):
    """A dm_env built by ``module:function(**kwargs)``.

    Frames come from, in order: ``env.render(camera=...)`` with ``env.cameras``; a MuJoCo
    ``env.physics`` (one camera per model camera); the first H×W×3 uint8 observation.
    """

    def __init__(self, factory: str, kwargs: dict[str, Any]) -> None:
        super().__init__()
        module_name, _, func_name = factory.partition(":")
        func = getattr(import_module(module_name), func_name, None)
        if not callable(func):
            raise EnvBuildError(f"{factory!r}: {module_name} has no function {func_name!r}")
        try:
            self.env = func(**kwargs)
        except (TypeError, ValueError) as exc:  # dm_control: ValueError for bad timesteps
            raise BadSettings(f"bad settings for {factory!r}: {exc}") from exc
        if not isinstance(self.env, dm_env.Environment):
            raise EnvBuildError(f"{factory!r} returned {type(self.env).__name__}, not dm_env")
        self._physics = getattr(self.env, "physics", None)
        self._model_cameras: list[str] = []
        self._image = _image_path(self.env.observation_spec())
        self._obs: Any = None
        self._source = "observation"
        if callable(getattr(self.env, "render", None)) and getattr(self.env, "cameras", None):
            self._source = "render"
            self.cameras = [str(c) for c in self.env.cameras]
        elif self._physics is not None:
            self._source = "physics"
            # Before the first render (its GL context reads them): no 4× multisampling and
            # shadow maps of at most 1024 px halve a 480 px frame's cost on the CPU (dm_control
            # cartpole: 39 → 17 ms a step with its frame) and look the same; shadows off
            # would darken the floor (docs/runtime.md, "Runtimes").
            quality = getattr(getattr(self._physics.model, "vis", None), "quality", None)
            if quality is not None:  # a MuJoCo model (not a physics of another kind)
                quality.offsamples = 0
                quality.shadowsize = min(int(quality.shadowsize), 1024)
            ncam = int(self._physics.model.ncam)
            names = [self._physics.model.id2name(i, "camera") or str(i) for i in range(ncam)]
            self._model_cameras = names
            self.cameras = names or [DEFAULT_CAMERA]
        elif self._image is None:
            raise EnvBuildError(f"{factory!r}: no render method and no image observation")
        self.camera = self.cameras[0]

    def observation_spec(self) -> Any:
        return self.env.observation_spec()

    def action_spec(self) -> Any:
        return self.env.action_spec()

    def reward_spec(self) -> Any:
        return self.env.reward_spec()

    def discount_spec(self) -> Any:
        return self.env.discount_spec()

    def _reset(self, seed: int | None) -> dm_env.TimeStep:
        if seed is not None and callable(getattr(self.env, "seed", None)):
            self.env.seed(seed)
        elif seed is not None and _task_random(self.env) is not None:
            # dm_control: the task draws its initial state from ``task.random`` (a numpy
            # RandomState made once, from ``task_kwargs["random"]``): reseeded per episode
            _task_random(self.env).seed(seed)
        return self._keep(self.env.reset())

    def _step(self, action: Any) -> dm_env.TimeStep:
        return self._keep(self.env.step(action))

    def _keep(self, timestep: dm_env.TimeStep) -> dm_env.TimeStep:
        obs = _copy_nest(timestep.observation)
        self._obs = obs
        self.last_info = dict(getattr(self.env, "info", None) or {})
        return timestep._replace(observation=obs)

    def native_rate(self) -> tuple[float | None, float | None]:
        """dm_control: one step per ``control_timestep()`` seconds; else unknown."""
        timestep = getattr(self.env, "control_timestep", None)
        if callable(timestep):
            seconds = float(timestep())
            return (1.0 / seconds, None) if seconds > 0 else (None, None)
        return None, None

    def frame(self) -> np.ndarray:
        if self._source == "render":
            return _as_rgb(self.env.render(camera=self.camera))
        if self._source == "physics":
            assert self._physics is not None
            # a model without cameras renders from the free camera (-1)
            names = self._model_cameras
            cam = names.index(self.camera) if self.camera in names else -1
            return _as_rgb(
                self._physics.render(height=_RENDER_SIZE, width=_RENDER_SIZE, camera_id=cam)
            )
        value = self._obs
        for key in self._image or ():
            value = value[key]
        return _as_rgb(value)

    def replay_frame(self) -> None:
        """dm_control's ``physics.render`` only reads the simulation: nothing to do."""
        if self._source != "physics":
            self.frame()

    def close(self) -> None:
        self.env.close()


def build_adapter(
    source: GymnasiumSource | DmEnvSource, allowed: AllowedEnvironments
) -> EnvAdapter:
    """Build the environment of a study source if ``allowed`` allows it.

    Raises :class:`~server.runtime.allowlist.NotAllowed` before importing anything for a
    source the operator did not allow, :class:`EnvBuildError` when it cannot be built.
    """
    problems = allowed.source_problems(source)
    if problems:
        raise NotAllowed(problems)
    if isinstance(source, GymnasiumSource):
        # MuJoCo renders offscreen through EGL (Mesa's, on the CPU without a GPU) unless the
        # operator chose otherwise: its default, GLFW, needs a display. Read when mujoco is
        # first imported, which registering a suite may do (gymnasium_robotics).
        os.environ.setdefault("MUJOCO_GL", "egl")
        ensure_registered(source.id, allowed.gym_packages)
        return GymnasiumAdapter(source.id, source.kwargs)
    return DmEnvAdapter(source.factory, source.kwargs)


def _task_random(env: Any) -> Any:
    """A dm_control environment's ``task.random`` (a ``numpy.random.RandomState``), or None."""
    random = getattr(getattr(env, "task", None), "random", None)
    return random if isinstance(random, np.random.RandomState) else None


def _image_path(spec: Any, path: tuple = ()) -> tuple | None:
    """Where the first H×W×3 uint8 array sits in an observation spec nest."""
    if isinstance(spec, dict):
        items: Any = spec.items()
    elif isinstance(spec, tuple | list):
        items = enumerate(spec)
    else:
        ok = len(spec.shape) == 3 and spec.shape[-1] == 3 and np.dtype(spec.dtype) == np.uint8
        return path if ok else None
    for key, sub in items:
        found = _image_path(sub, (*path, key))
        if found is not None:
            return found
    return None


def _copy_nest(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_nest(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(_copy_nest(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _as_rgb(frame: Any) -> np.ndarray:
    """A contiguous H×W×3 uint8 frame (grey → RGB, alpha dropped)."""
    if frame is None:
        raise RuntimeError("the environment rendered nothing")
    arr = np.asarray(frame)
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    if arr.ndim == 2:
        arr = np.repeat(arr[:, :, None], 3, axis=2)
    elif arr.shape[-1] == 4:
        arr = arr[:, :, :3]
    return np.ascontiguousarray(arr)
