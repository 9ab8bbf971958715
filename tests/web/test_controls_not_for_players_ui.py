"""An action no control reaches blocks activation until the designer binds it or marks it
"not for players"; a key another action holds moves only once the designer says so."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from tests.factories import Factory, spec_dict
from tests.web.test_controls_editor import open_controls
from tests.web.test_designer_ui import activate, fresh, log_in

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots/editor-backend"


def test_unbound_action_blocks_activation_until_marked_not_for_players(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    controls = {"keys": {"ArrowLeft": 0}, "noop": 1}
    spec = spec_dict("Hill", id="car", source={"kind": "gymnasium", "id": "MountainCar-v0"},
                     controls=controls)  # fmt: skip
    spec["environments"][0]["name"] = "MountainCar"
    study = factory.study(user, spec)
    log_in(page, live_server, user)
    page.get_by_role("button", name="Hill").click()

    page.get_by_role("button", name="Validate").click()
    expect(page.locator("#validate-status")).to_have_text("Some environments do not build.")
    card = page.get_by_role("article", name="Environment 1: MountainCar")
    unbound = "Action 2 has no key or button: bind one, or tick “not for players” on it"
    expect(card.get_by_role("list", name="problems")).to_contain_text(f"Controls: {unbound}")
    page.get_by_role("button", name="Activate").click()
    checklist = page.get_by_role("region", name="Pre-launch checklist")
    expect(checklist).to_contain_text(unbound)
    expect(checklist.get_by_role("button", name="Go to MountainCar · Controls")).to_be_visible()
    expect(page.locator("#detail-state")).to_have_text("Draft")

    # Binding a key that action 0 holds asks first; Esc keeps it where it was.
    box = open_controls(page, "MountainCar")
    box.get_by_role("button", name="Bind a key to 2").click()
    page.keyboard.press("ArrowLeft")
    ask = box.get_by_role("alertdialog", name="ArrowLeft is already bound")
    expect(ask).to_contain_text("ArrowLeft already sends 0. Move it to 2?")
    expect(ask.get_by_role("button", name="Move ArrowLeft to 2")).to_be_focused()
    page.screenshot(path=f"{SHOTS}/controls-rebind-ask.png", full_page=True)
    page.keyboard.press("Escape")
    expect(ask).to_be_hidden()
    expect(box.locator("tr[data-action='0']")).to_contain_text("ArrowLeft")
    expect(box.locator("tr[data-action='2'] .flag-unbound")).to_have_text("unbound")

    # Action 2 is not for players: activation is allowed.
    box.get_by_role("checkbox", name="2 is not for players").check()
    expect(box.locator("tr[data-action='2'] .flag-not-for-players")).to_have_text("not for players")
    expect(box.locator("tr[data-action='2'] .flag-unbound")).to_have_count(0)
    box.screenshot(path=f"{SHOTS}/controls-not-for-players.png")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#validate-status")).to_have_text("Every environment builds.")
    saved = fresh(db, study.id)
    assert saved is not None
    assert saved.spec["environments"][0]["controls"]["not_for_players"] == [2]
    activate(page)  # past the warning that it does not say where participants come from
    expect(page.locator("#detail-state")).to_have_text("Active")
