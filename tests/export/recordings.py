"""Record real Gymnasium episodes as envlogger logs with the worker's EpisodeWriter.

A small Gymnasium -> dm_env adapter and a ``step_fn`` that stores the per-step metadata of
server/recording/format.py (frame JPEG, input, timing, info) and the log-level metadata.
Each recording also keeps what was fed to envlogger, independently of any reader, so tests
can compare an export with what really happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
import simplejpeg
from dm_env import specs

from server.recording.format import FORMAT_VERSION
from server.recording.writer import EpisodeWriter


def space_to_spec(space: gym.Space, name: str = "") -> Any:
    """The dm_env spec of a Gymnasium space."""
    if isinstance(space, gym.spaces.Box):
        return specs.BoundedArray(space.shape, space.dtype, space.low, space.high, name=name)
    if isinstance(space, gym.spaces.Discrete):
        return specs.DiscreteArray(int(space.n), dtype=np.int64, name=name)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return specs.BoundedArray(space.shape, np.int64, 0, space.nvec - 1, name=name)
    if isinstance(space, gym.spaces.MultiBinary):
        return specs.BoundedArray(space.shape, np.int8, 0, 1, name=name)
    if isinstance(space, gym.spaces.Dict):
        return {k: space_to_spec(s, k) for k, s in space.spaces.items()}
    raise TypeError(f"unsupported space {space!r}")


def to_spec_value(value: Any, spec: Any) -> Any:
    """``value`` as numpy values with the spec's dtypes (copied: some envs reuse arrays)."""
    if isinstance(spec, dict):
        return {k: to_spec_value(value[k], s) for k, s in spec.items()}
    return np.array(value, dtype=spec.dtype).reshape(spec.shape)


class GymDmEnv(dm_env.Environment):
    """A Gymnasium env as a dm_env one.

    After every reset/step it calls ``on_step(action_or_None, info)``; whatever that leaves in
    ``metadata_now`` is what the envlogger ``step_fn`` records with the timestep.
    """

    def __init__(self, env: gym.Env, seed: int, on_step: Any) -> None:
        self.env = env
        self.seed = seed
        self.on_step = on_step
        self._obs_spec = space_to_spec(env.observation_space, "observation")
        self._act_spec = space_to_spec(env.action_space, "action")
        self.metadata_now: dict[str, Any] = {}

    def reset(self) -> dm_env.TimeStep:
        obs, info = self.env.reset(seed=self.seed)
        self.on_step(None, info)
        return dm_env.restart(to_spec_value(obs, self._obs_spec))

    def step(self, action: Any) -> dm_env.TimeStep:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.on_step(action, info)
        obs = to_spec_value(obs, self._obs_spec)
        if terminated:
            return dm_env.termination(float(reward), obs)
        if truncated:
            return dm_env.truncation(float(reward), obs)
        return dm_env.transition(float(reward), obs)

    def observation_spec(self) -> Any:
        return self._obs_spec

    def action_spec(self) -> Any:
        return self._act_spec

    def reward_spec(self) -> Any:
        return specs.Array((), np.float64, "reward")

    def discount_spec(self) -> Any:
        return specs.BoundedArray((), np.float64, 0.0, 1.0, "discount")


@dataclass
class Recording:
    """One recorded episode: where its log is and everything that was fed to envlogger."""

    log_dir: Path
    episode_id: str
    env_id: str
    env_config: dict[str, Any]
    seed: int
    observations: list[Any] = field(default_factory=list)  # o_0 .. o_T
    actions: list[Any] = field(default_factory=list)  # a_0 .. a_{T-1}
    rewards: list[float] = field(default_factory=list)  # r_0 .. r_{T-1}
    terminated: bool = False
    truncated: bool = False
    frames: list[bytes] = field(default_factory=list)  # one per observation
    inputs: list[Any] = field(default_factory=list)  # raw input of a_t
    infos: list[str] = field(default_factory=list)  # one per observation
    frame_times: list[tuple[int, int]] = field(default_factory=list)  # (sent, drawn) per obs
    timings: list[dict[str, Any]] = field(default_factory=list)  # as recorded per timestep
    controls: list[dict[str, Any] | None] = field(default_factory=list)  # of a_t (autonomy)

    @property
    def num_steps(self) -> int:
        """RLDS steps: one per observation."""
        return len(self.observations)


def _info_json(info: dict[str, Any]) -> str:
    def default(value: Any) -> Any:
        if isinstance(value, np.generic | np.ndarray):
            return value.tolist()
        return repr(value)

    return json.dumps(info, default=default, sort_keys=True)


def record_episode(
    make_env: Any,
    log_dir: Path,
    *,
    env_id: str,
    episode_id: str,
    seed: int,
    study_id: str = "study-1",
    env_config: dict[str, Any] | None = None,
    jpeg_quality: int | Callable[[int], int] = 75,
    speed: Callable[[int], float] | None = None,
    bad_timing: dict[int, dict[str, Any]] | None = None,
    raw_input: Any = None,
    control: Callable[[int, Any], dict[str, Any]] | None = None,
    camera: Callable[[int], str] | None = None,
) -> Recording:
    """Play one seeded random-policy episode of ``make_env()`` into an envlogger log.

    Time limits (``gym.make(..., max_episode_steps=N)``) end episodes as dm_env truncations.
    ``bad_timing`` maps a timestep index to timing values recorded with it as given (NaN,
    1e300, ...), as a recorder without the protocol's checks did. ``raw_input(t, action)``
    gives the browser input recorded with a_t (default: a made-up key per action).
    ``jpeg_quality`` (or ``jpeg_quality(t)``) is the quality timestep t's frame is encoded at,
    recorded in its timing as the worker does; ``speed(t)`` the clock's speed factor recorded
    with timestep t (None: none recorded, as in sync mode). ``control(t, action)`` gives the
    shared-autonomy record of a_t (``server/recording/format.py``; None: no policy).
    ``camera(t)`` names the camera timestep t's frame was rendered from, recorded in its
    timing as the worker does in environments with several (None: none recorded).
    """
    gym_env = make_env()
    config = env_config if env_config is not None else {"env_id": env_id, "kwargs": {}}
    rec = Recording(log_dir, episode_id, env_id, config, seed)
    clock = [1_700_000_000_000 + seed * 1000]
    pending_acks: list[list[int]] = []

    def now() -> int:
        clock[0] += 7
        return clock[0]

    def on_step(action: Any, info: dict[str, Any]) -> None:
        t = len(rec.frames)  # index of the observation this timestep carries
        record = None
        if action is None:
            raw: Any = None
            timing: dict[str, Any] = {"applied": now(), "seen_step": -1}
        else:
            if raw_input is not None:
                raw = raw_input(t - 1, action)
            else:
                raw = {
                    "keys": [f"k{int(np.sum(action)) % 5}"],
                    "action": np.asarray(action).tolist(),
                }
            timing = {"input_sent": now(), "input_recv": now(), "applied": now()}
            timing["seen_step"] = t - 1
            rec.inputs.append(raw)
            record = None if control is None else control(t - 1, action)
            rec.controls.append(record)
        quality = jpeg_quality(t) if callable(jpeg_quality) else jpeg_quality
        timing["jpeg_quality"] = quality
        if speed is not None:
            timing["speed"] = speed(t)
        if camera is not None:
            timing["camera"] = camera(t)
        timing["acks"] = list(pending_acks)
        pending_acks.clear()
        timing.update((bad_timing or {}).get(t, {}))
        frame = np.ascontiguousarray(gym_env.render())
        jpeg = bytes(simplejpeg.encode_jpeg(frame, quality=quality, colorsubsampling="420"))
        info_text = _info_json(info)
        dm.metadata_now = {
            "frame": jpeg,
            "input": json.dumps(raw),
            "timing": json.dumps(timing),
            "info": info_text,
            "control": json.dumps(record),
        }
        rec.frames.append(jpeg)
        rec.infos.append(info_text)
        rec.timings.append(timing)
        # The frame of step t is sent after step t is recorded: its ack rides with t+1.
        sent, drawn = now(), now()
        rec.frame_times.append((sent, drawn))
        pending_acks.append([t, sent, drawn])

    dm = GymDmEnv(gym_env, seed, on_step)
    gym_env.action_space.seed(seed)
    metadata = {
        "format_version": FORMAT_VERSION,
        "episode_id": episode_id,
        "study_id": study_id,
        "env_id": env_id,
        "env_config": json.dumps(config, sort_keys=True),
        "seed": seed,
    }
    log_dir.mkdir(parents=True, exist_ok=True)
    writer = EpisodeWriter(
        dm, log_dir, metadata, lambda timestep, action, env: dict(dm.metadata_now)
    )
    try:
        ts = writer.reset()
        rec.observations.append(ts.observation)
        while not ts.last():
            action = to_spec_value(gym_env.action_space.sample(), dm.action_spec())
            ts = writer.step(action)
            rec.actions.append(action)
            rec.rewards.append(float(ts.reward))
            rec.observations.append(ts.observation)
        rec.terminated = ts.discount == 0.0
        rec.truncated = not rec.terminated
    finally:
        writer.finalize()
    gym_env.close()
    return rec
