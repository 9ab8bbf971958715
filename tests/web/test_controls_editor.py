"""The controls editor in the form editor's environment cards, in real Chromium: after
Validate, open an environment's Controls, bind a key by pressing it, a gamepad button by
pressing it, label it, see it in the YAML view, save, reset."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect
from sqlalchemy.orm import Session

from tests.factories import Factory, spec_dict
from tests.web.test_designer_ui import fresh, log_in

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots/editor-backend"

# A stand-in for a plugged-in gamepad (no real one here): Chromium's Gamepad API polled by
# the editor, with the pad's state set by the test as a person would press a button.
FAKE_GAMEPAD = """
window.__pad = { index: 0, id: "test pad", connected: true, axes: [0, 0, 0, 0],
  buttons: Array.from({ length: 17 }, () => ({ pressed: false, value: 0 })) };
navigator.getGamepads = () => [window.__pad];
"""


def open_controls(page: Page, env_name: str, index: int = 1) -> Locator:
    """The Controls section of an environment's card in the form editor, opened."""
    card = page.get_by_role("article", name=f"Environment {index}: {env_name}")
    card.locator("summary", has_text="Controls").click()
    group = card.get_by_role("group", name=f"Controls of {env_name}")
    expect(group.locator(".controls-table")).to_be_visible()
    return group


def yaml_view(page: Page) -> Locator:
    """Switch to the editor's YAML view; its text box."""
    page.get_by_role("tab", name="Edit as YAML").click()
    return page.get_by_label("Edit the study file (YAML)")


def test_bind_keys_and_buttons_then_reset(
    live_server: str, page: Page, factory: Factory, db: Session
):
    user = factory.user()
    controls = {"keys": {"ArrowLeft": 0, "KeyX": 9}, "noop": 1}
    spec = spec_dict("Hill", id="car", source={"kind": "gymnasium", "id": "MountainCar-v0"},
                     controls=controls)  # fmt: skip
    spec["environments"][0]["name"] = "MountainCar"
    study = factory.study(user, spec)
    page.add_init_script(FAKE_GAMEPAD)
    log_in(page, live_server, user)
    page.get_by_role("button", name="Hill").click()
    # Validate: the environment's action space (3 actions) is then known
    page.get_by_role("button", name="Validate").click()
    # KeyX is bound to an action the game lacks: validation says so
    expect(page.locator("#validate-status")).to_contain_text("Some environments do not build")
    editor_box = open_controls(page, "MountainCar")

    # flags: action 2 reached by nothing, KeyX bound to an action the game lacks
    right = editor_box.locator("tr[data-action='2']")
    expect(right.locator(".flag-unbound")).to_have_text("unbound")
    expect(editor_box.locator("tr[data-action='1']")).to_contain_text("when nothing is pressed")
    expect(editor_box.locator(".stray.invalid")).to_contain_text("KeyX")
    expect(editor_box.locator(".flag-invalid")).to_have_text("bound to nothing")

    # bind a key by pressing it
    editor_box.get_by_role("button", name="Bind a key to 2").click()
    page.keyboard.press("KeyD")
    expect(right.locator(".flag-unbound")).to_have_count(0)
    expect(right).to_contain_text("KeyD")
    expect(page.locator("#dirty-badge")).to_be_visible()
    # a combination: hold one key, press another
    editor_box.get_by_role("button", name="Bind a key to 0").click()
    page.keyboard.down("ShiftLeft")
    page.keyboard.press("KeyA")
    page.keyboard.up("ShiftLeft")
    expect(editor_box.locator("tr[data-action='0']")).to_contain_text("ShiftLeft+KeyA")
    # label it, remove the stray binding, change the dead zone
    editor_box.get_by_label("Label of KeyD").fill("push right")
    editor_box.get_by_label("Label of KeyD").press("Tab")
    editor_box.get_by_role("button", name="Remove KeyX").click()
    expect(editor_box.locator(".flag-invalid")).to_have_count(0)
    editor_box.get_by_label("Stick dead zone").fill("0.3")
    editor_box.get_by_label("Stick dead zone").press("Tab")

    # a gamepad button: press it while the editor listens
    editor_box.get_by_role("button", name="Bind a gamepad button or axis to 2").click()
    page.evaluate("() => { window.__pad.buttons[3] = { pressed: true, value: 1 }; }")
    expect(right).to_contain_text("button 3")
    page.evaluate("() => { window.__pad.buttons[3] = { pressed: false, value: 0 }; }")
    # a stick pushed to the left drives action 0
    editor_box.get_by_role("button", name="Bind a gamepad button or axis to 0").click()
    page.evaluate("() => { window.__pad.axes[0] = -0.9; }")
    expect(editor_box.locator("tr[data-action='0']")).to_contain_text("axis 0 −")
    page.evaluate("() => { window.__pad.axes[0] = 0; }")
    # the whole section in view, clear of the sticky Save bar (docs/img/editor-controls.png)
    page.set_viewport_size({"width": 1100, "height": 1400})
    section = page.locator("details.env-section", has=page.locator("summary", has_text="Controls"))
    section.evaluate("(e) => e.scrollIntoView({ block: 'start' })")
    section.screenshot(path=f"{SHOTS}/controls-editor.png")

    # the YAML view shows what the form holds, before saving
    yaml = yaml_view(page)
    for text in ("KeyD: 2", "ShiftLeft+KeyA: 0", "KeyD: push right", "deadzone: 0.3", "'3': 2"):
        expect(yaml).to_have_value(lambda_contains(text))
    expect(yaml).not_to_have_value(lambda_contains("KeyX"))
    page.get_by_role("tab", name="Form").click()

    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast", has_text="Saved.")).to_be_visible()
    expect(page.locator("#detail-error")).to_be_hidden()
    expect(page.locator("#dirty-badge")).to_be_hidden()
    saved = fresh(db, study.id)
    assert saved is not None
    got = saved.spec["environments"][0]["controls"]
    assert got["keys"] == {"ArrowLeft": 0, "KeyD": 2, "ShiftLeft+KeyA": 0}
    assert got["buttons"] == {"3": 2} and got["labels"] == {"KeyD": "push right"}
    assert (
        got["deadzone"] == 0.3 and got["axes"][0]["axis"] == 0 and got["axes"][0]["negative"] == 0
    )

    # reset to the catalog's defaults (the section stayed open through the save)
    expect(page.locator("#validate-status")).to_contain_text("Every environment builds")
    editor_box.get_by_role("button", name="Reset to defaults").click()
    expect(editor_box.get_by_role("button", name="Reset to defaults")).to_be_disabled()
    yaml = yaml_view(page)
    expect(yaml).to_have_value(lambda_contains("ArrowRight: 2"))
    expect(yaml).not_to_have_value(lambda_contains("KeyD"))


def lambda_contains(text: str) -> re.Pattern[str]:
    """A pattern matching a value that contains ``text``."""
    return re.compile(re.escape(text))


def test_continuous_actions_bind_a_direction_per_dimension(
    live_server: str, page: Page, factory: Factory, db: Session
):
    """A Box action: a row per direction of each dimension; a key sends a vector."""
    user = factory.user()
    source = {"kind": "gymnasium", "id": "MountainCarContinuous-v0"}
    spec = spec_dict("Push", id="push", source=source, mode="async")
    spec["environments"][0]["name"] = "Continuous car"
    factory.study(user, spec)
    page.add_init_script(FAKE_GAMEPAD)
    log_in(page, live_server, user)
    page.get_by_role("button", name="Push").click()
    page.get_by_role("button", name="Validate").click()
    expect(page.locator("#validate-status")).to_contain_text("builds")
    box = open_controls(page, "Continuous car")
    plus, minus = (
        box.locator("tr[data-action='dimension 0 +']"),
        box.locator("tr[data-action='dimension 0 −']"),
    )
    # the catalog's defaults: the arrows, and stick 0 driving the dimension both ways
    expect(plus).to_contain_text("ArrowRight")
    expect(minus).to_contain_text("ArrowLeft")
    expect(plus).to_contain_text("axis 0 +")
    expect(minus).to_contain_text("axis 0 −")
    box.get_by_role("button", name="Remove ArrowLeft").click()
    expect(minus.locator(".flag-unbound")).to_have_count(0)  # the d-pad and the stick still
    box.get_by_role("button", name="Remove button 14").click()
    minus.get_by_role("button", name="Remove axis 0 −").click()  # the stick, both ways
    expect(plus).not_to_contain_text("axis 0")
    expect(minus.locator(".flag-unbound")).to_have_text("unbound")
    box.get_by_role("button", name="Bind a key to dimension 0 −").click()
    page.keyboard.press("KeyJ")
    expect(minus).to_contain_text("KeyJ")
    # a stick pushed up (negative) made to push the car left: a scale of +1 on axis 1
    box.get_by_role("button", name="Bind a gamepad button or axis to dimension 0 −").click()
    page.evaluate("() => { window.__pad.axes[1] = -0.8; }")
    expect(minus).to_contain_text("axis 1 −")  # a stick works both ways
    expect(plus).to_contain_text("axis 1 +")
    yaml = yaml_view(page)
    expect(yaml).to_have_value(re.compile(r"KeyJ:\n\s+- -1"))
    page.get_by_role("tab", name="Form").click()
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".toast", has_text="Saved.")).to_be_visible()
    # the save validates the saved study: the controls are resolved and valid
    report = page.get_by_role("article", name="Validation of Continuous car")
    expect(report).to_contain_text("KeyJ → [-1]")
    expect(report.locator(".validation-problems")).to_have_count(0)
