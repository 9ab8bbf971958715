"""Scripted example policies (no weights), registered through the project's own entry points
(``pyproject.toml``, group ``rlds_studio.policies``): :mod:`server.runtime.autonomy` builds
one when a study names its id.

``fetch-pick-place-scripted`` (:func:`fetch_pick_place`): Gymnasium-Robotics'
FetchPickAndPlace from its observation dict - move the open hand above the cube, lower it
round the cube, shut it, carry the cube to the goal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

GAIN = 10.0  # action per metre of error (actions are clipped to [-1, 1]: 5 cm a step at most)
ABOVE = 0.05  # approach this high above the cube
NEAR = 0.01  # "there" within this
SHUT_STEPS = 6  # steps to close the fingers before lifting
OPEN, SHUT = 1.0, -1.0


class FetchPickAndPlace:
    """Phases: approach above, descend, shut, carry; back to approach if the cube is lost."""

    def __init__(self) -> None:
        self.phase = "approach"
        self.shut_for = 0

    def reset(self) -> None:
        self.phase, self.shut_for = "approach", 0

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        """dx, dy, dz, gripper for this observation."""
        obs = np.asarray(observation["observation"], dtype=np.float64)
        hand, cube = obs[0:3], obs[3:6]
        goal = np.asarray(observation["desired_goal"], dtype=np.float64)
        if self.phase == "carry" and np.linalg.norm(cube - hand) > 0.05:
            self.phase = "approach"  # dropped it
        if self.phase == "approach":
            target, grip = cube + [0, 0, ABOVE], OPEN
            if np.linalg.norm((target - hand)[:2]) < NEAR:
                self.phase = "descend"
        if self.phase == "descend":
            target, grip = cube, OPEN
            if np.linalg.norm(target - hand) < NEAR:
                self.phase = "shut"
        if self.phase == "shut":
            target, grip = cube, SHUT
            self.shut_for += 1
            if self.shut_for >= SHUT_STEPS:
                self.phase, self.shut_for = "carry", 0
        if self.phase == "carry":
            target, grip = goal, SHUT
        move = np.clip((target - hand) * GAIN, -1.0, 1.0)
        return np.array([*move, grip], dtype=np.float32)


def fetch_pick_place(_action_spec: Any, _observation_spec: Any) -> FetchPickAndPlace:
    """For the catalog's FetchPickAndPlace: moves the open hand above the cube, lowers it,
    shuts it and carries the cube to the goal (scripted, no weights).

    The policy factory of the entry point ``fetch-pick-place-scripted`` (the editor shows
    the first paragraph, :mod:`server.runtime.policy_list`).
    """
    return FetchPickAndPlace()
