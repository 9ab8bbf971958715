"""Helpers of the paired-phone browser tests: a phone's browser context, its sensors' events,
pairing it with the code the computer shows (and the sensors' first reading, after which the
page says the tilt moves the hand), and holding its "Hold to move" button."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import expect

PHONE = {
    "viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
    "device_scale_factor": 3,
    "user_agent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like "
                  "Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
}  # fmt: skip


def orient(phone, alpha: float, beta: float, gamma: float) -> None:
    """What the phone's sensors report as it is held at this angle."""
    phone.evaluate(
        "([alpha, beta, gamma]) => window.dispatchEvent(new DeviceOrientationEvent("
        "'deviceorientation', {alpha, beta, gamma}))",
        [alpha, beta, gamma],
    )


def watch(phone, errors: list[str]) -> None:
    """Script errors and CSP violations on the phone page fail the test (as on ``page``)."""
    phone.on("pageerror", lambda exc: errors.append(str(exc)))
    phone.on("console", lambda msg: errors.append(msg.text)
             if "Content Security Policy" in msg.text else None)  # fmt: skip


def pair(desktop, phone, base: str, sensors: bool = True) -> None:
    """Type the code the computer shows into the phone page."""
    code = desktop.locator("#phone-code")
    expect(code).to_have_text(re.compile(r"^[A-Z0-9]{3} [A-Z0-9]{3}$"))
    phone.goto(f"{base}/phone.html")
    phone.get_by_label("Code").fill(code.text_content() or "")
    phone.get_by_role("button", name="Pair").click()
    expect(phone.locator("#link-status")).to_have_text("Phone connected")
    expect(desktop.locator("#phone-state")).to_have_text("Phone connected")
    if sensors:
        phone.get_by_role("button", name="Use motion sensors").click()  # asks the permission
        expect(phone.locator("#motion-btn")).to_be_hidden()
        # no reading yet: the page does not claim the tilt moves anything
        source = phone.locator("#motion-source")
        expect(source).to_have_text(
            "Moves with: nothing yet (no motion readings from this phone so far)"
        )
        orient(phone, 0, 0, 0)  # the sensors' first reading
        expect(source).to_have_text("Moves with: tilt (device orientation)")


def hold_clutch(phone, while_held: Callable[[], None]) -> None:
    """Press "Hold to move", do ``while_held()``, let go (the axes fall back to zero)."""
    box = phone.locator("#clutch").bounding_box()
    assert box is not None
    phone.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    phone.mouse.down()
    expect(phone.locator("#clutch")).to_have_attribute("aria-pressed", "true")
    while_held()
    phone.mouse.up()
    expect(phone.locator("#ax-0")).to_have_text("0.00")
