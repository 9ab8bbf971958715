"""A crowd presses as people press (real Chromium, a Prolific participant on a study with
consent): Space (FIRE) mashed through an async game's end answers nothing; Enter mashed
through an async game's end may save the episode and ask for the next (Enter is those
questions' own key), but the next game waits at its ready gate for a press made there; the
way on after an episode is on screen without scrolling on a laptop. An MTurk worker on a
360-px phone reloads at every screen and comes back to the same place, told in a phone's
words, with the save question guarded again and nothing answered by itself."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from server.models import Episode, EpisodeStatus
from tests.player.conftest import counter_env
from tests.web._crowd import crowd_study, link, pass_gate, shot
from tests.web._sent import sent_types

pytestmark = pytest.mark.browser


@pytest.fixture
def designer(factory):
    return factory.user()


def _episodes(db, study) -> list[Episode]:
    db.expire_all()
    return db.query(Episode).filter_by(study_id=study.id).order_by(Episode.started_at).all()


def _join(page: Page, live_server: str, study) -> None:  # type: ignore[no-untyped-def]
    page.goto(link(live_server, study, PROLIFIC_PID="p-mash", STUDY_ID="s-1", SESSION_ID="x-1"))
    page.get_by_role("button", name="I agree").click()
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("button", name="Play Counter").click()


def test_enter_mashed_through_the_end_leaves_the_next_game_at_its_gate(
    live_server, page, factory, designer, db
):
    sent = sent_types(page)
    # an async game that runs by itself (noop between presses): a game started by mistake
    # would play, and record, an episode nobody played
    env = counter_env(episode_len=8, mode="async", fps=10, episodes_per_participant=3)
    env["controls"] = {"keys": {"KeyA": 1, "Space": 1}, "noop": 0}
    study = crowd_study(db, factory, designer, env, consent="Agree?", completion_code="DONE")
    _join(page, live_server, study)
    pass_gate(page)
    # Enter mashed from the episode's end on, every 30 ms: it saves the episode (after the
    # dialog's guard), then asks for the next (after the panel's), until the next game's gate
    phase = page.locator("#st-phase")
    deadline = time.monotonic() + 30
    while phase.inner_text() != "ready":
        assert time.monotonic() < deadline, "the mash never reached the next game's gate"
        page.keyboard.press("Enter")
        page.wait_for_timeout(30)
    shot(page, "qa-gate-after-mash")
    for _ in range(6):  # the same fingers, still going
        page.keyboard.press("Enter")
        page.wait_for_timeout(30)
    page.wait_for_timeout(1000)  # a game started now would have stepped by itself
    expect(phase).to_have_text("ready")
    expect(page.locator("#st-step")).to_have_text("0")
    assert sent.count("go") == 1  # the first game's, pressed at its gate
    first, second = _episodes(db, study)
    assert first.status == EpisodeStatus.completed  # Enter is the save question's own key
    assert second.status == EpisodeStatus.recording and second.steps <= 1

    expect(page.locator("#start-btn")).to_be_enabled()  # the gate's guard is over
    page.keyboard.press("Enter")  # a press made at the gate: the deliberate start
    expect(phase).to_have_text("playing")
    assert sent.count("go") == 2


def test_space_mashed_through_an_async_games_end_answers_nothing(
    live_server, page, factory, designer, db
):
    sent = sent_types(page)
    env = counter_env(episode_len=8, mode="async", fps=10, episodes_per_participant=3)
    env["controls"] = {"keys": {"KeyA": 1, "Space": 1}, "noop": 0}  # Space: FIRE
    study = crowd_study(db, factory, designer, env, consent="Agree?", completion_code="DONE")
    _join(page, live_server, study)
    pass_gate(page, key="Space")  # a game key starts it
    dialog = page.get_by_role("dialog", name="Episode over")
    deadline = time.monotonic() + 30
    while not dialog.is_visible():  # tapping FIRE until the game ends
        assert time.monotonic() < deadline, "the episode never ended"
        page.keyboard.press("Space")
        page.wait_for_timeout(30)
    for _ in range(40):  # and on, past the dialog's guard
        page.keyboard.press("Space")
        page.wait_for_timeout(30)
    expect(page.locator("#save-yes")).to_be_enabled()
    expect(dialog).to_be_visible()
    expect(page.locator("#st-phase")).to_have_text("ended")
    (row,) = _episodes(db, study)
    assert row.status == EpisodeStatus.recording  # waiting for the participant's answer
    assert "save" not in sent and sent.count("start") == 1


@pytest.mark.parametrize("size", [(1280, 800), (1366, 768)], ids=["1280x800", "1366x768"])
def test_the_way_on_after_an_episode_is_on_a_laptops_screen(
    live_server, page, factory, designer, db, size
):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    env = counter_env(episode_len=2, episodes_per_participant=2)
    study = crowd_study(db, factory, designer, env, consent="Agree?", completion_code="DONE")
    _join(page, live_server, study)
    pass_gate(page)
    page.keyboard.press("KeyA")
    page.keyboard.press("KeyA")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    # the way on for a mouse, without scrolling (the overlay says Enter for the keyboard)
    expect(page.get_by_role("button", name="Next episode")).to_be_in_viewport(ratio=1)
    expect(page.locator("#after-save-text")).to_be_in_viewport(ratio=1)
    shot(page, f"qa-after-save-{size[0]}x{size[1]}")
    page.get_by_role("button", name="Next episode").click()
    pass_gate(page)  # the game and its buttons as before the panel
    shot(page, f"qa-playing-{size[0]}x{size[1]}")
    expect(page.locator("#screen")).to_be_in_viewport(ratio=0.99)  # (a subpixel at 768)
    expect(page.locator("#pause-btn")).to_be_in_viewport(ratio=1)


MTURK = {"workerId": "W-QA", "assignmentId": "A-QA", "hitId": "H-QA",
         "turkSubmitTo": "https://workersandbox.mturk.com"}  # fmt: skip


def test_an_mturk_worker_on_a_phone_reloads_at_every_screen(live_server, browser, factory, db):
    context = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True,
                                  has_touch=True)  # fmt: skip
    phone = context.new_page()
    env = counter_env(episode_len=2, episodes_per_participant=1)
    study = crowd_study(db, factory, factory.user(), env, inputs=["keyboard", "touch"],
                        consent="Agree?", completion_code="HIT-DONE")  # fmt: skip
    phone.goto(link(live_server, study, **MTURK))
    expect(phone.locator("#consent-view")).to_be_visible()
    phone.reload()
    phone.get_by_role("button", name="I agree").tap()
    expect(phone.locator("#instructions-view")).to_be_visible()
    phone.reload()
    phone.locator("#instructions-ok").tap()
    expect(phone.locator("#lobby-view")).to_be_visible()
    phone.reload()
    phone.get_by_role("button", name="Play Counter").tap()
    overlay = phone.locator("#overlay-text")
    expect(overlay).to_have_text("Tap the game or Start to start")
    phone.reload()
    expect(overlay).to_have_text("Tap the game or Start to start")  # the same gate, tap words
    phone.locator("#start-btn").tap()
    expect(phone.locator("#st-phase")).to_have_text("playing")
    phone.reload()  # mid-episode: paused, with the way back in a phone's words
    expect(overlay).to_have_text("Paused — tap Resume to continue")
    phone.get_by_role("button", name="Resume").tap()
    expect(phone.locator("#st-phase")).to_have_text("playing")
    one = phone.get_by_role("button", name="one (KeyA)")
    one.tap()
    one.tap()
    dialog = phone.get_by_role("dialog", name="Episode over")
    expect(dialog).to_be_visible()
    phone.reload()  # the question again, guarded again (a tap still going answers nothing)
    expect(dialog).to_be_visible()
    save = dialog.get_by_role("button", name="Save")
    expect(save).to_be_disabled()
    (row,) = db.query(Episode).filter_by(study_id=study.id).all()
    db.refresh(row)
    assert row.status == EpisodeStatus.recording  # still waiting for the worker's answer
    shot(phone, "qa-mturk-phone-save-after-reload")
    save.tap()  # once its guard is over
    expect(phone.locator("#after-save")).to_be_visible()
    phone.reload()  # the only episode is saved: the way on was the code, and so it is
    expect(phone.locator("#code-value")).to_have_value("HIT-DONE")
    phone.reload()
    expect(phone.locator("#code-value")).to_have_value("HIT-DONE")
    expect(phone.get_by_role("button", name="Submit the HIT")).to_be_visible()
    shot(phone, "qa-mturk-phone-code-after-reload")
    db.refresh(row)
    assert row.status == EpisodeStatus.completed
    context.close()
