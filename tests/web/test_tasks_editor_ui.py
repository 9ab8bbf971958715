"""The study editor's tasks table in real Chromium: a designer adds PickCube from the catalog,
adds three tasks (the red, the blue and the yellow cube, each its cube_color picked in the
catalog's settings form), previews two (each its own first frame: the cube of its colour),
picks the task order, asks participants to narrate, saves, reloads and finds them; a colour
typed as JSON that PickCube lacks is refused at that field, by the preview and by Save."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Study
from server.runtime.catalog import CATALOG
from tests.factories import Factory
from tests.web.test_designer_ui import fresh, log_in, study_row
from tests.web.test_study_editor_ui import add_from_catalog

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CATALOG["PickCube"].installed(), reason="no robotics runtime"),
]
SHOTS = Path("/tmp/shots/tasks-editor")
COLOURS = ("red", "blue", "yellow")

# The share of the image's pixels strongly of each colour, read from the image as shown.
MEASURE = """img => {
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const context = canvas.getContext("2d");
  context.drawImage(img, 0, 0);
  const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  const count = { red: 0, blue: 0, yellow: 0 };
  for (let i = 0; i < data.length; i += 4) {
    const [r, g, b] = [data[i], data[i + 1], data[i + 2]];
    if (r > 120 && r > g + 60 && r > b + 60) count.red++;
    if (b > 120 && b > r + 60 && b > g + 60) count.blue++;
    if (r > 120 && g > 120 && b < Math.min(r, g) - 60) count.yellow++;
  }
  const n = data.length / 4;
  return { red: count.red / n, blue: count.blue / n, yellow: count.yellow / n };
}"""


def open_tasks(card: Locator) -> Locator:
    """The card's Tasks section, opened as a person would (its summary clicked)."""
    details = card.locator("details.tasks-section")
    if details.get_attribute("open") is None:
        details.locator("> summary").click()
    expect(details).to_have_attribute("open", "")
    return details


def open_settings(tasks: Locator, n: int) -> None:
    """Unfold task ``n``'s settings (under its row) by their summary."""
    fold = tasks.locator("tr.task-settings-row").nth(n - 1).locator("details.task-settings-fold")
    if fold.get_attribute("open") is None:
        fold.locator("> summary").click()
    expect(fold).to_have_attribute("open", "")


def preview(tasks: Locator, name: str) -> dict[str, float]:
    """Press the task's Preview and measure the first frame it shows."""
    tasks.get_by_role("button", name=f"Preview {name}").click()
    frame = tasks.get_by_role("img", name=f"First frame of {name}")
    expect(frame).to_be_visible(timeout=90_000)
    expect(frame).not_to_have_js_property("naturalWidth", 0)
    return frame.evaluate(MEASURE)


def test_designer_sets_three_tasks_with_previews(
    live_server: str, page: Page, factory: Factory, db: Session
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    user = factory.user()
    page.set_viewport_size({"width": 1280, "height": 1000})
    log_in(page, live_server, user)
    page.get_by_role("button", name="New study").first.click()
    page.get_by_label("Study name").fill("Colours")
    page.get_by_label("Ask participants to narrate their episodes").check()
    add_from_catalog(page, "PickCube", "PickCube")
    card = page.get_by_role("article", name="Environment 1: PickCube")
    tasks = open_tasks(card)
    expect(tasks).to_contain_text("No tasks: every episode gets this environment's instructions")

    for n, colour in enumerate(COLOURS, start=1):
        tasks.get_by_role("button", name="+ Add task").click()
        instruction = tasks.get_by_label(f"Instruction of task {n}")
        expect(instruction).to_be_focused()  # the new row, ready to type in
        instruction.press_sequentially(f"Pick up the {colour} cube")
        tasks.get_by_label(f"Id of task {n}").fill(colour)
        tasks.get_by_label(f"Label of task {n}").fill(f"{colour.capitalize()} cube")
        fold = tasks.locator("tr.task-settings-row").nth(n - 1)
        expect(fold).to_contain_text("the environment's")
        open_settings(tasks, n)
        settings = tasks.get_by_role("group", name=f"Settings of {colour.capitalize()} cube")
        settings.get_by_label("Set cube_color").check()
        settings.get_by_label("cube_color", exact=True).select_option(colour)
    expect(tasks.locator("tr.task-row")).to_have_count(3)
    expect(tasks.locator("tr.task-settings-row").nth(1)).to_contain_text('cube_color: "blue"')
    expect(tasks).not_to_contain_text("No tasks")
    expect(tasks.locator("> summary")).to_contain_text("3 tasks")

    red = preview(tasks, "Red cube")
    blue = preview(tasks, "Blue cube")
    assert red["red"] > 0.002 and red["blue"] < red["red"] / 5, red
    assert blue["blue"] > 0.002 and blue["red"] < blue["blue"] / 5, blue
    # an edit to a task's settings drops its preview (it would show the old scene)
    tasks.get_by_label("Seeds of task 2").fill("7, 8")
    expect(tasks.get_by_role("img", name="First frame of Blue cube")).to_be_hidden()

    # the order: the participant chooses; each way has its line of help
    order = tasks.get_by_role("group", name="Task order")
    expect(order).to_contain_text("the fewest episodes")
    expect(order).to_contain_text("in the order listed")
    order.get_by_label("The participant chooses").check()
    # yellow first: moved up twice by its own buttons
    tasks.get_by_role("button", name="Move Yellow cube up").click()
    expect(tasks.get_by_role("button", name="Move Yellow cube up")).to_be_focused()
    tasks.get_by_role("button", name="Move Yellow cube up").click()
    expect(tasks.get_by_label("Id of task 1")).to_have_value("yellow")
    # a picture for the docs: two tasks' settings folded again, the sticky Save bar let go
    for n in (1, 3):
        tasks.locator("tr.task-settings-row").nth(n - 1).locator("summary").click()
    page.locator("#editor .editor-actions").evaluate("bar => { bar.style.position = 'static'; }")
    tasks.screenshot(path=str(SHOTS / "editor-tasks.png"))  # docs/img/editor-tasks.png
    page.locator("#editor .editor-actions").evaluate("bar => { bar.style.position = ''; }")

    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Colours")).to_contain_text("Draft")
    study = db.scalars(select(Study).where(Study.owner_id == user.id)).one()
    env = study.spec["environments"][0]
    assert study.spec["narrate_episodes"] is True
    assert env["task_order"] == "choice"
    assert env["tasks"] == [
        {"id": "yellow", "label": "Yellow cube", "instruction": "Pick up the yellow cube",
         "settings": {"cube_color": "yellow"}},
        {"id": "red", "label": "Red cube", "instruction": "Pick up the red cube",
         "settings": {"cube_color": "red"}},
        {"id": "blue", "label": "Blue cube", "instruction": "Pick up the blue cube",
         "settings": {"cube_color": "blue"}, "seeds": [7, 8]},
    ]  # fmt: skip

    # reloaded: the study opens again with its three tasks, as saved
    expect(page).to_have_url(re.compile(rf"#study={study.id}$"))
    page.reload()
    card = page.get_by_role("article", name="Environment 1: PickCube")
    tasks = open_tasks(card)
    expect(tasks.locator("tr.task-row")).to_have_count(3)
    for n, colour in enumerate(("yellow", "red", "blue"), start=1):
        instruction = tasks.get_by_label(f"Instruction of task {n}")
        expect(instruction).to_have_value(f"Pick up the {colour} cube")
    expect(tasks.locator("tr.task-settings-row").nth(2)).to_contain_text('cube_color: "blue"')
    open_settings(tasks, 3)
    blue_settings = tasks.get_by_role("group", name="Settings of Blue cube")
    expect(blue_settings.get_by_label("cube_color", exact=True)).to_have_value("blue")
    order = tasks.get_by_role("group", name="Task order")
    expect(order.get_by_label("The participant chooses")).to_be_checked()
    expect(page.get_by_label("Ask participants to narrate their episodes")).to_be_checked()

    # an instruction left empty: refused at its cell, the mark gone once typed again
    first = tasks.get_by_label("Instruction of task 1")
    first.fill("")
    page.get_by_role("button", name="Save changes").click()
    expect(first).to_have_attribute("aria-invalid", "true")
    expect(tasks.locator("[data-path='tasks.0.instruction'] .field-error")).to_have_text(
        "Instruction of task 1 must not be empty"  # its label is the column's: named in full
    )
    first.press_sequentially("Pick up the yellow cube")
    expect(first).not_to_have_attribute("aria-invalid", "true")

    # a colour PickCube lacks, typed as JSON: refused at that field by the preview and by Save
    blue_settings.get_by_role("button", name="Edit as JSON").click()
    as_json = tasks.get_by_label("Settings of task 3 (JSON)")
    expect(as_json).to_have_value('{"cube_color":"blue"}')
    as_json.fill('{"cube_color": "purple"}')
    tasks.get_by_role("button", name="Preview Blue cube").click()
    cell = tasks.locator("tr.task-row").nth(2).locator(".task-preview")
    expect(cell).to_contain_text("Not previewed")
    expect(cell).to_contain_text("purple")
    expect(as_json).to_have_attribute("aria-invalid", "true")

    page.get_by_role("button", name="Save changes").click()
    as_json = tasks.get_by_label("Settings of task 3 (JSON)")
    expect(as_json).to_have_attribute("aria-invalid", "true")
    field = tasks.locator("[data-path='tasks.2.settings']")
    expect(field.locator(".field-error")).to_contain_text("setting 'cube_color' must be one of")
    expect(field.locator(".field-error")).to_contain_text("not 'purple'")
    expect(card.get_by_role("list", name="save problems")).to_contain_text("Task 3 settings")
    card.screenshot(path=str(SHOTS / "task-refused.png"))
    saved = fresh(db, study.id)
    assert saved is not None
    assert saved.spec["environments"][0]["tasks"][2]["settings"] == {"cube_color": "blue"}

    # fixed, the study saves
    as_json.fill('{"cube_color": "green"}')
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#dirty-badge")).to_be_hidden()
    saved = fresh(db, study.id)
    assert saved is not None
    assert saved.spec["environments"][0]["tasks"][2]["settings"] == {"cube_color": "green"}
