"""The episodes page in real Chromium: quality badges, the latency column, and filtering by
length and a quality flag, kept in the URL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from server.models import Episode, utcnow
from server.services.review import quality
from tests.api.routes.recorded import Inserter, record_set
from tests.export.recordings import Recording
from tests.factories import PASSWORD, Factory

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/shots/quality")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Recording]]:
    """Real envlogger logs (CartPole episodes of 9, 13, 7, 11 and 6 steps)."""
    return record_set(tmp_path_factory.mktemp("recorded"))


def test_filter_by_length_and_p99_flag_shows_badges(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    eps = [ins.add(study, r, minutes_ago=10 - i) for i, r in enumerate(recorded["cartpole"])]
    old = eps.pop()  # left as recorded before the signals existed: "not computed"
    assert quality.backfill(db, study.id) == 5
    old.quality_at = None
    # the recordings' input latency is a constant 28 ms: give three a slow tail
    for episode, p99 in zip(eps, (40.0, 180.0, 150.0, 120.0), strict=True):
        episode.latency_p99_ms = p99
    db.commit()
    assert [e.steps for e in eps] == [9, 13, 7, 11]

    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(5)
    row = page.locator(f"#episodes-body tr[data-id='{eps[1].id}']")
    expect(row.locator(".ep-q-slow")).to_have_text("p99 180 ms")
    expect(row.get_by_role("cell", name="28 ms")).to_be_visible()  # the latency p50 column
    expect(page.locator(f"tr[data-id='{old.id}'] .ep-q-none")).to_have_text("not computed")
    expect(page.locator(f"tr[data-id='{eps[0].id}'] .ep-q")).to_have_count(0)

    page.get_by_label("Steps ≥").fill("9")
    page.get_by_label("p99 latency over (ms)").fill("100")
    page.get_by_role("button", name="Apply filters").click()
    # actions, as the list counts them: 12 at 180 ms and 10 at 120 (6 at 150: too short)
    expect(rows).to_have_count(2)
    ids = {r.get_attribute("data-id") for r in rows.all()}
    assert ids == {eps[1].id, eps[3].id}
    expect(page.locator("#episodes-body .ep-q-slow")).to_have_text(
        ["p99 120 ms", "p99 180 ms"]
    )  # newest first
    # the URL holds the API's filter: RLDS steps, one more than the actions
    assert "min_steps=10" in page.url and "p99_over_ms=100" in page.url
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "filtered.png"), full_page=True)

    page.reload()  # the URL keeps the filters
    expect(rows).to_have_count(2)
    expect(page.get_by_label("Steps ≥")).to_have_value("9")
    expect(page.get_by_label("p99 latency over (ms)")).to_have_value("100")

    page.get_by_label("Steps ≥").fill("")
    page.get_by_label("Shorter than (× median)").fill("0.8")  # median 9: under 7.2 steps
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", eps[2].id)
    assert "under_median=0.8" in page.url

    page.get_by_role("button", name="Reset").click()
    expect(rows).to_have_count(5)
    page.get_by_role("button", name="Latency p50").click()
    head = page.locator("th[data-sort=latency_p50_ms]")
    expect(head).to_have_attribute("aria-sort", "descending")
    assert "sort=-latency_p50_ms" in page.url
    page.screenshot(path=str(SHOTS / "all.png"), full_page=True)


def test_next_and_previous_page_by_cursor(
    live_server: str, page: Page, factory: Factory, db
) -> None:  # type: ignore[no-untyped-def]
    """120 episodes sorted by latency: Next pages on by the server's cursor (uncounted),
    Previous goes back; the rows are the ones the offsets would give."""
    owner = factory.user()
    study = factory.study(owner)
    env = study.environments[0]
    now = utcnow()
    for i in range(120):
        db.add(Episode(
            study_id=study.id, study_env_id=env.id, env_key=env.env_key, status="completed",
            steps=10, total_reward=0.0, started_at=now - timedelta(minutes=i),
            storage_path="", latency_p50_ms=float(i % 40), quality_at=now,
        ))  # fmt: skip
    db.commit()
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/episodes.html?study={study.id}&sort=-latency_p50_ms")
    rows = page.locator("#episodes-body tr")
    expect(page.locator("#page-info")).to_have_text("1–50 of 120")
    api = f"{live_server}/api/studies/{study.id}/episodes?sort=-latency_p50_ms&limit=50"
    expected = [e["id"] for e in page.request.get(f"{api}&offset=50").json()["items"]]
    with page.expect_request(lambda r: "after=" in r.url and "count=false" in r.url):
        page.get_by_role("button", name="Next ›").click()
    expect(page.locator("#page-info")).to_have_text("51–100 of 120")
    assert [r.get_attribute("data-id") for r in rows.all()] == expected
    page.get_by_role("button", name="Next ›").click()
    expect(page.locator("#page-info")).to_have_text("101–120 of 120")
    expect(rows).to_have_count(20)
    expect(page.get_by_role("button", name="Next ›")).to_be_disabled()
    page.get_by_role("button", name="‹ Previous").click()
    expect(page.locator("#page-info")).to_have_text("51–100 of 120")
    assert [r.get_attribute("data-id") for r in rows.all()] == expected
