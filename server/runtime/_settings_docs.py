"""What each catalog setting means, its real default, and the values a game accepts.

The catalog's schemas (``_catalog_data``) give types and bounds; this module adds, per
suite, a description and the environment's own default for each setting (read from the
environments' constructors and Gymnasium's registry), and for the named Atari games the
modes and difficulties the ROM has (ALE's ``getAvailableModes``/``getAvailableDifficulties``).
:func:`described` merges them into a schema copy; the editor shows them as placeholders.
"""

from __future__ import annotations

import copy
from typing import Any

# suite → setting → (description, default or None when it depends on the entry)
_DOCS: dict[str, dict[str, tuple[str, Any]]] = {
    "classic": {
        "sutton_barto_reward": (
            "Reward 0 per step and -1 on failure (Sutton & Barto's "
            "variant) instead of +1 per step.",
            False,
        ),
        "goal_velocity": ("Speed the car must have at the flag to win.", 0),
        "g": ("Gravity acting on the pendulum, in m/s².", 10.0),
    },
    "box2d": {
        "gravity": ("Gravity of the moon, in m/s² (negative: downwards).", -10.0),
        "enable_wind": ("Blow wind and turbulence on the lander.", False),
        "wind_power": ("Strongest linear wind, when wind is on.", 15.0),
        "turbulence_power": ("Strongest rotational turbulence, when wind is on.", 1.5),
        "lap_complete_percent": ("Share of the track's tiles to visit for a lap to count.", 0.95),
        "domain_randomize": ("Random colours for the track and grass on each reset.", False),
        "continuous": ("Steer, gas and brake as numbers (off: five discrete actions).", True),
        "hardcore": ("Add ladders, stumps and pitfalls to the terrain.", False),
    },
    "minigrid": {
        "max_steps": (
            "Steps before the episode is cut (the default depends on the grid's size).",
            None,
        ),
        "see_through_walls": ("Let the agent's view pass through walls.", False),
        "agent_view_size": ("Width of the agent's square view, in cells (odd).", 7),
    },
    "atari": {
        "mode": ("Game mode: a variant of the game's rules (the values the ROM has).", 0),
        "difficulty": ("Difficulty switch: harder play in most games.", 0),
        "repeat_action_probability": (
            "Chance that the previous action is repeated instead "
            "of the one pressed (sticky actions).",
            0.25,
        ),
        "frameskip": ("Emulator frames per step: the same action is repeated this many times.", 4),
        "full_action_space": ("Offer all 18 Atari actions, not only the game's own.", False),
        "max_num_frames_per_episode": (
            "Emulator frames before the episode is cut (30 minutes at 60 Hz).",
            108_000,
        ),
    },
    "mujoco": {
        "frame_skip": ("Physics steps per environment step.", None),
        "reset_noise_scale": ("Scale of the random noise added to the start pose.", None),
    },
    "robotics": {
        "reward_type": (
            "Reward per step: 'sparse' (-1 until the goal is reached, then 0) or "
            "'dense' (minus the distance to the goal).",
            "sparse",
        ),
        "max_episode_steps": (
            "Steps before the episode is cut (the environment's own 50 is 2 "
            "s at 25 steps/s; the catalog starts with 1500, a minute).",
            50,
        ),
        "width": ("Width of the rendered frame, in pixels (each pixel is CPU work).", 480),
        "height": ("Height of the rendered frame, in pixels.", 480),
        "default_camera_config": (
            "The view: distance, azimuth and elevation in degrees, lookat [x, y, z] (the "
            "catalog starts with a view facing the robot across the table).",
            {"distance": 2.5, "azimuth": 132.0, "elevation": -14.0, "lookat": [1.3, 0.75, 0.55]},
        ),
    },
    "studio": {
        "reward_type": (
            "Reward per step: 'sparse' (1 once the cube is lifted 8 cm) or 'dense' (that, "
            "minus the fingertips' distance to the cube, plus the cube's height).",
            "sparse",
        ),
        "max_episode_steps": ("Steps before the episode is cut (25 a second: a minute).", 1500),
        "render_size": ("Side of the streamed frame, in pixels (CPU work).", 256),
        "image_size": (
            "Side of each camera's image in the observation (front and wrist); 0 records "
            "no images, only the state vector.",
            128,
        ),
        "terminate_on_success": ("End the episode as soon as the cube is lifted.", True),
        "image_cameras": (
            "The cameras whose images the observation holds: some of 'front' and 'wrist'.",
            ["front", "wrist"],
        ),
        "cube_color": (
            "The cube's colour: red, green, blue or yellow (tasks can vary it: 'pick up the "
            "blue cube').",
            "red",
        ),
    },
    "robosuite": {
        "max_episode_steps": ("Steps before the episode is cut (20 a second: a minute).", 1200),
        "image_size": (
            "Side of each camera's image in the observation (front and wrist), in pixels.",
            128,
        ),
        "render_size": (
            "Side of the streamed frame, in pixels (one more render a step unless it equals "
            "image_size).",
            256,
        ),
        "reward_shaping": ("robosuite's dense reward instead of 1 on success.", False),
        "terminate_on_success": (
            "End the episode as soon as the task is done (the cube lifted, the can in its bin).",
            True,
        ),
        "shadows": ("Draw shadows and reflections (about twice the step's cost).", False),
        "antialias": ("4× multisampling: smoother edges, 13-27 ms more a step.", False),
        "camera": ("The camera streamed first: 'front' (agentview) or 'wrist'.", "front"),
    },
    "crafter": {
        "area": ("Side of the square world, in cells.", 64),
        "size": ("Side of the rendered image, in pixels.", 256),
        "length": ("Steps before the episode is cut.", 10_000),
    },
    "nethack": {
        "max_episode_steps": ("Steps before the episode is cut.", 200),
    },
    "dm_control": {
        "domain_name": ("dm_control domain (the body), such as cartpole.", None),
        "task_name": ("Task of that domain, such as swingup.", None),
        "task_kwargs": ("Keyword arguments of the task (random, time_limit…).", None),
        "environment_kwargs": ("Keyword arguments of the control environment.", None),
    },
}
# entry key → setting → default, where one suite's entries differ
_DEFAULTS: dict[str, dict[str, Any]] = {
    "InvertedPendulum": {"frame_skip": 2, "reset_noise_scale": 0.01},
    "HalfCheetah": {"frame_skip": 5, "reset_noise_scale": 0.1},
    "Hopper": {"frame_skip": 4, "reset_noise_scale": 0.005},
    "MiniGrid-Empty-8x8": {"max_steps": 256},
    "MiniGrid-Empty-16x16": {"max_steps": 1024},
    "MiniGrid-DoorKey-8x8": {"max_steps": 640},
    "MiniGrid-FourRooms": {"max_steps": 100},
    "MiniGrid-LavaGapS7": {"max_steps": 196},
    "CarRacingDiscrete": {"continuous": False},
}
# named Atari game → (modes, difficulties) its ROM accepts
ATARI_VARIANTS: dict[str, tuple[list[int], list[int]]] = {
    "Pong": ([0, 1], [0, 1, 2, 3]),
    "Breakout": ([0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44], [0, 1]),
    "SpaceInvaders": (list(range(16)), [0, 1]),
    "MsPacman": ([0, 1, 2, 3], [0]),
    "Seaquest": ([0], [0, 1]),
    "Freeway": (list(range(8)), [0, 1]),
}
# Values of settings of registered environments the catalog does not list, for messages
# about a failed build (Gymnasium id prefix → setting → accepted values).
KNOWN_VALUES: dict[str, dict[str, list[Any]]] = {
    "FrozenLake": {"map_name": ["4x4", "8x8"]},
}


def described(key: str, suite: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with each setting's description, default and accepted values."""
    out = copy.deepcopy(schema)
    docs = _DOCS.get(suite, {})
    game = key if suite == "atari" else None
    for name, prop in out.get("properties", {}).items():
        description, default = docs.get(name, (None, None))
        default = _DEFAULTS.get(key, {}).get(name, default)
        if description and "description" not in prop:
            prop["description"] = description
        if default is not None and "default" not in prop:
            prop["default"] = default
        if game in ATARI_VARIANTS and name in ("mode", "difficulty"):
            modes, difficulties = ATARI_VARIANTS[game]
            prop["enum"] = modes if name == "mode" else difficulties
    return out


def known_values(env_id: str, setting: str) -> list[Any] | None:
    """The values ``setting`` accepts for a registered environment, when known here."""
    name = env_id.split("/")[-1].split("-")[0]
    return KNOWN_VALUES.get(name, {}).get(setting)
