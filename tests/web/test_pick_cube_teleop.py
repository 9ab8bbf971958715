"""A keyboard-only teleoperator drives our PickCube gripper (real Chromium, the catalog's
controls at 25 Hz), switches from the front camera to the wrist camera with the C key shown
on screen, and saves the episode: the log records the camera of each frame, the observation
keeps both cameras' images whatever was shown, and the exports (loaded by TFDS+rlds,
LeRobotDataset and minari) name the camera of every step's frame as the player chose it.
With the catalog's defaults the mouse drives the hand too, and the page offers to pair a phone.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from server.export import EpisodeInput, ExportOptions, export_dataset
from server.runtime.catalog import CATALOG
from tests.web._teleop import hold, load_steps, open_game, save_episode, wait_steps

ENTRY = CATALOG["PickCube"]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not ENTRY.installed(), reason="no robotics runtime"),
]
MAX_STEPS = 150  # 6 s (room for a slow machine): the episode ends by itself


@pytest.mark.consumer  # the exports are loaded by each format's own library
def test_keyboard_teleoperator_moves_the_gripper_and_switches_camera(
    live_server, page, factory, db, tmp_path
):
    study = open_game(page, live_server, factory, db, ENTRY, name="Cube", seeds=[4],
                      max_steps=MAX_STEPS)  # fmt: skip
    legend = page.locator("#legend")
    for label in (
        "hand up",
        "turn left / right (yaw)",
        "tilt fingers away / nearer (roll)",
        "gripper (toggle)",
    ):
        expect(legend).to_contain_text(label)
    camera = page.get_by_label("Camera")  # the cameras on offer, and the key that switches
    expect(camera).to_have_value("front")
    expect(camera.locator("option")).to_have_text(["front", "wrist"])
    expect(page.get_by_role("button", name="Next camera C")).to_be_visible()
    expect(legend.locator("tbody[data-group='Camera']")).to_have_text("CameraCnext camera")
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
        options = ExportOptions(name="cube", format={"rlds": "tfds"}.get(fmt, fmt))
        result = export_dataset([episode], options, tmp_path / fmt)
        loaded = load_steps(fmt, result.data_dir if fmt == "rlds" else result.path, "cube")
        assert loaded["cameras"] == [cams], fmt


def test_the_catalog_controls_drive_the_hand_with_the_mouse_and_offer_a_phone(
    live_server, page, factory, db
):
    """PickCube's defaults bind the mouse and a phone: the player says what a drag does,
    offers to pair a phone, and a drag right on the picture moves the hand right."""
    study = open_game(page, live_server, factory, db, ENTRY, name="Cube", seeds=[4],
                      max_steps=60)  # fmt: skip
    hint = page.locator("#mouse-hint")
    expect(hint).to_contain_text("press on the picture and drag")
    expect(hint).to_contain_text("drag ←→: hand left / right")
    expect(hint).to_contain_text("wheel: hand up / down")
    expect(hint).to_contain_text("right mouse button: close / open the gripper (toggle)")
    expect(page.locator("#legend")).not_to_contain_text("mouse")  # said once, under the game
    panel = page.get_by_role("region", name="Use your phone")
    expect(panel).to_be_visible()
    expect(panel.get_by_label("Pairing code")).to_have_text(re.compile(r"^\w{3} \w{3}$"))
    expect(panel.get_by_role("img", name="QR code of the phone page's address")).to_be_visible()
    expect(panel.get_by_role("button", name="New code")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")

    box = page.locator("#screen").bounding_box()
    assert box is not None
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + box["width"] / 2, cy, steps=4)  # to the rim and past: full right
    wait_steps(page, 10)
    page.mouse.up()

    _, steps = save_episode(page, db, study)
    sent = [(json.loads(s.custom_data["input"]), np.asarray(s.action)) for s in steps[1:]]
    right = [a for raw, a in sent if raw and (raw.get("devices") or {}).get("mouse", [0])[0] == 1]
    assert right and all(np.allclose(a, [0.5, 0, 0, 0, 0, 0, -1]) for a in right)
    state = np.array([s.timestep.observation["state"] for s in steps])
    assert state[-1, 0] - state[0, 0] > 0.05  # the hand went right
