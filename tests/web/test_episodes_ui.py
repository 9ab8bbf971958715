"""The episodes page in real Chromium: filter, replay, tag a step range, export, download."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect
from sqlalchemy import select

from server.models import Episode, EpisodeTag, StepTag
from server.recording.format import episode_dir
from tests.api.routes.recorded import CARTPOLE_SPEC, LONG_STEPS, ImageEnv, Inserter, record_set
from tests.export.recordings import Recording, record_episode
from tests.factories import PASSWORD, Factory
from tests.web._export import download_export, wait_export

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Recording]]:
    """Real envlogger logs, recorded once for this module."""
    return record_set(tmp_path_factory.mktemp("recorded"))


def test_filter_replay_tag_and_export(
    live_server: str, page: Page, factory: Factory, db, settings, recorded, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    ins.add(study, cp[0], minutes_ago=30)
    ins.add(study, cp[1], minutes_ago=20, tags=("good",))
    ins.add(study, cp[2], minutes_ago=10, status="abandoned", participant="worker-9")
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok

    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(3)
    expect(page.locator("#returns-plot circle")).to_have_count(3)

    # A filter that matches nothing explains itself; then filter to completed episodes.
    page.get_by_label("With tag").fill("nope")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("No episode matches these filters")).to_be_visible()
    page.get_by_label("With tag").fill("")
    page.locator("#status-boxes").get_by_label("completed").check()
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    expect(page.locator("#episodes-body")).not_to_contain_text("abandoned")

    # Replay the oldest completed episode and tag steps 1..3 with the keyboard.
    rows.filter(has_text="worker-1").last.get_by_role("button", name="Replay").click()
    frame = page.locator("#frame")
    expect(page.locator("#step-label")).to_have_text(f"0 / {cp[0].num_steps - 1}")
    # a function, not an expression: Playwright evals expression strings, which the CSP refuses
    page.wait_for_function("img => img.naturalWidth > 0", arg=frame.element_handle())
    expect(page.get_by_text("mark range start / end")).to_be_visible()
    page.locator("#st-name").fill("wobble")
    frame.click()  # keyboard focus back on the page, not the text field
    page.keyboard.press("ArrowRight")
    page.keyboard.press("[")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("]")
    expect(page.locator("#step-label")).to_have_text(f"3 / {cp[0].num_steps - 1}")
    page.keyboard.press("t")
    expect(page.locator("#step-tags")).to_contain_text("wobble: steps 1..3")
    tags = db.scalars(select(StepTag).where(StepTag.episode_id == cp[0].episode_id)).all()
    assert [(t.name, t.start_step, t.end_step) for t in tags] == [("wobble", 1, 3)]

    # Export what the filter shows and follow the progress bar to the download link.
    page.get_by_label("Dataset name").fill("ui_export")
    page.get_by_role("button", name="Start export").click()
    wait_export(page)
    expect(page.locator("#job-counts")).to_contain_text("2 / 2 episodes")
    link = page.get_by_role("link", name="Download")
    with page.expect_download() as info:
        link.click()
    download = info.value
    assert download.suggested_filename == "ui_export.zip"
    saved = tmp_path / "got.zip"
    download.save_as(saved)
    with zipfile.ZipFile(saved) as zf:
        names = zf.namelist()
    assert "ui_export/ui_export/1.0.0/dataset_info.json" in names


# --- the replay of a long episode: keyboard, step detail, chart, deep links ------------------
SHOTS = Path("/tmp/review-shots")


def _login(page: Page, live_server: str, user) -> None:  # type: ignore[no-untyped-def]
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": user.email, "password": PASSWORD}
    )
    assert res.ok


def _label(page: Page) -> int:
    return int(page.locator("#step-label").inner_text().split(" / ")[0])


def _obs(t: int) -> str:
    """The observation values of LongEnv's step t as the page prints them."""
    return "  ".join(f"{v:g}" for v in (t, t * 0.5, -t, 0.25)).replace("-0  ", "0  ")


def test_replay_keyboard_detail_chart_tags_and_deep_link(
    live_server: str, page: Page, factory: Factory, db, settings, long_recording
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ep = Inserter(db, settings.data_root).add(study, long_recording)
    rec, last = long_recording, LONG_STEPS - 1
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    page.get_by_role("button", name="Replay").click()
    label, detail = page.locator("#step-label"), page.locator("#step-detail")
    expect(label).to_have_text(f"0 / {last}")
    # the first chart of a long episode reads every step of its log once
    expect(page.locator("#reward-chart canvas")).to_have_count(1, timeout=90_000)
    page.locator("#frame").click()  # keyboard focus on the page

    # Arrow keys step one, Shift+arrows ten, Home/End to the ends.
    page.keyboard.press("ArrowRight")
    expect(label).to_have_text(f"1 / {last}")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    expect(label).to_have_text(f"21 / {last}")
    page.keyboard.press("Shift+ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(label).to_have_text(f"10 / {last}")
    page.keyboard.press("ArrowRight")  # step 11: action a_11, its input and observation o_11
    obs = detail.locator("[data-obs=observation]")
    expect(obs).to_have_text(_obs(11))
    action = int(rec.actions[11])
    key = "ArrowRight" if action else "ArrowLeft"
    row = detail.locator("tr", has=page.locator("th", has_text="Input"))
    expect(row).to_contain_text(key)
    expect(row).to_contain_text("buttons 0=1")  # odd steps hold gamepad button 0
    expect(row).to_contain_text("axes 1: 0.00011")
    expect(detail.locator("tr", has=page.locator("th", has_text="Action"))).to_contain_text(
        f"{action} {'right' if action else 'left'}"
    )
    expect(detail.locator("tr", has=page.locator("th", has_text="Info"))).to_contain_text(
        '{"t":11}'
    )
    expect(detail.locator("tr", has=page.locator("th", has_text="Latency"))).to_contain_text("ms")
    page.keyboard.press("End")
    expect(label).to_have_text(f"{last} / {last}")  # past the old 1000-step page
    expect(obs).to_have_text(_obs(last))
    expect(detail).to_contain_text("is_last ✓")
    SHOTS.mkdir(exist_ok=True)
    page.locator("#viewer").screenshot(path=str(SHOTS / "replay-last-step.png"))
    page.keyboard.press("Home")
    expect(label).to_have_text(f"0 / {last}")

    # `t` with no range marked tags the current step (it used to tag 0..0).
    page.locator("#st-name").fill("look")
    page.locator("#frame").click()
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#mark-info")).to_have_text(
        "t tags step 11 “look” — Shift+T changes the name"
    )
    page.keyboard.press("t")
    expect(page.locator("#step-tags")).to_contain_text("look: step 11")

    # Click the chart to jump; drag on it to mark a range, then tag it with `t`.
    over = page.locator("#reward-chart .u-over")
    box = over.bounding_box()
    assert box is not None
    x_of = lambda step: box["x"] + box["width"] * step / last  # noqa: E731
    y = box["y"] + box["height"] / 2
    page.mouse.click(x_of(5000), y)
    expect(obs).not_to_have_text(_obs(11))
    per_px = LONG_STEPS / box["width"]
    assert abs(_label(page) - 5000) <= 2 * per_px
    page.mouse.move(x_of(8000), y)
    page.mouse.down()
    page.mouse.move(x_of(9000), y, steps=5)
    page.mouse.up()
    expect(page.locator("#mark-info")).to_contain_text("(marked)")
    page.locator("#st-name").fill("calm")
    page.locator("#frame").click()
    page.keyboard.press("t")
    expect(page.locator("#step-tags")).to_contain_text("calm: steps")
    page.locator("#viewer").screenshot(path=str(SHOTS / "replay-tagged.png"))
    tags = {t.name: t for t in db.scalars(select(StepTag).where(StepTag.episode_id == ep.id))}
    assert (tags["look"].start_step, tags["look"].end_step) == (11, 11)
    assert abs(tags["calm"].start_step - 8000) <= 2 * per_px
    assert abs(tags["calm"].end_step - 9000) <= 2 * per_px

    # Space plays at the recorded pace, Space again pauses.
    before = _label(page)
    page.keyboard.press("Space")
    expect(page.locator("#play-btn")).to_have_text("❚❚ Pause")
    expect(label).not_to_have_text(f"{before} / {last}")
    page.keyboard.press("Space")
    expect(page.locator("#play-btn")).to_have_text("▶ Play")

    # The URL is a deep link: it reopens the same episode at the same step.
    page.keyboard.press("End")
    page.keyboard.press("Shift+ArrowLeft")
    expect(label).to_have_text(f"{last - 10} / {last}")
    link = page.url
    assert f"episode={ep.id}" in link and f"step={last - 10}" in link
    other = page.context.new_page()
    other.goto(link)
    expect(other.locator("#step-label")).to_have_text(f"{last - 10} / {last}")
    expect(other.locator("#step-detail [data-obs=observation]")).to_have_text(_obs(last - 10))
    other.close()


def test_sort_by_column_and_return_filter_kept_in_the_url(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    eps = [ins.add(study, r, minutes_ago=10 - i) for i, r in enumerate(recorded["cartpole"][:4])]
    by_return = sorted(eps, key=lambda e: (e.total_reward, e.id))
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(4)

    def order() -> list[str]:
        return [r.get_attribute("data-id") or "" for r in rows.all()]

    page.get_by_role("button", name="Return").click()  # largest first
    expect(page.locator("th[data-sort=total_reward]")).to_have_attribute("aria-sort", "descending")
    assert order() == [e.id for e in reversed(by_return)]
    page.get_by_role("button", name="Return").click()
    expect(page.locator("th[data-sort=total_reward]")).to_have_attribute("aria-sort", "ascending")
    assert order() == [e.id for e in by_return]

    cut = by_return[2].total_reward
    page.get_by_label("Return ≥").fill(str(cut))
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    assert order() == [e.id for e in by_return[2:]]
    assert "min_return=" in page.url and "sort=total_reward" in page.url
    page.reload()  # the URL keeps the filter and the sort
    expect(rows).to_have_count(2)
    expect(page.get_by_label("Return ≥")).to_have_value(str(cut))
    assert order() == [e.id for e in by_return[2:]]


def _replay_image_episode(page: Page, live_server: str, factory: Factory, db, settings,
                          tmp_path: Path, name: str, **recording: Any) -> Locator:  # type: ignore[no-untyped-def]  # fmt: skip
    """Record an episode of ``ImageEnv`` (``recording``: more of ``record_episode``'s
    arguments), open its replay at step 1 as its study's owner; the step's detail."""
    episode_id = name.ljust(32, "0")
    rec = record_episode(
        ImageEnv, tmp_path / episode_id, env_id="cartpole", episode_id=episode_id, seed=1,
        env_config=CARTPOLE_SPEC, **recording,
    )  # fmt: skip
    owner = factory.user()
    study = factory.study(owner)
    Inserter(db, settings.data_root).add(study, rec)
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}&episode={episode_id}&step=1")
    return page.locator("#step-detail")


def test_image_observation_and_expanding_a_large_array(
    live_server: str, page: Page, factory: Factory, db, settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    detail = _replay_image_episode(page, live_server, factory, db, settings, tmp_path, "img")
    picture = detail.get_by_role("img", name="Observation pixels at step 1")
    expect(picture).to_be_visible()
    page.wait_for_function("img => img.naturalWidth === 32", arg=picture.element_handle())
    lidar = detail.locator("[data-obs=lidar]")
    expect(lidar).to_contain_text("3000 values · min -1 · max 1")
    detail.get_by_role("button", name="Show all 3000 values").click()
    expect(lidar).to_contain_text("-0.999333  -0.998666")
    SHOTS.mkdir(exist_ok=True)
    page.locator("#viewer").screenshot(path=str(SHOTS / "replay-image-observation.png"))


def test_bulk_tag_checked_rows_then_delete_by_filter(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    eps = [ins.add(study, cp[i], minutes_ago=30 - 10 * i) for i in range(3)]
    ids = [e.id for e in eps]
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(3)

    # Check two rows and tag them in one go.
    page.get_by_label(f"Select episode {ids[0]}").check()
    page.get_by_label(f"Select episode {ids[2]}").check()
    bar = page.get_by_role("group", name="Bulk actions")
    expect(bar).to_contain_text("2 episodes selected")
    bar.get_by_label("Tag for the selected episodes").fill("batch")
    bar.get_by_role("button", name="Add tag").click()
    expect(page.locator("#toasts")).to_contain_text("Tagged 2 episodes “batch”")
    expect(rows.filter(has_text="batch")).to_have_count(2)
    db.expire_all()
    tagged = db.scalars(select(EpisodeTag.episode_id).where(EpisodeTag.name == "batch")).all()
    assert sorted(tagged) == sorted([ids[0], ids[2]])

    # Filter on the tag, select all matching, and delete them after confirming.
    page.get_by_label("With tag").fill("batch")
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    bar.get_by_role("button", name="Select all 2 matching").click()
    expect(bar).to_contain_text("All 2 episodes matching selected")
    bar.get_by_role("button", name="Delete…").click()
    dialog = page.get_by_role("dialog", name="Delete episodes")
    expect(dialog).to_contain_text("Delete 2 episodes and their recordings? This cannot be undone.")
    page.keyboard.press("Escape")  # cancels
    expect(dialog).to_be_hidden()
    expect(rows).to_have_count(2)
    db.expire_all()
    assert db.get(Episode, ids[0]) is not None
    bar.get_by_role("button", name="Delete…").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(page.locator("#toasts")).to_contain_text("Deleted 2 episodes.")
    expect(page.get_by_text("No episode matches these filters")).to_be_visible()
    db.expire_all()
    left = db.scalars(select(Episode.id).where(Episode.study_id == study.id)).all()
    assert left == [ids[1]]
    assert not episode_dir(settings.data_root, study.id, ids[0]).exists()
    assert episode_dir(settings.data_root, study.id, ids[1]).is_dir()


def test_export_on_apache_beam_cancel_then_finish(
    live_server: str, page: Page, factory: Factory, db, settings, recorded, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    for rec in recorded["cartpole"][:3]:
        ins.add(study, rec)
    _login(page, live_server, owner)
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.locator("#episodes-body tr")).to_have_count(3)

    # On Beam, canceled while its workers start: nothing to download.
    page.get_by_label("Dataset name").fill("beam_export")
    page.get_by_label("Engine").select_option("beam")
    page.get_by_role("button", name="Start export").click()
    state = page.locator("#job-state")
    expect(state).to_contain_text("on Apache Beam")
    page.get_by_role("button", name="Cancel").click()
    expect(state).to_contain_text("canceled", timeout=60_000)
    expect(page.get_by_role("link", name="Download")).to_be_hidden()

    # Again, to the end: the progress bar fills and the archive holds the dataset.
    page.get_by_role("button", name="Start export").click()
    wait_export(page)
    expect(page.locator("#job-counts")).to_contain_text("3 / 3 episodes")
    # its steps are RLDS steps, one more an episode than the actions the list counts
    expect(page.locator("#job-counts")).to_contain_text("RLDS steps")
    SHOTS_BEAM.mkdir(parents=True, exist_ok=True)
    page.locator("#export-card").screenshot(path=str(SHOTS_BEAM / "export-beam.png"))
    saved = download_export(page, tmp_path / "beam.zip")
    with zipfile.ZipFile(saved) as zf:
        names = zf.namelist()
    assert "beam_export/beam_export/1.0.0/dataset_info.json" in names
    assert not any("/.beam/" in n for n in names)


SHOTS_BEAM = Path("/tmp/shots/beam")


def test_test_plays_are_hidden_until_asked_and_badged(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    ins.add(study, cp[0], minutes_ago=30)
    ins.add(study, cp[1], minutes_ago=20, participant=None, user=owner)
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("worker-1")
    expect(page.locator("#episodes-body .ep-test")).to_have_count(0)
    page.get_by_label("Show test plays").check()
    expect(rows).to_have_count(2)
    test_row = rows.filter(has_text=f"user:{owner.id}")
    expect(test_row.locator(".badge", has_text="test")).to_be_visible()
    assert "include_tests=true" in page.url  # kept in the link
    Path("/tmp/shots/editor-backend").mkdir(parents=True, exist_ok=True)
    page.locator("#episodes-table").screenshot(
        path="/tmp/shots/editor-backend/episodes-test-plays.png"
    )
    page.reload()
    expect(page.get_by_label("Show test plays")).to_be_checked()
    expect(rows).to_have_count(2)
    page.get_by_label("Show test plays").uncheck()
    expect(rows).to_have_count(1)


def test_the_replay_says_which_steps_the_adaptive_stream_did_not_send(
    live_server: str, page: Page, factory: Factory, db, settings, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    fewer = {"stream_every": 2}
    detail = _replay_image_episode(
        page, live_server, factory, db, settings, tmp_path, "fewer", jpeg_quality=50,
        bad_timing={2: {**fewer, "streamed": True}, 3: {**fewer, "streamed": False}},
    )  # fmt: skip
    expect(detail).to_contain_text("Stream qualityJPEG 50")
    expect(detail).not_to_contain_text("Stream rate")  # every frame was sent
    page.keyboard.press("ArrowRight")
    rate = detail.locator("tr", has_text="Stream rate")
    expect(rate).to_contain_text("1 frame in 2 streamed")
    expect(rate).to_contain_text("this step's was streamed")
    page.keyboard.press("ArrowRight")
    expect(rate).to_contain_text("this step's was recorded only")
