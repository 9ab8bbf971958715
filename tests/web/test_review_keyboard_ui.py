"""Review at keyboard speed, in real Chromium: a reviewer goes through ten episodes with the
keyboard only (outcome, tag at the current step, next episode), in the list's filter and
sort, and the return plot draws one series per environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from server.models import Episode, StepTag
from tests.api.routes.recorded import Inserter, _cartpole
from tests.export.recordings import Recording, record_episode
from tests.factories import Factory
from tests.web.test_episodes_ui import _login

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/shots/review-keyboard")
STEPS = (7, 3, 12, 5, 9, 4, 11, 6, 10, 8)  # each episode's length: the sort puts them in order


@pytest.fixture(scope="module")
def ten(tmp_path_factory: pytest.TempPathFactory) -> list[Recording]:
    """Ten short real CartPole logs, recorded once for this module."""
    root = tmp_path_factory.mktemp("ten")
    return [
        record_episode(_cartpole(steps), root / f"kb{i}".ljust(32, "0"), env_id="CartPole-v1",
                       episode_id=f"kb{i}".ljust(32, "0"), seed=200 + i)
        for i, steps in enumerate(STEPS)
    ]  # fmt: skip


def test_ten_episodes_reviewed_with_the_keyboard_only(
    live_server: str, page: Page, factory: Factory, db, settings, ten
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    eps = [ins.add(study, rec, minutes_ago=60 - i) for i, rec in enumerate(ten)]
    by_steps = sorted(eps, key=lambda e: e.steps)
    _login(page, live_server, owner)
    # The list sorted by length, shortest first, with a filter; the first episode open.
    url = f"{live_server}/episodes.html?study={study.id}&min_steps=1&sort=steps"
    page.goto(f"{url}&episode={by_steps[0].id}&step=0")
    expect(page.locator("#viewer-id")).to_contain_text(by_steps[0].id)
    expect(page.locator("#episode-position")).to_have_text("1 of 10")
    expect(page.get_by_role("button", name="Next episode n ›")).to_be_visible()

    # The tag name `t` will use is shown, and set from the keyboard.
    expect(page.locator("#mark-info")).to_have_text("t tags step 0 — type its name first (Shift+T)")
    page.keyboard.press("Shift+T")
    expect(page.locator("#st-name")).to_be_focused()
    page.keyboard.type("checked")
    page.keyboard.press("Enter")
    expect(page.locator("#mark-info")).to_have_text(
        "t tags step 0 “checked” — Shift+T changes the name"
    )

    for k, ep in enumerate(by_steps):
        expect(page.locator("#viewer-id")).to_contain_text(ep.id)
        expect(page.locator("#episode-position")).to_have_text(f"{k + 1} of 10")
        page.keyboard.press("ArrowRight")  # step 1
        expect(page.locator("#step-label")).to_have_text(f"1 / {ep.steps - 1}")
        page.keyboard.press("s" if k % 2 == 0 else "f")
        expect(page.locator("#ep-outcome")).to_have_value("success" if k % 2 == 0 else "failure")
        page.keyboard.press("t")
        expect(page.locator("#step-tags")).to_contain_text("checked: step 1")
        if k == 3:  # for docs/img: without the toasts over the side panel
            page.evaluate("document.getElementById('toasts').replaceChildren()")
            page.locator("#viewer").screenshot(path=str(SHOTS / "review-keyboard.png"))
        if k < len(by_steps) - 1:
            page.keyboard.press("n")
    page.keyboard.press("n")  # past the last one: it says so and stays
    expect(page.locator("#toasts")).to_contain_text("This is the last episode of the list.")
    page.keyboard.press("p")
    expect(page.locator("#viewer-id")).to_contain_text(by_steps[-2].id)
    assert "sort=steps" in page.url and "min_steps=1" in page.url

    db.expire_all()
    outcomes = {e.id: e.outcome for e in db.scalars(select(Episode)).all()}
    assert outcomes == {
        e.id: "success" if k % 2 == 0 else "failure" for k, e in enumerate(by_steps)
    }
    tags = db.scalars(select(StepTag)).all()
    assert sorted((t.episode_id, t.name, t.start_step, t.end_step) for t in tags) == sorted(
        (e.id, "checked", 1, 1) for e in eps
    )


def test_bulk_selection_is_kept_across_bulk_actions(
    live_server: str, page: Page, factory: Factory, db, settings, ten
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    eps = [ins.add(study, rec, minutes_ago=60 - i) for i, rec in enumerate(ten[:3])]
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.locator("#episodes-body tr")).to_have_count(3)
    for e in eps[:2]:
        page.get_by_label(f"Select episode {e.id}").check()
    bar = page.get_by_role("group", name="Bulk actions")
    bar.get_by_label("Tag for the selected episodes").fill("seen")
    bar.get_by_role("button", name="Add tag").click()
    expect(page.locator("#toasts")).to_contain_text("Tagged 2 episodes “seen”")
    expect(page.locator("#bulk-count")).to_have_text("2 episodes selected")
    bar.get_by_role("button", name="Exclude").click()
    expect(page.locator("#toasts")).to_contain_text("Excluded 2 episodes from exports.")
    expect(page.locator("#bulk-count")).to_have_text("2 episodes selected")
    # Before it starts, the export says which listed episodes it leaves out, and why.
    preview = page.locator("#ex-preview")
    expect(preview).to_contain_text("Exports 1 episode of the 3 listed.")
    expect(preview).to_contain_text("Leaves out 2 episodes, excluded from exports")
    page.get_by_label("Include excluded episodes").check()
    expect(preview).to_have_text("Exports 3 episodes of the 3 listed.")
    page.get_by_label("Include excluded episodes").uncheck()
    page.evaluate("document.getElementById('toasts').replaceChildren()")
    page.locator("#export-card").screenshot(path=str(SHOTS / "export-preview.png"))
    bar.get_by_role("button", name="Clear selection").click()
    expect(page.locator("#bulk-count")).to_have_text("Check rows, or")
    expect(page.locator("#returns-plot svg .ep-series")).to_have_count(1)
    expect(page.locator("#returns-plot")).to_contain_text("episode (oldest first)")
