"""Adapters in process: frames from a physics whose model has no cameras."""

from __future__ import annotations

from server.runtime.adapters import DEFAULT_CAMERA, DmEnvAdapter


def test_a_physics_without_cameras_renders_from_the_free_camera():
    adapter = DmEnvAdapter("tests.runtime.fake_envs:camera_less_physics", {})
    assert adapter.cameras == [DEFAULT_CAMERA]
    adapter.reset()
    frame = adapter.frame()
    assert frame.shape[2] == 3 and frame.shape[0] == frame.shape[1]
    assert adapter.env.physics.camera_ids == [-1]
