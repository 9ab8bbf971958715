"""A robot arm on a phone (real Chromium, a 390x844 touch-only context): the catalog's PickCube
controls bind the touch controls, so a participant lifts the cube with drags and taps alone
(pad 1 over the cube, pad 2 down, the gripper button, pad 2 up) and saves the episode; the
pads sit under the picture held upright and beside it held sideways; a storm of moves and
ten fingers are bounded, a touch the browser cancels lets go. Touch goes through CDP
(``Input.dispatchTouchEvent``), as a finger's does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from server.models import Episode, EpisodeStatus
from server.recording.writer import open_reader
from server.runtime.catalog import CATALOG
from tests.player.conftest import activate, spec
from tests.web._phone import orient

ENTRY = CATALOG["PickCube"]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not ENTRY.installed(), reason="PickCube is not installed here"),
]
PORTRAIT = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
LANDSCAPE = {"viewport": {"width": 844, "height": 390}, "is_mobile": True, "has_touch": True}
SHOTS = os.environ.get("STUDIO_TEST_SHOTS", "")
RADIUS_SHARE = 0.42  # web/player/touchpad.js: that far from the press is full speed


class Finger:
    """Touches on the page through CDP, as the touch screen sends them."""

    def __init__(self, page) -> None:  # type: ignore[no-untyped-def]
        self.page = page
        self.cdp = page.context.new_cdp_session(page)

    def touch(self, kind: str, points: list[tuple[float, float]]) -> None:
        self.cdp.send(
            "Input.dispatchTouchEvent",
            {
                "type": kind,
                "touchPoints": [{"x": x, "y": y, "id": i} for i, (x, y) in enumerate(points)],
            },
        )

    def drag(self, pad, vx: float, vy: float, steps: int) -> None:  # type: ignore[no-untyped-def]
        """Press the middle of ``pad``, drag to (vx, vy) of its radius, hold while the picture
        moves on ``steps`` steps, lift the finger."""
        box = pad.bounding_box()
        assert box is not None
        radius = max(36, RADIUS_SHARE * min(box["width"], box["height"]))
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        start = _step(self.page)
        self.touch("touchStart", [(x, y)])
        for k in range(1, 5):
            self.touch("touchMove", [(x + vx * radius * k / 4, y + vy * radius * k / 4)])
        self.page.wait_for_function(
            f"() => Number(document.getElementById('st-step').textContent) >= {start + steps}"
            " || document.getElementById('save-dialog').open",
            polling=5,
        )
        self.touch("touchEnd", [])

    def tap(self, locator) -> None:  # type: ignore[no-untyped-def]
        box = locator.bounding_box()
        assert box is not None
        point = (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        self.touch("touchStart", [point])
        self.touch("touchEnd", [])


def _step(page) -> int:  # type: ignore[no-untyped-def]
    return int(page.locator("#st-step").text_content() or 0)


def _shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/{name}.png")


@pytest.fixture
def phone(browser, request):  # type: ignore[no-untyped-def]
    context = browser.new_context(**getattr(request, "param", PORTRAIT))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors


def _cube_study(db, factory, max_steps: int = 1500):  # type: ignore[no-untyped-def]
    """An active study of the catalog's PickCube (its default controls), played by touch."""
    fields = {
        "id": "cube",
        "name": "Cube",
        "source": ENTRY.source().model_dump(),
        "mode": ENTRY.mode,
        "fps": ENTRY.fps,
        "seeds": [4],
        "max_steps": max_steps,
    }
    crowd = {"inputs": ["keyboard", "touch"], "allow_anonymous": True}
    return activate(db, factory.study(factory.user(), spec(fields, crowd=crowd)))


def _to_game(phone, live_server: str, study) -> Finger:  # type: ignore[no-untyped-def]
    """Open the link, start, read the instructions, pick the game, tap past its ready gate."""
    phone.goto(f"{live_server}/player.html?token={study.permalink_token}")
    phone.get_by_role("button", name="Start").tap()
    phone.get_by_role("button", name="Continue").tap()
    phone.get_by_role("button", name="Play Cube").tap()
    expect(phone.locator("#st-phase")).to_have_text("ready")
    expect(phone.locator("#touch-controls")).to_be_visible()
    expect(phone.locator("#touch-pad")).to_be_hidden()  # no key buttons beside the pads
    finger = Finger(phone)
    finger.tap(phone.locator("#screen"))
    expect(phone.locator("#st-phase")).to_have_text("playing")
    return finger


def _inside(box: dict, width: int, height: int) -> bool:
    return (
        box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= width
        and (box["y"] + box["height"] <= height)
    )


def test_a_phone_lifts_the_cube_with_touch_controls_alone(live_server, phone, factory, db):
    study = _cube_study(db, factory)
    finger = _to_game(phone, live_server, study)
    controls = phone.get_by_role("group", name="Touch controls")
    move = controls.get_by_role(
        "group", name="Pad 1: drag for hand left / right, hand away / nearer"
    )
    lift = controls.get_by_role("group", name="Pad 2: drag for turn (yaw), hand up / down")
    grip = controls.get_by_role("button", name="gripper: close / open")
    expect(controls.get_by_role("button", name="Next camera")).to_be_visible()
    expect(controls.get_by_role("button", name="Tilt to move")).to_be_visible()
    # the game, its pads and the gripper in one screen, thumb-sized
    for part in (phone.locator("#screen"), move, lift, grip):
        box = part.bounding_box()
        assert box is not None and _inside(box, 390, 844), box
    assert (grip.bounding_box() or {})["height"] >= 44
    _shot(phone, "touch-arm-portrait")

    finger.drag(move, 0.25, 0, 42)  # a quarter right: 2.5 mm a step, over the cube (10.6 cm)
    finger.drag(lift, 0, 1, 28)  # down to the table
    finger.tap(grip)  # shut the fingers on it
    expect(grip).not_to_have_class("pressed")
    finger.drag(lift, 0, 0, 12)  # wait for the fingers to close (a touch that does not move)
    finger.drag(lift, 0, -1, 40)  # up: the lifted cube ends the episode
    expect(phone.locator("#save-dialog")).to_be_visible(timeout=30_000)
    phone.get_by_role("button", name="Save").tap()
    expect(phone.locator("#after-save-text")).to_contain_text("Episode saved.")

    db.expire_all()
    (row,) = db.query(Episode).filter_by(study_id=study.id).all()
    assert row.status == EpisodeStatus.completed
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    inputs = [json.loads(s.custom_data["input"]) for s in steps[1:]]
    assert {k for raw in inputs if raw for k in raw["keys"]} == {"TouchA"}  # no key pressed
    pads = [raw["devices"]["touch"] for raw in inputs if raw and "touch" in raw["devices"]]
    assert pads and all(len(v) == 6 and all(-1 <= x <= 1 for x in v) for v in pads)
    assert [0.25, 0, 0, 0, 0, 0] in pads and [0, 0, 0, 1, 0, 0] in pads
    cube_z = np.array([s.timestep.observation["state"][10] for s in steps])
    assert cube_z[-1] - cube_z[0] > 0.05  # the cube rose 5 cm above its rest
    assert steps[-1].timestep.last() and steps[-1].timestep.reward == 1.0  # lifted: success


@pytest.mark.parametrize("phone", [LANDSCAPE], indirect=True)
def test_held_sideways_the_pads_sit_beside_the_picture(live_server, phone, factory, db):
    study = _cube_study(db, factory, max_steps=400)
    finger = _to_game(phone, live_server, study)
    _shot(phone, "touch-arm-landscape")
    canvas = phone.locator("#screen").bounding_box()
    move = phone.get_by_role("group", name="Pad 1: drag for hand left / right, hand away / nearer")
    lift = phone.get_by_role("group", name="Pad 2: drag for turn (yaw), hand up / down")
    grip = phone.get_by_role("button", name="gripper: close / open")
    boxes = [move.bounding_box(), lift.bounding_box(), grip.bounding_box()]
    assert canvas is not None and all(boxes)
    for box in [canvas, *boxes]:
        assert _inside(box, 844, 390), box  # all in one screen
    for box in boxes:  # beside the picture, not over it
        assert box["x"] >= canvas["x"] + canvas["width"] - 1, (box, canvas)
    _shot(phone, "touch-arm-landscape")
    finger.drag(move, 1, 0, 20)
    _, steps = _cancel_and_read(phone, db, study)
    state = np.array([s.timestep.observation["state"] for s in steps])
    assert state[-1, 0] - state[0, 0] > 0.05  # the hand went right


def _cancel_and_read(phone, db, study):  # type: ignore[no-untyped-def]
    """Cancel the episode (the button, then the confirmation); its row and its steps."""
    phone.get_by_role("button", name="Cancel episode").tap()
    phone.get_by_role("button", name="Cancel the episode").tap()
    expect(phone.locator("#st-phase")).not_to_have_text("paused")
    db.expire_all()
    for _ in range(100):
        (row,) = db.query(Episode).filter_by(study_id=study.id).all()
        db.refresh(row)
        if row.status == EpisodeStatus.canceled:
            break
        phone.wait_for_timeout(100)
    assert row.status == EpisodeStatus.canceled
    with open_reader(row.storage_path) as reader:
        return row, list(reader.steps)


def test_storms_ten_fingers_and_a_cancelled_touch_are_bounded(live_server, phone, factory, db):
    study = _cube_study(db, factory, max_steps=1500)
    sent: list[dict] = []
    phone.on(
        "websocket",
        lambda ws: ws.on(
            "framesent",
            lambda frame: (
                sent.append(json.loads(frame))
                if isinstance(frame, str) and frame.startswith('{"type":"input"')
                else None
            ),
        ),
    )
    finger = _to_game(phone, live_server, study)
    move = phone.get_by_role("group", name="Pad 1: drag for hand left / right, hand away / nearer")
    box = move.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    # ten fingers on the pad at once, then 400 moves of all of them as fast as CDP sends them
    finger.touch("touchStart", [(x + i, y) for i in range(10)])
    before = len(sent)
    step0 = _step(phone)
    for k in range(400):
        finger.touch("touchMove", [(x + (k % 40) + i, y + (k % 7)) for i in range(10)])
    step1 = _step(phone)
    storm = sent[before:]
    # at most one input a tick of the clock (25 a second) went out, plus the few a change
    # of press sends at once; each holds six values in [-1, 1] from the first finger only
    assert len(storm) <= (step1 - step0) + 4, (len(storm), step1 - step0)
    pads = [m["devices"].get("touch", [0] * 6) for m in storm]
    assert all(len(v) == 6 and all(-1 <= a <= 1 for a in v) for v in pads)
    assert any(v[0] > 0 for v in pads)
    # a thousand moves on pad 2 within one task (far past any touch screen's rate): at most
    # the one input sent at once and the one a tick later go out
    burst = len(sent)
    phone.evaluate("""() => {
        const pad = document.querySelectorAll('.touch-stick')[1];
        const r = pad.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;
        const ev = (type, dy) => pad.dispatchEvent(new PointerEvent(type, {pointerId: 77,
            pointerType: 'touch', clientX: x, clientY: y + dy, bubbles: true, isPrimary: false}));
        ev('pointerdown', 0);
        for (let k = 0; k < 1000; k++) ev('pointermove', -(k % 60));
    }""")
    phone.wait_for_timeout(300)
    assert len(sent) - burst <= 3 + (_step(phone) - step1), len(sent) - burst
    assert sent[-1]["devices"]["touch"][3] < 0  # pad 2 pushed up, as the last move left it
    phone.evaluate("""() => document.querySelectorAll('.touch-stick')[1].dispatchEvent(
        new PointerEvent('pointerup', {pointerId: 77, pointerType: 'touch', bubbles: true}))""")
    # the browser takes the touch (a gesture, the finger off the screen): the pad lets go
    finger.touch("touchCancel", [])
    phone.wait_for_function(
        "() => !document.getElementById('touch-controls').querySelector('.pressed')"
    )
    for _ in range(100):  # the input that lets go goes out within a tick
        if "touch" not in sent[-1]["devices"]:
            break
        phone.wait_for_timeout(20)
    assert "touch" not in sent[-1]["devices"]
    expect(phone.locator("#st-phase")).to_have_text("playing")  # the socket lives on
    _, steps = _cancel_and_read(phone, db, study)
    last = json.loads(steps[-1].custom_data["input"])
    assert "touch" not in last["devices"]  # the axes back to zero after the cancel


def test_the_phones_tilt_moves_the_hand_while_tilt_is_on(live_server, phone, factory, db):
    """Tilt to move: the pose at the tap is level, tipping the top edge away moves the hand
    away (axis 4), tapping again lets go; the recorded input carries the tilt."""
    study = _cube_study(db, factory, max_steps=1500)
    finger = _to_game(phone, live_server, study)
    tilt = phone.get_by_role("button", name="Tilt to move")
    finger.tap(tilt)
    expect(phone.get_by_role("button", name="Tilt on")).to_have_attribute("aria-pressed", "true")
    orient(phone, 0, 40, 0)  # the first reading: level is the phone as it is held now
    orient(phone, 0, 25, 0)  # the top edge tipped 15° away: half a push forward
    start = _step(phone)
    phone.wait_for_function(
        f"() => Number(document.getElementById('st-step').textContent) >= {start + 20}"
    )
    finger.tap(phone.get_by_role("button", name="Tilt on"))
    expect(phone.get_by_role("button", name="Tilt to move")).to_have_attribute(
        "aria-pressed", "false"
    )
    _, steps = _cancel_and_read(phone, db, study)
    inputs = [json.loads(s.custom_data["input"]) for s in steps[1:]]
    tilted = [raw["devices"]["touch"] for raw in inputs if raw and "touch" in raw["devices"]]
    assert [0, 0, 0, 0, 0.5, 0] in tilted
    assert "touch" not in inputs[-1]["devices"]  # off: the tilt lets go
    state = np.array([s.timestep.observation["state"] for s in steps])
    assert state[-1, 1] - state[0, 1] > 0.03  # the hand went away
