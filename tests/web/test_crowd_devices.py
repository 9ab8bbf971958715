"""A phone (touch only, no keyboard) is told what the study needs before anything else: no
consent asked, no participant made, unless the person goes on anyway (real Chromium)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from server.models import Participant
from tests.web._crowd import accept_consent, crowd_study, link

pytestmark = pytest.mark.browser


def test_a_phone_is_told_it_needs_a_keyboard_before_consent(live_server, browser, factory, db):
    study = crowd_study(db, factory, factory.user(), consent="I agree.")
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                has_touch=True)  # fmt: skip
    try:
        page = phone.new_page()
        page.goto(link(live_server, study, PROLIFIC_PID="on-a-phone"))
        expect(page.locator("#status-title")).to_have_text("This study needs a keyboard")
        expect(page.locator("#consent-view")).to_be_hidden()
        assert db.query(Participant).filter_by(study_id=study.id).count() == 0
        page.get_by_role("button", name="Continue anyway").tap()  # a keyboard is attached
        accept_consent(page)
        db.expire_all()
        assert db.query(Participant).filter_by(study_id=study.id).count() == 1
    finally:
        phone.close()
