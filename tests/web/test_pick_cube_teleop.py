"""A keyboard-only teleoperator drives our PickCube gripper (real Chromium, the catalog's
controls at 25 Hz), switches from the front camera to the wrist camera with the C key shown
on screen, and saves the episode: the log records the camera of each frame, the observation
keeps both cameras' images whatever was shown, and the exports (loaded by TFDS+rlds,
LeRobotDataset and minari) name the camera of every step's frame as the player chose it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from playwright.sync_api import expect

from server.export import EpisodeInput, ExportFormat, ExportOptions, export_dataset
from server.runtime.catalog import CATALOG
from tests.web._teleop import hold, load_steps, open_game, save_episode

ENTRY = CATALOG["PickCube"]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.consumer,
    pytest.mark.skipif(not ENTRY.installed(), reason="the robotics extra is not installed"),
]
MAX_STEPS = 150  # 6 s (room for a slow machine): the episode ends by itself


def test_keyboard_teleoperator_moves_the_gripper_and_switches_camera(
    live_server, page, factory, db, tmp_path
):
    study = open_game(page, live_server, factory, db, ENTRY, name="Cube", seeds=[4],
                      max_steps=MAX_STEPS)  # fmt: skip
    legend = page.locator("#legend")
    for label in ("hand up", "turn left (yaw)", "tilt fingers away (roll)", "gripper (toggle)"):
        expect(legend).to_contain_text(label)
    camera = page.get_by_label("Camera")  # the cameras on offer, and the key that switches
    expect(camera).to_have_value("front")
    expect(camera.locator("option")).to_have_text(["front", "wrist"])
    expect(page.get_by_role("button", name="Next camera C")).to_be_visible()
    expect(page.locator("#camera-key-hint")).to_have_text("· C next camera")
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")

    hold(page, "ArrowRight", 8)  # 8 steps of 1 cm
    page.keyboard.press("KeyC")
    expect(camera).to_have_value("wrist")
    hold(page, "KeyW", 5)
    hold(page, "KeyA", 5)  # yaw

    row, steps = save_episode(page, db, study)  # max_steps ends the episode
    assert row.steps == MAX_STEPS + 1
    inputs = [json.loads(s.custom_data["input"]) for s in steps[1:]]
    held = {k for i in inputs if i for k in i["keys"]}
    assert held == {"ArrowRight", "KeyW", "KeyA"}  # C switched the view, it moved nothing
    cams = [json.loads(s.custom_data["timing"])["camera"] for s in steps]
    switched = cams.index("wrist")
    assert set(cams[:switched]) == {"front"} and set(cams[switched:]) == {"wrist"}
    obs = [s.timestep.observation for s in steps]
    assert all(o["front"].shape == o["wrist"].shape == (128, 128, 3) for o in obs)
    state = np.array([o["state"] for o in obs])
    assert state[-1, 0] - state[0, 0] > 0.05  # right
    assert state[-1, 2] - state[0, 2] > 0.03  # up
    w, z = state[-1, 3], state[-1, 6]
    assert 2 * np.arctan2(z, w) > 0.1  # turned left
    # the exports name each step's camera, as the player switched it (loaded by each
    # format's own library)
    episode = EpisodeInput(log_dir=row.storage_path, episode_id=row.id, agent_id="a")
    for fmt in ("rlds", "lerobot", "minari"):
        options = ExportOptions(name="cube", format=ExportFormat(fmt))
        result = export_dataset([episode], options, tmp_path / fmt)
        loaded = load_steps(fmt, result.data_dir if fmt == "rlds" else result.path, "cube")
        assert loaded["cameras"] == [cams], fmt
