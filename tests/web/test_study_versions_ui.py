"""Study versions in real Chromium, through the form editor: a change that alters what
recorded episodes mean is refused in place and saved as a new version (the editor's study as
it stands), linked both ways in the list and the panel."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect
from sqlalchemy.orm import Session

from server.models import Episode, Participant, StudyState
from tests.factories import Factory, spec_dict
from tests.web.test_designer_ui import fresh, log_in, study_row

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots/editor-backend"


def test_a_meaning_change_is_saved_as_a_new_version(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    study = factory.study(user, spec_dict("Balance"))
    study.state = StudyState.paused
    worker = Participant(study_id=study.id, external_id="W-1")
    db.add(worker)
    db.flush()
    db.add(Episode(study_id=study.id, study_env_id=study.environments[0].id, env_key="cartpole",
                   participant_id=worker.id, status="completed", storage_path=""))  # fmt: skip
    db.commit()

    log_in(page, live_server, user)
    page.get_by_role("button", name="Balance").click()
    card = page.get_by_role("article", name="Environment 1: CartPole")
    # change a setting of the played environment in the form
    settings = card.get_by_role("group", name="Settings of CartPole")
    settings.get_by_label("sutton_barto_reward", exact=True).select_option("true")  # one select
    page.get_by_role("button", name="Save changes").click()
    error = page.locator("#detail-error")
    expect(error).to_contain_text("Save it as a new version")
    expect(error).to_contain_text("environments.0.source")
    expect(error.locator(".version-offer")).to_contain_text("Participants have played this study")
    expect(page.locator("#dirty-badge")).to_be_visible()  # the change is still in the editor
    page.screenshot(path=f"{SHOTS}/versions-refused.png")
    saved = fresh(db, study.id)
    assert saved is not None and "kwargs" not in saved.spec["environments"][0]["source"]

    save_version = page.get_by_role("button", name="Save as a new version")
    expect(save_version).to_be_focused()
    save_version.click()
    expect(page.locator("#detail-name")).to_have_text("Balance v2")
    expect(page.locator("#detail-state")).to_have_text("Draft")
    expect(save_version).to_be_hidden()  # a draft saves anything in place
    expect(page.locator("#detail-versions")).to_have_text("Version of Balance")
    expect(page.locator("#dirty-badge")).to_be_hidden()
    editor = yaml_view(page)
    expect(editor).to_have_value(re.compile("sutton_barto_reward: true"))
    row = study_row(page, "Balance v2")
    expect(row.locator(".version-note")).to_have_text("version of Balance")
    page.screenshot(path=f"{SHOTS}/versions-new-draft.png")

    # the link opens the original, which names its newer version and kept its settings
    page.locator("#detail-versions").get_by_role("link", name="Balance").click()
    expect(page.locator("#detail-name")).to_have_text("Balance")
    expect(page.locator("#detail-versions")).to_have_text("Newer version: Balance v2")
    editor = yaml_view(page)
    expect(editor).to_have_value(re.compile("id: CartPole-v1"))
    expect(editor).not_to_have_value(re.compile("sutton_barto_reward"))
    # a change that keeps the meaning still saves in place
    page.get_by_role("tab", name="Form").click()
    page.get_by_label("Study name").fill("Balance (old)")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#detail-name")).to_have_text("Balance (old)")
    expect(page.locator("#detail-error")).to_be_hidden()
    # a closed study starts again as a new version (its form is read-only: a copy)
    page.get_by_role("button", name="Close study").click()
    page.locator("#confirm-ok").click()
    expect(page.locator("#detail-state")).to_have_text("Closed")
    save_version.click()
    expect(page.locator("#detail-name")).to_have_text("Balance (old) v3")
    expect(page.locator("#detail-versions")).to_have_text("Version of Balance (old)")


def yaml_view(page: Page) -> Locator:
    """Switch to the editor's YAML view; its text box."""
    page.get_by_role("tab", name="Edit as YAML").click()
    return page.get_by_label("Edit the study file (YAML)")
