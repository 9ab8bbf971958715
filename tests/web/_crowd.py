"""Helpers for the crowd-study browser tests: studies with a ``crowd:`` block, the
platform pages a worker is sent back to (intercepted by Playwright), screenshots."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.player.conftest import activate, counter_env, spec

# Where the journeys leave a screenshot of each screen (set to look at them as a worker would).
SHOTS = os.environ.get("STUDIO_TEST_SHOTS", "")
PLATFORM = "https://crowd.example"  # a completion / screen-out URL the tests intercept


def crowd_study(db, factory, designer, *envs: dict[str, Any], **crowd: Any):  # type: ignore[no-untyped-def]
    """An active study on counter envs with this ``crowd:`` block."""
    envs = envs or (counter_env(episode_len=2),)
    return activate(db, factory.study(designer, spec(*envs, crowd=crowd)))


def link(live_server: str, study, **query: str) -> str:  # type: ignore[no-untyped-def]
    """The study's permalink with the platform's parameters added."""
    extra = "".join(f"&{k}={v}" for k, v in query.items())
    return f"{live_server}/player.html?token={study.permalink_token}{extra}"


def shot(page: Page, name: str) -> None:
    """A screenshot of the screen a worker sees now (only when STUDIO_TEST_SHOTS is set)."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/{name}.png")


def fake_platform(page: Page, base: str = PLATFORM) -> list[dict[str, Any]]:
    """Answer every request to ``base`` with a small page; returns what was asked."""
    seen: list[dict[str, Any]] = []

    def answer(route) -> None:  # type: ignore[no-untyped-def]
        req = route.request
        seen.append({"url": req.url, "method": req.method, "body": req.post_data or ""})
        route.fulfill(status=200, content_type="text/html", body="<h1>Platform</h1>")

    page.route(f"{base}/**", answer)
    return seen


def accept_consent(page: Page) -> None:
    expect(page.locator("#consent-view")).to_be_visible()
    page.get_by_role("button", name="I agree").click()


def read_instructions(page: Page) -> None:
    """The instructions before the first episode: read, then Enter."""
    expect(page.locator("#instructions-view")).to_be_visible()
    page.keyboard.press("Enter")


def pass_gate(page: Page, key: str = "Enter") -> None:
    """The ready gate: the first frame under "press Enter ... to start", then go (once the
    gate's guard is over: a gate reached by answering the panel after an episode has one)."""
    expect(page.locator("#overlay")).to_contain_text("Press Enter, any game key or gamepad A")
    expect(page.locator("#st-step")).to_have_text("0")
    expect(page.locator("#start-btn")).to_be_enabled()
    page.keyboard.press(key)
    expect(page.locator("#st-phase")).to_have_text("playing")


def play_to_the_end(page: Page, presses: int = 2) -> None:
    """Press A until the episode ends, then save it (Enter on the save dialog, once its
    guard lets keys answer)."""
    for _ in range(presses):
        page.keyboard.press("KeyA")
    expect(page.locator("#save-dialog")).to_be_visible()
    expect(page.locator("#save-yes")).to_be_enabled()
    page.keyboard.press("Enter")
    expect(page.locator("#after-save")).to_be_visible()
