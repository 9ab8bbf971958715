"""The Datasets page in real Chromium: a designer makes a dataset from two of their studies
(real recorded episodes) with a participant split, is shown a problem at its field, sees
the counts per split, study, task and participant, edits it and deletes it; the studio's
navigation links the page; a designer exports a dataset in RLDS and downloads it."""

from __future__ import annotations

import io
import zipfile

import pytest
from playwright.sync_api import Page, expect

from server.core.security import salted_hash
from server.schemas.datasets import DatasetCreate
from server.services.datasets import datasets
from tests.api.routes.recorded import dataset_studies
from tests.factories import Factory
from tests.web._crowd import shot
from tests.web._session import log_in

pytestmark = pytest.mark.browser


def test_make_a_dataset_of_two_studies_split_by_participant(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    factory.study(factory.user(), {"name": "Not mine", "environments": pilot.spec["environments"]})
    log_in(page, live_server, owner.email)
    page.goto(live_server)
    page.get_by_role("link", name="Datasets", exact=True).first.click()
    expect(page).to_have_url(f"{live_server}/datasets.html")
    expect(page.get_by_text("No datasets yet")).to_be_visible()

    page.locator("#datasets-empty").get_by_role("button", name="New dataset").click()
    expect(page.get_by_label("Name", exact=True)).to_be_focused()
    page.keyboard.type("Pushes")
    boxes = page.locator("#study-boxes input")
    expect(boxes).to_have_count(2)  # only the designer's own studies
    # the keyboard: Tab to the studies, Space ticks them; each gets its filter
    page.get_by_role("checkbox", name="Pilot").focus()
    page.keyboard.press("Space")
    page.get_by_role("checkbox", name="Main").focus()
    page.keyboard.press("Space")
    sources = page.locator("#sources .ds-source")
    expect(sources).to_have_count(2)
    pilot_block = sources.filter(has_text="Pilot")
    expect(pilot_block.get_by_role("checkbox", name="completed")).to_be_checked()
    expect(pilot_block.get_by_label("Task (Pilot)").locator("option")).to_have_text(
        ["any task", "red", "blue", "no task"]
    )
    expect(page.get_by_role("radio", name="by participant")).to_be_checked()
    page.get_by_label("Train", exact=True).fill("0.5")
    page.get_by_label("Validation", exact=True).fill("0.25")
    page.get_by_label("Test", exact=True).fill("0.5")  # adds up to 1.25
    page.get_by_label("Seed", exact=True).fill("9")
    page.get_by_role("button", name="Save and preview").click()
    train_field = page.locator("[data-path='split.train']")
    expect(train_field.locator(".field-error")).to_contain_text("must add up to 1")
    expect(page.get_by_label("Train", exact=True)).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#form-error")).to_be_visible()
    shot(page, "60-datasets-field-error")

    page.get_by_label("Test", exact=True).fill("0.25")
    page.get_by_label("Seed", exact=True).press("Enter")  # the keyboard submits
    expect(page.locator("#preview-summary")).to_have_text(
        "Pushes: 4 episodes, "
        f"{sum(recorded['cartpole'][i].num_steps for i in (0, 2, 3, 4))} steps, 3 participants "
        "(split by participant, seed 9)."
    )
    expect(page.locator("#form-section")).to_be_hidden()
    splits = page.get_by_role("table", name="Episodes per split")
    episodes = splits.locator("[data-col=episodes]")
    expect(episodes).to_have_count(3)
    counts = [int(t) for t in episodes.all_inner_texts()]
    assert sum(counts) == 4 and counts[0] >= 1  # worker-1's two, one, one: by whole people
    expect(splits.get_by_role("img", name=f"train: {counts[0]} episodes")).to_be_visible()
    per_study = page.get_by_role("table", name="Episodes per study")
    expect(per_study.locator("tbody th")).to_have_text(["Pilot", "Main"])
    per_task = page.get_by_role("table", name="Episodes per task")
    expect(per_task.locator("tbody th")).to_have_text(["no task", "blue", "red"])
    people = page.get_by_role("table", name="Participants").locator("tbody tr")
    expect(people).to_have_count(3)
    w1 = people.filter(has_text=salted_hash(settings.secret_key, "worker-1"))
    expect(w1.locator("td").nth(2)).to_have_text("2")  # one episode in each study, one split
    assert "worker-1" not in page.locator("#preview").inner_text()
    shot(page, "61-datasets-preview")

    # the list; edit: Pilot's red task only, the preview follows
    row = page.locator("#datasets-body tr", has_text="Pushes")
    expect(row).to_contain_text("Pilot, Main")
    expect(row).to_contain_text("by participant, 50 / 25 / 25, seed 9")
    row.get_by_role("button", name="Edit").click()
    expect(page.get_by_label("Name", exact=True)).to_have_value("Pushes")
    expect(page.get_by_label("Seed", exact=True)).to_have_value("9")
    page.get_by_label("Task (Pilot)").select_option("red")
    page.get_by_role("checkbox", name="Main").uncheck()
    expect(sources).to_have_count(1)
    page.get_by_role("button", name="Save and preview").click()
    expect(page.locator("#preview-summary")).to_contain_text("Pushes: 1 episode, ")
    page.reload()  # the URL names the dataset shown
    expect(page.locator("#preview-summary")).to_contain_text("Pushes: 1 episode, ")

    row.get_by_role("button", name="Delete Pushes").click()
    page.locator("#confirm-ok").click()
    expect(page.get_by_text("No datasets yet")).to_be_visible()
    expect(page.locator("#preview-section")).to_be_hidden()


def test_export_a_dataset_in_rlds_and_download_it(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    split = {"by": "episode", "train": 0.5, "validation": 0.25, "test": 0.25, "seed": 2}
    made = datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(
        {"name": "Both", "split": split,
         "sources": [{"study_id": pilot.id}, {"study_id": main.id}]}))  # fmt: skip
    empty = datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(
        {"name": "Nothing", "split": split,
         "sources": [{"study_id": pilot.id, "filter": {"tags": ["none-has-it"]}}]}))  # fmt: skip
    log_in(page, live_server, owner.email)
    page.goto(f"{live_server}/datasets.html?dataset={made.id}")
    section = page.get_by_role("region", name="Export Both")
    expect(section).to_be_visible()
    section.get_by_label("Format").select_option(label="RLDS (TFDS)")
    section.get_by_role("button", name="Start export").click()
    bar = section.get_by_role("progressbar", name="Export progress")
    expect(bar).to_have_attribute("aria-valuenow", "100", timeout=60_000)
    expect(page.locator("#dsjob-state")).to_contain_text("succeeded")
    expect(page.locator("#dsjob-counts")).to_contain_text("4 / 4 episodes")
    download = section.get_by_role("link", name="Download")
    expect(download).to_be_visible()
    shot(page, "62-datasets-export-done")
    href = download.get_attribute("href")
    assert href is not None and href.endswith("/download")
    res = page.request.get(f"{live_server}{href}")
    assert res.status == 200
    names = zipfile.ZipFile(io.BytesIO(res.body())).namelist()
    for name in ("train", "validation", "test"):
        assert any(f"-{name}.tfrecord-" in n for n in names), names

    # a dataset that selects nothing: the reason, shown in the section
    page.locator("#datasets-body tr", has_text="Nothing").get_by_role(
        "button", name="Preview"
    ).click()
    section = page.get_by_role("region", name="Export Nothing")
    expect(section).to_be_visible()
    expect(page.locator("#dsjob")).to_be_hidden()  # the other dataset's job is not shown
    section.get_by_role("button", name="Start export").click()
    expect(page.locator("#export-error")).to_contain_text("No episode matches")
    assert empty.id != made.id
