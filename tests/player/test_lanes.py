"""Lanes: a page's extra sockets carry frames in turn with its play socket, and a copy of
each input, of which the first counts (docs/protocol.md, "Lanes")."""

from __future__ import annotations

import json

import pytest
from starlette.websockets import WebSocketDisconnect

from server.models import Episode
from server.player.protocol import unpack_frame
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, spec


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    return settings.model_copy(update={"stream_lanes": 2})


def _frames(ws, count: int) -> list[tuple]:
    return [unpack_frame(ws.receive_bytes()) for _ in range(count)]


def test_frames_take_turns_over_the_lanes_and_inputs_count_once(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=100_000, mode="async", fps=30)))
    client = factory.client(designer)
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        hello = player.until("hello")
        assert hello["lanes"]["count"] == 2 and len(hello["lanes"]["key"]) >= 24
        key = hello["lanes"]["key"]
        with (
            client.websocket_connect(f"/ws/play?lane={key}") as lane1,
            client.websocket_connect(f"/ws/play?lane={key}") as lane2,
        ):
            with pytest.raises(WebSocketDisconnect) as third:  # two lanes, not three
                with client.websocket_connect(f"/ws/play?lane={key}") as extra:
                    extra.receive_bytes()
            assert third.value.code == 1008
            player.send(type="start", env_id="counter")
            episode = player.until("episode_started")["episode"]
            # the same input on the play socket and on a lane: one input, one key press
            message = {"type": "input", "keys": ["KeyA"], "client_ms": 1e12, "seq": 1}
            ws.send_text(json.dumps(message))
            lane1.send_text(json.dumps(message))
            main_steps = [f[1] for f in (player.frame() for _ in range(4))]
            lane_steps = [f[1] for f in _frames(lane1, 4)] + [f[1] for f in _frames(lane2, 4)]
            player.send(type="input", keys=[], client_ms=1e12 + 500, seq=2)
            lane1.send_text(json.dumps(message))  # an old copy arriving late changes nothing
            lane1.send_text(json.dumps({"type": "pause"}))  # only frames, inputs, acks, pings
            texts = (m.get("text") for m in iter(lane1.receive, None))
            error = json.loads(next(t for t in texts if t is not None))  # (frames go by)
            assert error["code"] == "lane"
            _frames(lane2, 3)
            player.send(type="cancel")
            player.until("episode_saved")
    # every third step's frame on each socket
    assert {s % 3 for s in main_steps} == {0}
    assert {s % 3 for s in lane_steps} == {1, 2}
    with open_reader(db.get(Episode, episode["id"]).storage_path) as reader:
        inputs = [json.loads(s.custom_data["input"] or "null") for s in reader.steps]
        timings = [json.loads(s.custom_data["timing"]) for s in reader.steps]
    pressed = [i for i, raw in enumerate(inputs) if raw and raw["keys"] == ["KeyA"]]
    released = [i for i, raw in enumerate(inputs) if raw and raw["keys"] == []]
    assert pressed and released and max(pressed) < min(released)  # the late copy was ignored
    assert sum("input_sent" in t for t in timings) == 2  # two inputs, each applied once


@pytest.mark.parametrize("key", ["not-a-key", "%C3%A9t%C3%A9", ""])
def test_a_wrong_lane_key_is_refused(factory, designer, key):
    client = factory.client(designer)
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect(f"/ws/play?lane={key}") as lane:
            lane.receive_bytes()
    assert refused.value.code == 1008
