"""Run by the robosuite runtime's interpreter (tests/runtime/test_robosuite.py): restore each
recorded step's ``sim_state`` in a new env, robomimic's way, and redraw its images.

Usage: robosuite_restore.py <steps.npz> <env id> <kwargs JSON>. The npz holds ``sim_state``
and the two cameras' images of every recorded step (arrays, no pickles). Prints one JSON line:
the steps compared and, per image key, the largest difference of any pixel.
"""

from __future__ import annotations

import json
import sys

import gymnasium as gym
import numpy as np

import server.envs  # noqa: F401  (registers the ids)


def main(path: str, env_id: str, kwargs: str) -> None:
    recorded = np.load(path)
    env = gym.make(env_id, **json.loads(kwargs)).unwrapped
    env.reset(seed=12345)  # any episode: the restored state is what counts
    worst: dict[str, int] = {}
    for i, state in enumerate(recorded["sim_state"]):
        for key, image in env.restore(state).items():
            diff = int(np.abs(image.astype(int) - recorded[key][i].astype(int)).max())
            worst[key] = max(worst.get(key, 0), diff)
    print(json.dumps({"steps": len(recorded["sim_state"]), "max_diff": worst}))


if __name__ == "__main__":
    main(*sys.argv[1:])
