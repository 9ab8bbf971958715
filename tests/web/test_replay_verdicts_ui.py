"""Replay verdicts on the episodes page in real Chromium: episodes played through the server
and verified by its real replay checker (one verified, one whose log was altered on disk, one
of an unseeded environment, one whose log is gone, one not checked yet), the Replay column
and its filter (kept in the URL), the quality flag, and the replay's banner whose button (and
``j``) moves to the step where the replay diverged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from server.main import create_app
from server.models import Episode, ReplayVerdict
from server.services.jobs.replay_checks import check_again
from tests.factories import Factory
from tests.player.conftest import counter_env, row_of, spec
from tests.services.test_replay_verification import FAKE, _alter_action, play, wait_verdict
from tests.web.test_designer_ui import log_in

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/shots/replay-verdicts")
A = [["KeyA"]] * 6  # six presses of A: every action 1, every reward 1


@pytest.fixture
def played(factory: Factory, db, settings):  # type: ignore[no-untyped-def]
    """Five test plays, checked by a replica with verification on (the page's server has it
    off, so the pending one stays pending): verified; diverged (its action at timestep 4
    rewritten to 2: step 3's reward); diverged (unseeded: step 0's reward); not replayable
    (its log removed, then checked again); pending (checked again once the checker stopped)."""
    owner = factory.user()
    unseeded = {"kind": "dm_env", "factory": f"{FAKE}:unseeded", "kwargs": {"episode_len": 6}}
    noisy = {**counter_env("noisy"), "name": "Noisy", "source": unseeded}
    study = factory.study(owner, spec(counter_env(episode_len=6), noisy))
    checking = settings.model_copy(update={"replay_check_workers": 1, "job_poll_s": 0.2})
    checker = Factory(db, create_app(checking))
    try:
        client = checker.client(owner)
        ids = {name: play(client, study, "counter", A)
               for name in ("verified", "altered", "no_log", "pending")}  # fmt: skip
        ids["unseeded"] = play(client, study, "noisy", A)
        rows = {name: wait_verdict(db, episode_id) for name, episode_id in ids.items()}
        assert rows["unseeded"].replay_verdict == ReplayVerdict.diverged
        assert {rows[n].replay_verdict for n in ("verified", "altered", "no_log", "pending")} == {
            ReplayVerdict.verified
        }
        _alter_action(Path(rows["altered"].storage_path), 4, 2)
        shutil.rmtree(rows["no_log"].storage_path)
        for name in ("altered", "no_log"):
            assert check_again(db, Episode.id == ids[name]) == 1
        assert wait_verdict(db, ids["altered"]).replay_verdict == ReplayVerdict.diverged
        assert wait_verdict(db, ids["no_log"]).replay_verdict == ReplayVerdict.not_replayable
    finally:
        checker.close()  # the checker stops: what is checked again now stays pending
    assert check_again(db, Episode.id == ids["pending"]) == 1
    assert row_of(db, ids["pending"]).replay_verdict == ReplayVerdict.pending
    return {"owner": owner, "study": study, "ids": ids}


def test_verdicts_in_the_list_its_filter_and_the_replay(
    live_server: str, page: Page, played
) -> None:  # type: ignore[no-untyped-def]
    ids, study = played["ids"], played["study"]
    log_in(page, live_server, played["owner"])
    expect(page.get_by_role("button", name=study.name)).to_be_visible()  # logged in
    page.goto(f"{live_server}/episodes.html?study={study.id}&include_tests=true")
    rows = page.locator("#episodes-body tr")
    expect(rows).to_have_count(5)
    cell = lambda name: page.locator(f"#episodes-body tr[data-id='{ids[name]}'] .ep-r")  # noqa: E731
    expect(cell("verified")).to_have_text("verified ✓")
    expect(cell("altered")).to_have_text("diverged at step 3")
    expect(cell("altered")).to_have_attribute(
        "title",
        "The replay differed from the log: step 3, reward: recorded 1.0, replayed 2.0 (by 1)",
    )
    expect(cell("unseeded")).to_have_text("diverged at step 0")
    expect(cell("no_log")).to_have_text("not replayable")
    expect(cell("no_log")).to_have_attribute(
        "title", "The episode could not be replayed: the episode has no log on disk"
    )
    expect(cell("pending")).to_have_text("pending…")
    # a diverged episode is flagged with the quality problems
    flag = page.locator(f"#episodes-body tr[data-id='{ids['altered']}'] .ep-q-diverged")
    expect(flag).to_have_text("replay diverged")
    expect(page.locator(f"#episodes-body tr[data-id='{ids['verified']}'] .ep-q")).to_have_count(0)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#episodes-table").screenshot(path=str(SHOTS / "list.png"))

    # the filter narrows the list and stays in the URL
    page.get_by_role("group", name="Replay").get_by_label("diverged").check()
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(2)
    assert {r.get_attribute("data-id") for r in rows.all()} == {ids["altered"], ids["unseeded"]}
    assert "replay_verdict=diverged" in page.url
    page.reload()
    expect(rows).to_have_count(2)
    expect(page.get_by_role("group", name="Replay").get_by_label("diverged")).to_be_checked()
    page.get_by_role("group", name="Replay").get_by_label("not replayable").check()
    page.get_by_role("group", name="Replay").get_by_label("diverged").uncheck()
    page.get_by_role("button", name="Apply filters").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", ids["no_log"])
    page.get_by_role("button", name="Reset").click()  # test plays hidden again, too
    expect(
        page.get_by_role("group", name="Replay").get_by_label("not replayable")
    ).not_to_be_checked()
    expect(page.locator("#empty")).to_be_visible()  # no participant played
    page.get_by_label("Show test plays").check()
    expect(rows).to_have_count(5)

    # the replay of the altered episode: the banner, its button and j move to step 3
    page.locator(f"#episodes-body tr[data-id='{ids['altered']}']").get_by_role(
        "button", name="Replay"
    ).click()
    banner = page.get_by_role("alert").filter(has_text="Replay diverged")
    expect(banner.locator("#replay-verdict-text")).to_have_text(
        "Replay diverged at step 3: reward: recorded 1.0, replayed 2.0 (by 1)"
    )
    expect(page.locator("#step-label")).to_have_text("0 / 6")
    jump = page.get_by_role("button", name="Jump to step 3")
    expect(jump).to_have_attribute("aria-keyshortcuts", "j")
    expect(page.locator(".shortcuts")).to_contain_text(
        "j jump to the step where the replay diverged"
    )
    jump.click()
    expect(page.locator("#step-label")).to_have_text("3 / 6")
    assert "step=3" in page.url
    # what the reviewer sees there: the rewritten action (2) and the recorded reward (1.0)
    detail = page.locator("#step-detail")
    expect(detail.get_by_role("row", name="Step 3", exact=True)).to_be_visible()
    expect(detail.get_by_role("row", name="Action").locator("code")).to_have_text("2")
    expect(detail.get_by_role("row", name="Reward").locator("code")).to_have_text("1")
    page.keyboard.press("End")
    expect(page.locator("#step-label")).to_have_text("6 / 6")
    page.keyboard.press("j")
    expect(page.locator("#step-label")).to_have_text("3 / 6")
    page.screenshot(path=str(SHOTS / "diverged.png"), full_page=True)

    # the others: a quiet line, or why; no jump
    for name, text in [
        ("verified", "✓ Replay verified: every step re-simulated to the recorded values"),
        ("pending", "Replay check pending"),
        ("unseeded", "Replay diverged at step 0: reward: recorded"),
    ]:
        page.locator(f"#episodes-body tr[data-id='{ids[name]}']").get_by_role(
            "button", name="Replay"
        ).click()
        expect(page.locator("#viewer-id")).to_contain_text(ids[name])
        expect(page.locator("#replay-verdict-text")).to_contain_text(text)
        expect(page.locator("#replay-jump")).to_be_visible(visible=name == "unseeded")
    expect(page.get_by_role("button", name="Jump to step 0")).to_be_visible()  # the unseeded
    page.locator(f"#episodes-body tr[data-id='{ids['verified']}']").get_by_role(
        "button", name="Replay"
    ).click()
    expect(page.locator("#replay-verdict-text")).to_have_text(
        "✓ Replay verified: every step re-simulated to the recorded values"
    )
    expect(page.locator("#replay-verdict")).to_have_class("ep-verdict ep-verdict-verified")
    page.keyboard.press("End")
    page.keyboard.press("j")  # nothing diverged: j does nothing
    expect(page.locator("#step-label")).to_have_text("6 / 6")
    # not replayable: why, in the banner (its log is gone, so the replay itself cannot show)
    page.locator(f"#episodes-body tr[data-id='{ids['no_log']}']").get_by_role(
        "button", name="Replay"
    ).click()
    banner = page.get_by_role("status").filter(has_text="could not be replayed")
    expect(banner.locator("#replay-verdict-text")).to_have_text(
        "This episode could not be replayed: the episode has no log on disk"
    )
    expect(page.locator("#replay-jump")).to_be_hidden()
    expect(banner).to_have_class("ep-verdict ep-verdict-not_replayable")
    page.locator("#viewer").screenshot(path=str(SHOTS / "not-replayable.png"))
