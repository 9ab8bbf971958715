"""A paired phone with WebXR drives our PickCube's hand in six dimensions (real Chromium, two
browser contexts). The phone's browser has a scripted ``navigator.xr`` (an XRSystem whose
immersive-ar session yields, on every animation frame, the viewer pose the test sets, as a
phone's AR tracking would); the participant chooses **Use AR tracking**, holds "Hold to move"
and moves and turns the phone: the recorded phone axes, the actions and the hand follow the
pose relative to where it was at the press. The AR session ends: the page says it is back to
tilting, and the tilt drives the same bindings. WebXR is offered only where a session tracks
the phone (not a desktop's inline-only WebXR)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from server.runtime.catalog import CATALOG
from tests.web._phone import PHONE, hold_clutch, orient, pair, watch
from tests.web._teleop import open_game, save_episode, wait_steps

ENTRY = CATALOG["PickCube"]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not ENTRY.installed(), reason="no robotics runtime"),
]
MAX_STEPS = 250  # 10 s at 25 Hz
SCALE = 0.5
# docs/study-format.md's PickCube example: the phone's moves drive the hand's position, its
# turns the hand's rotation (tipped forward: roll away; tipped right: pitch right; twisted
# left: turn left)
CONTROLS = {
    "keys": {"ArrowRight": [SCALE, 0, 0, 0, 0, 0, 0], "PhoneGrip": [0, 0, 0, 0, 0, 0, 2]},
    "toggle": ["PhoneGrip"],
    "noop": [0, 0, 0, 0, 0, 0, -1],
    "axes": [{"source": "phone", "axis": axis, "dim": dim, "scale": scale}
             for axis, dim, scale in ((3, 0, SCALE), (4, 1, SCALE), (5, 2, SCALE),
                                      (0, 3, SCALE), (1, 4, -SCALE), (2, 5, SCALE))],
}  # fmt: skip

# A WebXR system as a phone's browser has it; its frames' viewer pose is window.xrPose
XR_STUB = (Path(__file__).parent / "_xr_stub.js").read_text()


def _quat(axis: tuple[float, float, float], degrees: float) -> list[float]:
    """The rotation by ``degrees`` about a unit ``axis`` as [x, y, z, w]."""
    half = math.radians(degrees) / 2
    return [a * math.sin(half) for a in axis] + [math.cos(half)]


def _mul(a: list[float], b: list[float]) -> list[float]:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ]


def _pose(phone, p: list[float], q: list[float]) -> None:
    """Where the phone's AR tracking has it now (metres in the local space, a quaternion)."""
    phone.evaluate("([p, q]) => { window.xrPose = { p, q }; }", [p, q])


def _move_while_held(desktop, phone, start, end, steps: int) -> None:
    """At pose ``start``, hold "Hold to move", go to pose ``end`` and stay ``steps`` steps."""
    _pose(phone, *start)
    expect(phone.locator("#ax-3")).to_have_text("0.00")

    def move() -> None:
        _pose(phone, *end)
        wait_steps(desktop, steps)

    hold_clutch(phone, move)


def _held(inputs: list[dict], size: int) -> list[tuple[int, list[float]]]:
    """(step, phone axes) of the recorded inputs whose phone axes have ``size`` values and
    were sent with the clutch held."""
    out = []
    for t, raw in enumerate(inputs):
        axes = ((raw or {}).get("devices") or {}).get("phone") or []
        if len(axes) == size and "PhoneClutch" in raw["keys"] and any(axes):
            out.append((t, axes))
    return out


def test_a_phone_with_webxr_moves_and_turns_the_hand(live_server, page, browser, factory, db):
    desktop = page
    study = open_game(desktop, live_server, factory, db, ENTRY, name="Cube", seeds=[4],
                      max_steps=MAX_STEPS, controls=CONTROLS)  # fmt: skip
    expect(desktop.locator("#phone-panel")).to_be_visible()
    context = browser.new_context(**PHONE)
    context.add_init_script(XR_STUB)
    errors: list[str] = []
    phone = context.new_page()
    watch(phone, errors)
    pair(desktop, phone, live_server)
    source = phone.locator("#motion-source")
    expect(source).to_have_text("Moves with: tilt (device orientation)")
    phone.get_by_role("button", name="Use AR tracking (WebXR)").click()
    expect(source).to_have_text("Moves with: the WebXR pose (position and orientation)")
    expect(phone.locator("#xr-btn")).to_be_hidden()
    session = phone.evaluate("(({ mode, options }) => ({ mode, options }))(xrLog.sessions.at(-1))")
    assert session["mode"] == "immersive-ar"
    assert "dom-overlay" in session["options"]["optionalFeatures"]  # the buttons stay on screen
    desktop.locator("#screen").click()  # past the ready gate
    expect(desktop.locator("#st-phase")).to_have_text("playing")

    # 1. facing the table (-z), 10 cm right, 6 cm up, twisted 22.5° left
    level = _quat((0, 0, 1), 0)
    _move_while_held(desktop, phone, ([0.1, 1.5, -0.2], level),
                     ([0.2, 1.56, -0.2], _quat((0, 0, 1), 22.5)), 20)  # fmt: skip
    # 2. turned a quarter left first (facing -x): 10 cm along -x is away; top edge tipped
    # 15° away (about the phone's own x axis)
    facing = _quat((0, 1, 0), 90)
    _move_while_held(desktop, phone, ([0.0, 1.5, 0.0], facing),
                     ([-0.1, 1.5, 0.0], _mul(facing, _quat((1, 0, 0), -15))), 20)  # fmt: skip
    # the AR session ends (the participant left it): back to the tilt, which drives axes 0-2
    phone.evaluate("xrLog.sessions.at(-1).end()")
    expect(source).to_have_text("Moves with: tilt (device orientation)")
    expect(phone.locator("#motion-text")).to_contain_text("The AR session ended.")
    expect(phone.locator("#xr-btn")).to_be_visible()  # it may be chosen again
    orient(phone, 0, 0, 0)

    def tilt() -> None:
        orient(phone, 0, 0, 15)  # the right edge tipped down 15°
        wait_steps(desktop, 20)

    hold_clutch(phone, tilt)

    row, steps = save_episode(desktop, db, study)  # max_steps ends the episode
    context.close()
    assert not errors, f"JavaScript errors or CSP violations on the phone: {errors}"
    assert row.steps == MAX_STEPS + 1
    inputs = [json.loads(s.custom_data["input"] or "null") for s in steps]
    actions = {t: np.asarray(s.action) for t, s in enumerate(steps) if t > 0}
    hand = np.array([s.timestep.observation["state"][0:3] for s in steps])

    xr = _held(inputs, 6)
    first = [(t, ax) for t, ax in xr if ax[3] > 0]
    second = [(t, ax) for t, ax in xr if ax[4] > 0]
    assert first and second and len(first) + len(second) == len(xr)
    # the last value sent while held is the scripted pose's (the first few may be the
    # press-time pose, before the moved one reached the page)
    np.testing.assert_allclose(first[-1][1], [0, 0, 0.5, 0.5, 0, 0.3], atol=2e-3)
    np.testing.assert_allclose(second[-1][1], [0.5, 0, 0, 0, 0.5, 0], atol=2e-3)
    for t, ax in xr:  # each step's action is its axes through the bindings
        want = [ax[3], ax[4], ax[5], ax[0], -ax[1], ax[2]]
        np.testing.assert_allclose(actions[t][:6], np.asarray(want) * SCALE, atol=1e-6)
    # the hand followed: right and up in the first hold, away in the second
    assert hand[first[-1][0] + 1, 0] - hand[first[0][0], 0] > 0.05
    assert hand[first[-1][0] + 1, 2] - hand[first[0][0], 2] > 0.03
    assert hand[second[-1][0] + 1, 1] - hand[second[0][0], 1] > 0.05

    tilted = _held(inputs, 3)  # after the session: the tilt's three axes
    assert tilted and tilted[0][0] > second[-1][0]
    np.testing.assert_allclose(tilted[-1][1], [0, 0.5, 0], atol=2e-3)
    assert all(actions[t][4] == pytest.approx(-ax[1] * SCALE) for t, ax in tilted)


@pytest.mark.parametrize(
    ("modes", "inline_tracks", "offered"),
    [
        (["inline"], False, None),  # a desktop's WebXR: inline only, and it tracks nothing
        (["inline"], True, "inline"),  # an inline session that tracks the phone
        ([], False, None),
    ],
)
def test_webxr_is_offered_only_where_it_tracks(live_server, browser, modes, inline_tracks,
                                               offered):  # fmt: skip
    context = browser.new_context(**PHONE)
    context.add_init_script(f"window.xrModes = {json.dumps(modes)};"
                            f" window.xrInlineLocal = {json.dumps(inline_tracks)};")  # fmt: skip
    context.add_init_script(XR_STUB)
    phone = context.new_page()
    errors: list[str] = []
    watch(phone, errors)
    phone.goto(f"{live_server}/phone.html")
    button = phone.locator("#xr-btn")
    expect(button).to_have_attribute("data-mode", offered or "none")  # the page decided
    assert phone.evaluate("document.getElementById('xr-btn').hidden") == (offered is None)
    # an inline session was asked for only to see whether it tracks, and ended at once
    probes = phone.evaluate("xrLog.sessions.map((s) => [s.mode, s.over])")
    assert probes == ([["inline", True]] if "inline" in modes else [])
    context.close()
    assert not errors, errors
