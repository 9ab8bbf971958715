"""dm_env factories for suites without a Gymnasium or dm_env API of their own.

Imported in the worker only when a study uses them (``DmEnvSource.factory``).
"""

from __future__ import annotations

from typing import Any

import dm_env
import numpy as np
from dm_env import specs


class CrafterEnv(dm_env.Environment):
    """Crafter (``pip install 'rlds-studio[crafter]'``) as a dm_env.

    Dying terminates (discount 0); reaching ``length`` truncates (discount 1).
    """

    def __init__(self, area: int = 64, size: int = 256, length: int = 10_000) -> None:
        import crafter  # optional suite

        self._env = crafter.Env(area=(area, area), size=(size, size), length=length)
        self._actions = len(crafter.constants.actions)
        self._size = size
        self.info: dict[str, Any] = {}

    def seed(self, seed: int) -> None:
        """Seed of the next episode's world (Crafter reads it at reset)."""
        self._env._seed = seed

    def reset(self) -> dm_env.TimeStep:
        self.info = {}
        return dm_env.restart(np.array(self._env.reset()))

    def step(self, action: Any) -> dm_env.TimeStep:
        obs, reward, done, info = self._env.step(int(action))
        self.info = {k: v for k, v in info.items() if k in ("achievements", "inventory")}
        obs = np.array(obs)
        if not done:
            return dm_env.transition(float(reward), obs)
        if info.get("discount", 1.0) == 0.0:
            return dm_env.termination(float(reward), obs)
        return dm_env.truncation(float(reward), obs)

    def observation_spec(self) -> specs.Array:
        return specs.Array((self._size, self._size, 3), np.uint8, name="observation")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(self._actions, dtype=np.int64, name="action")

    def close(self) -> None:
        pass


def crafter_env(**kwargs: Any) -> CrafterEnv:
    """Factory for the catalog's Crafter entry."""
    return CrafterEnv(**kwargs)
