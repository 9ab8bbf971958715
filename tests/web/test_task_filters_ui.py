"""Tasks on the review pages in real Chromium: the episodes list's Task column and filter
(mouse and keyboard, kept in the URL across a reload, followed by the export panel), the
live dashboard's bars per task (a task opens its episodes) and the participants page's
per-task counts and CSV."""

from __future__ import annotations

import csv

import pytest
from playwright.sync_api import Page, expect

from server.models import Episode
from tests.api.routes.recorded import Inserter, record_set
from tests.export.recordings import Recording
from tests.factories import Factory, spec_dict
from tests.web._crowd import shot
from tests.web._session import log_in

pytestmark = pytest.mark.browser

MARKUP = '<img src=x onerror="document.title=1">'
TASKS = [
    {"id": "red", "label": "Red", "instruction": f"Push the cart right. {MARKUP}"},
    {"id": "blue", "label": "Blue", "instruction": "Push the cart left."},
    {"id": "green", "instruction": "Keep the pole up."},
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Recording]]:
    """Real envlogger logs (five CartPole episodes)."""
    return record_set(tmp_path_factory.mktemp("recorded"))


def _study(factory: Factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """CartPole with three tasks: worker-1 did red twice and blue, worker-2 green (and one
    episode from before the tasks, without one); the task is set on the rows as the player
    stores it."""
    owner = factory.user()
    study = factory.study(owner, spec_dict("Tasks study", tasks=TASKS))
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    drawn = [("red", "worker-1"), ("blue", "worker-1"), ("red", "worker-1"), (None, "worker-2"),
             ("green", "worker-2")]  # fmt: skip
    eps: list[Episode] = []
    for i, (task, who) in enumerate(drawn):
        episode = ins.add(study, cp[i], participant=who, minutes_ago=50 - 10 * i)
        spec = next((t for t in TASKS if t["id"] == task), None)
        episode.task_key = task
        episode.instruction = spec["instruction"] if spec else None
        eps.append(episode)
    db.commit()
    return owner, study, eps


def test_filter_the_episodes_list_by_task(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner, study, eps = _study(factory, db, settings, recorded)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, live_server, owner.email)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(5)
    expect(page.get_by_role("columnheader", name="Task")).to_be_visible()
    red_cell = page.locator(f"tr[data-id='{eps[0].id}'] td.ep-task")
    expect(red_cell).to_have_text("Red")  # the label; the instruction as its title, as text
    expect(red_cell).to_have_attribute("title", TASKS[0]["instruction"])
    expect(page.locator(f"tr[data-id='{eps[4].id}'] td.ep-task")).to_have_text("green")  # no label
    expect(page.locator(f"tr[data-id='{eps[3].id}'] td.ep-task")).to_have_text("–")  # none
    assert page.locator("#episodes-body img").count() == 0

    # the mouse: click a task in the filter, the list follows at once
    task = page.get_by_label("Task", exact=True)
    expect(task.locator("option")).to_have_text(["any task", "Red", "Blue", "green", "no task"])
    box = task.locator("option", has_text="Red").bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(rows).to_have_count(2)
    assert {r.get_attribute("data-id") for r in rows.all()} == {eps[0].id, eps[2].id}
    assert "task=red" in page.url
    # the export panel's selection is the list's: limited to the task, the preview counts it
    expect(page.locator("#ex-filter-count")).to_have_text("(2 listed · task Red)")
    shot(page, "50-episodes-task-filter")
    expect(page.locator("#ex-preview")).to_contain_text("Exports 2 episodes of the 2 listed.")

    page.reload()  # the URL keeps the filter
    expect(rows).to_have_count(2)
    expect(task).to_have_value("red")
    expect(page.locator("#ex-preview")).to_contain_text("Exports 2 episodes of the 2 listed.")

    # the keyboard: the next task, then the last option ("no task")
    task.focus()
    page.keyboard.press("ArrowDown")
    expect(task).to_have_value("blue")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", eps[1].id)
    expect(page.locator("#ex-filter-count")).to_have_text("(1 listed · task Blue)")
    page.keyboard.press("End")
    expect(task).to_have_value("-")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", eps[3].id)
    assert "task=-" in page.url
    expect(page.locator("#ex-filter-count")).to_have_text("(1 listed · without a task)")
    # with another filter, then reset: every episode again
    page.get_by_label("Participant").fill("worker-1")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("No episode matches these filters")).to_be_visible()
    page.get_by_role("button", name="Reset").click()
    expect(rows).to_have_count(5)
    expect(task).to_have_value("")
    assert "task=" not in page.url
    # the replay names the episode's task: the instruction it was shown, as text
    page.locator(f"tr[data-id='{eps[0].id}']").get_by_role("button", name="Replay").click()
    expect(page.locator("#replay-task-text")).to_have_text(TASKS[0]["instruction"])
    page.locator(f"tr[data-id='{eps[3].id}']").get_by_role("button", name="Replay").click()
    expect(page.locator("#viewer-id")).to_contain_text(eps[3].id)
    expect(page.locator("#replay-task")).to_be_hidden()
    assert not errors


def test_dashboard_and_participants_count_per_task(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner, study, eps = _study(factory, db, settings, recorded)
    eps[1].status = "recording"  # blue is being played now
    db.commit()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, live_server, owner.email)
    page.goto(f"{live_server}/live.html?study={study.id}")
    env = page.locator("#quotas [data-env=cartpole]")
    expect(env).to_contain_text("4 (no total) · 1 recording")
    per_task = env.get_by_role("table", name="CartPole episodes per task")
    expect(per_task.locator("tbody tr")).to_have_count(4)  # the three tasks, then "no task"
    counts = per_task.locator("[data-col=counts]")
    expect(counts).to_have_text(["2", "0 +1", "1", "1"])
    expect(per_task.get_by_role("img", name="Red: 2 completed")).to_be_visible()
    expect(per_task.get_by_role("img", name="Blue: 0 completed, 1 recording")).to_be_visible()
    expect(per_task.locator("tr[data-task='-'] th")).to_have_text("no task")
    # the bars are drawn to scale: red's is twice green's
    red = per_task.locator("tr[data-task=red] .lv-bar-done").bounding_box()
    green = per_task.locator("tr[data-task=green] .lv-bar-done").bounding_box()
    assert red and green and green["width"] > 0
    assert abs(red["width"] - 2 * green["width"]) <= 2
    shot(page, "51-live-per-task")
    # a task opens its episodes on the episodes page
    per_task.get_by_role("link", name="Red").click()
    expect(page).to_have_url(f"{live_server}/episodes.html?study={study.id}&env=cartpole&task=red")
    expect(page.locator("#episodes-body tr")).to_have_count(2)
    expect(page.get_by_label("Task", exact=True)).to_have_value("red")

    page.goto(f"{live_server}/participants.html?study={study.id}")
    expect(page.get_by_role("columnheader", name="Tasks")).to_be_visible()
    first = page.locator("#participants-body tr", has_text="worker-1")
    expect(first.locator("td.pt-tasks")).to_have_text("Red 2")  # blue is still recording
    second = page.locator("#participants-body tr", has_text="worker-2")
    expect(second.locator("td.pt-tasks")).to_have_text("green 1")
    expect(first.locator("[data-task=red]")).to_have_attribute("title", TASKS[0]["instruction"])
    eps[1].status = "completed"
    db.commit()
    page.get_by_role("button", name="Refresh").click()
    expect(first.locator("td.pt-tasks")).to_have_text("Red 2 · Blue 1")
    assert page.locator("#participants-body img").count() == 0
    shot(page, "52-participants-per-task")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    with open(download.value.path(), encoding="utf-8") as f:
        table = {r["external_id"]: r for r in csv.DictReader(f)}
    columns = ["episodes_completed:red", "episodes_completed:blue", "episodes_completed:green"]
    assert [table["worker-1"][c] for c in columns] == ["2", "1", "0"]
    assert [table["worker-2"][c] for c in columns] == ["0", "0", "1"]
    assert not errors
