"""A reload at every screen of a crowd study lands on a screen with a way forward."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus
from tests.player.conftest import counter_env
from tests.web._crowd import crowd_study, link, pass_gate, shot

pytestmark = pytest.mark.browser


@pytest.fixture
def designer(factory):
    return factory.user()


def test_a_reload_at_every_screen_has_a_way_forward(live_server, page, factory, designer, db):
    study = crowd_study(
        db, factory, designer, counter_env(episode_len=2), counter_env("other", episode_len=2),
        consent="Agree?", completion_code="RELOAD-OK",
    )  # fmt: skip
    page.goto(link(live_server, study, PROLIFIC_PID="p-reload"))

    expect(page.locator("#consent-view")).to_be_visible()
    page.reload()
    page.get_by_role("button", name="I agree").click()

    expect(page.locator("#instructions-view")).to_be_visible()
    page.reload()
    page.get_by_role("button", name="Continue").click()

    expect(page.locator("#lobby-view")).to_be_visible()
    page.reload()
    page.get_by_role("button", name="Play Counter").click()

    expect(page.locator("#overlay")).to_contain_text("Press Enter")  # the ready gate
    page.reload()
    expect(page.locator("#overlay")).to_contain_text("Press Enter")
    shot(page, "20-ready-gate-after-reload")
    pass_gate(page)

    page.keyboard.press("KeyA")
    expect(page.locator("#st-step")).to_have_text("1")
    page.reload()  # mid-episode: the episode waits, paused, with the way back on screen
    expect(page.locator("#overlay")).to_contain_text("press Esc")
    shot(page, "21-mid-episode-after-reload")
    page.keyboard.press("Escape")
    expect(page.locator("#st-phase")).to_have_text("playing")
    page.locator("#screen").click()
    page.keyboard.press("KeyA")

    expect(page.locator("#save-dialog")).to_be_visible()
    page.reload()
    expect(page.locator("#save-dialog")).to_be_visible()
    shot(page, "22-save-dialog-after-reload")
    page.get_by_role("button", name="Save").click()

    expect(page.locator("#after-save")).to_be_visible()
    page.reload()  # after an episode: back to the games, the finished one marked
    expect(page.get_by_role("button", name="Finished")).to_be_disabled()
    shot(page, "23-lobby-after-reload")
    page.get_by_role("button", name="Play Other").click()
    pass_gate(page)
    page.keyboard.press("KeyA")
    page.keyboard.press("KeyA")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("button", name="Finish and get your code").click()

    expect(page.locator("#code-value")).to_have_value("RELOAD-OK")
    page.reload()
    expect(page.locator("#code-value")).to_have_value("RELOAD-OK")  # the code again
    db.expire_all()
    rows = db.query(Episode).filter_by(study_id=study.id).all()
    assert sorted((r.env_key, r.status) for r in rows) == [
        ("counter", EpisodeStatus.completed), ("other", EpisodeStatus.completed),
    ]  # fmt: skip


def test_a_paused_or_closed_link_says_which(live_server, page, factory, designer, db):
    from server.models import StudyState
    from server.services.studies import studies

    study = crowd_study(db, factory, designer)
    studies.change_state(db, study, StudyState.paused)
    page.goto(link(live_server, study, PROLIFIC_PID="p-late"))
    expect(page.locator("#status-title")).to_have_text("This study is paused")
    shot(page, "24-paused")
    studies.change_state(db, study, StudyState.active)
    page.get_by_role("button", name="Try again").click()  # the way forward once it reopens
    expect(page.locator("#instructions-view")).to_be_visible()
    studies.change_state(db, study, StudyState.closed)
    page.goto(link(live_server, study))
    expect(page.locator("#status-title")).to_have_text("This study has ended")


def test_an_anonymous_participant_starts_without_an_id_and_comes_back(
    live_server, page, factory, designer, db
):
    from server.models import Participant

    study = crowd_study(db, factory, designer, allow_anonymous=True)
    page.goto(link(live_server, study))
    expect(page.locator("#join-ask")).to_contain_text("Press Start")
    shot(page, "25-anonymous-start")
    page.get_by_role("button", name="Start").click()
    expect(page.locator("#instructions-view")).to_be_visible()
    again = page.context.new_page()  # a new tab later: the same participant, no new id
    again.goto(link(live_server, study))
    expect(again.locator("#status-title")).to_have_text("This study is open in another tab")
    db.expire_all()
    (row,) = db.query(Participant).filter_by(study_id=study.id).all()
    assert row.platform == "anonymous" and row.external_id.startswith("anon-")
