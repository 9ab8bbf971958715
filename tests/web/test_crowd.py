"""A crowd study in real Chromium, as workers click and type: a Prolific or MTurk link to
a completion code, consent declined, balanced assignment, a broken game, a second tab,
and a reload at every screen (issue 10)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus, Participant
from tests.player.conftest import counter_env
from tests.web._crowd import (
    PLATFORM,
    accept_consent,
    crowd_study,
    fake_platform,
    link,
    pass_gate,
    play_to_the_end,
    read_instructions,
    shot,
)

pytestmark = pytest.mark.browser

CONSENT = "# Consent\n\nYou agree that your **key presses** are recorded.\n<b>not html</b>"


@pytest.fixture
def designer(factory):
    return factory.user()


def _episodes(db, study):
    db.expire_all()
    return db.query(Episode).filter_by(study_id=study.id).order_by(Episode.id).all()


def test_prolific_worker_from_link_to_completion_redirect(live_server, page, factory, designer, db):
    env = counter_env(episode_len=2, episodes_per_participant=2)
    study = crowd_study(
        db, factory, designer, env, consent=CONSENT, completion_code="C0DE-123",
        completion_url=f"{PLATFORM}/done?cc={{code}}",
    )  # fmt: skip
    platform = fake_platform(page)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(link(live_server, study, PROLIFIC_PID="5f1a2b", STUDY_ID="S-9", SESSION_ID="X-1"))
    expect(page.locator("#consent-text h1")).to_have_text("Consent")
    expect(page.locator("#consent-text")).to_contain_text("<b>not html</b>")  # shown, not run
    shot(page, "01-consent")
    accept_consent(page)
    expect(page.locator("#instructions-text h1")).to_have_text("Hi")
    shot(page, "02-instructions")
    read_instructions(page)
    expect(page.locator("#lobby-view")).to_be_visible()
    shot(page, "03-lobby")
    page.get_by_role("button", name="Instructions").click()  # reachable again at any time
    expect(page.locator("#instructions-dialog-text h1")).to_have_text("Hi")
    shot(page, "03b-instructions-again")
    page.keyboard.press("Escape")
    expect(page.locator("#instructions-dialog")).to_be_hidden()
    page.get_by_role("button", name="Play Counter").click()
    expect(page.locator("#overlay")).to_contain_text("Press Enter")
    shot(page, "04-ready-gate")
    assert all(r.steps <= 1 for r in _episodes(db, study))  # the first observation at most
    pass_gate(page, key="KeyA")  # a game key starts the episode without stepping it
    expect(page.locator("#st-step")).to_have_text("0")
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    shot(page, "05-playing")
    page.keyboard.press("KeyA")
    expect(page.locator("#save-dialog")).to_be_visible()
    shot(page, "06-save-dialog")
    expect(page.locator("#save-yes")).to_be_enabled()  # a short guard: keys answer after it
    page.keyboard.press("Enter")
    expect(page.locator("#after-save")).to_be_visible()  # the server's answer came
    expect(page.locator("#next-btn")).to_contain_text("Next episode")
    expect(page.locator("#progress-text")).to_have_text("Your progress: 1 of 2 episodes")
    shot(page, "07-after-save")
    expect(page.locator("#next-btn")).to_be_enabled()
    page.keyboard.press("Enter")
    pass_gate(page)
    play_to_the_end(page)
    expect(page.locator("#next-btn")).to_contain_text("Finish and get your code")
    shot(page, "08-after-last")
    expect(page.locator("#next-btn")).to_be_enabled()
    page.keyboard.press("Enter")
    expect(page.locator("#code-view")).to_be_visible()
    expect(page.locator("#code-value")).to_have_value("C0DE-123")
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#code-copied")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == "C0DE-123"
    shot(page, "09-completion")
    page.locator("#redirect-btn").click()
    expect(page).to_have_url(f"{PLATFORM}/done?cc=C0DE-123")
    assert platform[-1]["method"] == "GET"

    rows = _episodes(db, study)
    assert [(r.status, r.steps) for r in rows] == [(EpisodeStatus.completed, 3)] * 2
    worker = db.query(Participant).filter_by(study_id=study.id).one()
    assert (worker.external_id, worker.platform) == ("5f1a2b", "prolific")
    assert (worker.platform_study_id, worker.platform_session_id) == ("S-9", "X-1")
    assert worker.consented_at is not None and worker.completed_at is not None


def test_mturk_preview_then_accepted_hit_submits_the_form(live_server, page, factory, designer, db):
    # the completion URL is for the study's Prolific participants: MTurk's still submit the HIT
    study = crowd_study(db, factory, designer, completion_code="MT-77",
                        completion_url=f"{PLATFORM}/done?cc={{code}}")  # fmt: skip
    submit = "https://workersandbox.mturk.com"
    platform = fake_platform(page, submit)
    elsewhere = fake_platform(page)
    page.goto(link(live_server, study, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H1"))
    expect(page.locator("#status-text")).to_have_text("This is a preview. Accept the HIT to start.")
    expect(page.locator("#status-instructions h1")).to_have_text("Hi")
    expect(page.locator("button:visible")).to_have_count(0)  # nothing to start
    shot(page, "10-mturk-preview")
    assert db.query(Participant).filter_by(study_id=study.id).count() == 0

    page.goto(link(live_server, study, workerId="W42", assignmentId="A7", hitId="H1",
                   turkSubmitTo=submit))  # fmt: skip
    read_instructions(page)
    page.get_by_role("button", name="Play Counter").click()
    pass_gate(page)
    play_to_the_end(page)
    page.get_by_role("button", name="Finish and get your code").click()
    expect(page.locator("#code-value")).to_have_value("MT-77")
    shot(page, "11-mturk-completion")
    page.get_by_role("button", name="Submit the HIT").click()
    expect(page).to_have_url(f"{submit}/mturk/externalSubmit")
    assert platform[-1]["method"] == "POST"
    assert "assignmentId=A7" in platform[-1]["body"]
    assert "MT-77" in platform[-1]["body"]
    assert elsewhere == []  # never sent to the completion URL
    worker = db.query(Participant).filter_by(study_id=study.id).one()
    assert (worker.external_id, worker.platform, worker.platform_session_id) == (
        "W42", "mturk", "A7",
    )  # fmt: skip


def test_declined_consent_ends_at_the_screen_out_page(live_server, page, factory, designer, db):
    study = crowd_study(db, factory, designer, consent=CONSENT, screenout_code="NOPE-1")
    fake_platform(page, "https://app.prolific.com")
    page.goto(link(live_server, study, PROLIFIC_PID="p-decline"))
    page.get_by_role("button", name="I do not agree").click()
    expect(page.locator("#code-title")).to_have_text("Thank you for your time")
    expect(page.locator("#code-value")).to_have_value("NOPE-1")
    shot(page, "12-screen-out")
    page.reload()  # the screen-out stays: no way round the consent
    expect(page.locator("#code-value")).to_have_value("NOPE-1")
    page.get_by_role("button", name="Return to Prolific").click()
    expect(page).to_have_url("https://app.prolific.com/submissions/complete?cc=NOPE-1")
    worker = db.query(Participant).filter_by(study_id=study.id).one()
    assert worker.screened_out_at is not None and worker.consented_at is None
    assert _episodes(db, study) == []


def test_an_mturk_worker_who_declines_is_told_to_return_the_hit(
    live_server, page, factory, designer, db
):
    # the study's screen-out code is for its Prolific participants: MTurk takes no code back
    study = crowd_study(db, factory, designer, consent=CONSENT, screenout_code="NOPE-2")
    page.goto(link(live_server, study, workerId="W-no", assignmentId="A9", hitId="H1",
                   turkSubmitTo="https://workersandbox.mturk.com"))  # fmt: skip
    page.get_by_role("button", name="I do not agree").click()
    expect(page.locator("#code-title")).to_have_text("Thank you for your time")
    text = page.locator("#code-text")
    expect(text).to_have_text(
        "You chose not to take part, so the study ends here. Please return the HIT on MTurk "
        "(the Return button on the HIT's page). You need no code for that."
    )
    expect(text).not_to_contain_text("return this code")
    expect(page.locator("#code-box")).to_be_hidden()  # no code to hand anywhere
    expect(page.locator("#redirect-btn")).to_be_hidden()  # nor a HIT to submit
    shot(page, "12-mturk-screen-out")
    worker = db.query(Participant).filter_by(study_id=study.id).one()
    assert worker.screened_out_at is not None and worker.screenout_reason == "declined"


def test_balanced_workers_get_different_environments(
    live_server, browser, page, factory, designer, db
):
    envs = [{**counter_env(e, episode_len=2), "episodes_total": 1} for e in ("alpha", "beta")]
    study = crowd_study(db, factory, designer, *envs, assignment="balanced")
    other = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    names = []
    for worker, who in ((page, "w-1"), (other, "w-2")):
        worker.goto(link(live_server, study, PROLIFIC_PID=who))
        read_instructions(worker)
        expect(worker.locator("#overlay")).to_contain_text("Press Enter")  # straight to a game
        names.append(worker.locator("#env-name").text_content())
    assert sorted(names) == ["Alpha", "Beta"]
    for worker in (page, other):
        pass_gate(worker)
        play_to_the_end(worker)
    rows = _episodes(db, study)
    assert sorted(r.env_key for r in rows) == ["alpha", "beta"]
    assert all(r.status == EpisodeStatus.completed for r in rows)
    other.context.close()


def test_a_game_that_cannot_start_leads_to_another(live_server, page, factory, designer, db):
    broken = {**counter_env("broken"), "source": {
        "kind": "dm_env", "factory": "tests.runtime.fake_envs:broken_start"}}  # fmt: skip
    study = crowd_study(db, factory, designer, broken, counter_env("fine", episode_len=2))
    page.goto(link(live_server, study, PROLIFIC_PID="p-broken"))
    read_instructions(page)
    page.get_by_role("button", name="Play Broken").click()
    expect(page.locator("#play-message")).to_have_text(
        "This game could not start. You can continue with another one."
    )
    shot(page, "13-env-failed")
    text = page.locator("body").inner_text()
    for leak in ("Error", "Traceback", "broken_start", "cannot build"):
        assert leak not in text
    page.locator("#next-btn").click()
    if page.locator("#lobby-view").is_visible():  # choice: the lobby, the broken game closed
        page.get_by_role("button", name="Play Fine").click()
    pass_gate(page)
    play_to_the_end(page)
    assert [r.env_key for r in _episodes(db, study) if r.status == EpisodeStatus.completed] == [
        "fine"
    ]


def test_a_second_tab_is_refused_and_takes_over(live_server, page, factory, designer, db):
    study = crowd_study(db, factory, designer, counter_env(episode_len=3))
    url = link(live_server, study, PROLIFIC_PID="p-tabs")
    page.goto(url)
    read_instructions(page)
    page.get_by_role("button", name="Play Counter").click()
    pass_gate(page)
    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    second = page.context.new_page()
    second.goto(url)
    expect(second.locator("#status-title")).to_have_text("This study is open in another tab")
    shot(second, "14-second-tab")
    second.get_by_role("button", name="Continue here").click()
    expect(second.locator("#play-view")).to_be_visible()
    expect(second.locator("#st-step")).to_have_text("1")  # the same episode, moved here
    expect(page.locator("#status-title")).to_have_text("Continued in another tab")
    shot(page, "15-first-tab-stopped")
    if second.locator("#st-phase").text_content() == "paused":
        second.keyboard.press("Escape")
    second.locator("#screen").click()
    for _ in range(2):
        second.keyboard.press("KeyA")
    second.get_by_role("button", name="Save").click()
    expect(second.locator("#after-save")).to_be_visible()
    (row,) = _episodes(db, study)
    assert row.status == EpisodeStatus.completed and row.steps == 4
