"""Presses as people make them, in real Chromium: a game key mashed or held through an
episode's end never answers the save question nor starts the next episode, and Esc pressed
quickly sets one pause state that the page and the server agree on."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import counter_env, row_of
from tests.web._phone import PHONE, pair
from tests.web._sent import sent_types
from tests.web.test_player import _participant, _play

pytestmark = pytest.mark.browser


@pytest.fixture
def designer(factory):
    return factory.user()


def _episodes(db, study):
    db.expire_all()
    return db.query(Episode).filter_by(study_id=study.id).order_by(Episode.id).all()


def _space_env(**fields):
    """The counter env with Space bound, as FIRE is in Breakout."""
    env = {**counter_env(episode_len=3, episodes_per_participant=2), **fields}
    env["controls"] = {**env["controls"], "keys": {"KeyA": 1, "Space": 1}}
    return env


def _mash(page, key, times):
    for _ in range(times):
        page.keyboard.press(key)


def test_space_mashed_through_the_end_answers_nothing(live_server, page, factory, designer, db):
    sent = sent_types(page)
    study = _participant(page, live_server, factory, designer, db, _space_env())
    _play(page)
    _mash(page, "Space", 12)  # three steps end the episode; the rest land on what follows
    dialog = page.get_by_role("dialog", name="Episode over")
    expect(dialog).to_be_visible()
    expect(dialog).to_be_focused()  # the dialog itself, not its Save button
    page.screenshot(path="/tmp/shots/player-save-guard.png")  # its buttons greyed a moment
    expect(page.locator("#save-yes")).to_be_enabled()  # the guard is over: still Space
    _mash(page, "Space", 5)
    page.keyboard.down("Space")
    page.keyboard.down("Space")  # held: an auto-repeat
    page.keyboard.up("Space")
    # an answer closes the dialog at once: still open, nothing was answered
    expect(dialog).to_be_visible()
    expect(page.locator("#st-phase")).to_have_text("ended")
    (row,) = _episodes(db, study)
    assert row.status == EpisodeStatus.recording  # waiting for the participant's answer
    page.screenshot(path="/tmp/shots/player-save-after-space.png")

    dialog.get_by_role("button", name="Save").click()
    panel = page.locator("#after-save")
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    expect(panel).to_be_focused()
    _mash(page, "Space", 8)  # the panel's guard, then its keys: Space is none of them
    expect(page.locator("#next-btn")).to_be_enabled()
    page.screenshot(path="/tmp/shots/player-after-save-panel.png")
    _mash(page, "Space", 3)
    expect(panel).to_be_visible()
    expect(page.locator("#st-phase")).to_have_text("idle")
    (row,) = _episodes(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 4 and row.total_reward == 3

    page.get_by_role("button", name="Next episode").click()  # a deliberate start
    expect(page.locator("#overlay")).to_contain_text("Press Enter")  # the ready gate as before
    assert len(_episodes(db, study)) == 2
    # everything sent before the click has been seen: one answer, one start after it
    starts = [i for i, kind in enumerate(sent) if kind == "start"]
    assert sent.count("save") == 1 and len(starts) == 2
    assert starts[0] < sent.index("save") < starts[1]


def test_a_key_held_into_the_question_does_not_answer_it(live_server, page, factory, designer, db):
    study = _participant(page, live_server, factory, designer, db, counter_env(episode_len=2))
    _play(page)
    page.keyboard.down("Enter")  # held while playing: not a game key, nothing happens
    page.keyboard.press("KeyA")
    page.keyboard.press("KeyA")
    page.keyboard.press("Escape")  # pause, crossing the episode's end: no error
    dialog = page.get_by_role("dialog", name="Episode over")
    expect(dialog).to_be_visible()
    expect(page.locator("#save-yes")).to_be_enabled()
    page.keyboard.down("Enter")  # the held key repeats: not an answer
    page.keyboard.up("Enter")
    _mash(page, "Escape", 2)  # the pause key never closes the question either
    expect(dialog).to_be_visible()
    expect(page.locator("#play-message")).to_be_hidden()
    page.keyboard.press("Enter")  # a new press: the answer (Save)
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    (row,) = _episodes(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 3


def test_outcome_keys_the_game_binds_answer_only_by_click(live_server, page, factory, designer, db):
    env = {**counter_env(episode_len=2), "ask_outcome": True}
    env["controls"] = {**env["controls"], "keys": {"KeyA": 1, "KeyS": 2}}  # S: a game key
    study = _participant(page, live_server, factory, designer, db, env)
    _play(page)
    page.keyboard.press("KeyS")
    page.keyboard.press("KeyS")
    dialog = page.get_by_role("dialog", name="Episode over")
    succeeded = page.locator("#save-success")
    expect(succeeded).to_be_enabled()
    expect(succeeded.locator("kbd")).to_be_hidden()  # S is the game's: no shortcut shown
    expect(page.locator("#save-failure kbd")).to_be_visible()
    expect(page.locator("#save-no kbd")).to_have_text("D")
    page.screenshot(path="/tmp/shots/player-save-outcome-bound.png")
    page.keyboard.press("KeyS")
    expect(dialog).to_be_visible()
    succeeded.click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    (row,) = _episodes(db, study)
    assert row.status == EpisodeStatus.completed and row.player_outcome == "success"


def _settled(page, phase):
    """No pause or resume on its way, the page in ``phase``, no error on screen."""
    expect(page.locator("#st-phase")).to_have_attribute("data-asking", "")
    expect(page.locator("#st-phase")).to_have_text(phase)
    expect(page.locator("#play-message")).to_be_hidden()


def test_esc_pressed_quickly_sets_one_pause_state(live_server, page, factory, designer, db):
    study = _participant(page, live_server, factory, designer, db, counter_env(episode_len=50))
    _play(page)
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    _mash(page, "Escape", 2)  # the second before the server's "paused": ends playing
    _settled(page, "playing")
    page.keyboard.press("KeyA")  # the server agrees: the game steps
    expect(page.locator("#st-step")).to_have_text("2")
    _mash(page, "Escape", 3)  # ends paused
    _settled(page, "paused")
    expect(page.locator("#overlay")).to_contain_text("Paused")
    page.keyboard.press("KeyA")  # paused on the server too: not a step
    _mash(page, "Escape", 4)  # an even count leaves it as it was
    _settled(page, "paused")
    page.get_by_role("button", name="Resume").click()
    _settled(page, "playing")
    page.locator("#screen").click()
    page.keyboard.press("KeyB")
    expect(page.locator("#st-step")).to_have_text("3")
    page.keyboard.press("Delete")
    expect(page.locator("#cancel-yes")).to_be_enabled()
    page.keyboard.press("Enter")
    expect(page.locator("#after-save-text")).to_contain_text("Episode canceled.")
    (row,) = _episodes(db, study)
    row = row_of(db, row.id)
    assert row.status == EpisodeStatus.canceled and row.steps == 4
    with open_reader(row.storage_path) as reader:
        keys = [json.loads(s.custom_data["input"])["keys"] for s in list(reader.steps)[1:]]
    assert keys == [["KeyA"], ["KeyA"], ["KeyB"]]


def test_a_second_phones_request_leaves_the_game_its_keys(
    live_server, page, browser, factory, designer, db
):
    env = counter_env(episode_len=50)
    env["controls"]["keys"]["PhoneGrip"] = 2  # the study binds a phone
    _participant(page, live_server, factory, designer, db, env)
    _play(page)
    phones = browser.new_context(**PHONE)
    pair(page, phones.new_page(), live_server, sensors=False)
    first_code = page.locator("#phone-code").text_content()
    page.get_by_role("button", name="Pair another phone").click()
    expect(page.locator("#phone-code")).not_to_have_text(first_code or "")
    second = phones.new_page()
    second.goto(f"{live_server}/phone.html")
    second.get_by_label("Code").fill(page.locator("#phone-code").text_content() or "")
    page.locator("#screen").click()  # back to the game before the request comes
    second.get_by_role("button", name="Pair").click()
    request = page.get_by_role("alertdialog", name="Another phone wants to connect")
    expect(request).to_be_visible()
    expect(page.locator("#screen")).to_be_focused()  # the request took no key from the game
    page.keyboard.press("Enter")  # not its key here: the game's (nothing while playing)
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    expect(request).to_be_visible()
    page.screenshot(path="/tmp/shots/player-phone-request.png")
    request.get_by_role("button", name="Use the new phone").click()  # after its guard
    expect(request).to_be_hidden()
    expect(second.locator("#link-status")).to_have_text("Phone connected")
    expect(page.locator("#phone-state")).to_have_text("Phone connected")
    phones.close()
