"""Environments shipped by RLDS Studio itself; importing this package registers their ids.

``RLDSStudio/PickCube-v0`` (:mod:`server.envs.pick_cube`): a floating parallel-jaw gripper
over a table lifts a cube; 7-D end-effector action, two cameras. Needs only ``mujoco``
(the ``robotics`` extra) and Gymnasium.
"""

from __future__ import annotations

import os

import gymnasium as gym

# headless: EGL unless the operator chose otherwise (mujoco reads it when first imported)
os.environ.setdefault("MUJOCO_GL", "egl")

PICK_CUBE_ID = "RLDSStudio/PickCube-v0"

if PICK_CUBE_ID not in gym.registry:
    gym.register(
        PICK_CUBE_ID,
        entry_point="server.envs.pick_cube:PickCubeEnv",
        max_episode_steps=1500,  # a minute at 25 steps a second
    )
