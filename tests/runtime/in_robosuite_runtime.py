"""robosuite's Lift and PickPlaceCan (server/envs/robosuite_tasks.py) in the robosuite runtime.

Runs only with the robosuite runtime's interpreter (requirements/runtimes/robosuite.txt; the
app's venv has no robosuite): ``tests/runtime/test_robosuite.py`` runs it there with pytest
(the runtime has pytest: robosuite depends on it), the app's code on its path.

What it checks: the same seed and actions give the same episode in two fresh envs and in a
reused one (every observation key, images included); each step's ``sim_state`` restored
(robomimic's way) redraws that step's images exactly; the catalog's key bindings move the
hand as their labels say on the front camera's picture; a person's key presses (the
catalog's bindings through the worker's ``ActionMapper``) lift the cube and the can; the
scripted policy ``robosuite-pick-scripted`` lifts the cube and places the can; a recording
through the worker's adapter and ``EpisodeWriter`` reads back equal.
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym
import numpy as np
from dm_env import specs

import server.envs  # noqa: F401  (registers the ids)
from server.runtime.catalog import CATALOG
from server.runtime.input_mapping import ActionMapper
from server.runtime.scripted_policies import robosuite_pick

LIFT = "RLDSStudio/Robosuite-Lift-v0"
CAN = "RLDSStudio/Robosuite-PickPlaceCan-v0"
ACTION = specs.BoundedArray((7,), np.float32, -1.0, 1.0)
ROBOSUITE_CONTROLS = CATALOG["Robosuite-Lift"].controls  # the same for both tasks

# Held keys (``+`` joins keys held together; "" = nothing held) and for how many steps, from
# reset(seed=0): over the object, down, Space (the gripper latches shut), up.
LIFT_KEYS = [("ArrowDown", 18), ("", 5), ("ArrowRight", 2), ("", 3), ("KeyS", 30), ("", 5),
             ("Space", 1), ("", 10), ("KeyW", 20)]  # fmt: skip
# PickPlaceCan: the same, then carried over its bin (nearer, right) and Space again drops it
CAN_KEYS = [("ArrowDown+ArrowLeft", 8), ("", 5), ("KeyS", 22), ("", 5), ("Space", 1),
            ("", 12), ("KeyW", 20), ("ArrowDown", 30), ("ArrowRight", 90), ("", 10),
            ("Space", 1), ("", 20)]  # fmt: skip


def make(env_id: str = LIFT, **kwargs):
    return gym.make(env_id, **kwargs)


def random_actions(n: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, 7).astype(np.float32) for _ in range(n)]


def run(env, seed: int, actions) -> list[dict[str, np.ndarray]]:
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for action in actions:
        obs, *_ = env.step(action)
        out.append(obs)
    return out


def same(a, b) -> bool:
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
        for x, y in zip(a, b, strict=True)
    )


def yaw_turned(q0, q1) -> float:
    """The turn about the world's z from orientation q0 to q1 (x, y, z, w), in radians."""

    def rotation(q):
        x, y, z, w = q
        return np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ])  # fmt: skip

    turn = rotation(q1) @ rotation(q0).T
    return float(np.arctan2(turn[1, 0], turn[0, 0]))


def press(env, sequence, seed: int = 0):
    """Play ``sequence`` through the catalog's bindings; the last (obs, info, steps)."""
    mapper = ActionMapper(ACTION, ROBOSUITE_CONTROLS, strict=True)
    assert mapper.issues == []
    obs, info = env.reset(seed=seed)
    steps = 0
    for keys, n in sequence:
        for _ in range(n):
            obs, _, terminated, truncated, info = env.step(
                mapper({"keys": keys.split("+") if keys else []})
            )
            steps += 1
            if terminated or truncated:
                return obs, info, steps
    return obs, info, steps


def test_observations_have_their_spaces():
    env = make(image_size=64)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["agentview_image"].shape == (64, 64, 3)
    assert obs["sim_state"].dtype == np.float64 and info["is_success"] is False
    assert env.unwrapped.camera_names == ("front", "wrist")
    # the streamed frame: drawn again at render_size (256), the observation's own at 64
    assert env.render().shape == env.unwrapped.render_from("wrist").shape == (256, 256, 3)
    same_size = make(image_size=64, render_size=64)
    obs, _ = same_size.reset(seed=0)
    assert np.array_equal(same_size.unwrapped.render_from("wrist"),
                          obs["robot0_eye_in_hand_image"])  # fmt: skip
    assert np.array_equal(same_size.render(), obs["agentview_image"])
    assert env.spec.max_episode_steps == 1200 and env.metadata["render_fps"] == 20


def test_same_seed_and_actions_same_episode():
    # (the conformance test replays both tasks through a real worker too)
    actions = random_actions(40)
    first = run(make(), 0, actions)
    reused = make()
    assert same(first, run(reused, 0, actions))  # a fresh env
    run(reused, 5, actions[:20])
    assert same(first, run(reused, 0, actions))  # the same env, after another episode
    other = run(reused, 1, actions)
    assert not np.array_equal(first[0]["object_pos"], other[0]["object_pos"])


def test_sim_state_replay_redraws_every_image():
    recorded = run(make(), 0, random_actions(50))
    replay = make().unwrapped  # another env, as a replay would be
    replay.reset(seed=7)
    worst = 0
    for obs in recorded:
        images = replay.restore(obs["sim_state"])
        for key, image in images.items():
            worst = max(worst, int(np.abs(image.astype(int) - obs[key]).max()))
    assert worst == 0


def test_keys_move_the_hand_as_labelled_on_the_front_camera():
    env = make(image_size=64)
    unwrapped = env.unwrapped
    mapper = ActionMapper(ACTION, ROBOSUITE_CONTROLS, strict=True)
    env.reset(seed=0)
    model, data = unwrapped.env.sim.model, unwrapped.env.sim.data
    cam = model.camera_name2id("agentview")
    xmat = data.cam_xmat[cam].reshape(3, 3)
    right, back = xmat[:, 0], xmat[:, 2]  # a MuJoCo camera looks along its -z
    away = -np.array([back[0], back[1], 0.0])  # over the table, away from the camera
    away /= np.linalg.norm(away)
    for key, direction in (
        ("ArrowRight", right),
        ("ArrowLeft", -right),
        ("ArrowUp", away),
        ("ArrowDown", -away),
        ("KeyW", [0, 0, 1]),
        ("KeyS", [0, 0, -1]),
    ):
        obs, _ = env.reset(seed=0)
        start = obs["robot0_eef_pos"].copy()
        for _ in range(10):
            obs, *_ = env.step(mapper({"keys": [key]}))
        moved = obs["robot0_eef_pos"] - start
        assert np.dot(moved, direction) > 0.04, (key, moved)  # ~5-6 cm in 10 steps
        assert np.dot(moved, direction) > 0.8 * np.linalg.norm(moved), (key, moved)
    # the tilts swing the fingertips (below the wrist) as labelled; A turns counter-clockwise
    # seen from above
    for key, direction in (("KeyF", right), ("KeyR", -right), ("KeyQ", away), ("KeyE", -away)):
        obs, _ = env.reset(seed=0)
        start = obs["robot0_eef_pos"].copy()
        for _ in range(10):
            obs, *_ = env.step(mapper({"keys": [key]}))
        assert np.dot(obs["robot0_eef_pos"] - start, direction) > 0.01, key
    for key, sign in (("KeyA", 1), ("KeyD", -1)):
        obs, _ = env.reset(seed=0)
        start = obs["robot0_eef_quat"].copy()
        for _ in range(10):
            obs, *_ = env.step(mapper({"keys": [key]}))
        assert sign * yaw_turned(start, obs["robot0_eef_quat"]) > 0.1, key
    # Space latches the gripper shut: the fingers close with nothing held
    env.reset(seed=0)
    obs, *_ = env.step(mapper({"keys": ["Space"]}))
    for _ in range(10):
        obs, *_ = env.step(mapper({"keys": []}))
    assert abs(obs["robot0_gripper_qpos"][0]) < 0.01


def test_key_presses_lift_the_cube():
    obs, info, steps = press(make(), LIFT_KEYS)
    assert info["is_success"], (steps, obs["object_pos"])


def test_key_presses_place_the_can():
    env = make(CAN)
    start = env.reset(seed=0)[0]["object_pos"][2]
    lifted = press(env, CAN_KEYS[:7])[0]["object_pos"][2]
    assert lifted - start > 0.1  # lifted (10 cm) with the hand
    obs, info, steps = press(env, CAN_KEYS)
    assert info["is_success"], (steps, obs["object_pos"])


def _policy_run(env_id: str, seed: int, max_steps: int) -> tuple[bool, int]:
    env = make(env_id, image_size=64)
    policy = robosuite_pick(None, env.observation_space)
    obs, info = env.reset(seed=seed)
    steps = 0
    while steps < max_steps:
        obs, _, terminated, _, info = env.step(policy.act(obs))
        steps += 1
        if terminated:
            break
    return bool(info["is_success"]), steps


def test_scripted_policy_lifts_the_cube():
    results = [_policy_run(LIFT, seed, 200) for seed in range(3)]
    assert all(ok for ok, _ in results), results


def test_scripted_policy_places_the_can():
    results = [_policy_run(CAN, seed, 300) for seed in range(2)]
    assert all(ok for ok, _ in results), results


def test_records_through_the_worker_writer():
    from server.recording.writer import EpisodeWriter, episode_metadata, open_reader, to_json
    from server.runtime.adapters import GymnasiumAdapter
    from server.runtime.frames import encode_jpeg

    adapter = GymnasiumAdapter(LIFT, {"image_size": 64})
    assert adapter.cameras == ["front", "wrist"]
    meta = episode_metadata(episode_id="e1", study_id=1, env_id=LIFT, env_config="{}", seed=0)

    def step_fn(timestep, action, env):
        return {"frame": encode_jpeg(env.frame(), 75), "input": to_json(None),
                "timing": "{}", "info": "{}"}  # fmt: skip

    adapter.set_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        writer = EpisodeWriter(adapter, os.path.join(tmp, "ep"), meta, step_fn)
        observations = [writer.reset().observation]
        for action in random_actions(10):
            observations.append(writer.step(action).observation)
        writer.finalize({"end_reason": "canceled"})
        with open_reader(os.path.join(tmp, "ep")) as reader:
            steps = list(reader.steps)
    assert len(steps) == 11
    for step, obs in zip(steps, observations, strict=True):
        assert all(np.array_equal(step.timestep.observation[k], obs[k]) for k in obs)
