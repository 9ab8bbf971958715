"""Narration in the replay, in real Chromium: a reviewer marks two ranges of a recorded
episode with the keyboard and says what happened in each (w, type, Enter); the spans are drawn
along the steps and the step readout names the one covering the step; one is edited in place,
one deleted after another reviewer changed it meanwhile (the stale delete is refused and the
list reloaded); a reload shows what is kept; the study's narrations export and import as
JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from server.models import Narration
from tests.api.routes.recorded import Inserter, _cartpole
from tests.export.recordings import Recording, record_episode
from tests.factories import Factory
from tests.web.test_episodes_ui import _login

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/shots/narrations")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """A real 10-action CartPole log (11 RLDS steps), recorded once for this module."""
    root = tmp_path_factory.mktemp("narrate")
    episode_id = "nr0".ljust(32, "0")
    return record_episode(_cartpole(10), root / episode_id, env_id="CartPole-v1",
                          episode_id=episode_id, seed=301)  # fmt: skip


def _press(page: Page, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def _rows(db) -> list[tuple[int, int, str, int]]:  # type: ignore[no-untyped-def]
    db.expire_all()
    rows = db.scalars(select(Narration).order_by(Narration.start_step)).all()
    return [(n.start_step, n.end_step, n.text, n.version) for n in rows]


def test_a_reviewer_narrates_edits_and_deletes_with_the_keyboard(
    live_server: str, page: Page, factory: Factory, db, settings, recording, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ep = Inserter(db, settings.data_root).add(study, recording)
    assert ep.steps == 11
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}&episode={ep.id}&step=0")
    expect(page.locator("#viewer-id")).to_contain_text(ep.id)
    panel = page.locator(".ep-narrations")
    expect(panel.locator("#narrations")).to_have_text("No narrations yet.")
    expect(page.get_by_label("Keyboard shortcuts")).to_contain_text("w write what happened")
    target = page.locator("#narration-target")
    expect(target).to_have_text("step 0")

    # Steps 1..4 marked with [ and ], then w, the words, Enter.
    _press(page, "ArrowRight", "[", "ArrowRight", "ArrowRight", "ArrowRight", "]")
    expect(target).to_have_text("steps 1..4 (marked)")
    page.keyboard.press("w")
    field = page.get_by_label("What happened over these steps")
    expect(field).to_be_focused()
    expect(field).to_have_value("")  # the w itself is not typed into it
    page.keyboard.type("grasp the can")
    page.keyboard.press("Enter")
    expect(page.locator("#toasts")).to_contain_text("Narrated steps 1..4 “grasp the can”.")
    expect(field).not_to_be_focused()  # the keys are the replay's again
    expect(target).to_have_text("step 4")  # the mark is used up
    items = panel.locator("#narrations li")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("steps 1..4")
    expect(items.first).to_contain_text(f"grasp the can — {owner.email}")

    # The second: steps 6..9, all from the keyboard again.
    _press(page, "ArrowRight", "ArrowRight", "[", "ArrowRight", "ArrowRight", "ArrowRight", "]")
    expect(target).to_have_text("steps 6..9 (marked)")
    page.keyboard.press("w")
    expect(field).to_be_focused()
    page.keyboard.type("lift it")
    page.keyboard.press("Enter")
    expect(items).to_have_count(2)
    expect(items.nth(1)).to_contain_text("steps 6..9")
    assert _rows(db) == [(1, 4, "grasp the can", 1), (6, 9, "lift it", 1)]

    # Both are drawn along the steps; the readout names the one covering the step.
    spans = page.get_by_role("group", name="Narrations along the steps").get_by_role("button")
    expect(spans).to_have_count(2)
    readout = page.locator("#step-narration")
    expect(readout).to_have_text("“lift it”")  # step 9
    expect(page.locator(".ep-narration-span.current")).to_have_text("lift it")
    _press(page, "Home", "ArrowRight", "ArrowRight")
    expect(page.locator("#step-label")).to_have_text("2 / 10")
    expect(readout).to_have_text("“grasp the can”")
    page.keyboard.press("End")
    expect(readout).to_be_hidden()
    spans.filter(has_text="lift it").click()  # a span goes to its first step
    expect(page.locator("#step-label")).to_have_text("6 / 10")
    page.evaluate("document.getElementById('toasts').replaceChildren()")
    page.locator("#viewer").screenshot(path=str(SHOTS / "narrations.png"))

    # Edit one in place: its steps and its words; Enter saves.
    page.get_by_role("button", name="Edit narration “lift it”").click()
    editing = panel.locator("li.editing")
    expect(editing.get_by_label("Narration text")).to_be_focused()
    editing.get_by_label("Narration text").fill("lift the can")
    editing.get_by_label("To step").fill("10")
    editing.get_by_label("Narration text").press("Enter")
    expect(items.nth(1)).to_contain_text("steps 6..10")
    expect(items.nth(1)).to_contain_text("lift the can")
    assert _rows(db)[1] == (6, 10, "lift the can", 2)

    # Another reviewer changes the first meanwhile: this page's delete (of version 1) is
    # refused, says so, and the list shows their words; deleted again, it goes.
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "studio_csrf")
    first_id = db.scalars(select(Narration.id).where(Narration.start_step == 1)).one()
    res = page.request.patch(
        f"{live_server}/api/episodes/{ep.id}/narrations/{first_id}",
        data={"text": "grasp the red can", "version": 1}, headers={"X-CSRF-Token": csrf},
    )  # fmt: skip
    assert res.status == 200, res.text()
    page.get_by_role("button", name="Delete narration “grasp the can”").click()
    expect(page.locator("#narration-status")).to_have_text(
        "Changed by someone else meanwhile — reloaded."
    )
    expect(items.first).to_contain_text("grasp the red can")
    assert _rows(db)[0] == (1, 4, "grasp the red can", 2)  # nothing lost
    page.get_by_role("button", name="Delete narration “grasp the red can”").click()
    expect(items).to_have_count(1)
    expect(page.locator("#narration-status")).to_be_hidden()
    assert _rows(db) == [(6, 10, "lift the can", 2)]

    # A reload shows what is kept, on the list and along the steps.
    page.reload()
    expect(page.locator("#viewer-id")).to_contain_text(ep.id)
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("steps 6..10")
    expect(items.first).to_contain_text("lift the can")
    expect(spans).to_have_count(1)
    expect(page.locator("#narration-count")).to_have_text("(1)")

    # The study's narrations download as JSON, and a file of that shape imports.
    with page.expect_download() as download:
        panel.get_by_role("link", name="Export narrations (JSON)").click()
    saved = tmp_path / "narrations.json"
    download.value.save_as(saved)
    rows = json.loads(saved.read_text())
    assert [(r["episode_id"], r["start_step"], r["end_step"], r["text"], r["author"])
            for r in rows] == [(ep.id, 6, 10, "lift the can", owner.email)]  # fmt: skip
    upload = tmp_path / "more.json"
    upload.write_text(json.dumps(rows + [{**rows[0], "start_step": 10, "end_step": 10,
                                          "text": "put it down"}]))  # fmt: skip
    with page.expect_file_chooser() as chooser:
        panel.get_by_role("button", name="Import…").click()
    chooser.value.set_files(str(upload))
    expect(page.locator("#toasts")).to_contain_text(
        "Imported 1 narration (1 already there, skipped)."
    )
    expect(items).to_have_count(2)
    expect(items.nth(1)).to_contain_text("step 10")
    expect(items.nth(1)).to_contain_text("put it down")

    # A bad file: the page says which row and field, and nothing is added.
    upload.write_text(json.dumps([{**rows[0], "end_step": 11}]))
    with page.expect_file_chooser() as chooser:
        panel.get_by_role("button", name="Import…").click()
    chooser.value.set_files(str(upload))
    expect(page.locator("#toasts")).to_contain_text("Nothing was imported: row 0, end_step")
    assert len(_rows(db)) == 2
