"""The episodes page in real Chromium: choose the LeRobot format and episode videos in the
export dialog, download the dataset; download an episode's video from the replay."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from server.export.video import read_video
from tests.api.routes.recorded import Inserter, record_set
from tests.export.recordings import Recording
from tests.factories import PASSWORD, Factory
from tests.web._export import download_export, wait_export

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots/lerobot")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Recording]]:
    """Real envlogger logs, recorded once for this module."""
    return record_set(tmp_path_factory.mktemp("recorded"))


def test_export_as_lerobot_with_videos_and_an_episode_video(
    live_server: str, page: Page, factory: Factory, db, settings, recorded, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    ins.add(study, cp[0], minutes_ago=30)
    ins.add(study, cp[1], minutes_ago=20)
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(2)

    # The export dialog: LeRobot, with a video of each episode.
    page.get_by_label("Format").select_option(label="LeRobot v3 (parquet + videos)")
    page.get_by_label("Add a video of each episode (MP4)").check()
    page.get_by_label("Dataset name").fill("robot_set")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#export-form").screenshot(path=str(SHOTS / "export-dialog.png"))
    page.get_by_role("button", name="Start export").click()
    wait_export(page)
    saved = download_export(page, tmp_path / "got.zip")
    with zipfile.ZipFile(saved) as zf:
        names = set(zf.namelist())
        meta = json.loads(zf.read("robot_set/robot_set/meta/info.json"))
    assert meta["codebase_version"] == "v3.0" and meta["total_episodes"] == 2
    assert {f"robot_set/episode_videos/{r.episode_id}.mp4" for r in cp[:2]} <= names

    # The replay's Video button downloads what the player saw.
    rows.first.get_by_role("button", name="Replay").click()
    video = page.get_by_role("link", name="Video")
    expect(video).to_be_visible()
    page.locator(".ep-controls").screenshot(path=str(SHOTS / "replay-video-button.png"))
    with page.expect_download() as info:
        video.click()
    assert info.value.suggested_filename.endswith(".mp4")
    path = tmp_path / "episode.mp4"
    info.value.save_as(path)
    frames, _times = read_video(path)
    assert len(frames) in {r.num_steps for r in cp[:2]}


def test_a_draft_with_no_episodes_says_how_to_get_some_and_exports_nothing(
    live_server: str, page: Page, factory: Factory, db
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)  # a draft: no permalink yet
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.locator("#empty-title")).to_have_text("No episodes yet")
    expect(page.locator("#empty-text")).to_contain_text("activate it to get its permalink")
    expect(page.locator("#empty-text")).not_to_contain_text("share its permalink")
    expect(page.locator("#ex-preview")).to_contain_text("Exports 0 episodes")
    page.get_by_role("button", name="Start export").click()
    expect(page.get_by_role("alert")).to_contain_text("Nothing to export")
    expect(page.get_by_role("alert")).not_to_contain_text("matches no episode")
    expect(page.locator("#job")).to_be_hidden()  # no job was started


def test_only_verified_episodes_are_exported_and_a_regeneration_refused_says_why(
    live_server: str, page: Page, factory: Factory, db, settings, recorded, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    ins = Inserter(db, settings.data_root)
    cp = recorded["cartpole"]
    verified = ins.add(study, cp[0], minutes_ago=30)
    diverged = ins.add(study, cp[1], minutes_ago=20)
    verified.replay_verdict = "verified"
    diverged.replay_verdict, diverged.replay_step = "diverged", 3
    diverged.replay_detail = {"message": "step 3, reward: recorded 1.0, replayed 0.0 (by 1)",
                              "difference": {"step": 3, "field": "reward", "recorded": "1.0",
                                             "replayed": "0.0", "amount": 1.0}}  # fmt: skip
    db.commit()
    res = page.request.post(
        f"{live_server}/api/auth/login", data={"email": owner.email, "password": PASSWORD}
    )
    assert res.ok
    page.goto(f"{live_server}/episodes.html?study={study.id}")
    expect(page.locator("#episodes-body tr")).to_have_count(2)
    preview = page.locator("#ex-preview")
    expect(preview).to_contain_text("Exports 2 episodes of the 2 listed.")

    page.get_by_label("Only verified episodes").check()
    expect(preview).to_contain_text("Exports 1 episode of the 2 listed.")
    expect(preview).to_contain_text("Leaves out 1 episode, replay diverged")
    expect(preview).to_contain_text(diverged.id[:8])

    # these logs (the tests' own recorder's) hold no spec to build their environment again:
    # the start is refused with the reason, in the page, and no job starts
    page.get_by_label("Regenerate by replay at another size or from other cameras").check()
    page.get_by_label("Image size (px)").fill("128")
    page.get_by_role("button", name="Start export").click()
    expect(page.get_by_role("alert")).to_contain_text("Cannot regenerate the observations")
    expect(page.get_by_role("alert")).to_contain_text("holds no environment spec")
    expect(page.get_by_role("alert")).not_to_contain_text(str(settings.data_root))
    expect(page.locator("#job")).to_be_hidden()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#export-form").screenshot(path=str(SHOTS / "export-verified-regenerate.png"))

    page.get_by_label("Regenerate by replay at another size or from other cameras").uncheck()
    page.get_by_role("button", name="Start export").click()
    wait_export(page)
    saved = download_export(page, tmp_path / "verified.zip")
    with zipfile.ZipFile(saved) as zf:
        cards = [n for n in zf.namelist() if n.endswith("README.md")]
        card = zf.read(cards[0]).decode()
    (line,) = [x for x in card.splitlines() if x.startswith("- Replay verdicts")]
    assert line.endswith("`replay_message`): 1 verified")  # the diverged one left out
