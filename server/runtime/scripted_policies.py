"""Scripted example policies (no weights), registered through the project's own entry points
(``pyproject.toml``, group ``rlds_studio.policies``): :mod:`server.runtime.autonomy` builds
one when a study names its id.

``fetch-pick-place-scripted`` (:func:`fetch_pick_place`): Gymnasium-Robotics'
FetchPickAndPlace from its observation dict - move the open hand above the cube, lower it
round the cube, shut it, carry the cube to the goal.

``robosuite-pick-scripted`` (:func:`robosuite_pick`): robosuite's Lift and PickPlaceCan
(:mod:`server.envs.robosuite_tasks`) from their observation dict - the same phases for the
cube or the can, lifted (and for PickPlaceCan carried over its bin and dropped).
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


# -- robosuite (server/envs/robosuite_tasks.py): OSC_POSE deltas, 1 = 5 cm, gripper +1 shut --
RS_GAIN = 12.0  # action per metre of error (the controller moves ~a fifth of it per step)
RS_ABOVE = 0.08  # approach this high above the object's centre
RS_NEAR = 0.012  # "there" within this
RS_SHUT_STEPS = 10  # steps to close the fingers before lifting (robosuite's GRIP is slowish)
RS_LIFT = 0.15  # lift the object's centre this far above where it was grasped
# PickPlaceCan's place for the can (robosuite 1.5: target_bin_placements[3], world frame),
# at the height to carry it
RS_CAN_BIN = np.array([0.1975, 0.4025, 1.0])
RS_OPEN, RS_SHUT = -1.0, 1.0


class RobosuitePick:
    """Phases: approach above, descend, shut, lift (PickPlaceCan: then carry over the bin and
    open); back to approach if the object slips out of the hand."""

    def __init__(self, place: bool = False) -> None:
        self.place = place
        self.reset()

    def reset(self) -> None:
        self.phase, self.count, self.grasp_z = "approach", 0, 0.0

    def act(self, observation: dict[str, Any]) -> np.ndarray:
        """The 7-D OSC_POSE action (no rotation) for this observation."""
        hand = np.asarray(observation["robot0_eef_pos"], dtype=np.float64)
        obj = np.asarray(observation["object_pos"], dtype=np.float64)
        holding = np.linalg.norm(obj - hand) < 0.04
        if self.phase in ("lift", "carry") and not holding:
            self.phase = "approach"  # dropped it
        if self.phase == "approach":
            target, grip = obj + [0, 0, RS_ABOVE], RS_OPEN
            if np.linalg.norm((target - hand)[:2]) < RS_NEAR:
                self.phase = "descend"
        if self.phase == "descend":
            target, grip = obj, RS_OPEN
            if np.linalg.norm(target - hand) < RS_NEAR:
                self.phase, self.count = "shut", 0
        if self.phase == "shut":
            target, grip = obj, RS_SHUT
            self.count += 1
            if self.count >= RS_SHUT_STEPS:
                self.phase, self.grasp_z = "lift", float(obj[2])
        if self.phase == "lift":
            target, grip = np.array([hand[0], hand[1], self.grasp_z + RS_LIFT]), RS_SHUT
            if self.place and target[2] - hand[2] < RS_NEAR:
                self.phase = "carry"
        if self.phase == "carry":
            target, grip = RS_CAN_BIN, RS_SHUT
            if np.linalg.norm((target - hand)[:2]) < 0.03:
                self.phase = "drop"
        if self.phase == "drop":
            target, grip = RS_CAN_BIN, RS_OPEN
        move = np.clip((target - hand) * RS_GAIN, -1.0, 1.0)
        return np.array([*move, 0.0, 0.0, 0.0, grip], dtype=np.float32)


def robosuite_pick(_action_spec: Any, observation_spec: Any) -> RobosuitePick:
    """For the catalog's robosuite Lift and PickPlaceCan: moves the open hand above the cube
    or can, lowers it, shuts it and lifts (PickPlaceCan: carries the can to its bin).

    The policy factory of the entry point ``robosuite-pick-scripted``. PickPlaceCan is told
    apart by its object-state (14 long: the can's, Lift's cube has 10).
    """
    place = False
    try:
        place = int(np.prod(observation_spec["object-state"].shape)) == 14
    except (KeyError, TypeError, AttributeError):
        pass
    return RobosuitePick(place=place)
