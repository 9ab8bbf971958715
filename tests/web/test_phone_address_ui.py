"""The pairing panel's address in real Chromium: the test server listens on 127.0.0.1, which
no phone can reach, so a designer's test play is told to set STUDIO_PUBLIC_URL (a participant
is told nothing of it: the operator's problem); with STUDIO_PUBLIC_URL set, the panel, its
link and its QR code name the public address and warn of nothing."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.factories import PASSWORD
from tests.player.conftest import activate, counter_env, spec
from tests.web._join import join_study

pytestmark = pytest.mark.browser
PUBLIC = "https://studio.example.org"


@pytest.fixture
def settings(settings, request):  # type: ignore[no-untyped-def]
    """The test settings, with ``STUDIO_PUBLIC_URL`` when a test passes one (indirect)."""
    public = getattr(request, "param", "")
    return settings.model_copy(update={"public_url": public}) if public else settings


def _phone_study(factory, designer):  # type: ignore[no-untyped-def]
    env = counter_env(episode_len=1000)
    env["controls"]["keys"]["PhoneGrip"] = 2  # the study binds a phone: the panel shows
    return factory.study(designer, spec(env))


def _test_play(page, live_server, designer, study) -> None:  # type: ignore[no-untyped-def]
    res = page.context.request.post(
        f"{live_server}/api/auth/login", data={"email": designer.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/player.html?study={study.id}")
    page.get_by_role("button", name="Play Counter").click()
    expect(page.locator("#phone-panel")).to_be_visible()
    expect(page.locator("#phone-code")).to_have_text(re.compile(r"^[A-Z0-9]{3} [A-Z0-9]{3}$"))


def test_a_test_play_on_127_0_0_1_is_told_no_phone_reaches_it(live_server, page, factory, db):
    designer = factory.user()
    study = _phone_study(factory, designer)
    _test_play(page, live_server, designer, study)
    host = live_server.removeprefix("http://")
    expect(page.locator("#phone-address")).to_have_text(f"{host}/phone.html")
    warning = page.locator("#phone-unreachable")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("A phone cannot reach 127.0.0.1: set STUDIO_PUBLIC_URL")
    page.locator("#phone-panel").screenshot(path="/tmp/shots/phone-panel-loopback.png")

    # a participant on the same address is told nothing of it: the operator's problem
    page.context.clear_cookies()
    activate(db, study)
    join_study(page, live_server, study.permalink_token, "P-phone")
    page.get_by_role("button", name="Play Counter").click()
    expect(page.locator("#phone-code")).to_have_text(re.compile(r"^[A-Z0-9]{3} [A-Z0-9]{3}$"))
    expect(page.locator("#phone-address")).to_have_text(f"{host}/phone.html")
    expect(warning).to_be_hidden()
    expect(page.locator("#phone-panel")).not_to_contain_text("cannot")


@pytest.mark.parametrize("settings", [PUBLIC], indirect=True)
def test_the_panel_names_the_public_address(live_server, page, factory, db):
    designer = factory.user()
    _test_play(page, live_server, designer, _phone_study(factory, designer))
    expect(page.locator("#phone-address")).to_have_text("studio.example.org/phone.html")
    expect(page.locator("#phone-unreachable")).to_be_hidden()
    expect(page.locator("#phone-qr")).to_have_attribute("src", re.compile(r"^data:image/svg\+xml"))
