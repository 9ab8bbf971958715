"""The designer's participants page in real Chromium: empty state, rows, odd ids, CSV."""

from __future__ import annotations

import csv
import io

import pytest
from playwright.sync_api import Page, expect

from tests.factories import Factory
from tests.player.conftest import activate, counter_env, spec
from tests.web._crowd import crowd_study, link, shot
from tests.web.test_designer_ui import log_in

pytestmark = pytest.mark.browser

ODD_ID = "<img/src=x/onerror=alert(1)>✓"  # markup and unicode: stored, shown as text


def test_participants_page_from_the_study_panel(
    live_server: str, page: Page, factory: Factory, db
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = activate(db, factory.study(owner, spec(counter_env(), crowd={"consent": "Agree?"})))
    log_in(page, live_server, owner)
    page.get_by_role("button", name="Player test").click()
    page.get_by_role("link", name="Participants").click()
    expect(page).to_have_url(f"{live_server}/participants.html?study={study.id}")
    expect(page.locator("#study-name")).to_have_text("Player test")
    expect(page.get_by_text("No participants yet")).to_be_visible()
    shot(page, "30-participants-empty")

    player = factory.client()  # two workers arrive (the API a player page calls)
    joined = player.post("/api/play/join", json={"token": study.permalink_token,
                         "params": {"PROLIFIC_PID": "pp-1", "STUDY_ID": "S1"}})  # fmt: skip
    assert joined.status_code == 200, joined.text
    ticket = {"X-Play-Ticket": joined.json()["ticket"]}
    assert player.post("/api/play/consent", json={"accept": True}, headers=ticket).is_success
    odd = player.post(
        "/api/play/join", json={"token": study.permalink_token, "participant_id": ODD_ID}
    )
    assert odd.status_code == 200, odd.text
    page.get_by_role("button", name="Refresh").click()
    rows = page.locator("#participants-body tr")
    expect(rows).to_have_count(2)
    first = page.locator("#participants-body tr", has_text="pp-1")
    expect(first).to_contain_text("Prolific")
    expect(first).to_contain_text("study S1")
    expect(first).to_contain_text("given")
    expect(first).to_contain_text("not yet")
    expect(page.locator("#participants-body td.pt-id", has_text=ODD_ID)).to_have_count(1)
    # the study asks for consent: the second worker has not answered yet
    odd_row = page.locator("#participants-body tr", has_text="Typed id")
    expect(odd_row.locator("td").nth(2)).to_have_text("not yet")
    assert page.locator("#participants-body img").count() == 0
    shot(page, "31-participants")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    text = open(download.value.path(), encoding="utf-8").read()
    assert text.splitlines()[0].startswith("external_id")
    assert "pp-1" in text


def test_completed_full_and_screened_out_are_told_apart(
    live_server: str, page: Page, factory: Factory, db
) -> None:  # type: ignore[no-untyped-def]
    from server.models import Participant, utcnow

    owner = factory.user()
    study = activate(db, factory.study(owner, spec(counter_env())))
    player = factory.client()
    for who in ("done-1", "full-1", "out-1"):
        res = player.post("/api/play/join", json={"token": study.permalink_token,
                          "params": {"PROLIFIC_PID": who}})  # fmt: skip
        assert res.status_code == 200, res.text
    rows = {p.external_id: p for p in db.query(Participant).filter_by(study_id=study.id)}
    rows["done-1"].completed_at = utcnow()
    rows["full-1"].full_at = utcnow()  # the study filled up before they finished
    rows["out-1"].screened_out_at = utcnow()  # declined, or left on a phone
    db.commit()
    log_in(page, live_server, owner)
    page.get_by_role("button", name="Player test").click()
    page.get_by_role("link", name="Participants").click()
    for who, badge in (("done-1", "completed"), ("full-1", "full"), ("out-1", "screened out")):
        row = page.locator("#participants-body tr", has_text=who)
        expect(row.locator(".badge", has_text=badge)).to_have_count(1)
    expect(page.locator("#participants-body tr", has_text="full-1")).not_to_contain_text(
        "completed"
    )
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    text = open(download.value.path(), encoding="utf-8").read()
    outcomes = {r["external_id"]: r["outcome"] for r in csv.DictReader(io.StringIO(text))}
    assert outcomes == {"done-1": "completed", "full-1": "full", "out-1": "screened_out"}


def test_a_device_screen_out_is_told_from_a_consent_refusal(
    live_server: str, page: Page, browser, factory: Factory, db
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = crowd_study(db, factory, owner, consent="Agree?", inputs=["keyboard"],
                        screenout_code="OUT-1")  # fmt: skip
    # on a phone, a keyboard-only study: they leave at the device check, never asked
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                has_touch=True)  # fmt: skip
    on_phone = phone.new_page()
    on_phone.goto(link(live_server, study, PROLIFIC_PID="left-on-phone"))
    on_phone.get_by_role("button", name="Leave the study").tap()
    expect(on_phone.locator("#code-value")).to_have_value("OUT-1")
    phone.close()
    # on a computer: they read the consent and say no
    page.goto(link(live_server, study, PROLIFIC_PID="said-no"))
    page.get_by_role("button", name="I do not agree").click()
    expect(page.locator("#code-value")).to_have_value("OUT-1")

    log_in(page, live_server, owner)
    page.get_by_role("button", name="Player test").click()
    page.get_by_role("link", name="Participants").click()
    device = page.locator("#participants-body tr", has_text="left-on-phone")
    declined = page.locator("#participants-body tr", has_text="said-no")
    expect(device.locator("td").nth(2)).to_have_text("never shown")
    expect(device.locator("td").nth(8)).to_contain_text("left at the device check")
    expect(declined.locator("td").nth(2)).to_have_text("declined")
    expect(declined.locator("td").nth(8)).to_contain_text("declined the consent")
    for row in (device, declined):  # both are screened out (with the screen-out code)
        expect(row.locator(".badge", has_text="screened out")).to_have_count(1)
    shot(page, "32-participants-screened-out")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    text = open(download.value.path(), encoding="utf-8").read()
    reasons = {r["external_id"]: r["screenout_reason"] for r in csv.DictReader(io.StringIO(text))}
    assert reasons == {"left-on-phone": "device", "said-no": "declined"}
