"""The settings form refuses what cannot work, in real Chromium: a value outside the
environment's schema is not saved and its message sits beside the field; a game mode the
ROM lacks names ``kwargs.mode`` and the modes there are; defaults and descriptions shown."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Study
from tests.factories import Factory
from tests.web.test_designer_ui import log_in, study_row
from tests.web.test_study_editor_ui import SHOTS, add_from_catalog

pytestmark = pytest.mark.browser

BREAKOUT_MODES = "0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44"


def test_a_setting_outside_its_range_or_modes_is_not_saved(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    log_in(page, live_server, user)
    page.get_by_role("button", name="New study").first.click()
    page.get_by_label("Study name").fill("Bricks")
    add_from_catalog(page, "breakout", "Breakout")
    card = page.get_by_role("article", name="Environment 1: Breakout")
    settings = card.get_by_role("group", name="Settings of Breakout")

    # Unticked, a setting shows the game's real default and says what it is.
    frameskip = settings.locator("[data-schemapath$='.frameskip']")
    expect(frameskip.get_by_label("frameskip", exact=True)).to_have_value("4")
    expect(frameskip).to_contain_text("same action is repeated")
    expect(frameskip).to_contain_text("from 1 to 16, default 4")
    expect(settings.locator("[data-schemapath$='.mode']")).to_contain_text(BREAKOUT_MODES)
    # A boolean is one control: a select whose first choice keeps the default.
    full = settings.locator("[data-schemapath$='.full_action_space']")
    expect(full.locator("input, select")).to_have_count(1)
    expect(full.get_by_role("combobox")).to_have_value("")
    expect(full.get_by_role("combobox").locator("option").first).to_have_text("default (false)")

    settings.get_by_label("Set frameskip").check()
    frameskip.get_by_label("frameskip", exact=True).fill("20")
    page.get_by_role("button", name="Save changes").click()
    beside = settings.locator("[data-schemapath$='.frameskip']").locator(".setting-problem")
    expect(beside).to_have_text("setting 'frameskip' must be from 1 to 16 (not 20)")
    expect(card.get_by_role("list", name="save problems")).to_contain_text(
        "Setting 'frameskip' must be from 1 to 16 (not 20)"
    )
    assert db.scalars(select(Study)).all() == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    card.screenshot(path=str(SHOTS / "editor-setting-refused.png"))

    # A mode Breakout does not have: named at kwargs.mode, with the modes it has.
    settings.locator("[data-schemapath$='.frameskip']").get_by_label("frameskip", exact=True).fill(
        "2"
    )
    settings.get_by_label("Set mode").check()
    settings.locator("[data-schemapath$='.mode']").get_by_label("mode", exact=True).fill("3")
    page.get_by_role("button", name="Save changes").click()
    expect(card.get_by_role("list", name="save problems")).to_have_text(
        f"Setting 'mode' must be one of {BREAKOUT_MODES} (not 3)"
    )
    beside = settings.locator("[data-schemapath$='.mode']").locator(".setting-problem")
    expect(beside).to_contain_text(BREAKOUT_MODES)
    assert db.scalars(select(Study)).all() == []

    # A mode it has saves.
    settings.locator("[data-schemapath$='.mode']").get_by_label("mode", exact=True).fill("4")
    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Bricks")).to_contain_text("Draft")
    study = db.scalars(select(Study)).one()
    kwargs = study.spec["environments"][0]["source"]["kwargs"]
    assert kwargs == {"frameskip": 2, "mode": 4}
