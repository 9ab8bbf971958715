"""An episode's judgements on the episodes page, in real Chromium: a played study's real
recorded CartPole episodes are judged through the judge API by three participants; the
designer sees each episode's summary in the list's Judgements column (wins, losses, ties,
mean rating and count), opens the most judged one with its Replay button and reads the
replay's Judgements panel (question, answer, participant, when; gold marked), clicks a
judged clip to step there, then opens a never-judged episode and sees the empty state.
Screenshots go to STUDIO_TEST_SHOTS when it is set."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from server.export.judgements import JudgementSummary
from server.models import FeedbackItem
from tests.api.routes.judged import played
from tests.api.routes.recorded import Inserter
from tests.export.judgements import judge
from tests.factories import Factory
from tests.web._crowd import shot
from tests.web.test_episodes_ui import _login

pytestmark = pytest.mark.browser


def short(s: JudgementSummary) -> str:
    """The summary's short text (web/episodes/judgements.js summaryText), its parts joined
    with " · " (the column shows them one above the other)."""
    parts = []
    if s.wins or s.losses or s.ties:
        parts.append(f"{s.wins}W {s.losses}L" + (f" {s.ties}T" if s.ties else ""))
    if s.ratings:
        mean = Decimal(repr(s.mean_rating)).quantize(Decimal("0.01"), ROUND_HALF_UP)
        parts.append(f"★{mean} ({s.ratings})")
    return " · ".join(parts)


def test_the_list_column_and_the_replay_panel(
    live_server: str, page: Page, factory: Factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    source = played(db, factory, settings.data_root, recorded)
    study = source.make(db, factory, clip_steps=4, judgements_per_participant=6)
    summaries = judge(db, factory, study)
    item = db.scalars(select(FeedbackItem).where(FeedbackItem.study_id == study.id)).first()
    assert item is not None
    item.is_gold, item.gold_answer = True, "a"  # one judged item marked gold afterwards
    never = Inserter(db, settings.data_root).add(
        source.source, recorded["mountaincar"][0], env_key="mountaincar", participant="player-9"
    )
    db.commit()

    _login(page, live_server, source.owner)
    page.goto(f"{live_server}/episodes.html?study={source.source.id}")
    table = page.locator("#episodes-table")
    expect(table.locator("thead")).to_contain_text("Judged")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(6)
    heads = [t.strip().lower() for t in table.locator("thead th").all_inner_texts()]
    col = next(i for i, t in enumerate(heads) if t.startswith("judged"))
    from server.services.feedback.results import episode_summaries

    counted = {k: JudgementSummary.of(v) for k, v in episode_summaries(db, summaries).items()}
    for eid in summaries:
        cell = page.locator(f'tr[data-id="{eid}"] td').nth(col)
        want = counted.get(eid)
        parts = short(want).split(" · ") if want and want.judged else ["–"]
        expect(cell).to_have_text("".join(parts))
        if want and want.judged:
            expect(cell.locator(".ep-judged-part")).to_have_text(parts)
    expect(page.locator(f'tr[data-id="{never.id}"] td').nth(col)).to_have_text("–")
    table.scroll_into_view_if_needed()
    shot(page, "judgements-1-list")

    # the page fits a 1280 px window with the column (no sideways scrolling)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280

    # an episode both compared and rated, opened as a person would: its row's Replay button
    def both(k: str) -> tuple[int, int]:
        s = summaries[k]
        return (min(s.wins + s.losses + s.ties, s.ratings), sum(s.counts()))

    eid = max(summaries, key=both)
    page.locator(f'tr[data-id="{eid}"]').get_by_role("button", name="Replay").click()
    expect(page.locator("#viewer-id")).to_contain_text(eid)
    panel = page.locator(".ep-judgements")
    entries = panel.locator("#judgements li")
    answered = db.scalars(
        select(FeedbackItem).where(
            (FeedbackItem.episode_a == eid) | (FeedbackItem.episode_b == eid)
        )
    ).all()
    total = sum(len([j for j in i.judgements if j.answered_at]) for i in answered)
    expect(entries).to_have_count(total)
    expect(panel.locator("#judgements-empty")).to_be_hidden()
    want = counted.get(eid)
    if want is not None and want.judged:
        expect(panel.locator("#judgement-summary")).to_have_text(short(want))
    for entry in entries.all():
        answer = entry.locator(".ep-judgement-answer").inner_text()
        question = "How smooth is the cart?" if answer.startswith("rated ") else (
            "Which pole stays up longer?")  # fmt: skip
        expect(entry).to_contain_text(question)
        expect(entry).to_contain_text("Which is better?")  # the feedback study's name
    for pid in {e.inner_text() for e in panel.locator("#judgements li .code").all()}:
        assert pid in ("judge-a", "judge-b", "judge-c")
    if item.episode_a == eid or item.episode_b == eid:
        expect(panel.locator(".ep-gold").first).to_be_visible()
        expect(panel.locator(".ep-uncounted").first).to_have_text("not counted")
    page.locator(".ep-judgements").scroll_into_view_if_needed()
    shot(page, "judgements-2-panel")

    # a judged clip's steps: a click shows its first step
    clip = panel.locator("#judgements li button.btn-link").first
    label = clip.inner_text()
    first = int(label.split(" ", 1)[1].split("–")[0])
    clip.click()
    expect(page.locator("#step-label")).to_have_text(re.compile(rf"^{first} / \d+$"))

    # the never-judged episode: the empty state, no summary
    page.locator("#viewer-close").click()
    page.locator(f'tr[data-id="{never.id}"]').get_by_role("button", name="Replay").click()
    expect(page.locator("#viewer-id")).to_contain_text(never.id)
    expect(panel.locator("#judgements-empty")).to_be_visible()
    expect(panel.locator("#judgements-empty")).to_contain_text("Nobody has judged this episode yet")
    expect(entries).to_have_count(0)
    expect(panel.locator("#judgement-summary")).to_have_text("")
    page.locator(".ep-judgements").scroll_into_view_if_needed()
    shot(page, "judgements-3-empty")
