"""A feedback study designed in the editor, in real Chromium, over a played study's real
recorded episodes: the kind chosen, the source picked with its episode counts, a compare and
a rate question, two gold pairs picked from the source's episodes, the YAML view round-trip,
the launch checklist passing, activation; the saved spec holds exactly what was entered.
A bad value is told at its field in the server's words. Screenshots go to
STUDIO_TEST_SHOTS when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Study
from tests.api.routes.judged import played
from tests.factories import Factory
from tests.web._feedback_editor import (
    add_compare_and_rate,
    add_gold_pair,
    gold,
    new_feedback_study,
    question,
)
from tests.web.test_designer_ui import log_in, study_row

pytestmark = pytest.mark.browser

SHOTS = os.environ.get("STUDIO_TEST_SHOTS", "")


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/{name}.png", full_page=True)


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    return played(db, factory, settings.data_root, recorded)


def test_a_designer_makes_a_feedback_study_over_played_episodes(
    live_server: str, page: Page, factory: Factory, db: Session, world
):
    eps = sorted(world.episodes, key=lambda e: e.id)
    log_in(page, live_server, world.owner)
    new_feedback_study(page, "Which pole is better?")
    expect(page.get_by_role("heading", name="Environments")).to_have_count(0)  # judged, not played
    expect(page.get_by_label("Ask participants to narrate their episodes")).to_have_count(0)

    # the source: the designer's play study, with its episodes counted as the filters change
    sources = page.get_by_role("group", name="Source studies")
    sources.get_by_label("Played").check()
    expect(sources).to_contain_text(f"(#{world.source.id} · 5 episodes to judge)")
    total = page.locator("#fb-source-total")
    expect(total).to_contain_text("5 episodes to judge with these filters.")
    envs = page.get_by_role("group", name="Environments to judge")
    envs.get_by_label("CartPole").check()
    page.get_by_role("group", name="Outcomes").get_by_label("Failure").check()
    expect(sources).to_contain_text("0 episodes to judge")  # nobody said they failed
    page.get_by_role("group", name="Outcomes").get_by_label("Failure").uncheck()
    expect(sources).to_contain_text("5 episodes to judge")

    page.get_by_label("Clips of N steps").check()
    page.get_by_label("Steps per clip").fill("4")
    page.get_by_label("The clips show").select_option("observation")
    page.get_by_label("Playback speed (frames/s)").fill("10")

    expect(page.locator("#no-questions")).to_be_visible()
    add_compare_and_rate(page)
    # a narrate question added, moved up, then removed: the two stay in their order
    page.get_by_role("button", name="+ Narrate question").click()
    page.get_by_role("button", name="Move question 3 up").click()
    expect(question(page, 2).get_by_label("Kind")).to_have_value("narrate")
    page.get_by_role("button", name="Remove question 2").click()
    expect(question(page, 2).get_by_label("Prompt")).to_have_value("How smooth is the cart?")

    page.get_by_label("Which items next").select_option("disagreement")
    page.get_by_label("Judges per item").fill("2")
    page.get_by_label("Judgements per participant").fill("6")
    page.get_by_label("Judgements in total").fill("40")
    page.get_by_label("Minimum watch time (s)").fill("1")

    # two gold pairs, their episodes picked from the source's list (ids and lengths shown)
    page.get_by_role("button", name="+ Add gold item").click()
    first = gold(page, 1)
    expect(first.get_by_label("Question")).to_have_value("balance")
    a_box = first.get_by_label("Episode A", exact=True)
    expect(a_box.locator("option")).to_have_count(6)  # "Choose…" and the five episodes
    expect(a_box).to_contain_text(f"{eps[0].id[:8]} · cartpole · {eps[0].steps} steps")
    a_box.select_option(eps[0].id)
    first.get_by_label("Episode B", exact=True).select_option(eps[1].id)
    first.get_by_label("A is better").check()
    first.get_by_label("Episode A: clip starts at step").fill("2")
    add_gold_pair(page, 2, eps[2].id, eps[3].id, "Equally good")
    page.get_by_label("Share of gold items").fill("0.25")
    page.get_by_label("Minimum gold accuracy").fill("0.5")
    page.get_by_label("Gold answers before screening").fill("2")

    page.get_by_text("Crowd settings").click()
    expect(page.get_by_label("Required episodes")).to_have_count(0)  # judgements complete them
    page.get_by_label("Completion code").fill("JUDGED0K")
    page.get_by_label("Screen-out code").fill("GOLDMISS")
    page.get_by_role("group", name="Participants come from").get_by_label("Prolific").check()
    shot(page, "feedback-01-form")
    # narrow: every card and picker still fits the form (nothing pushed out of sight)
    page.set_viewport_size({"width": 600, "height": 800})
    assert page.locator("#editor-form").evaluate("(f) => f.scrollWidth <= f.clientWidth + 1")
    gold(page, 1).scroll_into_view_if_needed()
    shot(page, "feedback-01-narrow")
    page.set_viewport_size({"width": 1280, "height": 800})

    # the YAML view writes it, and an edit there comes back to the form
    page.get_by_role("tab", name="Edit as YAML").click()
    yaml_box = page.get_by_label("Edit the study file (YAML)")
    expect(yaml_box).to_have_value(_contains("kind: feedback"))
    text = yaml_box.input_value()
    assert "prompt: Which pole stays up longer?" in text and "answer: equal" in text
    yaml_box.fill(text.replace("How smooth is the cart?", "How smooth is the ride?"))
    page.get_by_role("tab", name="Form").click()
    expect(question(page, 2).get_by_label("Prompt")).to_have_value("How smooth is the ride?")
    expect(gold(page, 2).get_by_label("Equally good")).to_be_checked()

    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Which pole is better?")).to_be_visible()
    checklist = page.get_by_role("region", name="Before you activate")
    expect(checklist).to_contain_text("Nothing stands in the way of activating this study.")
    expect(page.locator("#validate-status")).to_have_text("Checked what participants would judge.")
    shot(page, "feedback-02-saved")
    page.get_by_role("button", name="Activate", exact=True).click()
    expect(page.locator("#detail-state")).to_have_text("Active")
    shot(page, "feedback-03-active")

    db.expire_all()
    study = db.scalars(select(Study).where(Study.name == "Which pole is better?")).one()
    assert study.state == "active"
    assert study.spec["kind"] == "feedback" and "environments" not in study.spec
    assert study.spec["crowd"] == {
        "completion_code": "JUDGED0K", "screenout_code": "GOLDMISS", "platforms": ["prolific"],
    }  # fmt: skip
    assert study.spec["feedback"] == {
        "source": {"studies": [world.source.id], "environments": ["cartpole"], "outcomes": []},
        "clip_steps": 4, "view": "observation", "fps": 10,
        "questions": [
            {"id": "balance", "kind": "compare", "prompt": "Which pole stays up longer?"},
            {"id": "smooth", "kind": "rate", "prompt": "How smooth is the ride?",
             "scale_min": 1, "scale_max": 5, "low_label": "jerky", "high_label": "smooth"},
        ],
        "pairing": "disagreement", "judgements_per_item": 2, "judgements_per_participant": 6,
        "judgements_total": 40, "min_watch_s": 1,
        "gold": [
            {"question": "balance", "episodes": [eps[0].id, eps[1].id], "starts": [2, 0],
             "answer": "a"},
            {"question": "balance", "episodes": [eps[2].id, eps[3].id], "answer": "equal"},
        ],
        "gold_rate": 0.25, "gold_min_accuracy": 0.5, "gold_min_answers": 2,
    }  # fmt: skip

    # a started study keeps its kind: paused, it may be edited, but not made a play study
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("#detail-state")).to_have_text("Paused")
    expect(page.get_by_label("Play (collect demonstrations)")).to_be_disabled()
    expect(page.get_by_role("group", name="What participants do")).to_contain_text(
        "A study that has started keeps its kind."
    )


def _contains(text: str):  # type: ignore[no-untyped-def]
    import re

    return re.compile(re.escape(text))


def test_bad_values_are_told_at_their_fields_and_the_checklist_at_the_source(
    live_server: str, page: Page, factory: Factory, db: Session, world
):
    log_in(page, live_server, world.owner)
    new_feedback_study(page, "Bad values")
    page.get_by_role("button", name="Save changes").click()
    sources = page.get_by_role("group", name="Source studies")
    expect(sources.locator(".field-error")).to_have_text(
        "Source studies must have at least 1 item after validation, not 0"
    )
    page.get_by_role("group", name="Source studies").get_by_label("Played").check()
    page.get_by_role("button", name="+ Rate question").click()
    rate = question(page, 1)
    rate.get_by_label("Prompt").fill("How steady?")
    rate.get_by_label("Scale from").fill("5")
    rate.get_by_label("Scale to").fill("3")
    page.get_by_label("Playback speed (frames/s)").fill("120")
    page.get_by_role("button", name="Save changes").click()
    fps = page.locator("[data-path='feedback.fps']")
    expect(fps.locator(".field-error")).to_have_text("Playback speed (frames/s) must be at most 60")
    expect(fps.get_by_label("Playback speed (frames/s)")).to_have_attribute("aria-invalid", "true")
    expect(rate.get_by_label("Scale to")).to_have_attribute("aria-invalid", "true")
    expect(rate.locator("[data-path='feedback.questions.0.scale_max'] .field-error")).to_have_text(
        "Scale to must be above Scale from, by 1 to 10 (a scale has 2 to 11 points)"
    )
    shot(page, "feedback-04-bad-values")
    assert db.scalars(select(Study).where(Study.name == "Bad values")).first() is None

    # fixed; a rate gold item's known answer is a range of ratings
    page.get_by_label("Playback speed (frames/s)").fill("12")
    rate.get_by_label("Scale to").fill("9")
    page.get_by_role("button", name="+ Add gold item").click()
    rated = gold(page, 1)
    expect(rated.get_by_label("Question")).to_have_value("rate-1")
    expect(rated.get_by_label("Episode B", exact=True)).to_have_count(0)  # one clip is rated
    last = max(world.episodes, key=lambda e: e.id)
    rated.get_by_label("Episode", exact=True).select_option(last.id)
    rated.get_by_label("Lowest correct rating").fill("6")
    rated.get_by_label("Highest correct rating").fill("8")
    # play and back: each kind's part is kept while the designer makes up their mind
    page.get_by_label("Play (collect demonstrations)").check()
    expect(page.get_by_role("heading", name="Environments")).to_be_visible()
    expect(page.locator("#no-envs")).to_be_visible()
    page.get_by_label("Feedback (judge recorded episodes)").check()
    expect(question(page, 1).get_by_label("Prompt")).to_have_value("How steady?")
    expect(gold(page, 1).get_by_label("Highest correct rating")).to_have_value("8")

    # saved; a filter that leaves nothing to judge is on the checklist at its field
    page.get_by_label("Task").fill("no-such-task")
    page.get_by_role("button", name="Save changes").click()
    checklist = page.get_by_role("region", name="Before you activate")
    expect(checklist).to_contain_text("No recorded episode of the source studies matches")
    checklist.get_by_role("button", name="Go to Source studies").click()
    expect(sources).to_have_class(_contains("field-invalid"))
    shot(page, "feedback-05-checklist")
    db.expire_all()
    saved = db.scalars(select(Study).where(Study.name == "Bad values")).one().spec["feedback"]
    assert saved["gold"] == [
        {"question": "rate-1", "episodes": [last.id], "rating_min": 6, "rating_max": 8}
    ]
    assert saved["source"]["task"] == "no-such-task" and saved["fps"] == 12
