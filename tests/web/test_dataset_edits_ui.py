"""The datasets page's Edits section in real Chromium: a designer trims one episode, sees
the preview's steps drop by the trim; a trim leaving too few steps and an exclusion without
a reason are shown at their fields; relabels a task and sees its new instruction in the
per-task counts; removes the trim and the steps come back."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from server.schemas.datasets import DatasetCreate
from server.services.datasets import datasets
from tests.api.routes.recorded import dataset_studies
from tests.factories import Factory
from tests.web._crowd import shot
from tests.web._session import log_in

pytestmark = pytest.mark.browser
NONE = {"by": "none", "train": 1.0, "validation": 0.0, "test": 0.0, "seed": 0}


def test_trim_an_episode_relabel_a_task_and_see_the_preview_change(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    made = datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(
        {"name": "Both", "split": NONE,
         "sources": [{"study_id": pilot.id}, {"study_id": main.id}]}))  # fmt: skip
    cp = recorded["cartpole"]
    steps = sum(cp[i].num_steps for i in (0, 2, 3, 4))
    log_in(page, live_server, owner.email)
    page.goto(f"{live_server}/datasets.html?dataset={made.id}")
    summary = page.locator("#preview-summary")
    expect(summary).to_contain_text(f"Both: 4 episodes, {steps} steps")
    section = page.get_by_role("region", name="Edits of Both")
    expect(section).to_be_visible()
    expect(section.locator("#edits-episodes tr")).to_have_count(4)

    first = section.locator(f"tr[data-episode='{cp[0].episode_id}']")
    first.get_by_label(f"Trim start of {cp[0].episode_id[:8]}").fill("2")
    first.get_by_label(f"Trim end of {cp[0].episode_id[:8]}").fill("1")
    first.get_by_role("button", name="Trim", exact=True).click()
    expect(summary).to_contain_text(f"Both: 4 episodes, {steps - 3} steps")
    expect(page.locator("#preview-edits")).to_contain_text("1 episode trimmed (3 steps dropped)")
    made_row = section.locator("#edits-body tr[data-kind=trim]")
    expect(made_row).to_contain_text("2 first, 1 last")
    expect(made_row).to_contain_text(owner.email)
    expect(first.locator("[data-col=steps]")).to_have_text(
        f"{cp[0].num_steps - 3} of {cp[0].num_steps}"
    )

    # problems at their fields: a trim leaving one step, an exclusion without its reason
    other = section.locator(f"tr[data-episode='{cp[2].episode_id}']")
    end = other.get_by_label(f"Trim end of {cp[2].episode_id[:8]}")
    end.fill(str(cp[2].num_steps - 1))
    other.get_by_role("button", name="Trim", exact=True).click()
    error = other.locator("[data-field=trim_end] .field-error")
    expect(error).to_contain_text(f"the episode has {cp[2].num_steps} RLDS steps")
    expect(end).to_have_attribute("aria-invalid", "true")
    other.get_by_role("button", name="Exclude", exact=True).click()
    expect(other.locator("[data-field=reason] .field-error")).to_contain_text("say why")
    shot(page, "63-datasets-edit-errors")

    red = section.locator("#edits-tasks tr[data-task=red]")
    red.get_by_label("New instruction for red").fill("Push the cart right, gently.")
    red.get_by_role("button", name="Relabel").click()
    per_task = page.get_by_role("table", name="Episodes per task")
    expect(per_task.locator("tbody tr[data-key=red] th")).to_have_text(
        "red → “Push the cart right, gently.”"
    )
    expect(section.locator("#edits-body tr")).to_have_count(2)
    shot(page, "64-datasets-edits")

    section.get_by_role("button", name=f"Remove trim of {cp[0].episode_id[:8]}").click()
    expect(summary).to_contain_text(f"Both: 4 episodes, {steps} steps")
    expect(section.locator("#edits-body tr")).to_have_count(1)
