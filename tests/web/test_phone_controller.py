"""A paired phone drives Fetch's arm (real Chromium, two browser contexts): the participant's
computer shows the pairing code, a phone (390×844, touch, a phone's user agent) types it,
holds "Hold to move" and tilts (the test dispatches the orientation events a phone's sensors
would); the recorded actions and the hand follow the tilt. The phone page is closed (lost:
the episode goes on), a new code pairs it again, as a phone without motion sensors: its
on-screen slider moves the hand too, and the episode saves with every step."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from server.runtime.catalog import CATALOG
from tests.web._phone import PHONE, hold_clutch, orient, pair, watch
from tests.web._teleop import open_game, save_episode, wait_steps

ENTRY = CATALOG["FetchPickAndPlace"]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not ENTRY.installed(), reason="no robotics runtime"),
]

MAX_STEPS = 600  # 24 s at 25 Hz: room to pair the phone again in the middle
SHOTS = os.environ.get("STUDIO_TEST_SHOTS")


def _tilt_and_hold(desktop, phone, pose: tuple[float, float, float], steps: int) -> None:
    """Hold "Hold to move" level, tilt to ``pose`` and keep it for ``steps`` steps."""
    orient(phone, 0, 0, 0)

    def tilt() -> None:
        orient(phone, *pose)
        wait_steps(desktop, steps)

    hold_clutch(phone, tilt)


def test_a_phone_drives_the_arm_and_survives_being_lost(live_server, page, browser, factory,
                                                        db):  # fmt: skip
    desktop = page
    study = open_game(desktop, live_server, factory, db, ENTRY, id="fetch", name="Fetch",
                      seeds=[7], max_steps=MAX_STEPS)  # fmt: skip
    expect(desktop.locator("#phone-panel")).to_be_visible()
    qr = desktop.locator("#phone-qr")
    expect(qr).to_have_attribute("src", re.compile(r"^data:image/svg\+xml"))
    if SHOTS:
        desktop.locator("#phone-panel").screenshot(path=f"{SHOTS}/player-phone-panel.png")

    context = browser.new_context(**PHONE)
    errors: list[str] = []
    phone = context.new_page()
    watch(phone, errors)
    pair(desktop, phone, live_server)
    # no WebXR pose in this browser: the tilt moves the hand, and the page says so
    expect(phone.locator("#motion-source")).to_have_text("Moves with: tilt (device orientation)")
    expect(phone.locator("#xr-btn")).to_be_hidden()
    if SHOTS:
        phone.screenshot(path=f"{SHOTS}/phone-controller.png")
    desktop.locator("#screen").click()  # past the ready gate
    expect(desktop.locator("#st-phase")).to_have_text("playing")

    _tilt_and_hold(desktop, phone, (0, -20, 0), 25)  # tipped forward: the hand goes away
    phone.close()  # the phone is lost: its input is zero, the episode goes on
    expect(desktop.locator("#phone-state")).to_have_text("Phone lost — reconnecting…")
    wait_steps(desktop, 5)
    expect(desktop.locator("#st-phase")).to_have_text("playing")

    phone = context.new_page()  # paired again, now as a phone without motion sensors
    phone.add_init_script("delete window.DeviceOrientationEvent")
    watch(phone, errors)
    pair(desktop, phone, live_server, sensors=False)  # a fresh code pairs it again
    expect(phone.locator("#motion-text")).to_have_text(
        "This browser has no motion sensors: use the on-screen sliders."
    )
    expect(phone.locator("#clutch")).to_be_hidden()  # it would do nothing here
    expect(phone.locator("#motion-source")).to_have_text("Moves with: the on-screen sliders")
    if SHOTS:
        phone.screenshot(path=f"{SHOTS}/phone-sliders.png")
    slider = phone.get_by_label("Left / right")  # held to the right: the hand goes right
    box = slider.bounding_box()
    assert box is not None
    phone.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    phone.mouse.down()
    phone.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2, steps=5)
    expect(phone.locator("#ax-1")).to_have_text("1.00")
    wait_steps(desktop, 25)
    phone.mouse.up()
    expect(phone.locator("#ax-1")).to_have_text("0.00")  # it springs back

    row, steps = save_episode(desktop, db, study)  # max_steps ends the episode
    context.close()
    assert not errors, f"JavaScript errors or CSP violations on the phone: {errors}"
    assert row.steps == MAX_STEPS + 1
    assert len(steps) == MAX_STEPS + 1
    inputs = [json.loads(s.custom_data["input"] or "null") for s in steps]
    actions = np.array([s.action for s in steps[1:]])
    hand = np.array([s.timestep.observation["observation"][0:3] for s in steps])
    phone_axes = [((i or {}).get("devices") or {}).get("phone") or [0, 0, 0] for i in inputs]
    forward = [n for n, ax in enumerate(phone_axes[1:]) if ax[0] > 0.5]
    right = [n for n, ax in enumerate(phone_axes[1:]) if ax[1] > 0.5]
    assert forward and right, "the phone's tilts were not recorded"
    assert all("PhoneClutch" in inputs[n + 1]["keys"] for n in forward)  # the tilt's clutch
    assert (actions[forward, 0] < 0).all() and (actions[right, 1] > 0).all()
    # the hand followed: away from the viewer (x falls), then to the right (y rises)
    assert hand[forward[-1] + 1, 0] - hand[forward[0], 0] < -0.02
    assert hand[right[-1] + 1, 1] - hand[right[0], 1] > 0.02
    # let go (and then lost), the tilt moved nothing more; the slider only moved right
    assert all(ax[0] == 0 and ax[2] == 0 and ax[1] >= 0 for ax in phone_axes[forward[-1] + 2 :])
