"""The player as a phone and a laptop show it (real Chromium). A phone (390×844, touch)
shows only what a phone can use: no keyboard or mouse words, no key hints, no pairing
panel, no "No gamepad", and the game and its buttons fit one screen, held upright or
sideways. A laptop (1280×800) reads the legend beside the game, above the fold: keys as
printed on them, one row per thing they do, grouped by meaning (an arm's Move, Rotate,
Gripper, then Camera and Episode); a connected gamepad gets a column in its own words. The
sample games read the same way."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from server.runtime.catalog import CATALOG
from tests.player.conftest import activate, spec
from tests.web._crowd import link, shot

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
# what a phone cannot use: the keyboard's and the mouse's words, pairing itself
DESKTOP_WORDS = (
    "Shift+drag",
    "wheel",
    "mouse",
    "Enter",
    "Esc",
    "Delete",
    "Player keys",
    "Use your phone",
    "No gamepad",
    "KeyW",
    "ArrowRight",
    "Click the game",
    "127.0.0.1",
    "Press ",
)
PICK_CUBE = CATALOG["PickCube"]
FAKE_GAMEPAD = """
navigator.getGamepads = () => [{ id: "Fake pad (STANDARD GAMEPAD)", index: 0, connected: true,
  mapping: "standard", timestamp: 0, axes: [0, 0, 0, 0],
  buttons: Array.from({ length: 17 }, () => ({ pressed: false, touched: false, value: 0 })) }];
"""


def _catalog_study(db, factory, key: str = "PickCube", name: str = "Cube"):  # type: ignore[no-untyped-def]
    """An active study of the catalog's ``key`` (its own controls), open to touch too."""
    entry = CATALOG[key]
    env = {
        "id": "game",
        "name": name,
        "source": entry.source().model_dump(),
        "mode": entry.mode,
        "fps": entry.fps,
    }
    crowd = {"inputs": ["keyboard", "gamepad", "touch"]}
    return activate(db, factory.study(factory.user(), spec(env, crowd=crowd)))


def _to_ready_gate(page: Page, url: str, game: str) -> None:
    """A participant's way from the link to the game's ready gate, tapped or clicked."""
    page.goto(url)
    expect(page.locator("#instructions-view")).to_be_visible()
    page.locator("#instructions-ok").click()
    page.get_by_role("button", name=f"Play {game}").click()
    expect(page.locator("#st-phase")).to_have_text("ready")


def _fits(page: Page) -> None:
    """The page scrolls neither way: all of it is on the screen."""
    size = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.scrollHeight,"
        " innerWidth, innerHeight]"
    )
    assert size[0] <= size[2] and size[1] <= size[3], size


def _no_desktop_words(page: Page) -> None:
    text = page.evaluate("document.body.innerText")  # what is on screen (not hidden)
    assert [w for w in DESKTOP_WORDS if w in text] == [], text


@pytest.mark.parametrize(
    ("key", "name"),
    [
        # an arm (its touch controls are another page's part) and a game with touch buttons
        pytest.param(
            "PickCube",
            "Cube",
            marks=pytest.mark.skipif(
                not PICK_CUBE.installed(), reason="the robotics runtime is not installed"
            ),
        ),
        ("CartPole", "CartPole"),
    ],
)
def test_a_phone_shows_only_what_a_phone_uses_and_fits_one_screen(
    live_server, browser, factory, db, key, name
):
    study = _catalog_study(db, factory, key, name)
    context = browser.new_context(**PHONE)
    phone = context.new_page()
    _to_ready_gate(phone, link(live_server, study, PROLIFIC_PID="thumbs"), name)
    if key == "CartPole":
        expect(phone.locator("#touch-pad")).to_be_in_viewport(ratio=1)
        shot(phone, "player-phone")  # docs/img/player-phone.png
    _no_desktop_words(phone)
    expect(phone.locator("#controls-section")).to_be_hidden()  # nothing of it is the phone's
    expect(phone.locator("#gamepad-status")).to_be_hidden()
    expect(phone.locator("#phone-panel")).to_be_hidden()  # PickCube binds a phone: none here
    for button in ("Start", "Pause", "Cancel episode", "Instructions"):
        expect(phone.get_by_role("button", name=button, exact=True)).to_be_in_viewport()
    _fits(phone)
    phone.get_by_role("button", name="Start", exact=True).tap()
    expect(phone.locator("#st-phase")).to_have_text("playing")
    _no_desktop_words(phone)
    _fits(phone)

    phone.set_viewport_size({"width": 844, "height": 390})  # held sideways
    expect(phone.locator("#stage")).to_be_in_viewport(ratio=1)
    shot(phone, f"player-phone-landscape-{key}")
    _no_desktop_words(phone)
    _fits(phone)
    for button in ("Pause", "Cancel episode"):
        expect(phone.get_by_role("button", name=button, exact=True)).to_be_in_viewport()
    if key == "CartPole":
        expect(phone.locator("#touch-pad")).to_be_in_viewport(ratio=1)
    # the game's own instructions are behind the Instructions button (no side column)
    phone.get_by_role("button", name="Instructions", exact=True).tap()
    expect(phone.locator("#instructions-dialog")).to_be_visible()
    context.close()


def test_a_phone_with_a_keyboard_attached_is_shown_the_keys(live_server, browser, factory, db):
    """A key typed on a phone (a tablet's keyboard case) brings the keys back: the legend's
    and the buttons' hints; the page remembers nothing of it until the keyboard speaks."""
    study = _catalog_study(db, factory, "CartPole", "CartPole")
    context = browser.new_context(**PHONE)
    phone = context.new_page()
    _to_ready_gate(phone, link(live_server, study, PROLIFIC_PID="typist"), "CartPole")
    expect(phone.locator("#controls-section")).to_be_hidden()
    expect(phone.locator("#start-btn kbd")).to_be_hidden()
    phone.keyboard.press("Shift")  # a key no game binds: nothing starts
    expect(phone.locator("body")).to_have_attribute("data-keyboard", "true")
    expect(phone.locator("#controls-section")).to_be_visible()
    expect(phone.locator("#legend")).to_contain_text("←")
    expect(phone.locator("#start-btn kbd")).to_have_text("Enter")
    expect(phone.locator("#start-btn kbd")).to_be_visible()
    expect(phone.locator("#st-phase")).to_have_text("ready")
    context.close()


@pytest.mark.skipif(not PICK_CUBE.installed(), reason="the robotics runtime is not installed")
def test_a_phone_with_a_gamepad_gets_its_legend_in_the_gamepads_words(
    live_server, browser, factory, db
):
    study = _catalog_study(db, factory)
    context = browser.new_context(**PHONE)
    context.add_init_script(FAKE_GAMEPAD)
    phone = context.new_page()
    _to_ready_gate(phone, link(live_server, study, PROLIFIC_PID="pad"), "Cube")
    expect(phone.locator("#gamepad-status")).to_have_text("Gamepad: Fake pad (STANDARD GAMEPAD)")
    legend = phone.locator("#legend")
    expect(legend.locator("thead")).to_be_hidden()  # one device: no column headings
    move = legend.locator("tbody[data-group='Move']")
    expect(move.locator("tr").nth(1)).to_have_text("left stick ←→hand left / right")
    expect(legend).not_to_contain_text("Space")  # no keyboard here
    expect(legend.locator("tbody[data-group='Episode']")).to_have_text("EpisodeAstart")
    context.close()


@pytest.mark.skipif(not PICK_CUBE.installed(), reason="the robotics runtime is not installed")
def test_a_laptop_reads_a_grouped_legend_of_printed_keys_above_the_fold(
    live_server, page, factory, db
):
    study = _catalog_study(db, factory)
    _to_ready_gate(page, link(live_server, study, PROLIFIC_PID="laptop"), "Cube")
    legend = page.locator("#legend")
    groups = legend.locator("tbody")
    expect(groups.locator(".legend-group")).to_have_text(
        ["Move", "Rotate", "Gripper", "Camera", "Episode"]
    )
    rows = legend.locator("tbody tr:not(.legend-group)")
    expect(rows).to_have_text(
        [
            "← →hand left / right",
            "↑ ↓hand away / nearer",
            "W Shand up / down",
            "Q Etilt fingers away / nearer (roll)",
            "R Ftilt fingers left / right (pitch)",
            "A Dturn left / right (yaw)",
            "Spaceclose / open the gripper (toggle)",
            "Cnext camera",
            "Enterstart",
            "Escpause / resume",
            "Deletecancel the episode (asks first)",
            "XI'm done: end the episode, then save it",  # a robot task: allow_end by default
        ]
    )
    expect(legend.locator("kbd").first).to_have_text("←")
    for code in ("KeyW", "ArrowRight", "mouse", "phone", "stick"):  # no code, no other device
        expect(legend).not_to_contain_text(code)
    expect(legend).to_be_in_viewport(ratio=1)  # above the fold, the pairing panel below it
    box, panel = legend.bounding_box(), page.locator("#phone-panel").bounding_box()
    assert box and panel and box["y"] + box["height"] <= 800 and panel["y"] > box["y"]
    expect(page.locator("#phone-unreachable")).to_be_hidden()  # the operator's problem
    shot(page, "player-legend")  # docs/img/player-legend.png

    # a gamepad comes: a column in its words beside the keys
    page.evaluate(FAKE_GAMEPAD)
    expect(legend.locator("thead th")).to_have_text(["Key", "Gamepad", "Does"])
    first = legend.locator("tbody[data-group='Move'] tr").nth(1)
    expect(first.locator("td")).to_have_text(["← →", "left stick ←→", "hand left / right"])
    expect(legend.locator("tbody[data-group='Episode'] tr").nth(1).locator("td")).to_have_text(
        ["Enter", "A", "start"]
    )
    expect(legend).to_be_in_viewport(ratio=1)
    shot(page, "laptop-legend-gamepad")
    page.evaluate("navigator.getGamepads = () => [null, null, null, null]")  # unplugged
    expect(legend.locator("thead")).to_be_hidden()


@pytest.mark.parametrize(
    ("file", "game", "rows"),
    [
        ("atari-breakout.yaml", "Breakout", ["Spacefire", "→right", "←left"]),
        ("cartpole.yaml", "CartPole", ["← / Apush left", "→ / Dpush right"]),
        (
            "lunar-lander.yaml",
            "Lunar Lander",
            ["↑ / Wmain engine", "← / Aleft engine", "→ / Dright engine"],
        ),
    ],
)
def test_the_sample_games_legends_read_as_printed_keys(
    live_server, page, factory, db, file, game, rows
):
    study = activate(db, factory.sample_study(factory.user(), file))
    _to_ready_gate(page, link(live_server, study, PROLIFIC_PID="gamer"), game)
    legend = page.locator("#legend")
    expect(legend.locator("tbody[data-group='Actions'] tr:not(.legend-group)")).to_have_text(rows)
    expect(legend.locator(".legend-group")).to_have_text(["Actions", "Episode"])
    expect(legend).to_be_in_viewport(ratio=1)
    expect(page.locator("#screen")).to_be_in_viewport(ratio=1)
    expect(page.get_by_role("button", name="Start Enter")).to_be_in_viewport()
    shot(page, f"laptop-{file.removesuffix('.yaml')}")
