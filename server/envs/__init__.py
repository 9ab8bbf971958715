"""Environments shipped by RLDS Studio itself; importing this package registers their ids.

``RLDSStudio/PickCube-v0`` (:mod:`server.envs.pick_cube`): a floating parallel-jaw gripper
over a table lifts a cube; 7-D end-effector action, two cameras. Needs only ``mujoco``
(the ``robotics`` extra) and Gymnasium.

``RLDSStudio/Robosuite-PickPlaceCan-v0`` and ``RLDSStudio/Robosuite-Lift-v0``
(:mod:`server.envs.robosuite_tasks`): robosuite 1.5's tasks with a Panda on OSC_POSE, two
cameras. Registered here by name only: they build only in the robosuite environment runtime
(``requirements/runtimes/robosuite.in``).
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

# robosuite's tasks (server/envs/robosuite_tasks.py): only in the robosuite runtime
# (requirements/runtimes/robosuite.in); nothing here imports robosuite.
ROBOSUITE_IDS = {
    "RLDSStudio/Robosuite-PickPlaceCan-v0": "PickPlaceCan",
    "RLDSStudio/Robosuite-Lift-v0": "Lift",
}
for _id, _task in ROBOSUITE_IDS.items():
    if _id not in gym.registry:
        gym.register(
            _id,
            entry_point="server.envs.robosuite_tasks:RobosuiteEnv",
            kwargs={"task": _task},
            max_episode_steps=1200,  # a minute at 20 steps a second
        )
