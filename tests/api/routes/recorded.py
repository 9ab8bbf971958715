"""Real recorded episodes for the review and export API tests.

Logs are recorded once per test session with the worker's EpisodeWriter (through
tests/export/recordings.py); each test copies the ones it needs under its own data root and
inserts Episode rows pointing at them, as the player would.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from sqlalchemy.orm import Session

from server.models import Episode, EpisodeTag, Participant, Study, User, utcnow
from server.recording.format import episode_dir
from tests.export.recordings import Recording, record_episode


def _cartpole(max_steps: int) -> Callable[[], gym.Env]:
    return lambda: gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=max_steps)


def _mountain_car() -> gym.Env:
    return gym.make("MountainCar-v0", render_mode="rgb_array", max_episode_steps=6)


def record_set(root: Path) -> dict[str, list[Recording]]:
    """Five short CartPole episodes and one MountainCar episode (different spaces)."""
    out: dict[str, list[Recording]] = {"cartpole": [], "mountaincar": []}
    for i, steps in enumerate((8, 12, 6, 10, 5)):
        episode_id = f"c{i}".ljust(32, "0")  # hex, as real ids are: a gold item names them
        out["cartpole"].append(
            record_episode(
                _cartpole(steps),
                root / episode_id,
                env_id="CartPole-v1",
                episode_id=episode_id,
                seed=100 + i,
            )
        )
    episode_id = "d0".ljust(32, "0")
    out["mountaincar"].append(
        record_episode(
            _mountain_car,
            root / episode_id,
            env_id="MountainCar-v0",
            episode_id=episode_id,
            seed=7,
        )
    )
    return out


def two_env_spec(name: str = "Two envs") -> dict:
    """A study spec with a CartPole and a MountainCar environment."""
    return {
        "name": name,
        "environments": [
            {
                "id": "cartpole",
                "name": "CartPole",
                "source": {"kind": "gymnasium", "id": "CartPole-v1"},
            },
            {
                "id": "mountaincar",
                "name": "MountainCar",
                "source": {"kind": "gymnasium", "id": "MountainCar-v0"},
            },
        ],
    }


@dataclass
class Inserter:
    """Copies recordings under the data root and inserts their Episode rows."""

    db: Session
    data_root: Path

    def add(
        self,
        study: Study,
        rec: Recording,
        *,
        env_key: str = "cartpole",
        status: str = "completed",
        participant: str | None = "worker-1",
        user: User | None = None,
        tags: tuple[str, ...] = (),
        minutes_ago: int = 0,
    ) -> Episode:
        """An Episode row for ``rec`` in ``study`` (its log copied where the player puts it)."""
        target = episode_dir(self.data_root, study.id, rec.episode_id)
        if not target.exists():
            shutil.copytree(rec.log_dir, target)
        env = next(e for e in study.environments if e.env_key == env_key)
        participant_id = None
        if participant is not None:
            row = (
                self.db.query(Participant)
                .filter_by(study_id=study.id, external_id=participant)
                .one_or_none()
            )
            if row is None:
                row = Participant(study_id=study.id, external_id=participant)
                self.db.add(row)
                self.db.flush()
            participant_id = row.id
        started = utcnow() - timedelta(minutes=minutes_ago)
        episode = Episode(
            id=rec.episode_id,
            study_id=study.id,
            study_env_id=env.id,
            env_key=env_key,
            participant_id=participant_id,
            user_id=user.id if user is not None else None,
            is_test=participant_id is None,  # as the player marks a designer's test play
            status=status,
            seed=rec.seed,
            steps=rec.num_steps,
            total_reward=float(sum(rec.rewards)),
            started_at=started,
            ended_at=started + timedelta(seconds=5),
            duration_s=5.0,
            storage_path=str(target),
            tags=[EpisodeTag(name=t) for t in tags],
        )
        self.db.add(episode)
        self.db.commit()
        return episode


class LongEnv(gym.Env):
    """A fast CartPole-like env (4 floats, 2 actions) whose reward spikes every 1000 steps.

    Reward is 1 per step, 50 at steps t with t % 1000 == 999 and -20 at t == length - 2
    (r_t, the reward of action a_t); the episode is truncated after ``length - 1`` actions.
    """

    metadata = {"render_modes": ["rgb_array"]}
    observation_space = gym.spaces.Box(-1e6, 1e6, shape=(4,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length: int) -> None:
        self.length = length
        self.t = 0
        self.render_mode = "rgb_array"
        self.image = np.zeros((16, 16, 3), dtype=np.uint8)

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.t * 0.5, -self.t, 0.25], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {"t": 0}

    def step(self, action: int) -> tuple:
        reward = LongEnv.reward(self.t, self.length)
        self.t += 1
        return self._obs(), reward, False, self.t >= self.length - 1, {"t": self.t}

    @staticmethod
    def reward(t: int, length: int) -> float:
        """r_t of the episode (see the class doc)."""
        if t == length - 2:
            return -20.0
        return 50.0 if t % 1000 == 999 else 1.0

    def render(self) -> np.ndarray:
        self.image[:] = 30
        self.image[4:12, self.t % 16] = (240, 200, 40)  # a bar that moves with the step
        return self.image


def gamepad_input(t: int, action: Any) -> dict:
    """Raw input of a_t: ArrowLeft/ArrowRight, a gamepad button and an axis by step."""
    key = "ArrowRight" if int(action) else "ArrowLeft"
    return {
        "keys": [key],
        "buttons": {"0": 1.0 if t % 2 else 0.0},
        "axes": [0.0, round(t / 1e5, 5)],
    }


LONG_STEPS = 20_000
# What the worker records as env_config: the study's EnvironmentSpec (its catalog controls
# name the actions: ArrowLeft "left", ArrowRight "right").
CARTPOLE_SPEC = {"id": "cartpole", "name": "CartPole",
                 "source": {"kind": "gymnasium", "id": "CartPole-v1"}}  # fmt: skip


def record_long(root: Path, length: int) -> Recording:
    """A ``length``-step episode of :class:`LongEnv` recorded with the real writer."""
    episode_id = f"long{length}".ljust(32, "0")
    return record_episode(
        lambda: LongEnv(length),
        root / episode_id,
        env_id="cartpole",
        env_config=CARTPOLE_SPEC,
        episode_id=episode_id,
        seed=3,
        jpeg_quality=50,
        raw_input=gamepad_input,
    )


class ImageEnv(gym.Env):
    """Dict observation: a 24×32 RGB picture and a 3,000-value vector."""

    metadata = {"render_modes": ["rgb_array"]}
    observation_space = gym.spaces.Dict(
        {
            "pixels": gym.spaces.Box(0, 255, (24, 32, 3), np.uint8),
            "lidar": gym.spaces.Box(-1.0, 1.0, (3000,), np.float32),
        }
    )
    action_space = gym.spaces.Discrete(2)
    render_mode = "rgb_array"

    def _obs(self, t: int) -> dict:
        pixels = np.zeros((24, 32, 3), np.uint8)
        pixels[:, :16] = 200  # left half light
        return {"pixels": pixels, "lidar": np.linspace(-1, 1, 3000, dtype=np.float32) * (t % 2)}

    def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
        self.t = 0
        return self._obs(0), {}

    def step(self, action):  # type: ignore[no-untyped-def]
        self.t += 1
        return self._obs(self.t), 0.0, False, self.t >= 3, {}

    def render(self) -> np.ndarray:
        return np.zeros((16, 16, 3), np.uint8)


def dataset_studies(
    factory: Any, db: Session, data_root: Path, recorded: dict[str, list[Recording]]
) -> tuple[User, Study, Study]:
    """Two CartPole studies of one designer for datasets, of real recordings: "Pilot" has
    worker-1 (two episodes, task red; the second excluded) and worker-2 (one, task blue),
    "Main" has worker-3 (one) and worker-1 again (one: the same person, by external id)."""
    owner = factory.user()
    tasks = [{"id": "red", "instruction": "Push right."}, {"id": "blue", "instruction": "Left."}]
    pilot = factory.study(owner, {"name": "Pilot",
                                  "environments": [{**CARTPOLE_SPEC, "tasks": tasks}]})  # fmt: skip
    main = factory.study(owner, {"name": "Main", "environments": [{**CARTPOLE_SPEC}]})
    ins = Inserter(db, data_root)
    cp = recorded["cartpole"]
    for i, (study, who, task) in enumerate(
        [
            (pilot, "worker-1", "red"),
            (pilot, "worker-1", "red"),
            (pilot, "worker-2", "blue"),
            (main, "worker-3", None),
            (main, "worker-1", None),
        ]  # fmt: skip
    ):
        episode = ins.add(study, cp[i], participant=who, minutes_ago=50 - 10 * i)
        episode.task_key = task
        episode.excluded = i == 1
    db.commit()
    return owner, pilot, main
