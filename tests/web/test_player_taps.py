"""Every press reaches a step, in real Chromium: taps shorter than a tick of a 60 fps async
game without Step on input (instant key taps, 30 ms taps, a gamepad button tapped between
ticks) are each in the saved episode's inputs and actions."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import activate, counter_env, spec
from tests.web._join import join_study, to_ready_gate
from tests.web._ticks import ticks_later
from tests.web.test_player import FAKE_GAMEPAD

pytestmark = pytest.mark.browser

TAPS = 8
GAMEPAD_TAP = """async () => {
  window.__press(0, true);
  await new Promise((r) => setTimeout(r, 10));
  window.__press(0, false);
}"""


def test_taps_shorter_than_a_tick_are_all_recorded(live_server, page, factory, db):
    page.context.add_init_script(FAKE_GAMEPAD)
    env = counter_env(episode_len=100_000, mode="async", fps=60)
    env["controls"] = {"keys": {"Space": 1}, "buttons": {"0": 2}, "noop": 0}
    study = activate(db, factory.study(factory.user(), spec(env)))
    join_study(page, live_server, study.permalink_token, "P-taps")
    to_ready_gate(page, "Counter")
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    ticks_later(page)
    for _ in range(TAPS):  # instant: keydown and keyup back to back
        page.keyboard.press("Space")
        ticks_later(page)
    for _ in range(TAPS):  # a quick finger: 30 ms, two ticks at most
        page.keyboard.press("Space", delay=30)
        ticks_later(page)
    for _ in range(TAPS):  # a gamepad button down for 10 ms, between two polls of a tick
        page.evaluate(GAMEPAD_TAP)
        ticks_later(page)
    page.get_by_role("button", name="Cancel").first.click()
    page.get_by_role("button", name="Cancel the episode").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode canceled.")

    row = db.query(Episode).filter_by(study_id=study.id).one()
    db.refresh(row)
    assert row.status == EpisodeStatus.canceled
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)[1:]
    actions = [int(s.action) for s in steps]
    inputs = [json.loads(s.custom_data["input"]) or {} for s in steps]

    # each key tap is in one or two steps (a 30 ms tap may span two ticks), never lost:
    # count the presses as runs of consecutive steps holding the control
    def presses(holding):
        return sum(1 for i, h in enumerate(holding) if h and (i == 0 or not holding[i - 1]))

    assert presses([a == 1 for a in actions]) == 2 * TAPS
    assert presses(["Space" in i.get("keys", []) for i in inputs]) == 2 * TAPS
    assert presses([a == 2 for a in actions]) == TAPS
    assert presses([i.get("buttons", {}).get("0", 0) > 0.5 for i in inputs]) == TAPS
    # taps released before their tick are there because the latch put them there
    assert any("Space" in i.get("latched", []) for i in inputs)
    assert len(steps) > 6 * 3 * TAPS
