"""Latched presses (async mode): a key or gamepad button pressed and released between two
ticks of the clock still reaches one step, its recorded input and its action."""

from __future__ import annotations

import asyncio
import json

from server.recording.format import episode_dir
from server.recording.writer import open_reader
from server.runtime import EnvWorker
from server.runtime.presses import Presses
from tests.runtime.conftest import ALLOWED, fake_spec, run

CONTROLS = {"keys": {"KeyA": 1, "KeyB": 2}, "buttons": {0: 1, 1: 2}, "noop": 0}


def test_a_tap_between_ticks_is_applied_once_and_marked_latched():
    presses = Presses()
    held = {"keys": [], "buttons": {}, "axes": [], "devices": {}}
    down = {**held, "keys": ["Space"]}
    presses.note(held, down)
    presses.note(down, held)  # released before the tick
    first = presses.apply(held)
    assert first["keys"] == ["Space"] and first["latched"] == ["Space"]
    assert held["keys"] == []  # the held input itself is not changed
    assert presses.apply(held) is held  # the next step: nothing carried over


def test_a_key_still_held_at_the_tick_is_not_marked_latched():
    presses = Presses()
    down = {"keys": ["KeyA"]}
    presses.note(None, down)
    assert presses.apply(down) is down
    assert presses.apply({"keys": []}) == {"keys": []}  # released after: no late press


def test_gamepad_buttons_latch_by_index():
    presses = Presses()
    up = {"keys": [], "buttons": {}}
    presses.note(up, {"keys": [], "buttons": {"3": 1.0}})
    presses.note({"keys": [], "buttons": {"3": 1.0}}, up)
    applied = presses.apply(up)
    assert applied["buttons"] == {"3": 1.0} and applied["latched"] == ["button:3"]
    # a button lightly touched (not past the pressed threshold) is no press
    presses.note(up, {"buttons": {"2": 0.3}})
    assert presses.apply(up) is up


def test_a_flood_of_distinct_keys_is_bounded():
    presses = Presses()
    for i in range(100):
        presses.note(None, {"keys": [f"Key{i}"]})
    applied = presses.apply({"keys": []})
    assert len(applied["keys"]) == 32


def test_taps_between_ticks_each_reach_one_step_in_the_recording(data_root, no_leaks):
    """A real worker at 10 fps: each tap (down and up sent back to back, as an instant
    keydown/keyup or a gamepad button shorter than a tick) is one step's action, and the step
    after it is the noop."""
    taps = [
        ({"keys": ["KeyA"]}, {"keys": []}),
        ({"keys": ["KeyB"]}, {"keys": []}),
        ({"buttons": {"0": 1.0}}, {"buttons": {}}),
        ({"keys": ["KeyA"]}, {"keys": []}),
    ]

    async def scenario():
        spec = fake_spec(kwargs={"episode_len": 10_000}, mode="async", fps=10, max_steps=30,
                         controls=CONTROLS)  # fmt: skip
        w = await EnvWorker.start(spec, allowed=ALLOWED, study_id=7, data_root=data_root,
                                  timeout=20)  # fmt: skip
        await w.begin_episode("taps", 0)
        for down, up in taps:
            await w.send_input(down, {"input_sent": 1.0})
            await w.send_input(up, {"input_sent": 2.0})
            await asyncio.sleep(0.35)  # three ticks and a half: the next tap has its own
        async for ev in w.events():
            if ev.done:
                break
        await w.close()

    run(scenario())
    with open_reader(episode_dir(data_root, 7, "taps")) as reader:
        steps = list(reader.steps)[1:]
    actions = [int(s.action) for s in steps]
    pressed = [i for i, a in enumerate(actions) if a != 0]
    assert [actions[i] for i in pressed] == [1, 2, 1, 1]  # each tap once, in order
    assert all(actions[i + 1] == 0 for i in pressed)  # never carried past its step
    inputs = [json.loads(steps[i].custom_data["input"]) for i in pressed]
    assert [i.get("keys") for i in inputs] == [["KeyA"], ["KeyB"], [], ["KeyA"]]
    assert inputs[2]["buttons"] == {"0": 1.0}
    no_leaks()
