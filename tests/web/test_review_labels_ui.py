"""The episodes page in real Chromium: outcomes and the excluded mark, bulk actions run as
background jobs with a progress bar, and the per-environment export offer."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from server.models import Episode
from tests.api.routes.recorded import Inserter, record_set, two_env_spec
from tests.export.recordings import Recording
from tests.factories import Factory
from tests.web._export import download_export
from tests.web.test_episodes_ui import _login

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/shots/review-labels")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Recording]]:
    """Real envlogger logs, recorded once for this module."""
    return record_set(tmp_path_factory.mktemp("recorded"))


def _outcomes(db, study_id: int) -> dict[str, tuple[str | None, str | None]]:  # type: ignore[no-untyped-def]
    db.expire_all()
    rows = db.scalars(select(Episode).where(Episode.study_id == study_id)).all()
    return {e.id: (e.player_outcome, e.outcome) for e in rows}


def _three_listed(page: Page, live_server: str, factory: Factory, db, settings, recorded):  # type: ignore[no-untyped-def]
    """A study with three completed CartPole episodes, listed on its episodes page."""
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    eps = [ins.add(study, recorded["cartpole"][i], minutes_ago=40 - 10 * i) for i in range(3)]
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(3)
    return study, eps, rows


def test_bulk_set_outcome_from_a_filter_then_override_in_the_replay(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    study, eps, rows = _three_listed(page, live_server, factory, db, settings, recorded)
    eps[0].player_outcome = "success"
    db.commit()
    ids = [e.id for e in eps]
    page.reload()
    expect(rows.filter(has_text="success")).to_have_count(1)  # the player's answer

    # Filter to the episodes nobody labelled, select all matching, set them failed.
    page.locator("#outcome-boxes").get_by_label("unset").check()
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    assert "outcome=unset" in page.url
    bar = page.get_by_role("group", name="Bulk actions")
    bar.get_by_role("button", name="Select all 2 matching").click()
    bar.get_by_label("Outcome for the selected episodes").select_option("failure")
    bar.get_by_role("button", name="Set outcome").click()
    # a filter runs as a background job: its progress bar fills, then a toast says it is done
    progress = page.get_by_role("progressbar", name="Bulk action progress")
    expect(progress).to_have_attribute("aria-valuenow", "100")
    expect(page.locator("#bulk-job-state")).to_contain_text("succeeded")
    expect(page.locator("#toasts")).to_contain_text("Outcome failure on 2 episodes (2 selected).")
    expect(page.get_by_text("No episode matches these filters")).to_be_visible()
    page.screenshot(path=str(SHOTS / "bulk-outcome.png"), full_page=True)
    assert _outcomes(db, study.id) == {
        ids[0]: ("success", None), ids[1]: (None, "failure"), ids[2]: (None, "failure"),
    }  # fmt: skip

    # Failed ones: the two just set. The reviewer says one of them succeeded after all.
    page.locator("#outcome-boxes").get_by_label("unset").uncheck()
    page.locator("#outcome-boxes").get_by_label("failure").check()
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    rows.filter(has=page.get_by_label(f"Select episode {ids[1]}")).get_by_role(
        "button", name="Replay"
    ).click()
    review = page.locator(".ep-review")
    expect(review.get_by_label("Outcome")).to_have_value("failure")
    expect(review).to_contain_text("Player: not asked or skipped")
    review.get_by_label("Outcome").select_option("success")
    expect(rows).to_have_count(1)  # the list reloads: it is no longer a failure
    page.screenshot(path=str(SHOTS / "replay-review.png"), full_page=True)
    assert _outcomes(db, study.id)[ids[1]] == (None, "success")


def test_excluded_episodes_are_badged_filtered_and_left_out_of_exports(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    _study, eps, rows = _three_listed(page, live_server, factory, db, settings, recorded)
    page.get_by_label(f"Select episode {eps[1].id}").check()
    page.get_by_role("group", name="Bulk actions").get_by_role("button", name="Exclude").click()
    expect(page.locator("#toasts")).to_contain_text("Excluded 1 episode from exports.")
    expect(rows.filter(has_text="excluded")).to_have_count(1)
    page.get_by_label("Excluded episodes", exact=True).select_option("true")
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(1)
    page.get_by_label("Excluded episodes", exact=True).select_option("")
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(3)
    page.screenshot(path=str(SHOTS / "excluded.png"), full_page=True)

    # Export all matching: the excluded episode stays out unless asked for.
    page.get_by_label("Dataset name").fill("kept")
    page.get_by_role("button", name="Start export").click()
    expect(page.locator("#job-state")).to_contain_text("succeeded", timeout=120_000)
    expect(page.locator("#job-counts")).to_contain_text("2 / 2 episodes")
    page.get_by_label("Include excluded episodes").check()
    page.get_by_role("button", name="Start export").click()
    expect(page.locator("#job-counts")).to_contain_text("3 episodes")
    expect(page.locator("#job-state")).to_contain_text("succeeded", timeout=120_000)
    expect(page.locator("#job-counts")).to_contain_text("3 / 3 episodes")


def test_mixed_spaces_offer_one_dataset_per_environment(
    live_server: str, page: Page, factory: Factory, db, settings, recorded, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner, two_env_spec())
    ins = Inserter(db, settings.data_root)
    ins.add(study, recorded["cartpole"][0], minutes_ago=20)
    ins.add(study, recorded["mountaincar"][0], env_key="mountaincar", minutes_ago=10)
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.locator("#episodes-body tr")).to_have_count(2)

    answers: list[tuple[str, int]] = []
    page.on("response", lambda r: "/exports" in r.url and answers.append((r.url, r.status)))
    page.get_by_label("Dataset name").fill("mixed")
    # the dialog asked the preview: it says so before anything starts
    ahead = page.locator("#ex-preview")
    expect(ahead).to_contain_text(
        "The environments cartpole, mountaincar have different observation or action spaces"
    )
    page.get_by_label("Format").select_option("envlogger")
    expect(ahead).to_contain_text("the envlogger export writes one folder per environment")
    page.get_by_label("Format").select_option("tfds")
    page.get_by_role("button", name="Start export").click()
    offer = page.locator("#split-offer")
    expect(offer).to_contain_text("which one dataset cannot hold")
    expect(page.locator("#toasts .toast")).to_have_count(0)  # the offer, not an error toast
    assert [status for _, status in answers if status >= 400] == []  # no failing request
    assert not any(url.endswith("/exports") for url, _ in answers)  # nothing started yet
    page.screenshot(path=str(SHOTS / "split-offer.png"), full_page=True)
    page.locator("#export-card").screenshot(path=str(SHOTS / "export-split.png"))
    offer.get_by_role("button", name="Export one dataset per environment").click()
    expect(offer).to_be_hidden()
    expect(page.locator("#job-state")).to_contain_text("succeeded", timeout=120_000)
    expect(page.locator("#job-counts")).to_contain_text("2 / 2 episodes")
    saved = download_export(page, tmp_path / "got.zip")
    with zipfile.ZipFile(saved) as zf:
        names = set(zf.namelist())
    for env in ("cartpole", "mountaincar"):
        assert f"mixed/mixed_{env}/mixed_{env}/1.0.0/dataset_info.json" in names


def test_error_toasts_stay_until_dismissed_and_show_once(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    Inserter(db, settings.data_root).add(study, recorded["cartpole"][0], minutes_ago=5)
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.locator("#episodes-body tr")).to_have_count(1)
    # by keyboard, as a person may: a click's point can miss while the page still lays out
    # its later parts (under load the radio moved between Playwright's aim and its click)
    checked_rows = page.get_by_label("Checked rows")
    checked_rows.focus()
    page.keyboard.press("Space")
    expect(checked_rows).to_be_checked()
    start = page.get_by_role("button", name="Start export")
    start.click()
    start.click()  # the same error again: still one toast
    toast = page.get_by_role("alert").filter(has_text="Check some episodes first.")
    expect(toast).to_have_count(1)
    # it stays beside a later action's toast, until its × is pressed
    page.locator("#episodes-body input[type=checkbox]").first.check()
    bar = page.get_by_role("group", name="Bulk actions")
    bar.get_by_label("Tag for the selected episodes").fill("seen")
    bar.get_by_role("button", name="Add tag").click()
    expect(page.locator("#toasts")).to_contain_text("Tagged 1 episode “seen”")
    expect(toast).to_have_count(1)
    page.screenshot(path=str(SHOTS / "error-toast.png"))
    toast.get_by_role("button", name="Dismiss").click()
    expect(toast).to_have_count(0)
