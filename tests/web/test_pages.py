"""Every page under the Content-Security-Policy, and /docs with no network beyond the app."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, expect

from tests.factories import PASSWORD, Factory
from tests.player.conftest import activate

pytestmark = pytest.mark.browser


def _same_origin_only(page: Page, base: str) -> list[str]:
    """Abort every request to another origin; returns the list of those that were tried."""
    origin = urlsplit(base).netloc
    refused: list[str] = []

    def handle(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).scheme in {"data", "blob"} or urlsplit(url).netloc == origin:
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    page.route("**/*", handle)
    return refused


def test_docs_renders_the_api_from_the_app_alone(live_server: str, page: Page) -> None:
    refused = _same_origin_only(page, live_server)
    page.goto(f"{live_server}/docs")
    login = page.locator(".opblock-post", has_text="/api/auth/login")
    expect(login).to_be_visible()
    expect(login.locator(".opblock-summary-method")).to_have_text("POST")
    login.locator(".opblock-summary").click()  # expands: the request body renders
    expect(login.get_by_text("Request body")).to_be_visible()
    expect(login.get_by_role("button", name="Try it out")).to_be_visible()
    expect(page.locator(".opblock-get", has_text="/api/health")).to_be_visible()
    assert refused == []


def test_studio_pages_load_under_the_policy(live_server: str, page: Page, factory: Factory, db):
    """The page fixture fails the test on any CSP violation reported to the console."""
    designer = factory.user()
    study = activate(db, factory.study(designer))
    refused = _same_origin_only(page, live_server)

    page.goto(f"{live_server}/player.html?token={study.permalink_token}")
    expect(page.get_by_label("Participant ID")).to_be_visible()

    page.goto(f"{live_server}/")
    form = page.get_by_role("form", name="Log in")
    form.get_by_label("Email").fill(designer.email)
    form.get_by_label("Password").fill(PASSWORD)
    form.get_by_role("button", name="Log in").click()
    expect(page.locator("#studies-body tr", has_text=study.name)).to_be_visible()

    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.get_by_text("No episodes yet")).to_be_visible()

    page.goto(f"{live_server}/datasets.html")
    expect(page.get_by_text("No datasets yet")).to_be_visible()
    assert refused == []


def test_a_violation_is_caught_by_the_page_fixture(live_server: str, browser) -> None:  # type: ignore[no-untyped-def]
    """The console check the page fixture relies on does see a refused inline script."""
    context = browser.new_context()
    page = context.new_page()
    seen: list[str] = []
    page.on("console", lambda msg: seen.append(msg.text))
    page.goto(f"{live_server}/docs")
    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.ran = 1'; document.body.append(s); }"
    )
    assert page.evaluate("() => window.ran") is None
    context.close()
    assert any("Content Security Policy" in text for text in seen), seen


def test_every_page_has_the_same_top_bar(live_server: str, page: Page, factory: Factory, db):
    """One module draws the brand, the breadcrumb and the skip link of every page."""
    designer = factory.user()
    study = activate(db, factory.study(designer))
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": designer.email, "password": PASSWORD}
    )
    assert res.ok
    trails = {
        "episodes": f"Studies › {study.name} › Episodes",
        "live": f"Studies › {study.name} › Episodes › Live",
        "participants": f"Studies › {study.name} › Participants",
        "datasets": "Studies › Datasets",
    }
    for name, trail in trails.items():
        page.goto(f"{live_server}/{name}.html?study={study.id}")
        crumbs = page.get_by_role("navigation", name="Breadcrumb")
        expect(crumbs).to_have_text(trail)
        expect(crumbs.get_by_role("link", name="Studies")).to_have_attribute("href", "/")
        expect(page.locator("header.topbar .brand")).to_have_attribute("href", "/")
        page.keyboard.press("Tab")  # the first stop is the skip link
        expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.goto(f"{live_server}/")
    expect(page.locator("header.topbar a.brand")).to_have_text("RLDS Studio")
    expect(page.locator(".skip-link")).to_have_count(1)
    page.goto(f"{live_server}/player.html?token={study.permalink_token}")
    brand = page.locator("header.topbar .brand")
    expect(brand).to_have_text(study.name)  # a participant sees the study, not a way out
    expect(brand).not_to_have_attribute("href", "/")
