"""A participant who loses the race for the last place reaches the "full" page and its code
in real Chromium (no lobby loop); the code stays with the browser that earned it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from server.models import Participant
from server.principal import Principal
from server.services.crowd import episodes
from server.services.studies import studies
from tests.player.conftest import counter_env
from tests.web._crowd import (
    crowd_study,
    fake_platform,
    link,
    read_instructions,
    shot,
)

pytestmark = pytest.mark.browser
ON_POSTGRES = True  # two browsers race for the last place: row locks differ by database


def test_the_loser_of_the_race_reaches_the_full_page(live_server, page, factory, db, settings):
    study = crowd_study(
        db, factory, factory.user(), counter_env(episode_len=2, episodes_total=1),
        assignment="balanced", completion_code="PAID-1", full_code="ROOMLESS",
    )  # fmt: skip
    platform = fake_platform(page, "https://app.prolific.com")
    page.goto(link(live_server, study, PROLIFIC_PID="late-one"))
    expect(page.locator("#instructions-view")).to_be_visible()
    # meanwhile another participant takes the last place (an episode recording)
    winner = Participant(study_id=study.id, external_id="fast-one")
    db.add(winner)
    db.commit()
    episodes.create_episode(
        db, study_id=study.id, env_key="counter", session_id=None, seed=1,
        principal=Principal.for_participant(study.id, winner.id),
        data_root=settings.data_root, spec=studies.spec_of(study),
    )  # fmt: skip
    read_instructions(page)  # on to the game: the start is refused, the page follows `next`
    expect(page.locator("#code-title")).to_have_text("This study is now full")
    expect(page.locator("#code-value")).to_have_value("ROOMLESS")
    shot(page, "20-full")
    page.reload()  # no way back into the lobby: the same page again
    expect(page.locator("#code-value")).to_have_value("ROOMLESS")
    expect(page.locator("#lobby-view")).to_be_hidden()
    page.get_by_role("button", name="Return to Prolific").click()
    expect(page).to_have_url("https://app.prolific.com/submissions/complete?cc=ROOMLESS")
    assert platform and platform[-1]["method"] == "GET"
    db.expire_all()
    late = db.query(Participant).filter_by(external_id="late-one").one()
    assert late.full_at is not None and late.completed_at is None
    # another browser with the same id (typed, or guessed): told they took part, no code
    other = page.context.browser.new_context()
    try:
        elsewhere = other.new_page()
        elsewhere.goto(link(live_server, study, PROLIFIC_PID="late-one"))
        expect(elsewhere.locator("#status-title")).to_have_text("You have already taken part")
        assert "ROOMLESS" not in elsewhere.content()
    finally:
        other.close()
