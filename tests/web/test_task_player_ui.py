"""Tasks on the player, in real Chromium against the real server (issue 39): two participants
of a PickCube study with three tasks (the cube's colour) draw different tasks, each sees the
instruction large on the ready gate and while playing (on a phone too, above the picture,
never over it); where the study lets them choose, a participant presses 2 for the second task;
and where the study asks for it, a participant narrates their saved episode over a range of
steps ([ ] and Enter), or skips it with Esc, and goes on to the next episode as before.

Screenshots of each screen go to STUDIO_TEST_SHOTS when it is set.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from server.models import Episode, EpisodeStatus, Narration
from server.runtime.catalog import CATALOG
from tests.conftest import watched_page
from tests.player.conftest import activate, spec
from tests.web._crowd import shot
from tests.web._join import join_study, to_ready_gate

ENTRY = CATALOG["PickCube"]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not ENTRY.installed(), reason="no robotics runtime"),
]
TASKS = [
    {"id": color, "label": color.title(), "instruction": f"Pick up the {color} cube",
     "settings": {"cube_color": color}}
    for color in ("red", "blue", "yellow")
]  # fmt: skip
INSTRUCTIONS = {t["instruction"] for t in TASKS}
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}


def cube_study(db, factory, *, max_steps: int = 400, **fields: Any):  # type: ignore[no-untyped-def]
    """An active PickCube study ("Cube") with the three tasks; ``fields`` go to the spec
    (``task_order`` to the environment)."""
    env = {"id": "cube", "name": "Cube", "source": ENTRY.source().model_dump(),
           "mode": ENTRY.mode, "fps": ENTRY.fps, "max_steps": max_steps, "tasks": TASKS,
           "task_order": fields.pop("task_order", "balanced"),
           "episodes_per_participant": fields.pop("episodes", 1)}  # fmt: skip
    return activate(db, factory.study(factory.user(), spec(env, **fields)))


def participant(browser, viewport: dict[str, int]):  # type: ignore[no-untyped-def]
    """A participant's own browser (a context of its own), failing on any script error."""
    return watched_page(browser, viewport, timeout_ms=30_000)


def box(page: Page, selector: str) -> dict[str, float]:
    found = page.locator(selector).bounding_box()
    assert found is not None, f"{selector} is not on screen"
    return found


def above_the_picture(page: Page) -> None:
    """The task's banner is in sight, whole, and ends above the stage (never over it)."""
    banner, stage = box(page, "#task-banner"), box(page, "#stage")
    viewport = page.viewport_size
    assert viewport is not None
    assert 0 <= banner["y"] and banner["y"] + banner["height"] <= viewport["height"]
    assert banner["x"] >= 0 and banner["x"] + banner["width"] <= viewport["width"] + 0.5
    assert banner["y"] + banner["height"] <= stage["y"] + 0.5, (banner, stage)


def instruction_at_gate(page: Page) -> str:
    """At the ready gate: the task's instruction in the overlay and the banner; returns it."""
    expect(page.locator("#overlay-task")).to_be_visible()
    text = page.locator("#task-text").text_content() or ""
    assert text in INSTRUCTIONS
    expect(page.locator("#overlay-task")).to_have_text(f"Your task: {text}")
    expect(page.get_by_role("note", name="Your task")).to_have_text(f"Your task {text}")
    return text


def go_and_cancel(page: Page, text: str, name: str) -> None:
    """Past the gate, the banner stays while playing; then cancel the episode (Delete, Enter)."""
    expect(page.locator("#start-btn")).to_be_enabled()
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    expect(page.locator("#overlay-task")).to_be_hidden()
    expect(page.locator("#task-banner")).to_have_text(f"Your task {text}")
    above_the_picture(page)
    page.wait_for_function("() => Number(document.getElementById('st-step').textContent) >= 3")
    shot(page, f"{name}-playing")
    page.keyboard.press("Delete")
    expect(page.locator("#cancel-yes")).to_be_enabled()
    page.keyboard.press("Enter")
    expect(page.locator("#after-save-text")).to_contain_text("Episode canceled.")
    expect(page.locator("#task-banner")).to_be_hidden()  # the next episode draws its own


def test_two_participants_draw_different_tasks_and_see_them(browser, live_server, factory, db):
    study = cube_study(db, factory)
    shown = []
    for who, viewport in (("P-1", LAPTOP), ("P-2", PHONE)):
        with participant(browser, viewport) as page:
            join_study(page, live_server, study.permalink_token, who)
            to_ready_gate(page, "Cube")
            text = instruction_at_gate(page)
            above_the_picture(page)
            shot(page, f"task-gate-{viewport['width']}")
            go_and_cancel(page, text, f"task-{viewport['width']}")
            shown.append(text)
    assert shown[0] != shown[1]  # balanced: the second participant draws another task
    rows = db.query(Episode).filter_by(study_id=study.id).order_by(Episode.started_at).all()
    assert [(r.instruction, r.task_key) for r in rows] == [
        (text, next(t["id"] for t in TASKS if t["instruction"] == text)) for text in shown
    ]


def test_a_participant_chooses_the_second_task_with_its_key(browser, live_server, factory, db):
    study = cube_study(db, factory, task_order="choice")
    with participant(browser, LAPTOP) as page:
        join_study(page, live_server, study.permalink_token, "C-1")
        page.get_by_role("button", name="Play Cube").click()
        choice = page.get_by_role("group", name="Choose your task")
        expect(choice).to_be_visible()
        expect(page.locator("#start-btn")).to_be_hidden()  # a task starts it
        options = choice.get_by_role("button")
        expect(options).to_have_text([f"{i} {t['label']} {t['instruction']}"
                                      for i, t in enumerate(TASKS, 1)])  # fmt: skip
        hint = "Press 1 to 3 or click the task you want to do."
        expect(page.locator("#task-choice-hint")).to_have_text(hint)
        expect(page.locator("#overlay")).to_contain_text("Choose your task below")
        # a task the server does not know (the study changed meanwhile): its message is shown
        page.evaluate("document.querySelector('.task-option').dataset.task = 'nope'")
        expect(options.first).to_be_enabled()  # the question's guard is over
        shot(page, "task-choice-1280")
        page.set_viewport_size(PHONE)  # the rest on a phone's screen: nothing wider than it
        page.wait_for_function("() => document.documentElement.scrollWidth <= innerWidth")
        shot(page, "task-choice-390")
        page.keyboard.press("1")
        expect(page.locator("#play-message")).to_have_text("Cube has no task 'nope'.")
        expect(choice).to_be_hidden()
        page.get_by_role("button", name="Start").click()  # asks again
        expect(options.nth(1)).to_be_enabled()
        page.keyboard.press("2")
        expect(page.locator("#overlay")).to_contain_text("Press Enter")
        assert instruction_at_gate(page) == "Pick up the blue cube"
        page.reload()  # mid-episode: the hello's episode names its task again
        expect(page.locator("#st-phase")).to_have_text("ready")
        assert instruction_at_gate(page) == "Pick up the blue cube"
        expect(choice).to_be_hidden()
        go_and_cancel(page, "Pick up the blue cube", "task-chosen-390")
    (row,) = db.query(Episode).filter_by(study_id=study.id).all()
    assert (row.task_key, row.instruction) == ("blue", "Pick up the blue cube")


def play_and_save(page: Page) -> None:
    """Past the gate, the hand moving right (ArrowRight held) until the episode ends by itself
    (max_steps): save it with Enter."""
    expect(page.locator("#start-btn")).to_be_enabled()
    page.keyboard.press("Enter")
    expect(page.locator("#st-phase")).to_have_text("playing")
    page.keyboard.down("ArrowRight")
    expect(page.locator("#save-dialog")).to_be_visible(timeout=60_000)
    page.keyboard.up("ArrowRight")
    expect(page.locator("#save-yes")).to_be_enabled()
    page.keyboard.press("Enter")


def test_a_participant_narrates_a_saved_episode_then_goes_on(browser, live_server, factory, db):
    study = cube_study(db, factory, max_steps=30, episodes=2, narrate_episodes=True)
    with participant(browser, LAPTOP) as page:
        join_study(page, live_server, study.permalink_token, "N-1")
        to_ready_gate(page, "Cube")
        text = instruction_at_gate(page)
        play_and_save(page)
        form = page.get_by_role("dialog", name="What did you do?")
        expect(form).to_be_visible()
        page.keyboard.press("KeyD")  # the save question's keys do not answer the form
        page.keyboard.press("Enter")
        expect(page.locator("#after-save")).to_be_hidden()  # the way on comes after the form
        expect(form).to_be_visible()
        (row,) = db.query(Episode).filter_by(study_id=study.id).all()
        db.refresh(row)
        last = row.steps - 1
        expect(form.locator("#narrate-task")).to_have_text(f"Your task was: {text}")
        frame = form.get_by_role("img", name="Your episode at the chosen step")
        expect(frame).to_have_attribute("data-step", "0")  # the recorded frame, drawn
        expect(form.locator("#narrate-step-out")).to_have_text(f"Step 0 of {last}")
        expect(form.get_by_role("button", name="Start here [")).to_be_enabled()  # guard over
        shot(page, "narrate-1280")
        slider = form.get_by_label("Step of the replay")
        slider.focus()
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        expect(form.locator("#narrate-step-out")).to_have_text(f"Step 5 of {last}")
        page.keyboard.press("BracketLeft")
        expect(form.locator("#narrate-range")).to_have_text(f"Steps 5 to {last}")
        expect(frame).to_have_attribute("data-step", "5")
        first = frame.evaluate("c => c.toDataURL()")
        for _ in range(7):
            page.keyboard.press("ArrowRight")
        page.keyboard.press("BracketRight")
        expect(form.locator("#narrate-range")).to_have_text("Steps 5 to 12")
        expect(frame).to_have_attribute("data-step", "12")
        assert frame.evaluate("c => c.toDataURL()") != first  # step 12's frame, not step 5's
        box_ = form.get_by_label("What you did in these steps")
        box_.click()
        box_.press_sequentially("moved the hand <b>right</b>")
        page.keyboard.press("Enter")
        expect(form.get_by_role("list")).to_have_text("Steps 5 to 12: moved the hand <b>right</b>")
        expect(form.locator("#narrate-range")).to_have_text(f"Steps 13 to {last}")  # the next part
        expect(box_).to_have_value("")
        shot(page, "narrate-added-1280")
        form.get_by_role("button", name="Done").click()
        expect(form).to_be_hidden()
        expect(page.locator("#after-save-text")).to_contain_text("Episode saved.")
        expect(page.locator("#next-label")).to_have_text("Next episode")
        (narration,) = db.query(Narration).all()
        said = (narration.episode_id, narration.start_step, narration.end_step, narration.text)
        assert said == (row.id, 5, 12, "moved the hand <b>right</b>")
        assert narration.participant_id == row.participant_id and narration.author_id is None

        # the next episode: Esc skips the form, and the way on is as before
        expect(page.locator("#next-btn")).to_be_enabled()
        page.keyboard.press("Enter")
        expect(page.locator("#overlay")).to_contain_text("Press Enter")
        play_and_save(page)
        expect(form).to_be_visible()
        expect(form.get_by_role("button", name="Skip Esc")).to_be_enabled()
        page.set_viewport_size(PHONE)
        expect(frame).to_have_attribute("data-step", "0")
        shot(page, "narrate-390")
        form.get_by_role("button", name="Play").click()  # the replay runs to the last step
        expect(form.locator("#narrate-step-out")).to_have_text(re.compile(r"^Step (\d+) of \1$"))
        end = (form.locator("#narrate-step-out").text_content() or "").split()[-1]
        expect(frame).to_have_attribute("data-step", end)
        page.keyboard.press("Escape")
        page.keyboard.press("Escape")  # Esc twice, as people press: the second changes nothing
        expect(form).to_be_hidden()
        expect(page.locator("#after-save")).to_be_visible()
        expect(page.locator("#next-label")).to_have_text("Finish and get your code")
        expect(page.locator("#next-btn")).to_be_enabled()
    rows = db.query(Episode).filter_by(study_id=study.id).all()
    for r in rows:
        db.refresh(r)
    assert sorted(r.status for r in rows) == [EpisodeStatus.completed] * 2
    assert db.query(Narration).count() == 1  # skipped: nothing added
