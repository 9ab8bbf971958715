"""The pre-launch checklist in real Chromium: a Prolific study without a completion code
cannot be activated; the checklist names the field and takes the designer to it; filled in
and saved, Activate works. Warnings are asked once; Validate shows each policy's time a step
and the checklist warns of one over its budget. A bad core field's message is told at the
field in the form's words. Rotate link asks first and says what happens to the old link."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from server.models import StudyState
from tests.factories import Factory, spec_dict
from tests.player.conftest import counter_env, spec
from tests.runtime.fake_policies import ALLOWED as POLICIES
from tests.web.test_designer_ui import fresh, log_in

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("STUDIO_SHOTS", "/tmp/shots/launch-checklist"))


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    """The fake shared-autonomy policies allowed, with a budget of 50 ms a step."""
    return settings.model_copy(update={"policies": POLICIES, "policy_step_budget_ms": 50})


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_a_prolific_study_without_a_code_is_blocked_until_the_code_is_filled_in(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    crowd = {"platforms": ["prolific"], "screenout_code": "NOPE"}
    spec = {**spec_dict("Paid on Prolific"), "crowd": crowd}
    study = factory.study(user, spec)
    log_in(page, live_server, user)
    page.get_by_role("button", name="Paid on Prolific").click()

    page.get_by_role("button", name="Activate").click()
    panel = page.get_by_role("region", name="Pre-launch checklist")
    expect(panel).to_contain_text("“Paid on Prolific” cannot start yet")
    expect(panel).to_contain_text("1 thing to fix before activating")
    item = panel.locator(".checklist-item")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("Participants from Prolific would finish with no completion code")
    expect(item).to_contain_text("Fix: Enter the completion code of your Prolific study")
    expect(panel.get_by_role("button", name="Activate anyway")).to_have_count(0)
    expect(page.locator("#detail-state")).to_have_text("Draft")
    shot(page, "activate-blocked")
    panel.screenshot(path=str(SHOTS / "launch-checklist.png"))  # docs/img/launch-checklist.png

    # The link opens the form at the field: the crowd settings unfold, the field is marked.
    panel.get_by_role("button", name="Go to Completion code").click()
    code = page.get_by_role("textbox", name="Completion code", exact=True)
    expect(code).to_be_focused()
    expect(code).to_be_in_viewport()
    expect(code).to_have_attribute("aria-invalid", "true")
    field = page.locator(".field", has=code)
    expect(field.locator(".field-error")).to_contain_text(
        "Participants from Prolific would finish with no completion code"
    )
    shot(page, "go-to-field")

    page.keyboard.type("C0MPLETE")
    expect(code).not_to_have_attribute("aria-invalid", "true")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#validate-status")).to_have_text("Every environment builds.")
    checklist = page.get_by_role("region", name="Before you activate")
    expect(checklist).to_contain_text("Nothing stands in the way of activating this study.")
    page.get_by_role("button", name="Activate").click()
    expect(page.locator("#detail-state")).to_have_text("Active")
    saved = fresh(db, study.id)
    assert saved is not None and saved.state == StudyState.active
    assert saved.spec["crowd"]["completion_code"] == "C0MPLETE"


def test_warnings_are_asked_once_and_the_editor_lists_them(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    breakout = {"kind": "gymnasium", "id": "ALE/Breakout-v5"}
    spec = spec_dict("Taps", id="breakout", source=breakout, mode="async", fps=15)
    spec["environments"][0]["name"] = "Breakout"
    spec["crowd"] = {"platforms": ["direct"]}
    study = factory.study(user, spec)
    log_in(page, live_server, user)
    page.get_by_role("button", name="Taps").click()

    # Validate lists the checklist beside its button.
    page.get_by_role("button", name="Validate").click()
    checklist = page.get_by_role("region", name="Before you activate")
    expect(checklist).to_contain_text("1 warning to check: you may activate anyway.")
    expect(checklist).to_contain_text("Breakout: a key or button press waits for the next step")
    checklist.get_by_role("button", name="Go to Breakout · Step on input (async)").click()
    switch = page.get_by_role("switch", name="Step on input (async)")
    expect(switch).to_have_attribute("aria-invalid", "true")
    expect(switch).to_be_in_viewport()
    shot(page, "editor-checklist")

    page.get_by_role("button", name="Activate").click()
    panel = page.get_by_role("region", name="Pre-launch checklist")
    expect(panel).to_contain_text("Check before you activate")
    expect(page.locator("#detail-state")).to_have_text("Draft")
    anyway = panel.get_by_role("button", name="Activate anyway")
    expect(anyway).to_be_focused()
    shot(page, "activate-warnings")
    anyway.click()
    expect(page.locator("#detail-state")).to_have_text("Active")
    expect(panel).to_be_hidden()
    saved = fresh(db, study.id)
    assert saved is not None and saved.state == StudyState.active


def test_a_bad_core_field_is_told_at_the_field_in_the_forms_words(
    live_server: str, page: Page, factory: Factory
):
    user = factory.user()
    factory.study(user, spec_dict("Limits"))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Limits").click()
    card = page.get_by_role("article", name="Environment 1: CartPole")
    duration = card.get_by_role("spinbutton", name="Max duration (s)")
    duration.fill("0")
    page.get_by_role("button", name="Save changes").click()

    message = "Max duration (s) must be greater than 0"
    expect(page.locator("#detail-error")).to_contain_text(f"CartPole: {message}")
    expect(page.locator("#detail-error")).not_to_contain_text("environments.0")
    duration = card.get_by_role("spinbutton", name="Max duration (s)")
    expect(duration).to_have_attribute("aria-invalid", "true")
    expect(duration).to_be_in_viewport()
    field = card.locator(".field", has=page.get_by_role("spinbutton", name="Max duration (s)"))
    expect(field.locator(".field-error")).to_have_text(message)
    expect(card.get_by_role("list", name="save problems")).to_have_text(message)
    shot(page, "core-field-at-field")

    duration.fill("30")  # typing clears the mark
    expect(duration).not_to_have_attribute("aria-invalid", "true")


def test_rotate_link_asks_and_says_what_happens_to_the_old_link(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    spec = {**spec_dict("Rotated"), "crowd": {"platforms": ["direct"]}}
    study = factory.study(user, spec)
    log_in(page, live_server, user)
    page.get_by_role("button", name="Rotated").click()
    page.get_by_role("button", name="Activate").click()
    expect(page.locator("#detail-state")).to_have_text("Active")
    token = fresh(db, study.id).permalink_token  # type: ignore[union-attr]

    page.get_by_role("button", name="Rotate link").click()
    ask = page.get_by_role("dialog", name="Make a new link?")
    expect(ask).to_contain_text("can no longer join")
    expect(ask).to_contain_text("Participants playing now keep their open game")
    shot(page, "rotate-ask")
    ask.get_by_role("button", name="Cancel").click()
    assert fresh(db, study.id).permalink_token == token  # type: ignore[union-attr]

    page.get_by_role("button", name="Rotate link").click()
    ask.get_by_role("button", name="Make a new link").click()
    expect(page.locator("#toasts")).to_contain_text("the old one no longer works")
    assert fresh(db, study.id).permalink_token != token  # type: ignore[union-attr]


def test_validate_shows_each_policys_time_and_the_checklist_warns_of_a_slow_one(
    live_server: str, page: Page, factory: Factory
):
    user = factory.user()
    quick = {**counter_env("quick", mode="sync"), "policy": {"id": "gives-two"}}
    slow = {**counter_env("slow", mode="sync"), "policy": {"id": "slow-always"}}
    factory.study(user, {**spec(quick, slow, name="Helped"), "crowd": {"platforms": ["direct"]}})
    log_in(page, live_server, user)
    page.get_by_role("button", name="Helped").click()

    page.get_by_role("button", name="Validate").click()
    quick_line = page.get_by_role("article", name="Validation of Quick").locator(
        "[data-fact=policy]"
    )
    # a figure of the machine's: read, not judged (the slow one is judged below, by design)
    expect(quick_line).to_have_text(re.compile(r"^gives-two: \d+(\.\d)? ms per step"))
    slow_report = page.get_by_role("article", name="Validation of Slow")
    slow_line = slow_report.locator("[data-fact=policy]")
    expect(slow_line).to_have_text(re.compile(r"^slow-always: \d+ ms per step, over its 50 ms "
                                              r"budget \(slowest \d+ ms\)$"))  # fmt: skip
    expect(slow_report.locator("dt", has_text="Policy")).to_be_visible()
    checklist = page.get_by_role("region", name="Before you activate")
    expect(checklist).to_contain_text("1 warning to check: you may activate anyway.")
    item = checklist.locator(".checklist-item")
    expect(item).to_contain_text(re.compile(r"The policy slow-always takes \d+ ms a step in "
                                            r"validation \(median of 10, worst \d+ ms\), over "
                                            r"its 50 ms budget"))  # fmt: skip
    expect(item).to_contain_text("Fix: Choose a faster Policy, or have the operator raise "
                                 "STUDIO_POLICY_STEP_BUDGET_MS")  # fmt: skip
    shot(page, "policy-timing")
    slow_report.screenshot(path=str(SHOTS / "policy-timing-slow.png"))
    page.get_by_role("article", name="Validation of Quick").screenshot(
        path=str(SHOTS / "policy-timing-quick.png")
    )
    checklist.screenshot(path=str(SHOTS / "policy-checklist.png"))

    checklist.get_by_role("button", name="Go to Slow · Policy").click()
    card = page.get_by_role("article", name="Environment 2: Slow")
    select = card.get_by_label("Policy", exact=True)
    expect(select).to_have_attribute("aria-invalid", "true")
    expect(select).to_be_in_viewport()
    expect(select).to_have_value("slow-always")
    shot(page, "policy-go-to-field")


def test_validate_says_an_environment_does_not_replay_and_the_checklist_warns(
    live_server: str, page: Page, factory: Factory
):
    user = factory.user()
    source = {"kind": "dm_env", "factory": "tests.runtime.fake_envs:unseeded", "kwargs": {}}
    noisy = {**counter_env("noisy"), "name": "Noisy", "source": source}
    factory.study(user, {**spec(counter_env(), noisy, name="Replays"),
                         "crowd": {"platforms": ["direct"]}})  # fmt: skip
    log_in(page, live_server, user)
    page.get_by_role("button", name="Replays").click()

    page.get_by_role("button", name="Validate").click()
    report = page.get_by_role("article", name="Validation of Noisy")
    expect(report).to_contain_text("does not replay: run twice from the same seed and actions")
    expect(report).to_contain_text("step 1, reward")
    expect(page.get_by_role("article", name="Validation of Counter")).not_to_contain_text(
        "does not replay"
    )
    checklist = page.get_by_role("region", name="Before you activate")
    expect(checklist).to_contain_text("1 warning to check: you may activate anyway.")
    item = checklist.locator(".checklist-item")
    expect(item).to_contain_text("Fix: Seed the environment's randomness from its reset seed")
    shot(page, "not-replayable")
    checklist.screenshot(path=str(SHOTS / "not-replayable-checklist.png"))

    page.get_by_role("button", name="Activate").click()
    panel = page.get_by_role("region", name="Pre-launch checklist")
    expect(panel).to_contain_text("does not replay")
    panel.get_by_role("button", name="Activate anyway").click()
    expect(page.locator("#detail-state")).to_have_text("Active")
