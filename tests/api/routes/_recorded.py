"""Real recorded episodes for the review and export API tests.

Logs are recorded once per test session with the worker's EpisodeWriter (through
tests/export/_recordings.py); each test copies the ones it needs under its own data root and
inserts Episode rows pointing at them, as the player would.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import gymnasium as gym
from sqlalchemy.orm import Session

from server.models import Episode, EpisodeTag, Participant, Study, User, utcnow
from server.recording.format import episode_dir
from tests.export._recordings import Recording, record_episode


def _cartpole(max_steps: int) -> Callable[[], gym.Env]:
    return lambda: gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=max_steps)


def _mountain_car() -> gym.Env:
    return gym.make("MountainCar-v0", render_mode="rgb_array", max_episode_steps=6)


def record_set(root: Path) -> dict[str, list[Recording]]:
    """Five short CartPole episodes and one MountainCar episode (different spaces)."""
    out: dict[str, list[Recording]] = {"cartpole": [], "mountaincar": []}
    for i, steps in enumerate((8, 12, 6, 10, 5)):
        episode_id = f"cp{i}".ljust(32, "0")
        out["cartpole"].append(
            record_episode(
                _cartpole(steps),
                root / episode_id,
                env_id="CartPole-v1",
                episode_id=episode_id,
                seed=100 + i,
            )
        )
    episode_id = "mc0".ljust(32, "0")
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
