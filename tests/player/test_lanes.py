"""Lanes: a page's extra sockets carry frames in turn with its play socket, and a copy of
each input, of which the first counts (docs/protocol.md, "Lanes")."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.websockets import WebSocketDisconnect

from server.models import Episode
from server.player.outbox import SLACK_MS, Frame, Outbox, next_turn
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
            lane1_steps = [f[1] for f in _frames(lane1, 4)]
            lane2_steps = [f[1] for f in _frames(lane2, 4)]
            lane_steps = lane1_steps + lane2_steps
            # each frame is acked over the socket it came on; lane 2's as skipped (overtaken)
            for lane, steps, skipped in ((lane1, lane1_steps, False), (lane2, lane2_steps, True)):
                for step in steps:
                    ack = {"type": "ack", "episode": episode["index"], "step": step,
                           "drawn_ms": 1e12 + 100, "skipped": skipped}  # fmt: skip
                    lane.send_text(json.dumps(ack))
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
    drawn = {int(ack[0]) for t in timings for ack in t.get("acks", [])}
    assert set(lane1_steps) <= drawn  # acks over a lane count as the play socket's do
    assert not drawn & set(lane2_steps)  # a skipped frame was not drawn: nothing recorded


def test_a_socket_whose_acks_stop_is_passed_over_until_they_come():
    # three sockets, frames ack-clocked (the adaptive stream): a best ack delay of 540 ms at
    # 10 frames/s holds (540 + SLACK_MS) / 100 = six frames for the page, two per socket
    async def scenario():
        boxes = [Outbox() for _ in range(3)]
        for box in boxes:
            box.clock(540.0, 100.0, sockets=3)
        assert SLACK_MS == 60 and {box.window.limit for box in boxes} == {2}
        sent: list[int] = []
        turn = 0
        for step in range(12):
            turn = next_turn(boxes, turn)
            boxes[turn].frame(Frame(1, step, b"x"))
            assert (await boxes[turn].get()).step == step  # its window had room: sent at once
            sent.append(turn)
            if turn != 1:  # socket 1's acks stop coming (a retransmission stall)
                boxes[turn].settle(1, step)
            turn += 1
        # in turn until socket 1 has two frames unacked, then the other two only
        assert sent == [0, 1, 2, 0, 1, 2, 0, 2, 0, 2, 0, 2]
        boxes[1].settle(1, 10)  # its frames come at last (skipped by the page: acked as such)
        assert [next_turn(boxes, t) for t in (0, 1, 2)] == [0, 1, 2]
        for box in boxes:  # when no socket has room, the frame waits on the one in turn
            while box.has_room():
                box.frame(Frame(1, 99, b"y"))
                await box.get()
        assert next_turn(boxes, 1) == 1

    asyncio.run(scenario())


@pytest.mark.parametrize("key", ["not-a-key", "%C3%A9t%C3%A9", ""])
def test_a_wrong_lane_key_is_refused(factory, designer, key):
    client = factory.client(designer)
    with pytest.raises(WebSocketDisconnect) as refused:
        with client.websocket_connect(f"/ws/play?lane={key}") as lane:
            lane.receive_bytes()
    assert refused.value.code == 1008
