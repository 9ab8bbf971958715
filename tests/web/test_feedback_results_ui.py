"""A feedback study's results in real Chromium: the designer opens the participants page and
the live dashboard of a study whose judges judged real recorded clips through the judge API,
reads each judge's gold accuracy and agreement (a judge screened out by gold says so), the
judgements per minute, and downloads the preference dataset; before any judgement, both pages
say there is nothing to download yet."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import func, select

from server.models import Judgement
from server.services.feedback import dataset
from tests.api.routes.judged import played
from tests.api.routes.test_feedback_results import join, judge, three_judges
from tests.factories import Factory
from tests.web._crowd import shot
from tests.web.test_designer_ui import log_in

pytestmark = pytest.mark.browser


def _answered(db, study) -> int:  # type: ignore[no-untyped-def]
    return int(db.scalar(select(func.count()).select_from(Judgement).where(
        Judgement.study_id == study.id, Judgement.answered_at.is_not(None))) or 0)  # fmt: skip


def _download(page: Page, name: str) -> Path:
    with page.expect_download() as download:
        page.get_by_role("link", name=name).click()
    return Path(download.value.path())


def test_the_designer_reads_the_judges_and_downloads_the_preferences(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    world = played(db, factory, settings.data_root, recorded)
    study, made = three_judges(world, db, factory)
    answered = _answered(db, study)
    log_in(page, live_server, world.owner)
    page.get_by_role("button", name="Which is better?").click()
    page.get_by_role("link", name="Participants").click()
    expect(page).to_have_url(f"{live_server}/participants.html?study={study.id}")
    results = page.get_by_role("region", name="Judgements")
    expect(results.locator("[data-count=judgements]")).to_have_text(str(answered))
    expect(results.locator("[data-count='screened out by gold']")).to_have_text("1")
    expect(results.locator("[data-count=agreement]")).to_have_text("100%")
    expect(results.locator("[data-question=balance]")).to_contain_text("compare")
    # the players' columns give way to the judges'
    expect(page.get_by_role("columnheader", name="Gold right")).to_be_visible()
    expect(page.get_by_role("columnheader", name="Play time")).to_be_hidden()
    careless = page.locator("#participants-body tr", has_text="careless")
    expect(careless.locator(".badge", has_text="screened out")).to_have_count(1)
    expect(careless).to_contain_text("failed the gold questions")
    expect(careless.locator("[data-col=gold]")).to_have_text("0 / 2 (0%)")
    # the study asks no consent: "not asked", not "declined" (the screen-out was the gold's)
    expect(careless.locator("td").nth(2)).to_have_text("not asked")
    careful = page.locator("#participants-body tr", has_text="careful-2")
    expect(careful.locator("[data-col=judgements]")).to_have_text("4")
    expect(careful.locator("[data-col=gold]")).to_contain_text("(100%)")
    expect(careful.locator("[data-col=agreement]")).to_have_text("100%")
    shot(page, "60-feedback-participants")
    careless.scroll_into_view_if_needed()
    shot(page, "60b-feedback-participants-screened-out")

    table = pq.read_table(_download(page, "Download Parquet"))
    assert table.num_rows == answered and table.schema.equals(dataset.SCHEMA)
    lines = _download(page, "Download JSONL").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == table.to_pylist()
    rows = list(csv.DictReader(io.StringIO(_download(page, "Download CSV").read_text("utf-8"))))
    assert {r["external_id"]: r["gold_accuracy"] for r in rows}["careless"] == "0.0000"

    page.get_by_role("link", name="Live dashboard").click()
    expect(page).to_have_url(f"{live_server}/live.html?study={study.id}")
    expect(page.locator("#conn")).to_have_text("live")
    judging = page.get_by_role("region", name="Judging")
    expect(judging.locator("[data-count=judgements]")).to_have_text(str(answered))
    expect(judging.locator("[data-count=agreement]")).to_contain_text("100%")
    expect(judging.locator("[data-count='active judges']")).to_have_text("2")
    expect(judging.locator("#judging-quota")).to_contain_text("/ 40")
    newest = judging.locator("#rate [data-minute='0']")
    expect(newest).to_have_attribute("title", f"{answered} judgements in the last minute")
    expect(page.get_by_role("heading", name="Active sessions")).to_be_hidden()
    expect(page.locator("#participants [data-count='by gold']")).to_have_text("1")

    # a fourth judge answers while the designer watches: the dashboard follows, unreloaded
    late = judge(factory.client(), db, join(factory.client(), study, "late-judge"), True)
    expect(judging.locator("[data-count=judgements]")).to_have_text(str(answered + late))
    expect(newest).to_have_attribute("title", f"{answered + late} judgements in the last minute")
    shot(page, "61-feedback-live")
    lines = _download(page, "Download JSONL").read_text(encoding="utf-8").splitlines()
    assert len(lines) == answered + late == _answered(db, study)


def test_before_any_judgement_there_is_nothing_to_download(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    world = played(db, factory, settings.data_root, recorded)
    study = world.make(db, factory)
    log_in(page, live_server, world.owner)
    page.get_by_role("button", name="Which is better?").click()
    page.get_by_role("link", name="Participants").click()
    results = page.get_by_role("region", name="Judgements")
    expect(results.get_by_text("No judgements yet")).to_be_visible()
    expect(results.get_by_role("link", name="Download Parquet")).to_have_count(0)
    expect(results.locator("[data-count=agreement]")).to_have_text("–")
    expect(page.get_by_text("No participants yet")).to_be_visible()
    shot(page, "62-feedback-participants-empty")
    page.goto(f"{live_server}/live.html?study={study.id}")
    judging = page.get_by_role("region", name="Judging")
    expect(judging.get_by_text("No judgements yet")).to_be_visible()
    expect(judging.locator("[data-count=agreement]")).to_contain_text("no item has two judges")
    expect(judging.locator("#rate [data-minute]")).to_have_count(10)
    shot(page, "63-feedback-live-empty")
