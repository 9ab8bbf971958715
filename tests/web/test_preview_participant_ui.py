"""A designer previews a draft as a participant, from the study editor to the completion page,
every screen marked TEST, and nothing of it counts (issue 21)."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from server.models import Episode, Participant
from tests.factories import Factory
from tests.player.conftest import counter_env, spec
from tests.web._crowd import pass_gate, read_instructions
from tests.web.test_designer_ui import log_in

pytestmark = pytest.mark.browser
SHOTS = os.environ.get("STUDIO_TEST_SHOTS", "")


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/{name}.png")


def test_preview_as_participant_walks_a_draft_to_the_test_completion_page(
    live_server: str, page: Page, factory: Factory, db: Session
):
    designer = factory.user()
    env = counter_env(episode_len=2, episodes_total=1)
    crowd = {"consent": "# Consent\n\nYour key presses are recorded.", "completion_code": "C0DE-9",
             "completion_url": "https://crowd.example/done?cc={code}"}  # fmt: skip
    study = factory.study(designer, {**spec(env, crowd=crowd), "name": "Reaction study"})
    log_in(page, live_server, designer)
    page.get_by_role("button", name="Reaction study").click()
    expect(page.locator("#detail-state")).to_have_text("Draft")
    with page.context.expect_page() as opened:
        page.get_by_role("link", name="Preview as participant").click()
    tab = opened.value
    banner = tab.get_by_role("note")
    expect(banner).to_contain_text("TEST — you are previewing this study as a participant")

    # the platform landing: come from Prolific, as a link with its ids would
    expect(tab.get_by_role("heading", name="Preview as a participant")).to_be_visible()
    _shot(tab, "preview-landing")
    tab.get_by_role("button", name="From Prolific").click()
    expect(tab.locator("#consent-text h1")).to_have_text("Consent")
    expect(banner).to_be_visible()
    _shot(tab, "preview-consent")
    tab.get_by_role("button", name="I agree").click()
    read_instructions(tab)
    expect(tab.locator("#lobby-view")).to_be_visible()
    expect(banner).to_be_visible()
    tab.get_by_role("button", name="Play Counter").click()
    pass_gate(tab)
    tab.keyboard.press("KeyA")
    tab.keyboard.press("KeyA")
    save = tab.get_by_role("dialog", name="Episode over")
    expect(save).to_contain_text("TEST — saved as a test play.")
    _shot(tab, "preview-save")
    expect(tab.locator("#save-yes")).to_be_enabled()  # its guard is over
    tab.keyboard.press("Enter")
    expect(tab.locator("#after-save")).to_be_visible()
    expect(tab.locator("#next-btn")).to_contain_text("Finish and get your code")
    expect(tab.locator("#next-btn")).to_be_enabled()
    tab.keyboard.press("Enter")

    # the completion page: the study's code, marked TEST; its button sends nothing
    expect(tab.locator("#code-view")).to_be_visible()
    expect(tab.locator("#code-value")).to_have_value("C0DE-9")
    expect(tab.locator("#code-box")).to_contain_text("TEST code")
    expect(banner).to_be_visible()
    tab.get_by_role("button", name="Return to the platform").click()
    expect(tab.locator("#code-copied")).to_contain_text("TEST: a participant would now go to")
    expect(tab).to_have_url(f"{live_server}/player.html?preview={study.id}")
    _shot(tab, "preview-completion")

    db.expire_all()
    rows = db.query(Episode).filter_by(study_id=study.id).all()
    assert [(r.status, r.is_test) for r in rows] == [("completed", True)]
    tester = db.query(Participant).filter_by(study_id=study.id).one()
    assert tester.is_test and tester.completed_at is not None
    assert tester.external_id.startswith("TEST-")

    # the participants page lists nobody: a preview is not a participant
    page.goto(f"{live_server}/participants.html?study={study.id}")
    expect(page.get_by_text("No participants yet")).to_be_visible()


def test_preview_from_the_direct_link_asks_for_the_id_like_a_participant(
    live_server: str, page: Page, factory: Factory, db: Session
):
    designer = factory.user()
    study = factory.study(designer, spec(counter_env(episode_len=1)))
    log_in(page, live_server, designer)
    expect(page.get_by_role("button", name="Player test")).to_be_visible()
    page.goto(f"{live_server}/player.html?preview={study.id}")
    page.get_by_role("button", name="From the direct link").click()
    page.get_by_label("Participant ID").fill("has space")
    page.keyboard.press("Enter")
    expect(page.locator("#page-error")).to_contain_text("spaces")
    page.get_by_label("Participant ID").fill("ann")
    page.keyboard.press("Enter")
    expect(page.locator("#instructions-view")).to_be_visible()
    expect(page.get_by_role("note")).to_contain_text("TEST")
    db.expire_all()
    assert db.query(Participant).one().external_id == "TEST-ann"
