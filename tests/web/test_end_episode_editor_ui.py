"""The designer's "I'm done" setting on an environment's card (real Chromium): on by default
for a robot task (PickCube), off for a game (CartPole) until ticked; what is saved is the
study format's ``allow_end``."""

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
LABEL = "Participants may end an episode (“I'm done”)"


def test_the_environment_card_says_whether_participants_may_end_an_episode(
    live_server: str, page: Page, factory: Factory, db: Session
):
    log_in(page, live_server, factory.user())
    page.get_by_role("button", name="New study").first.click()
    page.get_by_label("Study name").fill("Arms and poles")
    add_from_catalog(page, "pickcube", "PickCube")
    add_from_catalog(page, "cartpole", "CartPole")
    cube = page.get_by_role("article", name="Environment 1: PickCube")
    pole = page.get_by_role("article", name="Environment 2: CartPole")
    expect(cube.get_by_label(LABEL)).to_be_checked()
    expect(cube).to_contain_text("On by default for this robot task.")
    expect(pole.get_by_label(LABEL)).not_to_be_checked()
    expect(pole).to_contain_text("Off by default for games.")
    pole.get_by_label(LABEL).check()
    SHOTS.mkdir(parents=True, exist_ok=True)
    pole.get_by_label(LABEL).locator("xpath=..").screenshot(path=str(SHOTS / "allow-end.png"))
    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Arms and poles")).to_contain_text("Draft")
    envs = db.scalars(select(Study)).one().spec["environments"]
    # PickCube left at its default (unset: on), CartPole ticked
    assert [e.get("allow_end") for e in envs] == [None, True]
