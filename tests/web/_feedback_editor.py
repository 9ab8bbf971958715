"""The study editor's feedback section as a designer fills it in (the editor's and the
feedback journey's browser tests): a new feedback study, its compare and rate questions, a
gold pair."""

from __future__ import annotations

from playwright.sync_api import Locator, Page

COMPARE = ("balance", "Which pole stays up longer?")
RATE = ("smooth", "How smooth is the cart?")


def new_feedback_study(page: Page, name: str) -> None:
    page.get_by_role("button", name="New study").first.click()
    page.get_by_label("Feedback (judge recorded episodes)").check()
    page.get_by_label("Study name").fill(name)


def question(page: Page, n: int) -> Locator:
    return page.get_by_role("group", name=f"Question {n}", exact=True)


def gold(page: Page, n: int) -> Locator:
    return page.get_by_role("group", name=f"Gold item {n}", exact=True)


def add_compare_and_rate(page: Page) -> None:
    """Question 1 compares (COMPARE), question 2 rates from 1 (jerky) to 5 (smooth) (RATE)."""
    page.get_by_role("button", name="+ Compare question").click()
    compare = question(page, 1)
    compare.get_by_label("Prompt").fill(COMPARE[1])
    compare.get_by_label("Id (in exports)").fill(COMPARE[0])
    page.get_by_role("button", name="+ Rate question").click()
    rate = question(page, 2)
    rate.get_by_label("Prompt").fill(RATE[1])
    rate.get_by_label("Id (in exports)").fill(RATE[0])
    rate.get_by_label("Scale from").fill("1")
    rate.get_by_label("Scale to").fill("5")
    rate.get_by_label("Low end's label").fill("jerky")
    rate.get_by_label("High end's label").fill("smooth")


def add_gold_pair(page: Page, n: int, episode_a: str, episode_b: str, answer: str) -> Locator:
    """Gold item ``n``: a pair of the first question, its known ``answer`` ("A is better",
    "B is better", "Equally good"); the item's group."""
    page.get_by_role("button", name="+ Add gold item").click()
    item = gold(page, n)
    item.get_by_label("Episode A", exact=True).select_option(episode_a)
    item.get_by_label("Episode B", exact=True).select_option(episode_b)
    item.get_by_label(answer).check()
    return item
