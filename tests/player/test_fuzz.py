"""Random messages against a live play session: errors or a 1008 close, never a server
failure, and every recorded step kept. Seeded, so a failure replays exactly."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest

from server.export.timings import realign_timings
from server.models import EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import wait_status
from tests.player.test_bad_input import _playing

VALID = [
    {"type": "input", "keys": ["KeyA"], "buttons": {"0": 1.0}, "axes": [0.5], "client_ms": 1,
     "seen_step": 0},
    {"type": "ack", "episode": 1, "step": 0, "drawn_ms": 3.5},
    {"type": "start", "env_id": "counter"}, {"type": "pause"}, {"type": "resume"},
    {"type": "save", "keep": False}, {"type": "set_speed", "speed": 2},
    {"type": "set_quality", "quality": "low"}, {"type": "set_camera", "camera": "top"},
    {"type": "ping", "client_ms": 4},
]  # fmt: skip
ODD_VALUES: list[Any] = [
    None, True, -1, 0, 2**31, 2**70, -(2**70), 1e308, -1e308, "", "x" * 300, "\x00",
    "\ud7ff", [], {}, [None], {"a": {"b": [1]}}, 0.5, "KeyA", ["KeyA"] * 40,
    1e300, 2**64, 10**30, 2.0**53, math.inf, -math.inf, math.nan, {"0": math.nan},
    {"0": 2.5}, {str(2**64): 1}, [math.nan], [1.5],
]  # fmt: skip
# Numbers that were accepted, recorded, and then made every RLDS export of the episode fail.
OUT_OF_RANGE = [
    {"type": "input", "keys": ["KeyA"], "client_ms": 1e300},
    {"type": "input", "keys": ["KeyA"], "client_ms": 1, "seen_step": 2**64},
    {"type": "input", "keys": ["KeyA"], "client_ms": 1, "buttons": {"0": math.nan}},
    {"type": "input", "keys": ["KeyA"], "client_ms": math.inf},
    {"type": "ack", "episode": 1, "step": 10**30, "drawn_ms": 1},
    {"type": "ack", "episode": 1, "step": 1, "drawn_ms": math.inf},
    {"type": "ack", "episode": 1, "step": 1, "drawn_ms": 1e300},
]  # fmt: skip


def _assert_exportable(path: str) -> None:
    """What the exporter reads of every step fits its dtypes: int64 timings, JSON input."""
    with open_reader(path) as reader:
        steps = list(reader.steps)
    raw = [json.loads(s.custom_data.get("timing") or "{}") for s in steps]
    timings = realign_timings(raw)
    np.asarray([list(t.values()) for t in timings], dtype=np.int64)  # OverflowError if not

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} recorded")

    for step in steps:
        json.loads(step.custom_data.get("input") or "null", parse_constant=refuse)
        json.loads(step.custom_data.get("timing") or "{}", parse_constant=refuse)


def test_out_of_range_numbers_are_invalid_and_the_episode_goes_on(factory, designer, db, app):
    app.state.settings.reconnect_grace_s = 0.2
    ws_cm, player, episode = _playing(factory, designer, episode_len=100_000)
    try:
        player.step(["KeyA"])
        for message in OUT_OF_RANGE:
            player.ws.send_text(json.dumps(message))  # NaN and Infinity as Python writes them
            error = player.until("error")
            assert error["code"] == "invalid" and error["for"] == message["type"], message
        for _ in range(3):
            player.step(["KeyB"])  # the episode plays on
    finally:
        ws_cm.__exit__(None, None, None)
    assert not any(m["type"] == "episode_failed" for m in player.seen)
    row = wait_status(db, episode["id"], EpisodeStatus.abandoned)
    assert row.steps == 5
    _assert_exportable(row.storage_path)


def _mutant(rng: random.Random) -> str | bytes:
    """One message: a valid one with a field changed, dropped or added, or plain garbage."""
    kind = rng.random()
    if kind < 0.6:
        message = dict(rng.choice(VALID))
        field = rng.choice([*message, "extra"])
        if rng.random() < 0.2 and field != "type":
            message.pop(field, None)
        else:
            message[field] = rng.choice(ODD_VALUES)
        text = json.dumps(message)
        return text.replace("1e+308", "Infinity") if rng.random() < 0.1 else text
    if kind < 0.75:
        return json.dumps(rng.choice(ODD_VALUES))
    if kind < 0.9:
        return "".join(chr(rng.randrange(1, 0xD7FF)) for _ in range(rng.randrange(0, 40)))
    return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_messages_never_break_the_session(factory, designer, db, app, seed):
    app.state.settings.reconnect_grace_s = 0.2
    rng = random.Random(seed)
    ws_cm, player, episode = _playing(factory, designer, episode_len=100_000)
    closed = None
    try:
        player.step(["KeyA"])
        for _ in range(60):
            message = _mutant(rng)
            if isinstance(message, bytes):
                player.ws.send_bytes(message)
            else:
                player.ws.send_text(message)
            player.send(type="ping", client_ms=1.0)
            try:
                player.until("pong")
            except ConnectionError as err:
                closed = err.args[0]
                break
        if closed is None:
            player.send(type="resume")  # a fuzzed pause may hold the episode
            player.step(["KeyB"])  # the session still plays
    finally:
        ws_cm.__exit__(None, None, None)

    assert closed in (None, 1008), f"closed with {closed}"
    errors = [m for m in player.seen if m.get("type") == "error"]
    assert errors and all(m["code"] and m["message"] for m in errors)
    assert not any("Traceback" in m["message"] for m in errors)
    row = wait_status(db, episode["id"], EpisodeStatus.abandoned)
    with open_reader(row.storage_path) as reader:
        recorded = len(list(reader.steps))
    assert row.steps == recorded >= len({f[1] for f in player.frames if f[0] == 1})
    assert all(math.isfinite(f[3]) for f in player.frames)
    assert not any(m["type"] == "episode_failed" for m in player.seen)
    _assert_exportable(row.storage_path)
