"""The live study dashboard in real Chromium: a second browser plays, the dashboard follows."""

from __future__ import annotations

import os
import signal

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from server.models import User
from tests.factories import Factory
from tests.player.conftest import activate, counter_env, spec
from tests.test_replicas import _login, _playing
from tests.test_server_crash import PASSWORD as RESTART_PASSWORD
from tests.test_server_crash import _free_port
from tests.test_server_crash import _serve as serve
from tests.web._crowd import shot
from tests.web._join import join_study, to_ready_gate
from tests.web.test_designer_ui import log_in

pytestmark = pytest.mark.browser


def _participant_page(browser, live_server: str, token: str, errors: list[str]) -> Page:  # type: ignore[no-untyped-def]
    """A second browser (its own context) joining the study as participant P-live."""
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    player = context.new_page()
    player.on("pageerror", lambda exc: errors.append(str(exc)))
    player.set_default_timeout(15_000)
    join_study(player, live_server, token, "P-live")
    expect(player.locator("#study-name")).to_have_text("Player test")
    to_ready_gate(player, "Counter")
    player.keyboard.press("Enter")
    expect(player.locator("#st-phase")).to_have_text("playing")
    return player


def test_dashboard_follows_a_live_session(live_server, page, browser, factory: Factory, db):  # type: ignore[no-untyped-def]
    owner = factory.user()
    env = {**counter_env(episode_len=50), "episodes_total": 4}
    study = activate(db, factory.study(owner, spec(env)))
    log_in(page, live_server, owner)
    page.get_by_role("button", name="Player test").click()
    page.get_by_role("link", name="Live dashboard").click()
    expect(page).to_have_url(f"{live_server}/live.html?study={study.id}")
    expect(page.locator("#conn")).to_have_text("live")
    expect(page.get_by_text("Nobody is playing right now.")).to_be_visible()
    expect(page.locator("#participants [data-count=joined]")).to_have_text("0")

    errors: list[str] = []
    player = _participant_page(browser, live_server, study.permalink_token, errors)
    try:
        for _ in range(3):
            player.keyboard.press("KeyA")
        expect(player.locator("#st-step")).to_have_text("3")
        row = page.locator("#sessions-body tr", has_text="P-live")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("Counter".lower())  # the environment key
        expect(row).to_contain_text("playing")
        expect(row.locator("[data-col=step]")).to_have_text("3")  # pushed, not reloaded
        for _ in range(2):
            player.keyboard.press("KeyA")
        expect(player.locator("#st-step")).to_have_text("5")
        expect(row.locator("[data-col=step]")).to_have_text("5")
        expect(page.locator("#today [data-count=recording]")).to_have_text("1")
        expect(page.locator("#participants [data-count=started]")).to_have_text("1")
        expect(page.locator("#quotas [data-env=counter]")).to_contain_text("0 / 4 · 1 recording")
        shot(page, "40-live-dashboard")

        player.keyboard.press("Delete")  # the participant cancels (Enter confirms): waiting
        expect(player.locator("#cancel-yes")).to_be_enabled()  # the question's guard is over
        player.keyboard.press("Enter")
        expect(player.locator("#after-save-text")).to_contain_text("Episode canceled.")
        expect(row).to_contain_text("waiting")
        expect(page.locator("#today [data-count=canceled]")).to_have_text("1")
        expect(page.locator("#today [data-count=recording]")).to_have_text("0")
    finally:
        player.context.close()
    assert not errors


def test_the_episodes_page_links_to_the_dashboard(live_server, page, factory: Factory, db):  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, spec(counter_env()))
    log_in(page, live_server, owner)
    expect(page.get_by_role("button", name="Player test")).to_be_visible()  # logged in
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.locator("#study-name")).to_have_text("Player test")
    shot(page, "41-episodes-live-link")
    page.get_by_role("link", name="Live dashboard").click()
    expect(page).to_have_url(f"{live_server}/live.html?study={study.id}")
    expect(page.locator("#study-name")).to_have_text("Player test")
    expect(page.locator("#quotas [data-env=counter]")).to_contain_text("0 (no total)")


def test_dashboard_reconnects_across_a_server_restart(page, settings, db):  # type: ignore[no-untyped-def]
    """The page keeps its socket through kill -9 and a new start of the server: the figures
    come from the database, so the restarted server shows the episode the kill abandoned."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = serve(settings, port, heartbeat_interval_s="0.5")
    try:
        http = _login(base, settings.admin_email)
        study = http.post("/api/studies", json={"spec": spec(counter_env(episode_len=1000))})
        assert study.status_code == 201, study.text
        study_id = study.json()["id"]
        admin = db.scalar(select(User).where(User.email == settings.admin_email))
        log_in(page, base, admin, RESTART_PASSWORD)
        expect(page.get_by_role("button", name="Player test")).to_be_visible()
        page.goto(f"{base}/live.html?study={study_id}")
        expect(page.locator("#conn")).to_have_text("live")
        with _playing(port, http, study_id) as (play, _episode_id):
            assert play.press(4) == 4
            row = page.locator("#sessions-body tr")
            expect(row.locator("[data-col=step]")).to_have_text("4")
            expect(row).to_contain_text("designer admin@example.com")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            expect(page.locator("#conn")).to_have_text("reconnecting…")
        proc = serve(settings, port, heartbeat_interval_s="0.5")  # the same address again
        expect(page.locator("#conn")).to_have_text("live", timeout=30_000)
        expect(page.get_by_text("Nobody is playing right now.")).to_be_visible()
        # the admin's episode is a test play: counted apart from participants' episodes
        expect(page.locator("#today [data-count='test plays (not counted)']")).to_have_text("1")
        expect(page.locator("#today [data-count=abandoned]")).to_have_text("0")
        expect(page.locator("#today [data-count=recording]")).to_have_text("0")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
