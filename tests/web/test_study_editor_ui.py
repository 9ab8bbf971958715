"""The study editor in real Chromium: a study built with forms only (catalog, generated
settings form, validation next to each environment, a key bound by pressing it, a test play,
activation), and the YAML view kept in sync."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Episode, Study
from server.recording.writer import open_reader
from tests.factories import Factory, spec_dict
from tests.player.conftest import counter_env, spec
from tests.web.test_designer_ui import activate, log_in, study_row

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("STUDIO_SHOTS", "/tmp/shots/editor-forms"))


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def add_from_catalog(page: Page, search: str, name: str, picture: str = "") -> None:
    page.get_by_role("button", name="+ Add environment").click()
    dialog = page.get_by_role("dialog", name="Add an environment")
    dialog.get_by_label("Search the catalog").press_sequentially(search)
    if picture:
        thumb = dialog.get_by_role("button", name=f"Add {name}", exact=True).locator("img")
        expect(thumb).not_to_have_js_property("naturalWidth", 0)  # its first frame, built
        page.wait_for_timeout(3000)  # the other frames, for the picture only
        SHOTS.mkdir(parents=True, exist_ok=True)
        dialog.screenshot(path=str(SHOTS / f"{picture}.png"))
    dialog.get_by_role("button", name=f"Add {name}", exact=True).click()
    expect(dialog).to_be_hidden()


def test_a_study_made_with_forms_only(live_server: str, page: Page, factory: Factory, db: Session):
    user = factory.user()
    log_in(page, live_server, user)
    page.get_by_role("button", name="New study").first.click()
    page.get_by_label("Study name").fill("Two games")
    instructions = page.get_by_role("textbox", name="Study instructions")
    instructions.fill("# Welcome\n\nPlay **well**. <b>raw</b>")
    preview = page.get_by_role("region", name="Study instructions preview")
    expect(preview.get_by_role("heading", name="Welcome")).to_be_visible()
    expect(preview.locator("strong")).to_have_text("well")
    expect(preview).to_contain_text("<b>raw</b>")  # HTML is shown as text, never rendered

    add_from_catalog(page, "classic", "CartPole", picture="editor-catalog")
    add_from_catalog(page, "pong", "Pong")
    cartpole = page.get_by_role("article", name="Environment 1: CartPole")
    pong = page.get_by_role("article", name="Environment 2: Pong")
    expect(pong.get_by_label("Steps per second (async)")).to_have_value("15")
    expect(pong.get_by_label("Play mode")).to_have_value("async")

    # The settings form generated from the catalog's JSON Schema.
    settings = pong.get_by_role("group", name="Settings of Pong")
    settings.get_by_label("Set frameskip").check()
    settings.get_by_label("frameskip", exact=True).fill("2")
    settings.get_by_label("Set mode").check()
    settings.get_by_label("mode", exact=True).fill("99")
    cartpole.get_by_label("Max steps").fill("500")
    pong.get_by_label("Step on input (async)").check()
    pong.get_by_label("Adapt quality to the player's link").check()
    pong.get_by_label("Fewest frames/s to stream (adaptive)").fill("5")
    shot(page, "01-forms")

    page.get_by_role("button", name="Validate").click()
    expect(page.locator("#validate-status")).to_have_text("Some environments do not build.")
    cart_report = cartpole.get_by_role("article", name="Validation of CartPole")
    expect(cart_report.get_by_role("img", name="First frame of CartPole")).to_be_visible()
    expect(cart_report).to_contain_text("float32 [4]")
    # the catalog's CartPole is slowed down on purpose, and the report says why
    expect(cart_report).to_contain_text("0.40× real speed")
    expect(cart_report).to_contain_text("before a person can react")
    expect(cart_report.get_by_role("list", name="warnings")).to_have_count(0)
    expect(cart_report).to_contain_text("int64 scalar, 2 values (0 to 1)")
    # each dimension's bounds, −∞ and ∞ told apart
    dims = cart_report.get_by_role("table", name="Bounds per dimension").locator("tbody tr")
    expect(dims).to_have_count(4)
    expect(dims.nth(0)).to_have_text("0−4.84.8")
    expect(dims.nth(1)).to_have_text("1−∞∞")
    cart_report.screenshot(path=str(SHOTS / "validation-spaces.png"))
    pong_report = pong.get_by_role("article", name="Validation of Pong")
    expect(pong_report.get_by_role("list", name="problems")).to_contain_text(
        "Setting 'mode' must be one of 0, 1 (not 99)"
    )
    mode_field = settings.locator("[data-schemapath$='.mode']")
    expect(mode_field.locator(".setting-problem")).to_contain_text("must be one of 0, 1")
    shot(page, "02-validation-problem")

    # Fix the rejected setting: untick it (the game's own default applies).
    settings = pong.get_by_role("group", name="Settings of Pong")
    settings.get_by_label("Set mode").uncheck()
    page.get_by_role("button", name="Validate").click()
    expect(page.locator("#validate-status")).to_have_text("Every environment builds.")
    pong_report = pong.get_by_role("article", name="Validation of Pong")
    frame = pong_report.get_by_role("img", name="First frame of Pong")
    expect(frame).to_be_visible()
    assert frame.evaluate("img => img.complete && img.naturalWidth > 0")
    expect(pong_report).to_contain_text("uint8 [210, 160, 3]")
    expect(pong_report.get_by_role("list", name="warnings")).to_contain_text("real speed")
    shot(page, "03-validated")
    # Pictures for the docs: the sticky Save bar would cover part of the card.
    page.locator("#editor .editor-actions").evaluate("bar => { bar.style.position = 'static'; }")
    pong.screenshot(path=str(SHOTS / "editor-environment.png"))
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(SHOTS / "editor-study.png"))
    page.locator("#editor .editor-actions").evaluate("bar => { bar.style.position = ''; }")

    # A value the study format refuses is named beside its environment, and nothing is saved.
    cartpole.get_by_label("Steps per second (async)").fill("500")
    page.get_by_role("button", name="Save changes").click()
    expect(cartpole.get_by_role("list", name="save problems")).to_contain_text(
        "Steps per second (async) must be at most 120"
    )
    assert db.scalars(select(Study)).all() == []
    cartpole.get_by_label("Steps per second (async)").fill("50")
    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Two games")).to_contain_text("Draft")
    expect(page.locator("#detail-state")).to_have_text("Draft")
    study = db.scalars(select(Study).where(Study.owner_id == user.id)).one()
    envs = study.spec["environments"]
    assert [e["id"] for e in envs] == ["cartpole", "pong"]
    pong_source = {"kind": "gymnasium", "id": "ALE/Pong-v5", "kwargs": {"frameskip": 2}}
    assert envs[1]["source"] == pong_source
    assert envs[1]["fps"] == 15 and envs[1]["mode"] == "async" and envs[1]["step_on_input"]
    assert "step_on_input" not in envs[0]  # a switch left off keeps the default out of the file
    assert envs[1]["adaptive_quality"] and envs[1]["min_stream_fps"] == 5
    assert envs[0]["max_steps"] == 500 and "seeds" not in envs[0]
    assert study.spec["instructions"].startswith("# Welcome")
    # Validation ran on save too.
    expect(page.locator("#validate-status")).to_have_text("Every environment builds.")

    # Bind a key by pressing it: CartPole's action 0 (push left) also on J.
    cartpole.locator("summary", has_text="Controls").click()
    controls = cartpole.get_by_role("group", name="Controls of CartPole")
    bind = controls.get_by_role("button", name="Bind a key to 0")
    bind.click()
    try:  # as a person would: press once the button says it listens (click again if the
        # form was redrawn under the click, e.g. when a background check came back)
        expect(bind).to_have_text("Press a key… (Esc cancels)", timeout=3000)
    except AssertionError:
        bind.click()
        expect(bind).to_have_text("Press a key… (Esc cancels)")
    page.keyboard.press("KeyJ")
    expect(controls.locator("tr[data-action='0']")).to_contain_text("KeyJ")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#dirty-badge")).to_be_hidden()
    db.expire_all()
    saved = db.get(Study, study.id)
    assert saved is not None and saved.spec["environments"][0]["controls"]["keys"]["KeyJ"] == 0

    # Test-play it (a new tab) with that key: the episode is recorded as a test play.
    with page.context.expect_page() as opened:
        page.get_by_role("link", name="Test-play").click()
    player = opened.value
    player.get_by_role("button", name="Play CartPole").click()
    expect(player.locator("#overlay")).to_contain_text("Press Enter")  # the ready gate
    player.keyboard.press("Enter")
    expect(player.locator("#st-phase")).to_have_text("playing")
    # CartPole plays in real time: held, J pushes the cart left until the pole falls.
    player.keyboard.down("KeyJ")
    expect(player.locator("#save-dialog")).to_be_visible()
    player.keyboard.up("KeyJ")
    player.get_by_role("button", name="Save").click()
    expect(player.locator("#after-save-text")).to_contain_text("Episode saved.")
    played = db.scalars(select(Episode).where(Episode.study_id == study.id)).one()
    assert played.is_test and played.env_key == "cartpole" and played.status == "completed"
    with open_reader(played.storage_path) as reader:
        inputs = [json.loads(step.custom_data["input"]) for step in reader.steps]
    # (the first step has no input) the key bound in the editor reached the game
    assert {"keys": ["KeyJ"], "buttons": {}, "axes": [], "devices": {}} in inputs[1:]
    player.close()

    # Activate: the participants' link appears.
    activate(page)  # past its warnings (Pong without Step on input, no platform said)
    expect(page.locator("#detail-state")).to_have_text("Active")
    link = page.get_by_label("Link for participants")
    expect(link).to_have_value(re.compile(r"/player\.html\?token="))


def test_yaml_view_and_form_follow_each_other(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    study = factory.study(user, spec_dict("Synced", fps=30))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Synced").click()
    card = page.get_by_role("article", name="Environment 1: CartPole")
    expect(card.get_by_label("Steps per second (async)")).to_have_value("30")

    # Form → YAML: a value set equal to its default stays written.
    card.get_by_label("Display name").fill("Cart and pole")
    card.get_by_label("Image quality").select_option("medium")
    page.get_by_role("tab", name="Edit as YAML").click()
    editor = page.get_by_label("Edit the study file (YAML)")
    expect(editor).to_have_value(re.compile("name: Cart and pole"))
    data = yaml.safe_load(editor.input_value())
    assert data["environments"][0]["name"] == "Cart and pole"
    assert data["environments"][0]["image_quality"] == "medium"
    assert data["environments"][0]["fps"] == 30

    # YAML → form.
    text = editor.input_value().replace("fps: 30", "fps: 45")
    text = text.replace("name: Synced", "name: Synced again")
    editor.fill(text + "  max_steps: 200\n")
    page.get_by_role("tab", name="Form").click()
    card = page.get_by_role("article", name="Environment 1: Cart and pole")
    expect(card.get_by_label("Steps per second (async)")).to_have_value("45")
    expect(card.get_by_label("Max steps")).to_have_value("200")
    expect(page.get_by_label("Study name")).to_have_value("Synced again")
    expect(page.locator("#dirty-badge")).to_be_visible()
    shot(page, "04-form-after-yaml")

    # Broken YAML keeps you in the YAML view with the problem.
    page.get_by_role("tab", name="Edit as YAML").click()
    editor.fill("name: [unclosed")
    page.get_by_role("tab", name="Form").click()
    expect(page.locator("#yaml-problems")).to_contain_text("line 1")
    expect(editor).to_be_visible()
    page.get_by_role("button", name="Discard edits").click()
    expect(editor).to_have_value(re.compile(r"^name: Synced\n"))
    page.get_by_role("tab", name="Form").click()
    expect(page.get_by_label("Study name")).to_have_value("Synced")

    # Unsaved changes: leaving the page is warned about, leaving the panel asks first.
    page.get_by_label("Study name").fill("Changed")
    prevented = "() => { const e = new Event('beforeunload', {cancelable: true});"
    prevented += " window.dispatchEvent(e); return e.defaultPrevented; }"
    assert page.evaluate(prevented) is True
    page.get_by_role("button", name="Hide details").click()
    confirm = page.get_by_role("dialog", name="Discard your changes?")
    confirm.get_by_role("button", name="Cancel").click()
    expect(page.get_by_label("Study name")).to_have_value("Changed")
    page.get_by_role("button", name="Save changes").click()
    expect(study_row(page, "Changed")).to_be_visible()
    assert page.evaluate(prevented) is False
    saved = yaml.safe_load(page.get_by_label("Edit the study file (YAML)").input_value())
    assert saved["name"] == "Changed" and saved["environments"][0]["fps"] == 30
    db.expire_all()
    stored = db.get(Study, study.id)
    assert stored is not None  # the discarded edits are gone, the value set to its default kept
    assert stored.spec["environments"][0] == {
        "id": "cartpole", "name": "CartPole", "fps": 30,
        "source": {"kind": "gymnasium", "id": "CartPole-v1"},
    }  # fmt: skip


def test_a_quick_click_waits_for_the_study_just_opened(live_server: str, page: Page, factory):  # type: ignore[no-untyped-def]
    """Save and Validate wait while a study is still loading into the form: clicked at once,
    they would send what the editor held before (the other study, or nothing)."""
    user = factory.user()
    factory.study(user, spec(counter_env("quick"), name="First"))
    factory.study(user, spec(counter_env("other"), name="Second"))
    log_in(page, live_server, user)
    page.get_by_role("button", name="First").click()
    expect(page.get_by_label("Study name")).to_have_value("First")

    held: list = []  # the second study's file, held on its way to the form
    page.route("**/api/studies/yaml/parse", lambda route: held.append(route))
    page.get_by_role("button", name="Second").click()
    validate = page.get_by_role("button", name="Validate")
    save = page.get_by_role("button", name="Save changes")
    expect(validate).to_be_disabled()
    expect(save).to_be_disabled()
    expect(page.locator("#validate-status")).to_have_text("Loading the study…")
    for _ in range(300):  # the request is on its way (at most 15 s)
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the study's file was never parsed"
    for route in held:
        route.continue_()
    page.unroute("**/api/studies/yaml/parse")

    expect(page.get_by_label("Study name")).to_have_value("Second")
    validate.click()  # as soon as it can be
    expect(page.get_by_role("article", name="Validation of Other")).to_be_visible()
    expect(page.get_by_role("article", name="Validation of Quick")).to_have_count(0)
    expect(page.locator("#detail-error")).to_be_hidden()
