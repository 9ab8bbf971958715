"""The editor's crowd settings in real Chromium: which completion applies to whom (Prolific,
MTurk, a direct link), updated as the designer types, and the inputs participants may play
with, saved into the study."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Study
from tests.factories import Factory
from tests.web.test_designer_ui import log_in, study_row
from tests.web.test_study_editor_ui import add_from_catalog, shot

pytestmark = pytest.mark.browser


def _words_whole(table) -> None:  # type: ignore[no-untyped-def]
    """No header word of ``table`` (its region) is broken across two lines."""
    split = table.locator("thead th").evaluate_all("""(cells) => cells.flatMap((th) => {
      const text = th.firstChild, out = [];
      for (const m of text.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(text, m.index); range.setEnd(text, m.index + m[0].length);
        if (range.getClientRects().length > 1) out.push(m[0]);
      }
      return out;
    })""")
    assert split == [], f"header words broken across lines: {split}"
    # and the table still fits its card (no column pushed out of sight)
    assert table.evaluate("(box) => box.scrollWidth <= box.clientWidth + 1")


def test_completion_per_platform_follows_the_edits(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    log_in(page, live_server, user)
    page.get_by_role("button", name="New study").first.click()
    page.get_by_label("Study name").fill("Crowd codes")
    page.get_by_text("Crowd settings").click()
    table = page.get_by_role("region", name="Completion per platform")
    finished = table.get_by_role("row", name="Finished")
    full = table.get_by_role("row", name="Study full for them")

    def cell(row, platform):  # type: ignore[no-untyped-def]
        return row.locator(f"td[data-platform='{platform}']")

    # the headers break between words, never inside one ("ANONYMOU / S"), however narrow
    for width in (1280, 1120, 1024, 700, 600):
        page.set_viewport_size({"width": width, "height": 800})
        _words_whole(table)
    page.set_viewport_size({"width": 1280, "height": 800})
    expect(cell(finished, "prolific")).to_have_text("no code: told they may close the page")
    expect(cell(finished, "mturk")).to_have_text("submits the HIT (no code)")

    page.get_by_label("Completion code").fill("ABC123")
    expect(cell(finished, "prolific")).to_contain_text(
        "sent to Prolific's completion page with code ABC123"
    )
    expect(cell(finished, "mturk")).to_have_text("submits the HIT (code ABC123)")
    expect(cell(finished, "direct")).to_have_text("code ABC123 shown")

    page.get_by_label("Completion URL").fill("https://crowd.example/done?cc={code}")
    expect(cell(finished, "prolific")).to_have_text(
        "sent to https://crowd.example/done?cc=ABC123 (code ABC123 shown)"
    )
    expect(cell(finished, "mturk")).to_have_text("submits the HIT (code ABC123)")  # always
    expect(cell(full, "direct")).to_have_text("no code: told they may close the page")

    page.get_by_label("Study-full code").fill("FULL9")
    page.get_by_label("Study-full URL").fill("https://crowd.example/full")
    expect(cell(full, "prolific")).to_have_text(
        "sent to https://crowd.example/full (code FULL9 shown)"
    )
    expect(cell(full, "mturk")).to_have_text("submits the HIT (code FULL9)")
    expect(cell(finished, "direct")).to_contain_text("ABC123")  # the finishers' stays theirs

    # the inputs participants may play with: keyboard and gamepad unless changed
    inputs = page.get_by_role("group", name="Participants play with")
    expect(inputs.get_by_label("Keyboard")).to_be_checked()
    expect(inputs.get_by_label("Touch (on-screen buttons)")).not_to_be_checked()
    inputs.get_by_label("Gamepad").uncheck()
    inputs.get_by_label("Touch (on-screen buttons)").check()
    shot(page, "crowd-settings")
    add_from_catalog(page, "classic", "CartPole")
    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Crowd codes")).to_be_visible()
    db.expire_all()
    study = db.scalars(select(Study).where(Study.owner_id == user.id)).one()
    crowd = study.spec["crowd"]
    assert crowd["inputs"] == ["keyboard", "touch"]
    assert crowd["completion_code"] == "ABC123" and crowd["full_code"] == "FULL9"
