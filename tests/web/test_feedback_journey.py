"""Issue 40's journey end to end in real Chromium: a designer makes a feedback study over a
played study's real recorded episodes (one compare and one rate question, two gold pairs),
three participants judge from Prolific links with the keyboard, one of them answers the gold
wrong and is screened out with the screen-out code; the designer downloads the preference
dataset, which pandas loads with every judgement, and exports the played study as RLDS,
whose episode metadata (loaded by TFDS and rlds) carries each episode's judgements.

Which side of a gold pair is right is read from the database (the test is the careful
participant); nothing on the page tells a gold item apart."""

from __future__ import annotations

import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Judgement, Participant, Study
from tests.api.routes.judged import played
from tests.export.consumers import check_report
from tests.factories import Factory
from tests.web._crowd import shot
from tests.web._export import download_export, wait_export
from tests.web._feedback_editor import add_compare_and_rate, add_gold_pair, new_feedback_study
from tests.web._judge import answerable, judge_link, judgements
from tests.web.test_designer_ui import log_in, study_row

pytestmark = [pytest.mark.browser, pytest.mark.consumer]

NAME = "Which run is better?"
PER_PARTICIPANT = 4
JUDGES = ("careful-1", "careful-2", "careless-3")


def _design(page: Page, live_server: str, world: Any) -> None:
    """The designer's part, as in the editor: the kind, the source, two questions, two gold
    pairs at half the items, screening at any miss, Prolific's codes; saved and activated."""
    eps = sorted(world.episodes, key=lambda e: e.id)
    log_in(page, live_server, world.owner)
    new_feedback_study(page, NAME)
    page.get_by_role("group", name="Source studies").get_by_label("Played").check()
    expect(page.locator("#fb-source-total")).to_contain_text("5 episodes to judge")
    page.get_by_label("Clips of N steps").check()
    page.get_by_label("Steps per clip").fill("4")

    add_compare_and_rate(page)

    page.get_by_label("Judgements per participant").fill(str(PER_PARTICIPANT))
    page.get_by_label("Minimum watch time (s)").fill("1")
    add_gold_pair(page, 1, eps[0].id, eps[1].id, "A is better")
    add_gold_pair(page, 2, eps[2].id, eps[3].id, "B is better")
    page.get_by_label("Share of gold items").fill("0.5")  # both gold pairs for everyone
    page.get_by_label("Minimum gold accuracy").fill("1")
    page.get_by_label("Gold answers before screening").fill("2")

    page.get_by_text("Crowd settings").click()
    expect(page.get_by_text("Participants play with")).to_have_count(0)  # any device judges
    expect(page.locator("#completion-table")).to_contain_text("failed the gold questions")
    page.get_by_label("Completion code").fill("JUDGED0K")
    page.get_by_label("Screen-out code").fill("GOLDMISS")
    page.get_by_role("group", name="Participants come from").get_by_label("Prolific").check()
    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, NAME)).to_contain_text("judges recorded episodes")
    expect(page.locator("#detail-meta")).to_contain_text("Feedback study")
    expect(page.locator("#test-play")).to_be_hidden()  # nothing to play: Preview as participant
    expect(page.locator("#preview-participant")).to_be_visible()
    checklist = page.get_by_role("region", name="Before you activate")
    expect(checklist).to_contain_text("Nothing stands in the way of activating this study.")
    shot(page, "journey-01-designed")
    page.get_by_role("button", name="Activate", exact=True).click()
    expect(page.locator("#detail-state")).to_have_text("Active")


def _key(row: Judgement, careless: bool, n: int) -> str:
    """The key a participant presses for their open judgement ``row``."""
    item = row.item
    if item.kind == "rate":
        return str(1 + n % 5)
    if not item.is_gold:
        return ("ArrowLeft", "ArrowRight", "e")[n % 3]
    right = item.gold_answer  # a or b, in the item's terms
    if careless:
        right = "b" if right == "a" else "a"
    shown_left = "b" if row.swapped else "a"
    return "ArrowLeft" if right == shown_left else "ArrowRight"


def _answers(db: Session, study: Study, pid: str, count: int) -> Participant:
    """Wait until ``pid`` has ``count`` answers in the database; their row then."""
    for _ in range(200):
        if len([j for j in judgements(db, study, pid) if j.answered_at is not None]) >= count:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"{pid}'s answer {count} never arrived")
    return db.scalars(select(Participant).where(
        Participant.study_id == study.id, Participant.external_id == pid)).one()  # fmt: skip


def _judge(browser: Browser, live_server: str, db: Session, study: Study, pid: str) -> str:
    """One participant from their Prolific link to their code; the code shown."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    try:
        page.goto(judge_link(live_server, study, pid))
        page.get_by_role("button", name="Continue").click()  # the (default) instructions
        for n in range(PER_PARTICIPANT):
            expect(page.locator("#judge-count")).to_have_text(f"Item {n + 1} of {PER_PARTICIPANT}")
            answerable(page)
            row = [j for j in judgements(db, study, pid) if j.answered_at is None][-1]
            page.keyboard.press(_key(row, pid.startswith("careless"), n))
            if _answers(db, study, pid, n + 1).screened_out_at is not None:
                break
        expect(page.locator("#code-view")).to_be_visible()
        shot(page, f"journey-02-{pid}")
        return page.locator("#code-value").input_value()
    finally:
        context.close()


def test_a_feedback_study_from_design_to_the_datasets(
    live_server: str, page: Page, browser: Browser, factory: Factory, db: Session, settings,
    recorded, tmp_path: Path,
) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    world = played(db, factory, settings.data_root, recorded)
    _design(page, live_server, world)
    db.expire_all()
    study = db.scalars(select(Study).where(Study.name == NAME)).one()

    codes = {pid: _judge(browser, live_server, db, study, pid) for pid in JUDGES}
    assert codes == {"careful-1": "JUDGED0K", "careful-2": "JUDGED0K", "careless-3": "GOLDMISS"}
    db.expire_all()
    people = {p.external_id: p for p in db.scalars(
        select(Participant).where(Participant.study_id == study.id))}  # fmt: skip
    assert people["careless-3"].screenout_reason == "gold"
    assert people["careful-1"].completed_at is not None
    made = [j for pid in JUDGES for j in judgements(db, study, pid) if j.answered_at is not None]
    who = {p.id: p.external_id for p in people.values()}
    gold = [j for j in made if j.item.is_gold]
    assert Counter(j.correct for j in gold) == Counter({True: 4, False: 2})

    # the designer's participants page: the screened-out judge, the downloads
    page.goto(f"{live_server}/participants.html?study={study.id}")
    careless = page.locator("#participants-body tr", has_text="careless-3")
    expect(careless).to_contain_text("0 / 2 (0%)")  # gold right
    expect(careless).to_contain_text("failed the gold questions")
    shot(page, "journey-03-participants")
    with page.expect_download() as parquet:
        page.get_by_role("link", name="Download Parquet").click()
    with page.expect_download() as jsonl:
        page.get_by_role("link", name="Download JSONL").click()
    parquet_path, jsonl_path = tmp_path / "p.parquet", tmp_path / "p.jsonl"
    parquet.value.save_as(parquet_path)
    jsonl.value.save_as(jsonl_path)
    loaded = check_report("lerobot", "preferences", str(parquet_path), str(jsonl_path))
    rows = {r["judgement_id"]: r for r in loaded["rows"]}
    assert set(rows) == {j.id for j in made}  # every judgement, once
    for j in made:
        row = rows[j.id]
        assert (row["participant"], row["is_gold"], row["correct"]) == (
            who[j.participant_id], j.item.is_gold, j.correct)  # fmt: skip
        assert (row["episode_a"], row["episode_b"]) == (j.item.episode_a, j.item.episode_b)
        assert (row["a_start"], row["a_end"]) == (j.item.a_start, j.item.a_end)
        assert row["choice"] == j.choice and row["rating"] == j.rating
        assert row["answer_ms"] >= 1000  # the minimum watch time held

    # the played study's RLDS export, from its episodes page, with the summaries
    page.goto(f"{live_server}/episodes.html?study={world.source.id}")
    page.get_by_label("Dataset name").fill("judged_runs")
    page.get_by_role("button", name="Start export").click()
    wait_export(page)
    with zipfile.ZipFile(download_export(page, tmp_path / "rlds.zip")) as zf:
        zf.extractall(tmp_path / "rlds")
    data_dir = next((tmp_path / "rlds").rglob("dataset_info.json")).parent
    report = check_report("rlds", "judgements", str(data_dir))
    counted = _summaries(made, screened={people["careless-3"].id})
    assert counted  # the careful judges' answers count
    for episode_id, got in report["episodes"].items():
        want = counted.get(episode_id, {"wins": 0, "losses": 0, "ties": 0, "ratings": []})
        assert got["judged"] is (episode_id in counted)
        assert (got["judgement_wins"], got["judgement_losses"], got["judgement_ties"]) == (
            want["wins"], want["losses"], want["ties"])  # fmt: skip
        assert got["judgement_ratings"] == len(want["ratings"])
        mean = sum(want["ratings"]) / len(want["ratings"]) if want["ratings"] else 0.0
        assert got["judgement_mean_rating"] == pytest.approx(mean)


def _summaries(made: list[Judgement], screened: set[int]) -> dict[str, dict[str, Any]]:
    """Wins, losses, ties and ratings per episode, counted from the answers: non-gold items,
    judges not screened out (docs/feedback.md)."""
    out: dict[str, dict[str, Any]] = {}

    def of(eid: str) -> dict[str, Any]:
        return out.setdefault(eid, {"wins": 0, "losses": 0, "ties": 0, "ratings": []})

    for j in made:
        item = j.item
        if item.is_gold or j.participant_id in screened:
            continue
        if item.kind == "rate" and j.rating is not None:
            of(item.episode_a)["ratings"].append(j.rating)
        elif j.choice == "equal":
            of(item.episode_a)["ties"] += 1
            of(item.episode_b)["ties"] += 1
        elif j.choice in ("a", "b"):
            winner, loser = (item.episode_a, item.episode_b)
            if j.choice == "b":
                winner, loser = loser, winner
            of(winner)["wins"] += 1
            of(loser)["losses"] += 1
    return out
