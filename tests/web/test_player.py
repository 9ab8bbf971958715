"""The player page in real Chromium: keyboard, gamepad, save, reject, cancel, pause, reload."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus
from server.recording.writer import open_reader
from tests.factories import PASSWORD
from tests.player.conftest import activate, counter_env, spec, wait_status
from tests.web._join import join_study, to_ready_gate

pytestmark = pytest.mark.browser


@pytest.fixture
def designer(factory):
    return factory.user()


def _participant(page, live_server, factory, designer, db, env, who="P-7"):
    """Open the study's permalink and join as a participant, typing the id as a person would."""
    study = activate(db, factory.study(designer, spec(env)))
    join_study(page, live_server, study.permalink_token, who)
    expect(page.locator("#study-name")).to_have_text("Player test")
    return study


def _play(page, env_name="Counter"):
    to_ready_gate(page, env_name)
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    expect(page.locator("#screen")).to_be_focused()
    expect(page.locator("#st-step")).to_have_text("0")


def _episode(db, study):
    rows = db.query(Episode).filter_by(study_id=study.id).all()
    assert len(rows) == 1
    db.refresh(rows[0])
    return rows[0]


def test_keyboard_episode_to_the_end_and_saved(live_server, page, factory, designer, db):
    study = _participant(page, live_server, factory, designer, db, counter_env(episode_len=5))
    expect(page.locator("#study-instructions h1")).to_have_text("Hi")
    _play(page)
    expect(page.locator("#legend")).to_contain_text("one")
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    page.keyboard.press("KeyA")
    expect(page.locator("#st-latency")).to_contain_text("ms")  # measured from the acks
    for _ in range(3):
        page.keyboard.press("KeyA")
    dialog = page.locator("#save-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("5 steps, return 5")  # as the status bar counts
    expect(page.locator("#st-step")).to_have_text("5")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved. 5 steps")
    row = _episode(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 6 and row.total_reward == 5.0
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    assert len(steps) == 6
    assert [json.loads(s.custom_data["input"]) for s in steps[1:]] == [
        {"keys": ["KeyA"], "buttons": {}, "axes": [], "devices": {}}
    ] * 5
    timing = [json.loads(s.custom_data["timing"]) for s in steps]
    assert all("input_sent" in t and "input_recv" in t for t in timing[1:])
    acked = [a[0] for t in timing for a in t.get("acks", [])]
    assert acked == sorted(acked) and 0 in acked  # frames drawn were acknowledged
    assert row.latency_p50_ms is not None and row.latency_p95_ms >= row.latency_p50_ms


def test_frames_draw_without_webcodecs(live_server, page, factory, designer, db):
    """Over plain http (not localhost) there is no ImageDecoder: createImageBitmap draws."""
    page.context.add_init_script("delete window.ImageDecoder;")
    _participant(page, live_server, factory, designer, db, counter_env(episode_len=50))
    assert page.evaluate("typeof window.ImageDecoder") == "undefined"
    _play(page)
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    expect(page.locator("#screen")).to_have_attribute("data-frames", "2")
    expect(page.locator("#screen")).to_have_attribute("width", "16")  # the env's 16x16 frames


def test_reject_at_the_end(live_server, page, factory, designer, db):
    study = _participant(page, live_server, factory, designer, db, counter_env(episode_len=2))
    _play(page)
    page.keyboard.press("KeyA")
    page.keyboard.press("KeyA")
    page.get_by_role("button", name="Discard").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode discarded.")
    assert _episode(db, study).status == EpisodeStatus.rejected


def test_cancel_with_the_delete_key_asks_first(live_server, page, factory, designer, db):
    study = _participant(page, live_server, factory, designer, db, counter_env(episode_len=50))
    _play(page)
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    # Delete asks first (the game waits); Esc goes back to the game
    page.keyboard.press("Delete")
    ask = page.get_by_role("alertdialog", name="Cancel this episode?")
    expect(ask).to_be_visible()
    expect(page.locator("#st-phase")).to_have_text("paused")
    page.screenshot(path="/tmp/shots/player-cancel-ask.png")
    expect(page.locator("#cancel-no")).to_be_enabled()  # its guard is over: keys answer it
    page.keyboard.press("Escape")
    expect(ask).to_be_hidden()
    expect(page.locator("#st-phase")).to_have_text("playing")
    # Delete twice cancels
    page.keyboard.press("Delete")
    expect(ask).to_be_visible()
    expect(page.locator("#cancel-yes")).to_be_enabled()
    page.keyboard.press("Delete")
    expect(page.locator("#after-save-text")).to_contain_text("Episode canceled.")
    expect(ask).to_be_hidden()
    row = _episode(db, study)
    assert row.status == EpisodeStatus.canceled and row.steps == 2


def test_pause_and_resume(live_server, page, factory, designer, db):
    env = counter_env(episode_len=3)
    study = _participant(page, live_server, factory, designer, db, env)
    _play(page)
    page.keyboard.press("KeyA")
    page.keyboard.press("Escape")
    expect(page.locator("#st-phase")).to_have_text("paused")
    expect(page.locator("#overlay")).to_contain_text("Paused")
    page.keyboard.press("KeyA")  # ignored while paused
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#st-phase")).to_have_text("playing")
    page.locator("#screen").click()
    page.keyboard.press("KeyB")
    page.keyboard.press("KeyB")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    row = _episode(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 4 and row.total_reward == 5.0


def test_reload_mid_episode_resumes_without_losing_a_step(live_server, page, factory, designer, db):
    sockets = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    study = _participant(page, live_server, factory, designer, db, counter_env(episode_len=4))
    _play(page)
    page.keyboard.press("KeyA")
    page.keyboard.press("KeyB")
    expect(page.locator("#st-step")).to_have_text("2")
    page.reload()
    expect(page.locator("#st-phase")).to_have_text("paused")
    # the ticket rides in a header (URLs reach access logs); the reload resumes the session
    assert len(sockets) == 2 and not any("ticket" in url for url in sockets)
    assert "session=" not in sockets[0] and "session=" in sockets[1]
    expect(page.locator("#st-step")).to_have_text("2")  # the last frame, shown again
    expect(page.locator("#st-return")).to_have_text("3")
    page.keyboard.press("Escape")  # resume (focus is on the page after a reload)
    expect(page.locator("#st-phase")).to_have_text("playing")
    page.locator("#screen").click()
    page.keyboard.press("KeyA")
    page.keyboard.press("KeyA")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    row = _episode(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 5 and row.total_reward == 5.0
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    assert [float(s.timestep.reward or 0) for s in steps] == [0.0, 1.0, 2.0, 1.0, 1.0]


FAKE_GAMEPAD = """
(() => {
  const pad = { id: "Fake pad (STANDARD GAMEPAD)", index: 0, connected: true, mapping: "standard",
    timestamp: 0, axes: [0, 0, 0, 0], buttons: Array.from({ length: 17 }, () => ({ pressed: false,
    touched: false, value: 0 })) };
  window.__pad = pad;
  window.__press = (i, down) => { pad.buttons[i] = { pressed: down, touched: down,
    value: down ? 1 : 0 }; pad.timestamp += 1; };
  window.__axis = (i, v) => { pad.axes[i] = v; pad.timestamp += 1; };
  navigator.getGamepads = () => [pad, null, null, null];
})();
"""


def test_fake_gamepad_plays_an_episode(live_server, page, factory, designer, db):
    page.context.add_init_script(FAKE_GAMEPAD)
    env = counter_env(episode_len=3)
    env["controls"]["buttons"] = {"0": 1}
    env["controls"]["axes"] = [{"axis": 0, "negative": 2, "positive": 1}]
    study = _participant(page, live_server, factory, designer, db, env)
    expect(page.locator("#gamepad-status")).to_contain_text("Fake pad")
    _play(page)
    for step in (1, 2):
        page.evaluate("window.__press(0, true)")
        expect(page.locator("#st-step")).to_have_text(str(step))
        page.evaluate("window.__press(0, false)")
        # the page has polled the release before the next press
        expect(page.locator("#gamepad-status")).to_have_attribute("data-buttons", "")
    page.evaluate("window.__axis(0, 0.1)")  # inside the dead zone: no step
    page.evaluate("window.__axis(0, -0.9)")  # past the dead zone: action 2
    expect(page.locator("#save-dialog")).to_be_visible()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    row = _episode(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 4 and row.total_reward == 4.0
    with open_reader(row.storage_path) as reader:
        inputs = [json.loads(s.custom_data["input"]) for s in list(reader.steps)[1:]]
    assert inputs[0]["buttons"] == {"0": 1}
    assert inputs[2]["axes"][0] == -0.9
    page.evaluate("navigator.getGamepads = () => [null, null, null, null]")  # unplugged
    expect(page.locator("#gamepad-status")).to_have_text("No gamepad")


def test_canvas_keeps_the_frame_aspect_ratio_and_goes_fullscreen(
    live_server, page, factory, designer, db
):
    _participant(page, live_server, factory, designer, db, counter_env(episode_len=50))
    _play(page)
    canvas = page.locator("#screen")
    expect(canvas).to_have_attribute("width", "16")  # the env's 16x16 frames
    box = canvas.bounding_box()
    assert box["width"] > 100 and abs(box["width"] - box["height"]) <= 2
    page.get_by_role("button", name="Fullscreen").click()
    # predicates as functions: an expression string is eval'd, which the page's CSP forbids
    page.wait_for_function("() => document.fullscreenElement?.id === 'stage'")
    page.wait_for_function(
        "() => Math.abs(document.getElementById('screen').getBoundingClientRect().height"
        " - window.innerHeight) <= 2"
    )
    expect(canvas).to_be_focused()


def test_env_crash_is_shown_as_failed(live_server, page, factory, designer, db):
    env = counter_env(episode_len=50, crash_at=2)
    study = _participant(page, live_server, factory, designer, db, env)
    _play(page)
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    page.keyboard.press("KeyA")
    # a participant is told plainly, with the way on; the details are the designer's
    expect(page.locator("#play-message")).to_have_text(
        "This game stopped working. Your progress is kept; you can continue."
    )
    expect(page.locator("#after-save")).to_be_focused()  # the panel, not its button
    assert "boom" not in page.locator("body").inner_text()
    row = wait_status(db, _episode(db, study).id, EpisodeStatus.failed)
    assert "boom" in row.error


def test_designer_test_plays_with_the_session_cookie(live_server, page, factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=1)))  # a draft
    res = page.context.request.post(
        f"{live_server}/api/auth/login", data={"email": designer.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/player.html?study={study.id}")
    _play(page)
    page.keyboard.press("KeyA")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    page.get_by_role("button", name="End session").click()
    expect(page.locator("#done-view")).to_be_visible()
    row = _episode(db, study)
    assert row.user_id == designer.id and row.participant_id is None


def test_player_page_refuses_a_stranger(live_server, page, factory, designer):
    study = factory.study(designer, spec(counter_env()))
    page.goto(f"{live_server}/player.html?study={study.id}")
    expect(page.locator("#page-error")).to_contain_text("log in as one of its designers")


def test_a_replaced_link_says_it_no_longer_works(live_server, page, factory, designer, db):
    """Rotating the permalink revokes the tickets issued under the old one."""
    from server.services.studies import studies

    study = _participant(page, live_server, factory, designer, db, counter_env())
    studies.rotate_permalink(db, study)
    page.reload()
    expect(page.locator("#status-title")).to_have_text("This link no longer works")
    expect(page.locator("#status-text")).to_contain_text("no longer valid")
    page.goto(f"{live_server}/player.html?token={study.permalink_token}")  # the new link
    page.get_by_label("Participant ID").fill("P-7")
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#instructions-view")).to_be_visible()


def test_a_designers_test_play_id_is_refused_with_a_reason(
    live_server, page, factory, designer, db
):
    study = activate(db, factory.study(designer, spec(counter_env())))
    page.goto(f"{live_server}/player.html?token={study.permalink_token}")
    page.get_by_label("Participant ID").fill("user:1")
    page.get_by_role("button", name="Continue").click()
    expect(page.locator("#page-error")).to_contain_text("reserved for designers' test plays")


def test_save_dialog_asks_the_outcome_with_keys(live_server, page, factory, designer, db):
    env = {**counter_env(episode_len=2), "ask_outcome": True}
    study = _participant(page, live_server, factory, designer, db, env)
    _play(page)
    page.keyboard.press("KeyA")
    page.keyboard.press("KeyA")
    dialog = page.get_by_role("dialog", name="Episode over")
    expect(dialog).to_contain_text("Did you succeed?")
    expect(dialog.get_by_role("button", name="Succeeded S")).to_be_visible()
    expect(dialog.get_by_role("button", name="Failed F")).to_be_visible()
    expect(dialog).to_be_focused()  # the dialog itself: no button answers a game key
    expect(dialog.get_by_role("button", name="Skip Enter")).to_be_enabled()  # guard over
    page.screenshot(path="/tmp/shots/review-labels/save-outcome.png")
    page.keyboard.press("f")  # Failed
    expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
    row = _episode(db, study)
    assert row.status == EpisodeStatus.completed and row.player_outcome == "failure"
