"""A laptop participant ends a PickCube episode early (real Chromium, the catalog's PickCube
in whatever runtime the catalog says it runs): the player offers "I'm done" and its key X
(the legend's Episode group says so, and the pause says it too); pressing X while playing asks
the save question with the steps taken, and the saved episode is "ended by participant" in
the designer's episodes list and replay, with one step count everywhere: the dialog's, the
list's, the replay's slider and chart (its log has one more step, the final observation).
A second episode is ended from the pause with the button, and discarded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from server.models import Episode, EpisodeStatus, User
from server.runtime.catalog import CATALOG
from tests.factories import PASSWORD
from tests.player.conftest import activate, spec
from tests.web._crowd import link
from tests.web._teleop import hold, open_game

ENTRY = CATALOG["PickCube"]
pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/end-episode-shots")


def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_a_participant_ends_a_pick_cube_episode_early_and_the_list_says_so(
    live_server, page, factory, db
):
    # its catalog default: PickCube, a manipulation task, lets the participant end episodes
    study = open_game(page, live_server, factory, db, ENTRY, name="Cube", seeds=[4],
                      max_steps=3000, episodes_per_participant=2)  # fmt: skip
    done = page.get_by_role("button", name="I'm done X")
    expect(done).to_be_visible()
    expect(done).to_be_disabled()  # nothing to end at the ready gate
    # the legend's Episode group names its key
    row = page.locator("#legend tr", has_text="I'm done: end the episode, then save it")
    expect(row.locator("kbd")).to_have_text("X")
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    expect(done).to_be_enabled()
    hold(page, "ArrowRight", 10)

    page.keyboard.press("KeyX")  # done: the episode ends here
    dialog = page.locator("#save-dialog")
    expect(dialog).to_be_visible()
    text = page.locator("#save-text")
    expect(text).to_have_text(re.compile(r"^You ended the episode: \d+ steps, return "))
    steps = int(re.search(r"(\d+) steps", text.inner_text()).group(1))  # type: ignore[union-attr]
    assert steps >= 10
    _shot(page, "save-dialog")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#after-save-text")).to_contain_text(f"Episode saved. {steps} steps")

    (row,) = db.query(Episode).filter_by(study_id=study.id).all()
    db.refresh(row)
    assert (row.status, row.ended_by, row.end_reason) == ("completed", "participant", "participant")
    assert row.steps == steps + 1  # the log's RLDS steps: the final observation too
    assert row.env_outcome == "failure"  # PickCube's is_success: the cube is on the table

    # the second episode: paused, the pause offers I'm done beside Resume and Cancel
    page.get_by_role("button", name="Next episode").click()
    expect(page.locator("#overlay")).to_contain_text("Press Enter")
    page.wait_for_timeout(700)  # the ready gate after the panel takes no press at first
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    hold(page, "KeyW", 3)
    page.keyboard.press("Escape")
    expect(page.locator("#st-phase")).to_have_text("paused")
    expect(page.locator("#overlay")).to_contain_text("or X / I'm done to end the episode")
    expect(page.get_by_role("button", name="Resume Esc")).to_be_enabled()
    expect(page.get_by_role("button", name="Cancel episode Delete")).to_be_enabled()
    _shot(page, "paused")
    done.click()
    expect(dialog).to_be_visible()
    expect(text).to_contain_text("You ended the episode")
    page.get_by_role("button", name="Discard").click()  # D is the game's (yaw)
    expect(page.locator("#after-save-text")).to_contain_text("Episode discarded.")
    second = next(e for e in db.query(Episode).filter_by(study_id=study.id) if e.id != row.id)
    db.refresh(second)
    assert (second.status, second.ended_by) == (EpisodeStatus.rejected, "participant")

    # the designer's episodes list and replay
    owner = db.get(User, study.owner_id)
    login = page.request.post(f"{live_server}/api/auth/login",
                              data={"email": owner.email, "password": PASSWORD})  # fmt: skip
    assert login.ok
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    listed = page.locator(f"tr[data-id='{row.id}']")
    # PickCube reports success: the cube was not lifted
    expect(listed).to_contain_text("ended by participant · task not done")
    expect(listed.locator("td.right").first).to_have_text(str(steps))
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#episodes-table").screenshot(path=str(SHOTS / "episodes-list.png"))
    listed.get_by_role("button", name="Replay").click()
    ending = f"Ended by participant · task not done · {steps} steps"
    expect(page.locator("#replay-ending")).to_have_text(ending)
    expect(page.locator("#step-label")).to_have_text(f"0 / {steps}")
    expect(page.locator("#chart-return")).to_contain_text(f"over {steps} steps")
    page.keyboard.press("End")
    expect(page.locator("#step-label")).to_have_text(f"{steps} / {steps}")
    _shot(page, "replay")


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def test_a_phone_participant_taps_im_done(live_server, browser, factory, db):
    """On a phone (touch only, 390×844) the button is in sight with Pause and Cancel, the
    pause says to tap it, and a tap ends the episode and asks the save question."""
    fields = {"id": "robot", "name": "Cube", "source": ENTRY.source().model_dump(),
              "mode": ENTRY.mode, "fps": ENTRY.fps, "max_steps": 3000}  # fmt: skip
    crowd = {"inputs": ["keyboard", "gamepad", "touch"]}  # open to phones
    study = activate(db, factory.study(factory.user(), spec(fields, crowd=crowd)))
    context = browser.new_context(**PHONE)
    phone = context.new_page()
    phone.goto(link(live_server, study, PROLIFIC_PID="thumbs"))
    phone.locator("#instructions-ok").tap()
    phone.get_by_role("button", name="Play Cube").tap()
    expect(phone.locator("#st-phase")).to_have_text("ready")
    done = phone.get_by_role("button", name="I'm done")
    expect(done).to_be_visible()
    phone.get_by_role("button", name="Start", exact=True).tap()
    expect(phone.locator("#st-phase")).to_have_text("playing")
    phone.wait_for_function("() => Number(document.getElementById('st-step').textContent) >= 5")
    phone.get_by_role("button", name="Pause", exact=True).tap()
    expect(phone.locator("#overlay")).to_have_text(
        re.compile("Paused — tap Resume to continue, or I'm done to end the episode")
    )
    for button in ("Resume", "I'm done", "Cancel episode"):
        expect(phone.get_by_role("button", name=button, exact=True)).to_be_in_viewport()
    SHOTS.mkdir(parents=True, exist_ok=True)
    phone.screenshot(path=str(SHOTS / "phone-paused.png"))
    done.tap()
    expect(phone.locator("#save-text")).to_contain_text("You ended the episode")
    phone.get_by_role("button", name="Save").tap()
    expect(phone.locator("#after-save-text")).to_contain_text("Episode saved.")
    context.close()
    (row,) = db.query(Episode).filter_by(study_id=study.id).all()
    db.refresh(row)
    assert (row.status, row.ended_by) == ("completed", "participant") and row.steps > 5
