"""The judging page of a feedback study in real Chromium, on real recorded CartPole episodes:
a participant from a Prolific link compares with the keys and rates with a click, sees
"Item N of M" advance, reloads mid-item and gets the same item back, mashes a key and is
counted once, is held by the minimum watch time (on the page, and by the server when the
page's clock runs ahead), describes a clip in words, and finishes with the completion code;
and the same on a phone, by taps (issue 40)."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from playwright.sync_api import expect

from server.recording.format import episode_dir
from tests.api.routes.judged import played
from tests.conftest import watched_page
from tests.web._crowd import shot
from tests.web._judge import (
    COMPARE,
    DRAWN,
    NARRATE,
    RATE,
    answerable,
    answered,
    expect_code,
    expect_item,
    judge_link,
    judgements,
    open_as_judge,
)
from tests.web._phone import PHONE

pytestmark = pytest.mark.browser


@pytest.fixture
def world(factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """A played study holding five recorded CartPole episodes, as feedback studies' source."""
    return played(db, factory, settings.data_root, recorded)


def _stored_choice(j: Any, shown: str) -> str:
    """The item's side a judge meant by ``shown`` (left / right), as the row stores it."""
    side = "a" if shown == "left" else "b"
    return ("b" if side == "a" else "a") if j.swapped else side


def test_judge_compares_rates_reloads_and_gets_the_code(live_server, page, world, factory, db):
    study = world.make(db, factory, clip_steps=4, judgements_per_participant=3)
    open_as_judge(page, live_server, study, "judge-keys")
    expect_item(page, 1, 3, COMPARE)
    expect(page.locator("#judge-label-0")).to_have_text("Left")
    expect(page.locator("#judge-label-1")).to_have_text("Right")
    expect(page.locator("#judge-bar")).to_have_attribute("aria-valuenow", "0")
    for name in ("Left is better", "Right is better", "Equally good", "Can't tell"):
        expect(page.get_by_role("button", name=name)).to_be_enabled()
    expect(page.locator("#judge-compare kbd")).to_have_text(["←", "→", "E", "C"])  # shown keys
    expect(page.locator("#judge-frame")).to_contain_text("of 4")  # a 4-step clip, playing
    shot(page, "judge-01-compare")

    # Space pauses (the position stays), R restarts from the first frame
    page.keyboard.press("Space")
    expect(page.locator("#judge-play")).to_contain_text("Play")
    paused = page.locator("#judge-frame").text_content()
    page.wait_for_timeout(400)
    expect(page.locator("#judge-frame")).to_have_text(paused or "")
    page.keyboard.press("KeyR")
    expect(page.locator("#judge-play")).to_contain_text("Pause")

    # a reload mid-item gives the same item back (no second judgement drawn)
    first = judgements(db, study, "judge-keys")
    assert len(first) == 1 and first[0].answered_at is None
    page.reload()
    expect_item(page, 1, 3, COMPARE)
    again = judgements(db, study, "judge-keys")
    assert [j.token for j in again] == [first[0].token]

    answerable(page)
    page.keyboard.press("ArrowLeft")  # Left is better
    expect_item(page, 2, 3, RATE)
    expect(page.locator("#judge-bar")).to_have_attribute("aria-valuenow", "1")
    done = answered(db, study, "judge-keys")
    assert len(done) == 1 and done[0].choice == _stored_choice(done[0], "left")

    # the rate item: one button per point, the labels at the ends; a click answers
    expect(page.locator("#judge-clip-1")).to_be_hidden()
    expect(page.locator("#judge-scale button")).to_have_count(5)
    expect(page.locator("#judge-low")).to_have_text("jerky")
    expect(page.locator("#judge-high")).to_have_text("smooth")
    expect(page.locator("#judge-keys")).to_contain_text("1–5 rate")
    shot(page, "judge-02-rate")
    page.get_by_role("button", name="4", exact=True).click()
    expect_item(page, 3, 3, COMPARE)
    expect(page.locator("#judge-bar")).to_have_attribute("aria-valuenow", "2")
    assert [j.rating for j in answered(db, study, "judge-keys")] == [None, 4.0]

    answerable(page)
    page.keyboard.press("KeyE")  # equally good: the last item, then the code
    expect_code(page, "JUDGED0K")
    shot(page, "judge-03-code")
    rows = answered(db, study, "judge-keys")
    assert [j.choice for j in rows] == [rows[0].choice, None, "equal"]
    assert len(judgements(db, study, "judge-keys")) == 3


def test_min_watch_time_holds_early_answers_and_a_mashed_key_counts_once(
    live_server, page, world, factory, db
):  # type: ignore[no-untyped-def]
    study = world.make(db, factory, clip_steps=4, judgements_per_participant=3, min_watch_s=2)
    open_as_judge(page, live_server, study, "judge-mash")
    expect_item(page, 1, 3, COMPARE)
    wait = page.locator("#judge-wait")
    expect(wait).to_contain_text("Watch first: you can answer in")
    expect(page.get_by_role("button", name="Left is better")).to_be_disabled()
    shot(page, "judge-04-countdown")
    page.keyboard.press("ArrowLeft")  # too early: ignored, nothing sent
    assert answered(db, study, "judge-mash") == []
    expect(page.get_by_role("button", name="Left is better")).to_be_enabled(timeout=5_000)
    expect(wait).to_have_text("")

    # mashing: the first press answers; the others (and a held key) are ignored until the
    # next item is shown, whose own watch time then holds them
    for _ in range(8):
        page.keyboard.press("ArrowRight")
    page.keyboard.down("ArrowLeft")
    page.keyboard.down("ArrowLeft")  # an auto-repeat
    page.keyboard.up("ArrowLeft")
    expect_item(page, 2, 3, RATE)
    for _ in range(5):
        page.keyboard.press("Digit5")
    expect(wait).to_contain_text("Watch first")
    rows = answered(db, study, "judge-mash")
    assert len(rows) == 1 and rows[0].choice == _stored_choice(rows[0], "right")
    assert rows[0].answer_ms is not None and rows[0].answer_ms >= 2000
    assert len(judgements(db, study, "judge-mash")) == 2  # the rate item, still open

    # ← → choose a point, Enter sends it (once the watch time is over)
    expect(page.locator("#judge-scale button").first).to_be_enabled(timeout=5_000)
    page.keyboard.press("ArrowRight")  # the first press picks the middle: 3
    page.keyboard.press("ArrowRight")
    expect(page.locator("#judge-scale .selected")).to_have_text("4")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#judge-scale .selected")).to_have_text("2")
    page.keyboard.press("Enter")
    expect_item(page, 3, 3, COMPARE)
    assert [j.rating for j in answered(db, study, "judge-mash")] == [None, 2.0]


def test_too_fast_the_page_keeps_the_answer(live_server, browser, world, factory, db):
    """The page's clock runs ahead of the server's: the server says too_fast, the page keeps
    the answer, waits the seconds it names and sends it once."""
    study = world.make(db, factory, clip_steps=4, judgements_per_participant=2, min_watch_s=3)
    with watched_page(browser, {"width": 1280, "height": 800}) as page:
        page.clock.install()
        open_as_judge(page, live_server, study, "judge-fast")
        expect_item(page, 1, 2, COMPARE)
        expect(page.locator("#judge-wait")).to_contain_text("you can answer in")
        page.clock.fast_forward(3_000)  # the page thinks 3 s went by; the server knows better
        expect(page.get_by_role("button", name="Can't tell")).to_be_enabled()
        page.keyboard.press("KeyC")
        expect(page.locator("#judge-wait")).to_contain_text("Your answer is kept: it is sent in")
        expect(page.get_by_role("button", name="Can't tell")).to_be_disabled()
        shot(page, "judge-05-too-fast")
        page.keyboard.press("KeyE")  # a second answer meanwhile: ignored
        expect_item(page, 2, 2, RATE)
        rows = answered(db, study, "judge-fast")
        assert len(rows) == 1 and rows[0].choice == "cant_tell"
        assert rows[0].answer_ms is not None and rows[0].answer_ms >= 3000


def test_narrate_text_keys_stay_in_the_box(live_server, page, world, factory, db):
    study = world.make(db, factory, judgements_per_participant=1, questions=[NARRATE])
    open_as_judge(page, live_server, study, "judge-words")
    expect_item(page, 1, 1, NARRATE["prompt"])
    expect(page.locator("#judge-clip-1")).to_be_hidden()
    box = page.get_by_label("Your answer")
    box.click()
    words = "The cart drifts right, then corrects"
    page.keyboard.type(words)  # Space, R, E and C are letters here, not shortcuts
    page.keyboard.press("Enter")  # a new line, not an answer
    page.keyboard.type("x")
    expect(page.locator("#judge-chars")).to_have_text(f"{len(words) + 2} / 2000")
    expect(page.locator("#judge-play")).to_contain_text("Pause")  # Space did not pause
    assert answered(db, study, "judge-words") == []
    shot(page, "judge-06-narrate")
    page.keyboard.press("Control+Enter")
    expect_code(page, "JUDGED0K")
    rows = answered(db, study, "judge-words")
    assert len(rows) == 1 and rows[0].text == f"{words}\nx"


@pytest.mark.parametrize("width", [390, 320])  # a common phone, and the narrowest
def test_phone_judge_taps_stacked_clips_to_the_code(live_server, browser, world, factory, db,
                                                    width):  # fmt: skip
    study = world.make(db, factory, clip_steps=4, judgements_per_participant=2)
    context = browser.new_context(**{**PHONE, "viewport": {"width": width, "height": 844}})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(judge_link(live_server, study, f"judge-phone-{width}"))
        expect(page.locator("#instructions-view")).to_be_visible()  # no "needs a keyboard" stop
        page.get_by_role("button", name="Continue").tap()
        expect_item(page, 1, 2, COMPARE)
        left, right = (page.locator(f"#judge-clip-{k}").bounding_box() for k in (0, 1))
        assert left and right and right["y"] >= left["y"] + left["height"] - 1  # stacked
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for name in ("Left is better", "Right is better", "Equally good", "Can't tell"):
            box = page.get_by_role("button", name=name).bounding_box()
            assert box and box["height"] >= 44 and box["width"] >= 120, (name, box)
        expect(page.locator("#judge-compare kbd").first).to_be_hidden()  # no key hints on touch
        shot(page, f"judge-07-phone-compare-{width}")
        page.get_by_role("button", name="Right is better").tap()
        expect_item(page, 2, 2, RATE)
        point = page.get_by_role("button", name="5, smooth")
        box = point.bounding_box()
        assert box and box["height"] >= 44 and box["width"] >= 44
        shot(page, f"judge-08-phone-rate-{width}")
        point.tap()
        expect_code(page, "JUDGED0K")
        shot(page, f"judge-09-phone-code-{width}")
        rows = answered(db, study, f"judge-phone-{width}")
        assert [j.rating for j in rows] == [None, 5.0]
        assert rows[0].choice == _stored_choice(rows[0], "right")
    finally:
        context.close()
    assert not errors, errors


def test_clips_whose_recordings_are_gone_say_so(live_server, page, world, factory, db, settings):
    """Every frame of the item fails (the episodes' logs were deleted from the disk): each
    clip says so in words, no broken picture; the judge can still answer."""
    study = world.make(db, factory, clip_steps=4, judgements_per_participant=1)
    page.goto(judge_link(live_server, study, "judge-gone"))
    expect(page.locator("#instructions-view")).to_be_visible()
    for episode in world.episodes:
        shutil.rmtree(episode_dir(settings.data_root, world.source.id, episode.id))
    page.keyboard.press("Enter")
    expect(page.locator("#judge-count")).to_have_text("Item 1 of 1")
    for k in (0, 1):
        expect(page.locator(f"#judge-error-{k}")).to_have_text(
            "This clip could not be loaded. The episode's log is missing.")  # fmt: skip
        expect(page.locator(f"#judge-canvas-{k}")).not_to_have_attribute("data-frame", DRAWN)
    expect(page.locator("#judge-loading")).to_be_hidden()
    expect(page.get_by_role("button", name="Load the clips again")).to_be_visible()
    shot(page, "judge-10-clips-gone")
    page.get_by_role("button", name="Load the clips again").click()  # the same item again
    expect(page.locator("#judge-error-0")).to_be_visible()
    assert len(judgements(db, study, "judge-gone")) == 1
    answerable(page)
    page.get_by_role("button", name="Can't tell").click()
    expect_code(page, "JUDGED0K")
    assert [j.choice for j in answered(db, study, "judge-gone")] == ["cant_tell"]


def test_a_judge_who_fails_the_gold_sees_the_screen_out_code(live_server, page, world, factory, db):
    """Gold items look like any other; "Can't tell" is never a gold pair's answer, so a judge
    who always says it is screened out once the gold is answered, with the screen-out code."""
    eps = world.episodes
    gold = [{"question": "balance", "episodes": [eps[0].id, eps[1].id], "answer": "a"}]
    study = world.make(db, factory, gold=gold, gold_rate=0.5, judgements_per_participant=2,
                       gold_min_accuracy=1.0, gold_min_answers=1,
                       questions=[{"id": "balance", "kind": "compare",
                                   "prompt": COMPARE}])  # fmt: skip
    open_as_judge(page, live_server, study, "judge-careless")
    for number in (1, 2):
        if page.locator("#code-view").is_visible():
            break
        expect_item(page, number, 2, COMPARE)
        answerable(page)
        page.keyboard.press("KeyC")
        page.wait_for_function(  # the next item, or the end
            "n => !document.getElementById('code-view').hidden"
            " || document.getElementById('judge-count').textContent === `Item ${n} of 2`",
            arg=number + 1,
        )
    expect(page.locator("#code-title")).to_have_text("Thank you for your time")
    words = "Your answers did not pass this study's quality checks, so the study ends here."
    expect(page.locator("#code-text")).to_contain_text(words)
    expect(page.locator("#code-value")).to_have_value("GOLDMISS")
    shot(page, "judge-11-screened-out")
    rows = answered(db, study, "judge-careless")
    assert [j.item.is_gold for j in rows][-1] is True  # the gold answer settled it
    assert all(j.choice == "cant_tell" for j in rows)
