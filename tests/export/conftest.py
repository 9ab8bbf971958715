"""Fixtures for the exporter tests: real Gymnasium episodes recorded with envlogger."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import ale_py
import gymnasium as gym
import minigrid.wrappers
import numpy as np
import pytest

from server.export import EpisodeInput, TaggedSpan
from server.models import Episode
from server.services.exports.selection import replay_fields
from tests.export.consumers import check_report
from tests.export.expected import EXPORTED_VERDICTS, VERDICT_ROWS
from tests.export.recordings import Recording, record_episode

ROOT = Path(__file__).resolve().parents[2]

gym.register_envs(ale_py)
SPEEDS = (1.0, 0.5, 1.1, 2.0, 0.05, 10.0)
QUALITIES = (75, 50, 90)


def make_cartpole(max_steps: int = 500) -> Callable[[], gym.Env]:
    """CartPole (vector observations, discrete actions) with a time limit."""
    return lambda: gym.make("CartPole-v1", render_mode="rgb_array", max_episode_steps=max_steps)


def make_pong(max_steps: int = 30) -> Callable[[], gym.Env]:
    """ALE Pong with RGB image observations (210 x 160 x 3 uint8)."""
    return lambda: gym.make(
        "ALE/Pong-v5", obs_type="rgb", render_mode="rgb_array", max_episode_steps=max_steps
    )


def make_minigrid() -> gym.Env:
    """MiniGrid with a Dict observation: an RGB image and a discrete direction."""
    env = gym.make("MiniGrid-Empty-5x5-v0", render_mode="rgb_array", max_steps=12)
    env = minigrid.wrappers.RGBImgPartialObsWrapper(env, tile_size=4)
    return gym.wrappers.FilterObservation(env, ["direction", "image"])


def make_lunar() -> gym.Env:
    """LunarLander with continuous (Box) actions, cut short by a time limit."""
    return gym.make(
        "LunarLander-v3", continuous=True, render_mode="rgb_array", max_episode_steps=15
    )


def shared_autonomy(t: int, action: Any) -> dict[str, Any]:
    """The control record of a_t in a shared-autonomy episode: the policy chose two actions,
    the player the next two; the player's own action is the noop while the policy drives,
    the policy proposed ones while the player drove, and nothing at every fifth action."""
    flat = np.asarray(action, dtype=np.float64).reshape(-1).tolist()
    if t % 4 < 2:
        return {"source": "policy", "human": [0.0] * len(flat), "policy": flat}
    proposal = None if t % 5 == 4 else [1.0] * len(flat)
    return {"source": "human", "human": flat, "policy": proposal}


def switching(t: int) -> str:
    """The camera timestep ``t``'s frame came from: the player switched at steps 3 and 7."""
    return "wrist" if 3 <= t < 7 else "front"


@pytest.fixture(scope="session")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Recording]]:
    """Recorded episodes per environment, shared by the tests (they never modify them)."""
    root = tmp_path_factory.mktemp("logs")

    def rec(
        env_id: str, make: Callable[[], gym.Env], name: str, seed: int, **stream: Any
    ) -> Recording:
        return record_episode(
            make, root / name, env_id=env_id, episode_id=name, seed=seed, **stream
        )

    # Some episodes are played at changing speeds and stream qualities (async mode, an
    # adaptive stream; 1.1 and 0.05 have no exact float32); the others record no speed (sync).
    changing = {
        "speed": lambda t: SPEEDS[t % len(SPEEDS)],
        "jpeg_quality": lambda t: QUALITIES[t // 3 % len(QUALITIES)],
    }
    return {
        # seed 1 terminates by itself; seed 2 is cut by a 9-step time limit (truncated).
        "cartpole": [
            rec("CartPole-v1", make_cartpole(), "cp-1", 1, control=shared_autonomy, **changing),
            rec("CartPole-v1", make_cartpole(9), "cp-2", 2),
            rec("CartPole-v1", make_cartpole(), "cp-3", 3, jpeg_quality=90),
        ],
        "pong": [
            rec("ALE/Pong-v5", make_pong(), "pong-1", 11, speed=lambda t: 0.75 if t < 5 else 2.0),
            rec("ALE/Pong-v5", make_pong(12), "pong-2", 12),
        ],
        # the player switched cameras twice (as in PickCube: front, then wrist, then front)
        "minigrid": [
            rec("MiniGrid-Empty-5x5-v0", make_minigrid, "grid-1", 21, camera=switching, **changing)
        ],
        "lunar": [
            rec(
                "LunarLander-v3",
                make_lunar,
                "lunar-1",
                31,
                jpeg_quality=50,
                control=shared_autonomy,
            ),
        ],  # fmt: skip
    }


CHECKED = ("diverged", "verified")  # the verdicts of a test's first episodes


def checked(inputs: list[EpisodeInput]) -> list[EpisodeInput]:
    """The inputs with the first ones' rows checked (CHECKED), their replay fields as the app
    makes them of a row (server/services/exports/selection.py); the others pending."""
    return [
        replace(ep, **replay_fields(Episode(**VERDICT_ROWS[v])))
        for ep, v in zip(inputs, CHECKED, strict=False)
    ] + inputs[len(CHECKED) :]


def exported_verdicts(n: int) -> list[dict[str, Any] | None]:
    """The replay fields the first ``n`` episodes of checked() inputs export (None: pending)."""
    return [EXPORTED_VERDICTS[CHECKED[i]] if i < len(CHECKED) else None for i in range(n)]


def episode_input(
    rec: Recording,
    *,
    step_tags: tuple[TaggedSpan, ...] = (),
    tags: tuple[str, ...] = (),
    notes: str = "",
    status: str = "completed",
    outcomes: dict[str, str] | None = None,
) -> EpisodeInput:
    """The job's input for a recording, with the test's DB-side metadata."""
    return EpisodeInput(
        log_dir=rec.log_dir,
        episode_id=rec.episode_id,
        agent_id="agent-x",
        status=status,
        tags=tags,
        step_tags=step_tags,
        notes=notes,
        **(outcomes or {}),
    )


@pytest.fixture
def consumer() -> Callable[..., dict[str, Any]]:
    """Run consumer_check.py in the consumer venv (tests/export/consumers.py): its report;
    fails (not skips) when the venv is absent."""

    def run(*args: str) -> dict[str, Any]:
        return check_report("rlds", "rlds", *args)

    return run
