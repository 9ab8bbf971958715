"""The designer decides the speed: a real-time game shows no speed control unless the study
offers speed choices, and then only those (real Chromium)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.player.conftest import counter_env
from tests.web._crowd import crowd_study, link, read_instructions

pytestmark = pytest.mark.browser


def test_speed_control_only_where_the_designer_offers_it(live_server, page, factory, db):
    fixed = counter_env("fixed", mode="async", fps=5, episode_len=500)
    chosen = {**counter_env("chosen", mode="async", fps=5, episode_len=500),
              "speed_choices": [0.5, 1]}  # fmt: skip
    study = crowd_study(db, factory, factory.user(), fixed, chosen)
    page.goto(link(live_server, study, PROLIFIC_PID="speedy"))
    read_instructions(page)
    page.get_by_role("button", name="Play Fixed").click()
    expect(page.locator("#overlay")).to_contain_text("Press Enter")
    expect(page.locator("#speed-field")).to_be_hidden()  # locked: nothing to change
    other = page.context.new_page()  # another participant, in a tab of their own
    other.goto(link(live_server, study, PROLIFIC_PID="speedy-2"))
    read_instructions(other)
    other.get_by_role("button", name="Play Chosen").click()
    expect(other.locator("#overlay")).to_contain_text("Press Enter")
    expect(other.locator("#speed-field")).to_be_visible()
    expect(other.locator("#speed option")).to_have_text(["0.5×", "1×"])
    expect(other.locator("#speed")).to_have_value("1")
