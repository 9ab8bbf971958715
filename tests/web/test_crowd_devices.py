"""Devices (real Chromium): a phone on a keyboard-only study is told what the study needs
before anything else (no consent asked, no participant made) and can leave with the
screen-out page; on a study whose ``crowd.inputs`` list touch it plays with on-screen
buttons that send, and record, exactly what the bound keys do. Progress toward completion
shows between episodes."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus, Participant
from server.recording.writer import open_reader
from tests.player.conftest import counter_env
from tests.web._crowd import accept_consent, crowd_study, link, shot

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest.fixture
def phone(browser):
    context = browser.new_context(**PHONE)
    yield context.new_page()
    context.close()


def _participants(db, study) -> list[Participant]:
    db.expire_all()
    return db.query(Participant).filter_by(study_id=study.id).all()


def test_a_phone_is_told_it_needs_a_keyboard_before_consent(live_server, phone, factory, db):
    study = crowd_study(db, factory, factory.user(), consent="I agree.")
    phone.goto(link(live_server, study, PROLIFIC_PID="on-a-phone"))
    expect(phone.locator("#status-title")).to_have_text("This study needs a keyboard or a gamepad")
    shot(phone, "phone-needs-keyboard")
    expect(phone.locator("#consent-view")).to_be_hidden()
    assert _participants(db, study) == []
    phone.get_by_role("button", name="Continue anyway").tap()  # a keyboard is attached
    accept_consent(phone)
    assert len(_participants(db, study)) == 1


def test_a_phone_leaves_a_keyboard_only_study_with_the_screenout_code(
    live_server, phone, factory, db
):
    study = crowd_study(db, factory, factory.user(), consent="I agree.", inputs=["keyboard"],
                        screenout_code="NO-DEVICE")  # fmt: skip
    phone.goto(link(live_server, study, PROLIFIC_PID="phone-2"))
    expect(phone.locator("#status-title")).to_have_text("This study needs a keyboard")
    expect(phone.locator("#status-text")).not_to_contain_text("gamepad")
    phone.get_by_role("button", name="Leave the study").tap()
    expect(phone.locator("#code-value")).to_have_value("NO-DEVICE")
    expect(phone.locator("#code-text")).to_have_text(  # they did not decline anything
        "This device cannot play the games of this study, so the study ends here. "
        "Please return this code to the platform."
    )
    expect(phone.locator("#consent-view")).to_be_hidden()
    [row] = _participants(db, study)
    assert row.screened_out_at is not None and row.consented_at is None
    assert row.screenout_reason == "device"  # the participants page tells it from a refusal


def test_a_phone_plays_a_touch_study_with_on_screen_buttons(live_server, phone, factory, db):
    env = counter_env(episode_len=2, episodes_per_participant=2)
    study = crowd_study(db, factory, factory.user(), env, inputs=["keyboard", "touch"],
                        requirements={"min_play_time_s": 600})  # fmt: skip
    phone.goto(link(live_server, study, PROLIFIC_PID="thumbs"))
    expect(phone.locator("#instructions-view")).to_be_visible()  # no device page
    phone.get_by_role("button", name="Continue").tap()
    progress = "Your progress: 0 of 2 episodes · 0 of 10 minutes"
    expect(phone.locator("#lobby-progress")).to_have_text(progress)
    shot(phone, "phone-lobby")
    phone.get_by_role("button", name="Play Counter").tap()
    pad = phone.locator("#touch-pad")
    expect(pad).to_be_visible()
    one = pad.get_by_role("button", name="one (KeyA)")
    expect(one.locator("kbd")).to_be_hidden()  # no key hint on a phone (KeyA, were it shown)
    expect(pad.get_by_role("button", name="action 2 (KeyB)")).to_be_visible()
    box = one.bounding_box()
    assert box is not None and box["height"] >= 44 and box["width"] >= 44  # thumb-sized
    expect(phone.locator("#play-progress")).to_have_text(progress)  # at the ready gate
    expect(phone.locator("#st-phase")).to_have_text("ready")
    # a phone's words: tap, not "press Enter"; no key hints on the buttons a finger taps
    expect(phone.locator("#overlay-text")).to_have_text("Tap the game or Start to start")
    expect(phone.locator(".overlay-touch")).to_have_text("or tap a game button below")
    expect(phone.locator("#start-btn kbd")).to_be_hidden()
    # no legend of keys either: the game's buttons say what they do
    expect(phone.locator("#controls-section")).to_be_hidden()
    expect(phone.locator("body")).not_to_contain_text("Enter", use_inner_text=True)
    shot(phone, "phone-ready-gate")
    one.tap()  # a game button starts the episode, as a game key does
    expect(phone.locator("#st-phase")).to_have_text("playing")
    expect(phone.locator("#st-step")).to_have_text("0")
    one.tap()
    expect(phone.locator("#st-step")).to_have_text("1")
    expect(one).not_to_have_class(re.compile("pressed"))  # let go with the finger
    shot(phone, "phone-playing")
    one.tap()
    expect(phone.locator("#save-dialog")).to_be_visible()
    phone.get_by_role("button", name="Save").tap()
    expect(phone.locator("#after-save")).to_be_visible()
    expect(phone.locator("#progress-text")).to_have_text(
        "Your progress: 1 of 2 episodes · 0 of 10 minutes"
    )
    expect(phone.locator("#play-progress")).to_have_text(
        "Your progress: 1 of 2 episodes · 0 of 10 minutes"
    )
    shot(phone, "phone-after-save")
    db.expire_all()
    [row] = db.query(Episode).filter_by(study_id=study.id).all()
    assert row.status == EpisodeStatus.completed and row.steps == 3
    with open_reader(row.storage_path) as reader:
        inputs = [json.loads(s.custom_data["input"]) for s in list(reader.steps)[1:]]
    assert inputs == [{"keys": ["KeyA"], "buttons": {}, "axes": [], "devices": {}}] * 2
    expect(phone.locator("#next-btn")).to_be_in_viewport()  # the way on, without scrolling
    expect(phone.locator("#overlay-text")).to_have_text("Next episode — tap the button below")
    phone.locator("#next-btn").tap()
    expect(phone.locator("#st-phase")).to_have_text("ready")
    expect(phone.locator("#play-progress")).to_have_text(  # the ready gate after an episode
        "Your progress: 1 of 2 episodes · 0 of 10 minutes"
    )


def test_no_touch_buttons_without_touch_in_the_study(live_server, phone, factory, db):
    study = crowd_study(db, factory, factory.user())  # inputs: keyboard, gamepad
    phone.goto(link(live_server, study, PROLIFIC_PID="kb-attached"))
    phone.get_by_role("button", name="Continue anyway").tap()
    expect(phone.locator("#instructions-view")).to_be_visible()
    phone.locator("#instructions-ok").tap()
    phone.get_by_role("button", name="Play Counter").tap()
    expect(phone.locator("#st-phase")).to_have_text("ready")
    # a keyboard is attached (the participant said so): its keys are shown, as printed
    expect(phone.locator("#legend tr", has_text="one").locator("kbd")).to_have_text("A")
    expect(phone.locator("#start-btn kbd")).to_be_visible()
    expect(phone.locator("#touch-pad")).to_be_hidden()


def _nine_keys(env_id: str = "nine") -> dict:
    """A counter game with 9 key bindings: too many for on-screen buttons, and no touch pad."""
    env = counter_env(env_id, episode_len=2)
    env["controls"] = {"keys": {f"Digit{i}": 1 + i % 2 for i in range(1, 10)}, "noop": 0}
    return env


def test_a_phone_hears_before_consent_which_games_touch_cannot_play(
    live_server, phone, factory, db
):
    study = crowd_study(
        db,
        factory,
        factory.user(),
        counter_env(episode_len=2),
        _nine_keys(),
        consent="I agree.",
        inputs=["keyboard", "touch"],
        screenout_code="NO-TOUCH",
    )
    phone.goto(link(live_server, study, PROLIFIC_PID="thumbs-2"))
    expect(phone.locator("#status-title")).to_have_text(
        "Some games of this study cannot be played on a touch screen"
    )
    text = phone.locator("#status-text")
    expect(text).to_contain_text("“Nine” cannot be played by touch: it needs a keyboard, which")
    expect(text).to_contain_text("return the study on Prolific (a screen-out, or a no-code return)")
    shot(phone, "phone-some-games-need-keys")
    expect(phone.locator("#consent-view")).to_be_hidden()
    assert _participants(db, study) == []
    phone.get_by_role("button", name="Leave the study").tap()
    expect(phone.locator("#code-value")).to_have_value("NO-TOUCH")
    [row] = _participants(db, study)
    assert row.screenout_reason == "device" and row.consented_at is None


def test_an_mturk_worker_on_a_phone_is_told_to_return_the_hit(live_server, phone, factory, db):
    study = crowd_study(
        db, factory, factory.user(), _nine_keys(), consent="I agree.", inputs=["keyboard", "touch"]
    )
    phone.goto(link(live_server, study, workerId="W-phone", assignmentId="A-1", hitId="H-1"))
    expect(phone.locator("#status-title")).to_have_text(
        "This study cannot be played on a touch screen"
    )
    expect(phone.locator("#status-text")).to_contain_text(
        "Please open the HIT on a computer, or return the HIT on MTurk (the Return button on "
        "the HIT's page): you need no code for that."
    )
    expect(phone.locator("#consent-view")).to_be_hidden()
    assert _participants(db, study) == []


def test_a_direct_link_on_a_phone_is_told_plainly_and_may_go_on(live_server, phone, factory, db):
    study = crowd_study(
        db,
        factory,
        factory.user(),
        _nine_keys(),
        consent="I agree.",
        inputs=["keyboard", "touch"],
        allow_anonymous=True,
    )
    phone.goto(link(live_server, study))
    expect(phone.locator("#status-text")).to_contain_text(
        "Please open the study link on a computer, or close this page."
    )
    expect(phone.get_by_role("button", name="Leave the study")).to_have_count(0)
    phone.get_by_role("button", name="Continue anyway").tap()  # a keyboard is attached
    phone.get_by_role("button", name="Start").tap()
    accept_consent(phone)
    assert len(_participants(db, study)) == 1
    # at the game, told again (a keyboard plays it; the page offers no buttons)
    phone.locator("#instructions-ok").tap()
    phone.get_by_role("button", name="Play Nine").tap()
    expect(phone.locator("#st-phase")).to_have_text("ready")
    expect(phone.locator("#touch-note")).to_have_text(
        "This game has no touch controls: it needs a keyboard."
    )
    expect(phone.locator("#touch-pad")).to_be_hidden()
