"""Bad input: every problem gets an error naming it; abuse closes with 1008; steps are kept."""

from __future__ import annotations

import json

import pytest

from server.models import EpisodeStatus
from server.player.outbox import Frame, Outbox
from server.player.protocol import MAX_MESSAGE_BYTES, BadMessage, parse_client
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, spec, wait_status


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "bad_message"),
        ('{"type": "teleport"}', "unknown_type"),
        ('{"no": "type"}', "unknown_type"),
        ('{"type": "input", "keys": ["KeyA"]}', "invalid"),  # client_ms missing
        ('{"type": "input", "client_ms": 1, "axes": [2.0]}', "invalid"),
        ('{"type": "input", "client_ms": 1, "extra": 1}', "invalid"),
        ('{"type": "set_speed", "speed": 100}', "invalid"),
        ('{"type": "set_quality", "quality": "ultra"}', "invalid"),
        ('{"type": "save"}', "invalid"),
        ('{"type": "start", "env_id": ""}', "invalid"),
        ('{"type": "ack", "episode": 1, "step": -1, "drawn_ms": 1}', "invalid"),
        ("[" * 60_000, "bad_json"),  # was a RecursionError: closed as a server failure
        (
            '{"type": "input", "client_ms": 1, "keys": ' + "[" * 30_000 + "]" * 30_000 + "}",
            "bad_json",
        ),
    ],
)
def test_parse_names_the_problem(text, code):
    with pytest.raises(BadMessage) as err:
        parse_client(text)
    assert err.value.code == code and err.value.message


# Numbers the recording would keep and the RLDS exporter (int64 timings, JSON input) could
# not write, or that mean nothing: each is refused as ``invalid``, naming the field.
OUT_OF_RANGE = [
    ({"type": "input", "client_ms": 1e300}, "client_ms"),
    ({"type": "input", "client_ms": 2.0**53}, "client_ms"),
    ({"type": "input", "client_ms": -1}, "client_ms"),
    ({"type": "input", "client_ms": 1, "seen_step": 2**64}, "seen_step"),
    ({"type": "input", "client_ms": 1, "seen_step": -2}, "seen_step"),
    ({"type": "input", "client_ms": 1, "buttons": {"0": float("nan")}}, "buttons"),
    ({"type": "input", "client_ms": 1, "buttons": {"0": 1.5}}, "buttons"),
    ({"type": "input", "client_ms": 1, "buttons": {"0": -0.1}}, "buttons"),
    ({"type": "input", "client_ms": 1, "buttons": {str(2**70): 1}}, "buttons"),
    ({"type": "input", "client_ms": 1, "buttons": {"-1": 1}}, "buttons"),
    ({"type": "input", "client_ms": 1, "axes": [float("inf")]}, "axes"),
    ({"type": "input", "client_ms": 1, "devices": {"mouse": [float("nan")]}}, "devices"),
    ({"type": "input", "client_ms": 1, "devices": {"spacemouse": [0, 1.01]}}, "devices"),
    ({"type": "input", "client_ms": 1, "devices": {"phone": [-2]}}, "devices"),
    ({"type": "input", "client_ms": 1, "devices": {"touch": [0, 1.5]}}, "devices"),
    ({"type": "input", "client_ms": 1, "devices": {"touch": [float("nan")]}}, "devices"),
    ({"type": "input", "client_ms": 1, "devices": {"touch": [0.5] * 9}}, "devices"),
    ({"type": "input", "client_ms": 1, "devices": {"touch": "0.5"}}, "devices"),
    ({"type": "ack", "episode": 1, "step": 10**30, "drawn_ms": 1}, "step"),
    ({"type": "ack", "episode": 2**40, "step": 1, "drawn_ms": 1}, "episode"),
    ({"type": "ack", "episode": 1, "step": 1, "drawn_ms": float("inf")}, "drawn_ms"),
    ({"type": "ack", "episode": 1, "step": 1, "drawn_ms": float("nan")}, "drawn_ms"),
    ({"type": "ping", "client_ms": float("-inf")}, "client_ms"),
    ({"type": "set_speed", "speed": float("nan")}, "speed"),
]


@pytest.mark.parametrize(("message", "field"), OUT_OF_RANGE)
def test_numbers_out_of_range_are_invalid(message, field):
    with pytest.raises(BadMessage) as err:
        parse_client(json.dumps(message))  # Python writes NaN and Infinity as JSON does not
    assert err.value.code == "invalid" and field in err.value.message
    assert err.value.for_ == message["type"]


@pytest.mark.parametrize("number", ["1e400", "-1e400", "Infinity", "-Infinity", "NaN"])
def test_json_numbers_that_are_not_finite_are_refused(number):
    with pytest.raises(BadMessage) as err:
        parse_client(f'{{"type": "ping", "client_ms": {number}}}')
    assert err.value.code == "invalid" and "client_ms" in err.value.message


def test_parse_accepts_every_client_message():
    samples = [
        {"type": "input", "keys": ["KeyA", "MouseLeft"], "buttons": {"0": 1.0}, "axes": [0.5],
         "devices": {"mouse": [0.5, -1, 0], "spacemouse": [0] * 6, "phone": [1],
         "touch": [0.5, -1, 0, 1, 0, 0]}, "client_ms": 1,
         "seen_step": 3},
        {"type": "ack", "episode": 1, "step": 2, "drawn_ms": 3.5},
        {"type": "start", "env_id": "x"}, {"type": "pause"}, {"type": "resume"},
        {"type": "cancel"}, {"type": "save", "keep": False}, {"type": "set_speed", "speed": 2},
        {"type": "set_quality", "quality": "low"}, {"type": "set_camera", "camera": "top"},
        {"type": "end_session"}, {"type": "ping", "client_ms": 4},
    ]  # fmt: skip
    assert [parse_client(json.dumps(m)).type for m in samples] == [m["type"] for m in samples]
    assert parse_client(json.dumps(samples[0])).raw()["buttons"] == {0: 1.0}
    with pytest.raises(BadMessage) as err:
        parse_client(json.dumps({"type": "ping", "pad": "x" * MAX_MESSAGE_BYTES}))
    assert err.value.code == "too_large"


def test_outbox_drops_the_oldest_frame_never_control_messages():
    box = Outbox(max_frames=2)
    assert box.frame(Frame(1, 1, b"a")) is None and box.frame(Frame(1, 2, b"b")) is None
    assert box.frame(Frame(1, 3, b"c")).step == 1  # the oldest waiting frame goes
    box.send({"type": "x"})
    import asyncio

    async def drain():
        return [await box.get() for _ in range(3)]

    first, *frames = asyncio.run(drain())
    assert json.loads(first)["type"] == "x" and [f.step for f in frames] == [2, 3]


def _playing(factory, designer, **env):
    study = factory.study(designer, spec(counter_env(**env)))
    ws_cm = factory.client(designer).websocket_connect(f"/ws/play?study={study.id}")
    ws = ws_cm.__enter__()
    player = Player(ws)
    player.until("hello")
    player.send(type="start", env_id="counter")
    episode = player.until("episode_started")["episode"]
    player.frame()
    return ws_cm, player, episode


def test_soft_errors_keep_the_socket_open(factory, designer, db):
    ws_cm, player, episode = _playing(factory, designer, episode_len=50)
    try:
        player.step(["KeyA"])
        for text, code in [("{oops", "bad_json"), ('{"type": "warp"}', "unknown_type"),
                           ('{"type": "pause", "x": 1}', "invalid"),
                           ('{"type": "input", "client_ms": 1, "devices": {"mouse": [NaN]}}',
                            "invalid")]:  # fmt: skip
            player.ws.send_text(text)
            assert player.until("error")["code"] == code
        player.ws.send_bytes(b"\x00\x01")
        assert player.until("error")["code"] == "binary"
        player.send(type="set_speed", speed=2.0)  # a sync env has no speed
        assert player.until("error")["code"] == "not_async"
        player.send(type="set_camera", camera="nowhere")
        assert player.until("error")["code"] == "unknown_camera"
        player.send(type="start", env_id="counter")
        assert player.until("error") == {
            "type": "error", "code": "wrong_state", "for": "start",
            "message": "cannot start an episode now (the session is playing)",
        }  # fmt: skip
        player.send(type="end_session")
        assert player.until("error")["code"] == "wrong_state"
        player.step(["KeyA"])  # still playing
    finally:
        ws_cm.__exit__(None, None, None)


def _closed_with_policy(player):
    codes = []
    with pytest.raises(ConnectionError) as err:
        for _ in range(5000):
            got = player.receive()
            if isinstance(got, dict) and got["type"] == "error":
                codes.append(got["code"])
    assert err.value.args[0] == 1008
    return codes


def test_oversized_message_closes_with_1008_and_keeps_the_steps(factory, designer, db, app):
    app.state.settings.reconnect_grace_s = 0.2
    ws_cm, player, episode = _playing(factory, designer, episode_len=50)
    try:
        player.step(["KeyA"])
        player.ws.send_text(json.dumps({"type": "ping", "pad": "x" * (70 * 1024)}))
        assert "too_large" in _closed_with_policy(player)
    finally:
        ws_cm.__exit__(None, None, None)
    row = wait_status(db, episode["id"], EpisodeStatus.abandoned)
    assert row.steps == 2
    with open_reader(row.storage_path) as reader:
        assert len(list(reader.steps)) == 2


def test_input_flood_is_limited_then_closed(factory, designer):
    ws_cm, player, _ = _playing(factory, designer, episode_len=100_000)
    try:
        for i in range(800):
            player.send(type="input", keys=["KeyA"], client_ms=float(i))
        codes = _closed_with_policy(player)
        assert "rate_limited" in codes and "flood" in codes
    finally:
        ws_cm.__exit__(None, None, None)


def test_every_rate_limited_input_is_answered_in_sync_mode(factory, designer, monkeypatch):
    """A sync client waits for each input's frame: a dropped input must get an error."""
    # a slow bucket, so that the flood is one whatever the speed of the machine
    monkeypatch.setattr("server.player.connection.INPUT_RATE", 2.0)
    monkeypatch.setattr("server.player.connection.INPUT_BURST", 5.0)
    ws_cm, player, _ = _playing(factory, designer, episode_len=100_000)
    count = 60  # well under the 240 dropped inputs that close the socket
    try:
        for i in range(count):
            player.send(type="input", keys=["KeyA"], client_ms=float(i + 1), seen_step=0)
        player.send(type="ping", client_ms=1.0)
        player.until("pong")  # control messages keep their order: every answer came before
        refused = [m for m in player.seen if m["type"] == "error"]
        player.send(type="cancel")
        saved = player.until("episode_saved")
    finally:
        ws_cm.__exit__(None, None, None)
    assert refused and all(m == {"type": "error", "code": "rate_limited", "for": "input",
                                 "message": refused[0]["message"]} for m in refused)  # fmt: skip
    applied = saved["steps"] - 1  # each applied input is one step after the first observation
    assert applied + len(refused) == count


def test_many_malformed_messages_close_the_socket(factory, designer):
    ws_cm, player, _ = _playing(factory, designer, episode_len=50)
    try:
        for _ in range(30):
            player.ws.send_text("nope")
        codes = _closed_with_policy(player)
        assert codes.count("bad_json") > 10 and "too_many_errors" in codes
    finally:
        ws_cm.__exit__(None, None, None)


@pytest.mark.parametrize("kind", ["[]", "{}", "true", "3", "null"])
def test_a_type_that_is_not_a_string_is_unknown(kind):
    with pytest.raises(BadMessage) as err:
        parse_client(f'{{"type": {kind}}}')
    assert err.value.code == "unknown_type"


def test_a_bug_in_handling_closes_with_1011_and_keeps_the_episode(
    factory, designer, db, app, monkeypatch
):
    app.state.settings.reconnect_grace_s = 0.2
    ws_cm, player, episode = _playing(factory, designer, episode_len=50)
    try:
        player.step(["KeyA"])

        def broken(text):
            raise RuntimeError("injected fault")  # stands for a bug in our own code

        monkeypatch.setattr("server.player.connection.p.parse_client", broken)
        player.send(type="ping", client_ms=1.0)
        with pytest.raises(ConnectionError) as err:
            player.until("never")
        assert err.value.args[0] == 1011
        assert player.seen[-1]["code"] == "server_error"
        assert "injected" not in player.seen[-1]["message"]  # no internals to the client
    finally:
        ws_cm.__exit__(None, None, None)
    row = wait_status(db, episode["id"], EpisodeStatus.abandoned)
    with open_reader(row.storage_path) as reader:
        assert row.steps == len(list(reader.steps)) == 2
