"""A teleoperator drives Fetch with the mouse, a SpaceMouse and a gamepad's stick and
trigger (real Chromium, the catalog's controls at 25 Hz), and the saved log shows each
device's push in the mapped action.

The mouse is Playwright's real mouse on the canvas. The SpaceMouse is a stand-in for WebHID
(``navigator.hid``) that the page cannot tell from a device: its ``requestDevice`` returns a
device firing ``inputreport`` events with 3Dconnexion's report layout (report 1: six int16
little-endian axes, report 3: the buttons' bitmask). The gamepad is test_player's stub of
``navigator.getGamepads``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.web._teleop import save_episode, steps_on_screen, wait_steps
from tests.web.test_player import FAKE_GAMEPAD
from tests.web.test_robot_teleop import ENTRY, open_fetch

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not ENTRY.installed(), reason="no robotics runtime"),
]
STEP = 0.3  # the catalog's speed per full push

FAKE_HID = """
(() => {
  class FakeSpaceMouse extends EventTarget {
    constructor() { super(); this.opened = false; this.vendorId = 0x256f;
      this.productId = 0xc635; this.productName = "SpaceMouse Compact"; }
    async open() { this.opened = true; }
    async close() { this.opened = false; }
  }
  const device = new FakeSpaceMouse();
  const hid = new EventTarget();
  hid.requestDevice = async ({ filters }) => {
    window.__hidFilters = filters;
    return [device];
  };
  hid.getDevices = async () => [];
  Object.defineProperty(Navigator.prototype, "hid", { get: () => hid, configurable: true });
  // a report as the device sends it: int16 little-endian values, or one byte of buttons
  window.__hidReport = (reportId, values, bytes) => {
    const buffer = new ArrayBuffer(bytes ? values.length : 2 * values.length);
    const view = new DataView(buffer);
    values.forEach((v, i) => (bytes ? view.setUint8(i, v) : view.setInt16(2 * i, v, true)));
    const event = new Event("inputreport");
    event.reportId = reportId; event.data = view; event.device = device;
    device.dispatchEvent(event);
  };
})();
"""


def _start(page):
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")


def _saved_steps(page, db, study):
    _, steps = save_episode(page, db, study)
    return [(json.loads(s.custom_data["input"]), np.asarray(s.action)) for s in steps[1:]]


def _mouse(raw) -> list[float]:
    return (raw.get("devices") or {}).get("mouse") or [0.0] * 5


def test_mouse_drag_on_the_picture_moves_the_gripper(live_server, page, factory, db):
    study = open_fetch(page, live_server, factory, db, max_steps=90)
    hint = page.locator("#mouse-hint")
    expect(hint).to_contain_text("press on the picture and drag")
    expect(hint).to_contain_text("Shift+drag ↑↓: hand up / down")
    expect(hint).to_contain_text("drag ←→: hand left / right")
    expect(hint).to_contain_text("wheel: hand up / down")
    expect(hint).to_contain_text("right mouse button: close / open the gripper (toggle)")
    _start(page)
    box = page.locator("#screen").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    start_step = steps_on_screen(page)
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + box["width"] / 2, cy, steps=4)  # far right: full speed right
    expect(page.locator("#mouse-stick")).to_be_visible()  # the joystick's ring
    wait_steps(page, 8)
    page.mouse.move(cx, cy + box["height"] / 10, steps=4)  # back, then a little down
    wait_steps(page, 8)
    page.mouse.up()  # let go: still
    expect(page.locator("#mouse-stick")).to_be_hidden()
    page.mouse.wheel(0, -100)  # one notch away: up, for a moment
    wait_steps(page, 10)
    assert steps_on_screen(page) > start_step

    inputs = _saved_steps(page, db, study)
    sent = [(_mouse(raw), action) for raw, action in inputs if raw]
    right = [a for m, a in sent if m[0] == 1.0]
    assert right and all(abs(a[1] - STEP) < 1e-6 and a[0] == 0 for a in right)
    down = [(m, a) for m, a in sent if m[0] == 0 and m[1] > 0.15]  # past the dead zone
    assert down and all(a[0] > 0 and abs(a[0] - STEP * m[1]) < 1e-6 for m, a in down)
    wheel = [m[2] for m, _ in sent if m[2] > 0]
    assert wheel and wheel[0] > wheel[-1]  # the wheel's push decays
    assert any(a[2] > 0 for m, a in sent if m[2] > 0.15)  # and meanwhile the hand rose
    held = {k for raw, _ in inputs if raw for k in raw["keys"]}
    assert held == {"MouseLeft"}
    # let go, the hand is still (the gripper open)
    last = [a for raw, a in inputs if raw and not raw["devices"]]
    assert last and all(list(a) == [0, 0, 0, 1] for a in last)


def test_spacemouse_and_gamepad_drive_the_arm(live_server, page, factory, db):
    page.context.add_init_script(FAKE_HID)
    page.context.add_init_script(FAKE_GAMEPAD)
    study = open_fetch(page, live_server, factory, db, max_steps=80)
    page.get_by_role("button", name="Connect SpaceMouse").click()
    expect(page.locator("#spacemouse-status")).to_have_text("SpaceMouse: SpaceMouse Compact")
    expect(page.get_by_role("button", name="Connect SpaceMouse")).to_be_hidden()
    assert page.evaluate("window.__hidFilters") == [{"vendorId": 0x256F}, {"vendorId": 0x046D}]
    page.locator("#screen").click()  # the game takes the keys again (and starts)
    expect(page.locator("#st-phase")).to_have_text("playing")

    # the cap pushed right and lifted (z up is negative): six axes in report 1
    page.evaluate("window.__hidReport(1, [350, 0, -350, 0, 0, 0])")
    wait_steps(page, 5)
    page.evaluate("window.__hidReport(1, [0, 0, 0, 0, 0, 0])")
    # the left stick pushed up (hand away), then RT pulled halfway
    page.evaluate("window.__axis(1, -1)")
    wait_steps(page, 5)
    page.evaluate("window.__axis(1, 0)")
    wait_steps(page, 2)  # the stick is back (the page polls the pad every few ms)
    page.evaluate(
        "window.__pad.buttons[7] = { pressed: true, touched: true, value: 0.5 };"
        "window.__pad.timestamp += 1"
    )
    wait_steps(page, 5)
    page.evaluate("window.__press(7, false)")
    expect(page.locator("#gamepad-status")).to_have_attribute("data-buttons", "")  # polled
    # the SpaceMouse's left button: the gripper shuts and stays shut
    page.evaluate("window.__hidReport(3, [1], true)")
    wait_steps(page, 3)
    page.evaluate("window.__hidReport(3, [0], true)")
    wait_steps(page, 5)

    inputs = _saved_steps(page, db, study)
    sent = [(raw, a) for raw, a in inputs if raw]
    pushed = [a for raw, a in sent if raw["devices"].get("spacemouse", [0])[0] == 1.0]
    assert pushed and all(np.allclose(a, [0, STEP, STEP, 1]) for a in pushed)
    stick = [a for raw, a in sent if raw["axes"][1:2] == [-1]]
    assert stick and all(np.allclose(a, [-STEP, 0, 0, 1]) for a in stick)
    trigger = [a for raw, a in sent if raw["buttons"].get("7") == 0.5]
    assert trigger and all(np.allclose(a, [0, 0, 0, 0]) for a in trigger)  # half shut: hold
    shut = next(i for i, (raw, _) in enumerate(sent) if "SpaceMouseLeft" in raw["keys"])
    assert all(a[3] == -1 for _, a in sent[shut:])  # the toggle latched
    assert all(a[3] >= 0 for _, a in sent[:shut])
