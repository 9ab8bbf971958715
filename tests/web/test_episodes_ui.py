"""The episodes page in real Chromium: filter, replay, tag a step range, export, download."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from server.models import StepTag
from tests.api.routes._recorded import Inserter, record_set
from tests.export._recordings import Recording
from tests.factories import PASSWORD, Factory

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Recording]]:
    """Real envlogger logs, recorded once for this module."""
    return record_set(tmp_path_factory.mktemp("recorded"))


def test_filter_replay_tag_and_export(
    live_server: str, page: Page, factory: Factory, db, settings, recorded, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    ins.add(study, cp[0], minutes_ago=30)
    ins.add(study, cp[1], minutes_ago=20, tags=("good",))
    ins.add(study, cp[2], minutes_ago=10, status="abandoned", participant="worker-9")
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok

    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(3)
    expect(page.locator("#returns-plot circle")).to_have_count(3)

    # A filter that matches nothing explains itself; then filter to completed episodes.
    page.get_by_label("With tag").fill("nope")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("No episode matches these filters")).to_be_visible()
    page.get_by_label("With tag").fill("")
    page.locator("#status-boxes").get_by_label("completed").check()
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    expect(page.locator("#episodes-body")).not_to_contain_text("abandoned")

    # Replay the oldest completed episode and tag steps 1..3 with the keyboard.
    rows.filter(has_text="worker-1").last.get_by_role("button", name="Replay").click()
    frame = page.locator("#frame")
    expect(page.locator("#step-label")).to_have_text(f"0 / {cp[0].num_steps - 1}")
    page.wait_for_function("document.getElementById('frame').naturalWidth > 0")
    expect(page.get_by_text("mark range start / end")).to_be_visible()
    page.locator("#st-name").fill("wobble")
    frame.click()  # keyboard focus back on the page, not the text field
    page.keyboard.press("ArrowRight")
    page.keyboard.press("[")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("]")
    expect(page.locator("#step-label")).to_have_text(f"3 / {cp[0].num_steps - 1}")
    page.keyboard.press("t")
    expect(page.locator("#step-tags")).to_contain_text("wobble: steps 1..3")
    tags = db.scalars(select(StepTag).where(StepTag.episode_id == cp[0].episode_id)).all()
    assert [(t.name, t.start_step, t.end_step) for t in tags] == [("wobble", 1, 3)]

    # Export what the filter shows and follow the progress bar to the download link.
    page.get_by_label("Dataset name").fill("ui_export")
    page.get_by_role("button", name="Start export").click()
    bar = page.get_by_role("progressbar", name="Export progress")
    expect(bar).to_have_attribute("aria-valuenow", "100", timeout=120_000)
    expect(page.locator("#job-state")).to_contain_text("succeeded")
    expect(page.locator("#job-counts")).to_contain_text("2 / 2 episodes")
    link = page.get_by_role("link", name="Download")
    with page.expect_download() as info:
        link.click()
    download = info.value
    assert download.suggested_filename == "ui_export.zip"
    saved = tmp_path / "got.zip"
    download.save_as(saved)
    with zipfile.ZipFile(saved) as zf:
        names = zf.namelist()
    assert "ui_export/ui_export/1.0.0/dataset_info.json" in names
