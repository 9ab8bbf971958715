"""Every participant screen on a phone (real Chromium, a touch and mobile browser context), at
320, 360, 390 and 430 px wide in portrait and at 740×360 in landscape: no two visible
controls (buttons, inputs, selects, links styled as buttons, key hints, touch buttons) overlap,
no control's text spills out of it or is cut off by the box around it, and nothing is wider
than the screen. The journey taps as a person would: the device check of a keyboard-only
study and its screen-out page, the typed-id form, consent, instructions, the lobby and its
instructions dialog, the ready gate (no phone-pairing panel: the phone controller's pages
pair with a computer's code), the game with its touch buttons, the cancel question, pause,
the save dialog, the panel after it, and the completion code."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.player.conftest import counter_env
from tests.web._crowd import crowd_study, link, shot
from tests.web._layout import assert_laid_out

pytestmark = pytest.mark.browser

# (width, height): a small Android phone, a common one, an iPhone, a large one; a phone on
# its side
IN_SIGHT = """() => [document.getElementById("screen"), ...document.querySelectorAll(".touch-btn")]
  .every((el) => {
    const r = el.getBoundingClientRect();
    return r.top >= -0.5 && r.bottom <= innerHeight + 0.5;
  })"""
SIZES = [(320, 640), (360, 740), (390, 844), (430, 932), (740, 360)]
# Pong's labels (the catalog's), the ones that overlapped on a 390-px screen
LABELS = {"KeyA": "paddle up (RIGHT)", "KeyB": "paddle down (LEFT)", "Space": "serve (FIRE)"}


@pytest.fixture(params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def phone(request, browser):  # type: ignore[no-untyped-def]
    width, height = request.param
    viewport = {"width": width, "height": height}
    context = browser.new_context(viewport=viewport, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)  # fmt: skip
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_default_timeout(15_000)
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


def _env() -> dict[str, Any]:
    env = counter_env(episode_len=2, episodes_per_participant=1)
    # PhoneGrip: the study binds a phone too, so the pairing panel is on the game's screen
    keys = {"KeyA": 1, "KeyB": 2, "Space": 0, "PhoneGrip": 2}
    env["controls"] = {"keys": keys, "noop": 0, "labels": LABELS}
    return env


def _phone_page(page: Page, live_server: str, check, code: str) -> None:  # type: ignore[no-untyped-def]
    """The phone controller's screens (web/phone/), paired with the code a computer's game
    panel shows: the pairing form, the controller, its sliders."""
    controller = page.context.new_page()
    controller.goto(f"{live_server}/phone.html")
    check("phone-pair", controller)
    controller.get_by_label("Code").fill(code)
    controller.get_by_role("button", name="Pair").tap()
    expect(controller.locator("#link-status")).to_have_text("Phone connected")
    check("phone-controller", controller)
    controller.get_by_role("button", name="Use on-screen sliders").tap()
    check("phone-sliders", controller)
    controller.close()


def _pairing_code(browser, url: str) -> str:  # type: ignore[no-untyped-def]
    """The pairing code a computer's game shows (a phone's shows none: it would pair itself)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(url)
    page.get_by_label("Participant ID").fill("P-computer")
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("button", name="I agree").click()
    page.locator("#instructions-ok").click()
    page.get_by_role("button", name="Play Counter").click()
    code = page.locator("#phone-code")
    expect(code).to_have_text(re.compile(r"^[A-Z0-9]{3} [A-Z0-9]{3}$"))
    text = code.text_content() or ""
    context.close()
    return text


def test_every_participant_screen_fits_a_phone(live_server, browser, phone, factory, db):
    designer = factory.user()
    size = "x".join(str(v) for v in phone.viewport_size.values())

    def check(screen: str, page: Page = phone) -> None:
        shot(page, f"layout-{size}-{screen}")
        assert_laid_out(page, screen)

    # a keyboard-only study: the device check, then the screen-out page
    keyboard = crowd_study(db, factory, designer, inputs=["keyboard"], consent="I agree.",
                           screenout_code="NO-DEVICE")  # fmt: skip
    phone.goto(link(live_server, keyboard, PROLIFIC_PID="small-screen"))
    expect(phone.locator("#status-title")).to_have_text("This study needs a keyboard")
    check("device-check")
    phone.get_by_role("button", name="Leave the study").tap()
    expect(phone.locator("#code-value")).to_have_value("NO-DEVICE")
    check("screenout-code")

    study = crowd_study(db, factory, designer, _env(), inputs=["keyboard", "touch"],
                        consent="I agree to take part.", completion_code="DONE-123",
                        requirements={"min_episodes": 1})  # fmt: skip
    phone.goto(link(live_server, study))  # no platform id: the typed-id form
    expect(phone.locator("#join-view")).to_be_visible()
    check("join")
    phone.get_by_label("Participant ID").fill("P-small")
    phone.get_by_role("button", name="Continue").tap()
    expect(phone.locator("#consent-view")).to_be_visible()
    check("consent")
    phone.get_by_role("button", name="I agree").tap()
    expect(phone.locator("#instructions-view")).to_be_visible()
    check("instructions")
    phone.locator("#instructions-ok").tap()
    expect(phone.locator("#lobby-view")).to_be_visible()
    check("lobby")
    phone.locator("#lobby-instructions").tap()
    expect(phone.locator("#instructions-dialog")).to_be_visible()
    check("instructions-dialog")
    phone.locator("#instructions-close").tap()
    phone.get_by_role("button", name="Play Counter").tap()
    expect(phone.locator("#st-phase")).to_have_text("ready")
    expect(phone.locator("#touch-pad")).to_be_visible()
    expect(phone.locator("#phone-panel")).to_be_hidden()  # no pairing a phone with itself
    check("ready-gate")
    _phone_page(phone, live_server, check, _pairing_code(browser, link(live_server, study)))
    phone.evaluate("() => window.scrollTo(0, 0)")  # as the ready gate opens: the heading on top
    phone.locator("#screen").tap()  # "Tap the game or Start to start"
    expect(phone.locator("#st-phase")).to_have_text("playing")
    check("playing")
    # the game and every touch button in sight at once: a finger plays without scrolling
    assert phone.evaluate(IN_SIGHT), "the game and its buttons do not fit the screen together"
    phone.locator("#cancel-btn").tap()
    expect(phone.locator("#cancel-ask")).to_be_visible()
    check("cancel-question")
    phone.locator("#cancel-no").tap()
    expect(phone.locator("#st-phase")).to_have_text("playing")
    phone.locator("#pause-btn").tap()
    expect(phone.locator("#st-phase")).to_have_text("paused")
    check("paused")
    phone.locator("#pause-btn").tap()
    expect(phone.locator("#st-phase")).to_have_text("playing")
    up = phone.get_by_role("button", name="paddle up (RIGHT) (KeyA)")
    up.tap()
    expect(phone.locator("#st-step")).to_have_text("1")
    up.tap()
    expect(phone.locator("#save-dialog")).to_be_visible()
    check("save-dialog")
    phone.locator("#save-yes").tap()
    expect(phone.locator("#after-save")).to_be_visible()
    check("after-save")
    phone.get_by_role("button", name="Finish and get your code").tap()
    expect(phone.locator("#code-value")).to_have_value("DONE-123")
    check("completion-code")
