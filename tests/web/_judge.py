"""Helpers of the judging page's browser tests: a feedback study over real recorded CartPole
episodes, a judge's Prolific link, the judgements the database holds, and what the page
shows of the item on screen."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect
from sqlalchemy import select

from server.models import Judgement, Participant
from tests.api.routes.judged import PROLIFIC
from tests.web._crowd import link

COMPARE = "Which pole stays up longer?"
RATE = "How smooth is the cart?"
DRAWN = re.compile(r"^\d+$")  # a canvas's data-frame once a frame is drawn on it
NARRATE = {"id": "describe", "kind": "narrate", "prompt": "What does the cart do?"}


def judge_link(live_server: str, study: Any, pid: str) -> str:
    """The study's link as Prolific opens it for participant ``pid``."""
    return link(live_server, study, PROLIFIC_PID=pid, **PROLIFIC)


def open_as_judge(page: Page, live_server: str, study: Any, pid: str) -> None:
    """Open the Prolific link, read the study's instructions (Enter), and wait for the
    first item."""
    page.goto(judge_link(live_server, study, pid))
    expect(page.locator("#instructions-text")).to_contain_text("Watch each clip, then answer.")
    page.keyboard.press("Enter")
    expect(page.locator("#judge-view")).to_be_visible()


def judgements(db: Any, study: Any, pid: str) -> list[Judgement]:
    """Participant ``pid``'s judgements in this study, oldest first (fresh from the DB)."""
    db.expire_all()
    who = db.scalar(select(Participant.id).where(
        Participant.study_id == study.id, Participant.external_id == pid))  # fmt: skip
    rows = db.scalars(select(Judgement).where(Judgement.participant_id == who)
                      .order_by(Judgement.id))  # fmt: skip
    return list(rows)


def answered(db: Any, study: Any, pid: str) -> list[Judgement]:
    return [j for j in judgements(db, study, pid) if j.answered_at is not None]


def expect_item(page: Page, number: int, of: int, prompt: str) -> None:
    """Item ``number`` of ``of`` is on screen with its prompt and its clips drawn."""
    expect(page.locator("#judge-count")).to_have_text(f"Item {number} of {of}")
    expect(page.locator("#judge-prompt")).to_have_text(prompt)
    expect(page.locator("#judge-loading")).to_be_hidden()  # every frame arrived
    expect(page.locator("#judge-canvas-0")).to_have_attribute("data-frame", DRAWN)
    if prompt == COMPARE:
        expect(page.locator("#judge-canvas-1")).to_have_attribute("data-frame", DRAWN)


def expect_code(page: Page, code: str) -> None:
    expect(page.locator("#code-view")).to_be_visible()
    expect(page.locator("#code-title")).to_have_text("Thank you — you have finished!")
    expect(page.locator("#code-value")).to_have_value(code)


def answerable(page: Page) -> None:
    """The item's answers are enabled (its watch time and the short guard are over)."""
    expect(page.locator("#judge-answers button:visible").first).to_be_enabled()
