"""Our pick-cube environment: seeded, bounded, and a scripted hand closes on the cube and
lifts it (the physics a teleoperator relies on)."""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

from server.envs import PICK_CUBE_ID
from server.envs.pick_cube import CAMERAS, LIFT_HEIGHT, PickCubeEnv

# not importorskip: mujoco must be imported after MUJOCO_GL is set (the env sets it)
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mujoco") is None, reason="no mujoco (test tools)"
)

OPEN, SHUT = -1.0, 1.0


@pytest.fixture
def env():
    made = PickCubeEnv(image_size=64, render_size=64)
    yield made
    made.close()


def _toward(obs, offset, gripper):
    """Move the fingertips toward the cube (+ offset), full speed capped at the distance."""
    action = np.zeros(7, dtype=np.float32)
    action[:3] = np.clip((obs["state"][15:18] + offset) / 0.02, -1, 1)
    action[6] = gripper
    return action


def _pick(env, seed):
    """Scripted: above the cube, down, shut, up. Returns the observations and the last info."""
    obs, info = env.reset(seed=seed)
    seen = [obs]
    for offset, gripper, steps in (((0, 0, 0.06), OPEN, 25), ((0, 0, 0), OPEN, 20),
                                   (None, SHUT, 15), ((0, 0, 0.2), SHUT, 30)):  # fmt: skip
        for _ in range(steps):
            if offset is None:
                action = np.zeros(7, dtype=np.float32)
                action[6] = gripper
            else:
                action = _toward(obs, np.array(offset), gripper)
            obs, reward, terminated, truncated, info = env.step(action)
            seen.append(obs)
            if terminated:
                return seen, info, reward
    return seen, info, 0.0


def test_registered_with_a_7d_unit_action_and_both_cameras():
    made = gym.make(PICK_CUBE_ID, image_size=32, render_size=64)
    try:
        space = made.action_space
        assert space.shape == (7,) and (space.low == -1).all() and (space.high == 1).all()
        assert set(made.observation_space.spaces) == {"state", "sim_state", *CAMERAS}
        obs, _ = made.reset(seed=0)
        assert obs["front"].shape == obs["wrist"].shape == (32, 32, 3)
        assert made.render().shape == (64, 64, 3)
        assert made.unwrapped.camera_names == ("front", "wrist")
    finally:
        made.close()


def test_the_same_seed_gives_the_same_episode(env):
    first, _, _ = _pick(env, seed=5)
    again, _, _ = _pick(env, seed=5)
    other, _, _ = _pick(env, seed=6)
    assert len(first) == len(again)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a["state"], b["state"])
        np.testing.assert_array_equal(a["wrist"], b["wrist"])
    assert not np.array_equal(first[0]["state"][8:11], other[0]["state"][8:11])  # cube moved


def test_actions_outside_the_box_are_clipped(env):
    env.reset(seed=1)
    env.step(np.full(7, 50.0, dtype=np.float32))
    big = env.data.mocap_pos[0].copy()
    env.reset(seed=1)
    env.step(np.ones(7, dtype=np.float32))
    np.testing.assert_array_equal(env.data.mocap_pos[0], big)
    obs, *_ = env.step(np.array([np.nan, 0, 0, 0, 0, 0, 0], dtype=np.float32))  # no NaN in
    assert np.isfinite(obs["state"]).all()
    for _ in range(40):  # the hand stays in its workspace however long it is pushed
        env.step(np.array([0, 0, 1, 0, 0, 0, 0], dtype=np.float32))
    assert env.data.mocap_pos[0][2] <= 0.45 + 1e-9


def test_the_gripper_shuts_and_opens(env):
    env.reset(seed=2)
    for _ in range(10):
        env.step(np.array([0, 0, 0, 0, 0, 0, SHUT], dtype=np.float32))
    assert env.finger_opening() < 0.002
    for _ in range(10):
        env.step(np.array([0, 0, 0, 0, 0, 0, OPEN], dtype=np.float32))
    assert env.finger_opening() > 0.075


def test_a_rotation_turns_the_hand(env):
    env.reset(seed=2)
    for _ in range(5):  # yaw: 5 × 0.1 rad
        env.step(np.array([0, 0, 0, 0, 0, 1, OPEN], dtype=np.float32))
    w, _, _, z = env.data.mocap_quat[0]
    assert np.isclose(2 * np.arctan2(z, w), 0.5)


def test_a_scripted_grasp_lifts_the_cube_and_succeeds(env):
    seen, info, reward = _pick(env, seed=3)
    assert info["is_success"] and reward == 1.0
    assert info["cube_height"] >= LIFT_HEIGHT
    assert 0.03 < info["finger_opening"] < 0.045  # shut on a 4 cm cube
    assert seen[0]["state"][10] < 0.021 and seen[-1]["state"][10] > 0.09  # cube z rose


def test_images_left_out_of_the_steps_are_drawn_from_the_recorded_states():
    """On the play path a step draws no observation image; each step's ``sim_state`` then
    gives that step's whole observation, bit for bit, in another env."""
    full, live, other = (PickCubeEnv(image_size=48, render_size=64) for _ in range(3))
    try:
        assert live.defer_images(True) == CAMERAS
        rng = np.random.default_rng(1)
        drawn, deferred = [full.reset(seed=3)[0]], [live.reset(seed=3)[0]]
        for _ in range(40):
            action = rng.uniform(-1, 1, 7)
            drawn.append(full.step(action)[0])
            deferred.append(live.step(action)[0])
            live.render()  # the shown view is drawn
        other.reset(seed=99)
        for t, (want, got) in enumerate(zip(drawn, deferred, strict=True)):
            assert not got["front"].any() and not got["wrist"].any()
            np.testing.assert_array_equal(got["state"], want["state"])
            restored = other.restore_observation(got["sim_state"], first=t == 0)
            assert set(restored) == set(want)
            for key in want:
                np.testing.assert_array_equal(restored[key], want[key], err_msg=f"{t} {key}")
        assert drawn[-1]["front"].any()
    finally:
        for made in (full, live, other):
            made.close()
