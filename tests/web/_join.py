"""A participant's way into a study on the player page, as a person goes: the study's link,
their id typed in, the study's instructions, then a game up to its ready gate."""

from __future__ import annotations

from playwright.sync_api import Page, expect


def join_study(page: Page, live_server: str, token: str, who: str) -> None:
    """Open the study's link, type the participant id, read the study's instructions."""
    page.goto(f"{live_server}/player.html?token={token}")
    page.get_by_label("Participant ID").fill(who)
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#instructions-text h1")).to_have_text("Hi")  # the study's own
    page.get_by_role("button", name="Continue").click()


def to_ready_gate(page: Page, env_name: str) -> None:
    """Choose the game and wait at its ready gate."""
    page.get_by_role("button", name=f"Play {env_name}").click()
    expect(page.locator("#overlay")).to_contain_text("Press Enter")
