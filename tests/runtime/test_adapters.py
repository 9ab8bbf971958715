"""Adapters in process: frames from a physics whose model has no cameras."""

from __future__ import annotations

import numpy as np

from server.runtime.adapters import DEFAULT_CAMERA, DmEnvAdapter, GymnasiumAdapter, build_adapter
from server.runtime.allowlist import AllowedEnvironments
from server.study_spec import GymnasiumSource


def test_a_physics_without_cameras_renders_from_the_free_camera():
    adapter = DmEnvAdapter("tests.runtime.fake_envs:camera_less_physics", {})
    assert adapter.cameras == [DEFAULT_CAMERA]
    adapter.reset()
    frame = adapter.frame()
    assert frame.shape[2] == 3 and frame.shape[0] == frame.shape[1]
    assert adapter.env.physics.camera_ids == [-1]


def test_an_rgb_atari_frame_is_its_observation_and_other_observations_render():
    """Pong observed in RGB: the frame is the observation (not rendered a second time), and
    it is what the game renders; observed in grayscale, the frame is rendered as before."""
    allowed = AllowedEnvironments.of(["gymnasium", "ale_py"])
    kwargs = {"frameskip": 2, "repeat_action_probability": 0.0}
    rgb, gray = (
        build_adapter(GymnasiumSource(kind="gymnasium", id="ALE/Pong-v5", kwargs=k), allowed)
        for k in (kwargs, {**kwargs, "obs_type": "grayscale"})
    )
    assert isinstance(rgb, GymnasiumAdapter) and isinstance(gray, GymnasiumAdapter)
    for adapter in (rgb, gray):
        adapter.set_seed(4)
        adapter.reset()
    for t in range(40):
        timesteps = [adapter.step(np.int64(2 + t % 2)) for adapter in (rgb, gray)]
        assert rgb.frame() is timesteps[0].observation
        np.testing.assert_array_equal(rgb.frame(), rgb.env.render())
        np.testing.assert_array_equal(gray.frame(), rgb.frame())  # the same game, rendered
        assert timesteps[1].observation.shape == (210, 160)
    for adapter in (rgb, gray):
        adapter.close()
