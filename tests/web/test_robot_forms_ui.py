"""The robot features in the study editor's forms, in real Chromium: a designer adds PickCube
and FetchPickAndPlace from the catalog, sees PickCube's mouse and phone bindings in the
controls editor, changes a mouse axis's scale, binds a SpaceMouse axis, is refused a NaN
scale and a dead zone past 1 at their fields (as they type, and by the server at Save),
picks the installed policy for Fetch with a takeover delay, and saves: the YAML view and the
saved study hold exactly those values, and the YAML edited back shows in the form. In a
discrete game a device axis sends one action each way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Locator, Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Study
from server.runtime.catalog import CATALOG
from tests.factories import Factory, spec_dict
from tests.web.test_designer_ui import fresh, log_in
from tests.web.test_study_editor_ui import add_from_catalog

ROBOTICS = CATALOG["PickCube"].installed() and CATALOG["FetchPickAndPlace"].installed()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not ROBOTICS, reason="the robotics runtime is not installed"),
]
# The project's own entry point (pyproject.toml); listed here too, since the test venv's
# installed metadata may predate it.
SCRIPTED = "fetch-pick-place-scripted=server.runtime.scripted_policies:fetch_pick_place"
SHOTS = Path("/tmp/shots/robot-forms")


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    return settings.model_copy(update={"policies": [SCRIPTED]})


def section(card: Locator, title: str) -> Locator:
    """A section of an environment card, opened as a person would (its summary clicked)."""
    details = card.locator("details.env-section", has=card.page.locator("summary", has_text=title))
    if details.get_attribute("open") is None:
        details.locator("> summary").click()
    expect(details).to_have_attribute("open", "")
    return details


def note(table: Locator, label: str) -> Locator:
    """The message about the field named ``label`` of ``table`` (under its row)."""
    return table.locator(f".field-problem[data-for='{label}']")


def typed(field: Locator, text: str) -> None:
    """Type ``text`` into ``field`` in place of what it held, and leave it (Tab)."""
    field.fill(text)
    field.press("Tab")


def test_designer_sets_devices_and_a_policy_in_the_forms(
    live_server: str, page: Page, factory: Factory, db: Session
):
    SHOTS.mkdir(parents=True, exist_ok=True)
    user = factory.user()
    page.set_viewport_size({"width": 1280, "height": 1000})
    log_in(page, live_server, user)
    page.get_by_role("button", name="New study").first.click()
    page.get_by_label("Study name").fill("Robots")
    add_from_catalog(page, "PickCube", "PickCube")
    add_from_catalog(page, "FetchPickAndPlace", "FetchPickAndPlace")
    cube = page.get_by_role("article", name="Environment 1: PickCube")
    fetch = page.get_by_role("article", name="Environment 2: FetchPickAndPlace")

    # PickCube's catalog defaults: the mouse, a phone and touch, beside the keys and the
    # gamepad; each dimension named by its meaning
    controls = section(cube, "Controls")
    expect(controls.locator("table.controls-table tbody tr .action-name strong")).to_have_text(
        [f"{d} {s}" for d in ("x", "y", "z", "roll", "pitch", "yaw", "gripper") for s in "+−"]
    )
    expect(controls.locator(".controls-defaults .code")).to_contain_text("mouse drag ←→ → x × 0.5")
    right = controls.locator("tr[data-action='x +']")
    for chip in (
        "ArrowRight",
        "axis 0 +",
        "mouse drag ←→ +",
        "phone tilt right / left +",
        "touch pad 1 ←→ +",
        "touch tilt right / left +",
    ):
        expect(right).to_contain_text(chip)
    grip = controls.locator("tr[data-action='gripper +']")
    for button in ("Space", "MouseRight", "PhoneGrip", "TouchA"):
        expect(grip.get_by_label(f"{button} toggles")).to_be_checked()
    axes = controls.get_by_role("table", name="Axes")
    expect(axes.locator("tbody tr")).to_have_count(18)  # 4 gamepad, 5 mouse, 3 phone, 6 touch
    expect(axes.get_by_label("Source of touch pad 2 ↑↓")).to_have_value("touch")
    expect(axes.get_by_label("Label of touch pad 2 ↑↓")).to_have_value("hand up / down")
    expect(axes.get_by_label("Source of mouse drag ←→")).to_have_value("mouse")
    expect(axes.get_by_label("Scale of mouse drag ←→")).to_have_value("0.5")
    expect(axes.get_by_label("Label of phone tilt forward / back")).to_have_value(
        "hand away / nearer"
    )

    # a device's menu opens from its action's row and Esc closes only the menu
    down = controls.locator("tr[data-action='z −']")
    down.get_by_role("button", name="Bind a device to z −").click()
    menu = down.get_by_role("group", name="Devices for z −")
    expect(menu.get_by_role("button", name="MouseLeft (held while dragging)")).to_be_focused()
    expect(menu.get_by_role("button", name="TouchB (touch button B)")).to_be_visible()
    touch = menu.get_by_role("group", name="touch axes")
    expect(touch.get_by_role("button")).to_have_text(
        ["pad 1 ←→", "pad 1 ↑↓", "pad 2 ←→", "pad 2 ↑↓", "tilt forward / back", "tilt right / left"]
    )
    menu.screenshot(path=str(SHOTS / "device-menu.png"))
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(down.get_by_role("button", name="Bind a device to z −")).to_be_focused()
    expect(page.get_by_label("Study name")).to_be_visible()  # the editor stays open

    # a faster drag, and a SpaceMouse pushed up lifting the hand (bound from its action's row)
    typed(axes.get_by_label("Scale of mouse drag ←→"), "0.8")
    up = controls.locator("tr[data-action='z +']")
    up.get_by_role("button", name="Bind a device to z +").click()
    up.get_by_role("group", name="SpaceMouse axes").get_by_role("button", name="up / down").click()
    expect(up).to_contain_text("SpaceMouse up / down +")
    expect(axes.get_by_label("Source of SpaceMouse up / down")).to_have_value("spacemouse")
    typed(axes.get_by_label("Scale of SpaceMouse up / down"), "-0.3")
    # a second big touch button lowers the hand (touch buttons bind as device buttons do)
    down.get_by_role("button", name="Bind a device to z −").click()
    menu.get_by_role("button", name="TouchB (touch button B)").click()
    expect(down).to_contain_text("TouchB")
    expect(up).to_contain_text("SpaceMouse up / down −")  # pushed down (+) now lowers it
    typed(axes.get_by_label("Dead zone of SpaceMouse up / down"), "0.05")

    # refused at the field as typed: a dead zone past 1, a scale that is no number
    zone = axes.get_by_label("Dead zone of phone tilt forward / back")
    typed(zone, "1.5")
    expect(zone).to_have_attribute("aria-invalid", "true")
    zone_label = "Dead zone of phone tilt forward / back"
    twist_label = "Scale of phone twist left / right"
    expect(note(axes, zone_label)).to_have_text(
        "Dead zone: must be from 0 up to (not including) 1."
    )
    twist = axes.get_by_label(twist_label)
    typed(twist, "NaN")
    expect(twist).to_have_attribute("aria-invalid", "true")
    expect(note(axes, twist_label)).to_have_text(
        "Scale: must be a finite number, e.g. 0.5 or -0.3."
    )
    # and by the server: nothing is saved, each message at its field
    page.get_by_role("button", name="Save changes").click()
    expect(note(axes, zone_label)).to_contain_text("Not saved: Input should be less than 1")
    expect(note(axes, twist_label)).to_contain_text("Not saved: Input should be a finite number")
    expect(zone).to_have_attribute("aria-invalid", "true")
    controls.screenshot(path=str(SHOTS / "refused-at-the-field.png"))
    assert db.scalars(select(Study)).all() == []
    typed(zone, "0.1")
    typed(axes.get_by_label("Scale of phone twist left / right"), "-0.4")
    expect(axes.locator("[aria-invalid='true']")).to_have_count(0)
    expect(axes.locator(".field-problem")).to_have_count(0)

    # PickCube offers every installed policy too (the project's own Robosuite one among
    # them); Fetch gets the Fetch one (it is written for Fetch)
    cube_policy = section(cube, "Policy (shared autonomy)")
    expect(cube_policy.get_by_label("Policy", exact=True).locator("option")).to_have_text(
        ["None: the participant drives", "fetch-pick-place-scripted", "robosuite-pick-scripted"]
    )
    expect(cube_policy.get_by_label("Takeover release delay (s)")).to_be_disabled()
    policy = section(fetch, "Policy (shared autonomy)")
    policy.get_by_label("Policy", exact=True).select_option("fetch-pick-place-scripted")
    expect(policy).to_contain_text("For the catalog's FetchPickAndPlace: moves the open hand")
    delay = policy.get_by_label("Takeover release delay (s)")
    expect(delay).to_be_enabled()
    typed(delay, "12")
    expect(delay).to_have_attribute("aria-invalid", "true")
    expect(policy.get_by_role("alert")).to_have_text("Release delay must be from 0 to 10 seconds.")
    page.get_by_role("button", name="Save changes").click()  # the server refuses it too
    expect(policy.get_by_role("alert")).to_have_text("Input should be less than or equal to 10")
    expect(delay).to_have_attribute("aria-invalid", "true")
    assert db.scalars(select(Study)).all() == []
    typed(delay, "2.5")
    expect(policy.get_by_role("alert")).to_be_hidden()
    fetch.screenshot(path=str(SHOTS / "fetch-policy.png"))
    # the axes clear of the sticky Save bar (docs/img/editor-devices.png)
    page.locator("#editor .editor-actions").evaluate("bar => { bar.style.position = 'static'; }")
    controls.locator(".axes-section").screenshot(path=str(SHOTS / "editor-devices.png"))
    page.locator("#editor .editor-actions").evaluate("bar => { bar.style.position = ''; }")

    # the YAML view holds exactly what the form does
    page.get_by_role("tab", name="Edit as YAML").click()
    editor = page.get_by_label("Edit the study file (YAML)")
    expect(editor).to_have_value(re.compile("release_delay_s: 2.5"))
    envs = yaml.safe_load(editor.input_value())["environments"]
    cube_axes = {(a.get("source", "gamepad"), a["axis"]): a for a in envs[0]["controls"]["axes"]}
    assert cube_axes[("mouse", 0)] == {"source": "mouse", "axis": 0, "dim": 0, "scale": 0.8}
    assert cube_axes[("spacemouse", 2)] == {
        "source": "spacemouse", "axis": 2, "dim": 2, "scale": -0.3, "deadzone": 0.05
    }  # fmt: skip
    assert cube_axes[("phone", 0)]["deadzone"] == 0.1
    assert envs[0]["controls"]["keys"]["TouchB"] == [0, 0, -1, 0, 0, 0, 0]
    assert cube_axes[("phone", 2)]["scale"] == -0.4
    assert envs[1]["policy"] == {
        "id": "fetch-pick-place-scripted", "takeover": {"release_delay_s": 2.5}
    }  # fmt: skip
    assert "policy" not in envs[0]
    # and the form follows the YAML back
    editor.fill(editor.input_value().replace("release_delay_s: 2.5", "release_delay_s: 3"))
    page.get_by_role("tab", name="Form").click()
    policy = section(fetch, "Policy (shared autonomy)")
    expect(policy.get_by_label("Takeover release delay (s)")).to_have_value("3")
    expect(policy.get_by_label("Policy", exact=True)).to_have_value("fetch-pick-place-scripted")

    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast", has_text="Created the draft “Robots”.")).to_be_visible()
    expect(page.locator("#dirty-badge")).to_be_hidden()
    study = db.scalars(select(Study).where(Study.owner_id == user.id)).one()
    saved = study.spec["environments"]
    saved_axes = {(a.get("source", "gamepad"), a["axis"]): a for a in saved[0]["controls"]["axes"]}
    assert saved_axes[("mouse", 0)]["scale"] == 0.8
    assert saved_axes[("spacemouse", 2)] == cube_axes[("spacemouse", 2)]
    assert saved[0]["controls"]["toggle"] == ["Space", "MouseRight", "PhoneGrip", "TouchA"]
    assert saved[1]["policy"] == {
        "id": "fetch-pick-place-scripted", "takeover": {"release_delay_s": 3}
    }  # fmt: skip


def test_a_discrete_game_binds_a_device_axis_to_two_actions(
    live_server: str, page: Page, factory: Factory, db: Session
):
    """CartPole (two actions): a mouse drag ←→ pushes left below its dead zone and right
    above it, bound from the actions' rows and the Axes table, with its own dead zone."""
    user = factory.user()
    study = factory.study(user, spec_dict("Cart", mode="async"))
    log_in(page, live_server, user)
    page.get_by_role("button", name="Cart").click()
    page.get_by_role("button", name="Validate").click()
    expect(page.locator("#validate-status")).to_contain_text("Every environment builds")
    cart = page.get_by_role("article", name="Environment 1: CartPole")
    controls = section(cart, "Controls")
    left = controls.locator("tr[data-action='0']")
    left.get_by_role("button", name="Bind a device to 0").click()
    mouse_axes = left.get_by_role("group", name="mouse axes")
    mouse_axes.get_by_role("button", name="drag ←→", exact=True).click()
    expect(left).to_contain_text("mouse drag ←→ +")
    axes = controls.get_by_role("table", name="Axes")
    # pushed left (−) sends 0, pushed right (+) sends 1
    axes.get_by_label("pushed − on mouse drag ←→").select_option(label="0")
    axes.get_by_label("pushed + on mouse drag ←→").select_option(label="1")
    expect(left).to_contain_text("mouse drag ←→ −")
    expect(controls.locator("tr[data-action='1']")).to_contain_text("mouse drag ←→ +")
    typed(axes.get_by_label("Dead zone of mouse drag ←→"), "0.3")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast", has_text="Saved.")).to_be_visible()
    saved = fresh(db, study.id)
    assert saved is not None
    axes_saved = saved.spec["environments"][0]["controls"]["axes"]
    mouse = [a for a in axes_saved if a.get("source") == "mouse"]
    assert mouse == [{"source": "mouse", "axis": 0, "negative": 0, "positive": 1, "deadzone": 0.3}]
