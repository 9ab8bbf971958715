"""Small real dm_env environments for runtime tests (importable by worker processes).

They sleep, raise or exit for real; nothing is mocked.
"""

from __future__ import annotations

import os
import time
from typing import Any

import dm_env
import numpy as np
from dm_env import specs

# Tests allow these factories (settings ``dm_env_factories``): the runtime builds only
# environments the operator allows.
FACTORIES = [
    f"tests.runtime.fake_envs:{name}"
    for name in ("counter", "slow_start", "broken_start", "not_an_env", "image_obs",
                 "camera_less_physics", "big_frame", "unseeded", "succeeding")
]  # fmt: skip


class CounterEnv(dm_env.Environment):
    """8×8 RGB observation filled with the step count; reward = action; two cameras.

    The observation buffer is reused between steps on purpose (recording must copy it).
    """

    cameras = ("front", "top")

    def __init__(
        self,
        episode_len: int = 5,
        step_sleep: float = 0.0,
        crash_at: int | None = None,
        exit_at: int | None = None,
    ) -> None:
        self.episode_len = episode_len
        self.step_sleep = step_sleep
        self.crash_at = crash_at
        self.exit_at = exit_at
        self.t = 0
        self.offset = 0
        self.buffer = np.zeros((8, 8, 3), dtype=np.uint8)

    def seed(self, seed: int) -> None:
        self.offset = seed % 7

    def _obs(self) -> np.ndarray:
        self.buffer[...] = (self.t + self.offset) % 256
        return self.buffer

    def reset(self) -> dm_env.TimeStep:
        self.t = 0
        return dm_env.restart(self._obs())

    def step(self, action: Any) -> dm_env.TimeStep:
        if self.step_sleep:
            time.sleep(self.step_sleep)
        self.t += 1
        if self.crash_at is not None and self.t >= self.crash_at:
            raise ValueError(f"boom at step {self.t}")
        if self.exit_at is not None and self.t >= self.exit_at:
            os._exit(3)  # like a segfault: no cleanup at all
        reward = float(np.asarray(action))
        if self.t >= self.episode_len:
            return dm_env.termination(reward, self._obs())
        return dm_env.transition(reward, self._obs())

    def render(self, camera: str = "front") -> np.ndarray:
        frame = np.zeros((16, 16, 3), dtype=np.uint8)
        frame[..., 0 if camera == "front" else 2] = 40 * (self.t % 6)
        return frame

    def observation_spec(self) -> specs.Array:
        return specs.Array((8, 8, 3), np.uint8, name="observation")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(3, dtype=np.int64, name="action")


def counter(**kwargs: Any) -> CounterEnv:
    """A well-behaved counter env."""
    return CounterEnv(**kwargs)


class SucceedingEnv(CounterEnv):
    """The counter env reporting success as robot tasks do (``info["is_success"]``): true
    from step ``success_at`` on."""

    def __init__(self, success_at: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.success_at = success_at

    @property
    def info(self) -> dict[str, Any]:
        return {"is_success": self.t >= self.success_at}


def succeeding(**kwargs: Any) -> SucceedingEnv:
    """A counter env that reports success (info ``is_success``) from a step on."""
    return SucceedingEnv(**kwargs)


class UnseededEnv(CounterEnv):
    """The counter env whose rewards draw from a generator it never seeds: every run of it
    differs from the last (what replay verification must catch)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.noise = np.random.default_rng()  # seeded from the OS, whatever seed() says

    def step(self, action: Any) -> dm_env.TimeStep:
        timestep = super().step(action)
        return timestep._replace(reward=timestep.reward + float(self.noise.random()))


def unseeded(**kwargs: Any) -> UnseededEnv:
    """A counter env whose rewards are drawn from an unseeded random source."""
    return UnseededEnv(**kwargs)


def plugged(**kwargs: Any) -> CounterEnv:
    """The counter env under another name, allowed only through an entry point in tests."""
    return CounterEnv(**kwargs)


def slow_start(delay: float = 30.0) -> CounterEnv:
    """An env whose construction takes ``delay`` seconds."""
    time.sleep(delay)
    return CounterEnv()


def broken_start() -> CounterEnv:
    """An env whose construction raises."""
    raise RuntimeError("cannot build this env")


def not_an_env() -> object:
    """A factory returning something that is not a dm_env."""
    return object()


def image_obs() -> dm_env.Environment:
    """An env without render(): frames come from its image observation."""

    class _ImageObs(CounterEnv):
        render = None  # type: ignore[assignment]
        cameras = ()  # type: ignore[assignment]

    return _ImageObs()


class _CameraLessModel:
    ncam = 0

    def id2name(self, index: int, kind: str) -> str:
        raise IndexError(index)


class _CameraLessPhysics:
    """What DmEnvAdapter reads of a dm_control physics (dm_control is an optional extra)."""

    model = _CameraLessModel()

    def __init__(self) -> None:
        self.camera_ids: list[int] = []

    def render(self, height: int, width: int, camera_id: int) -> np.ndarray:
        if camera_id != -1:  # like MuJoCo: only the free camera exists without model cameras
            raise ValueError(f"no camera {camera_id}")
        self.camera_ids.append(camera_id)
        return np.zeros((height, width, 3), dtype=np.uint8)


class CameraLessPhysicsEnv(CounterEnv):
    """A physics env whose model has no cameras and no render method of its own."""

    render = None  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.physics = _CameraLessPhysics()


def camera_less_physics() -> CameraLessPhysicsEnv:
    """Frames from a physics without model cameras."""
    return CameraLessPhysicsEnv()


class BigFrameEnv(CounterEnv):
    """``size``×``size`` frames with fresh noise every step (in the top ``noise`` share of
    the rows: all of them by default, the JPEG encoder's worst case): the largest messages
    the worker sends. The observation is the frame's top-left ``obs_size``² corner (the
    whole frame by default): the largest records it writes."""

    cameras = ("front",)  # frames from render(), not from the observation

    def __init__(self, size: int = 1024, episode_len: int = 1_000_000, noise: float = 1.0,
                 obs_size: int | None = None) -> None:  # fmt: skip
        super().__init__(episode_len=episode_len)
        self.size = size
        self.noisy_rows = max(1, int(size * noise))
        self.obs_size = obs_size or size
        self.rng = np.random.default_rng(0)
        self.image = np.zeros((size, size, 3), dtype=np.uint8)

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def _obs(self) -> np.ndarray:
        rows = self.noisy_rows
        self.image[:rows] = self.rng.integers(0, 256, (rows, self.size, 3), dtype=np.uint8)
        return self.image[: self.obs_size, : self.obs_size].copy()

    def render(self, camera: str = "front") -> np.ndarray:
        return self.image

    def observation_spec(self) -> specs.Array:
        return specs.Array((self.obs_size, self.obs_size, 3), np.uint8, name="observation")


def big_frame(**kwargs: Any) -> BigFrameEnv:
    """Frames of ``size``×``size`` noise (1024 by default)."""
    return BigFrameEnv(**kwargs)
