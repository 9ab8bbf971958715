"""Playing episodes over the protocol against real workers: start, step, end, save."""

from __future__ import annotations

import json

import pytest

from server.models import Episode, EpisodeStatus, PlaySession, StudyEnvironment
from server.player.protocol import PROTOCOL_VERSION
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, spec


def _connect(client, study_id, **query):
    params = "&".join(f"{k}={v}" for k, v in {"study": study_id, **query}.items())
    return client.websocket_connect(f"/ws/play?{params}")


def test_sync_episode_to_the_end_and_saved(factory, designer, db, settings):
    study = factory.study(designer, spec(counter_env(episode_len=3)))
    client = factory.client(designer)
    with _connect(client, study.id) as ws:
        player = Player(ws)
        hello = player.until("hello")
        assert hello["protocol"] == PROTOCOL_VERSION and hello["resumed"] is False
        assert hello["study"]["name"] == "Player test"
        assert "<script>" not in hello["study"]["instructions_html"]
        env_view = hello["study"]["environments"][0]
        assert env_view["instructions_html"] == "<p>Press <strong>A</strong>.</p>\n"
        player.send(type="start", env_id="counter")
        env = player.until("env_ready")
        assert env["mode"] == "sync"
        assert {"input": "KeyA", "label": "one"} in env["controls"]["legend"]
        # on-screen buttons (studies that allow touch): one per key binding, its keys
        assert {"keys": ["KeyA"], "input": "KeyA", "label": "one"} in env["controls"]["touch"]
        started = player.until("episode_started")
        first = player.frame()
        assert first[:2] == (1, 0) and first[4][:2] == b"\xff\xd8"
        player.send(type="ack", episode=1, step=0, drawn_ms=990.0)
        frames = [player.step(["KeyA"], 1000.0 + i) for i in range(3)]
        assert [f[1] for f in frames] == [1, 2, 3] and frames[-1][3] == 3.0
        ended = player.until("episode_ended")
        assert ended["ask_save"] is True and ended["steps"] == 4 and ended["return"] == 3.0
        player.send(type="save", keep=True)
        saved = player.until("episode_saved")
        assert saved["status"] == "completed" and saved["completed"] == {"counter": 1}
        player.send(type="end_session")
        player.until("session_ended")

    row = db.get(Episode, started["episode"]["id"])
    db.refresh(row)
    assert row.status == EpisodeStatus.completed and row.steps == 4 and row.total_reward == 3.0
    assert row.end_reason == "terminated" and row.user_id == designer.id and row.is_test
    assert row.latency_p50_ms == 5.0 and row.frames_dropped == 0
    assert row.duration_s is not None and row.ended_at is not None
    # quality signals, from the log the worker finalized: KeyA pressed once, then held
    assert row.quality_at is not None and row.idle_share == 0.0
    assert row.inputs_per_s == pytest.approx(1 / row.duration_s)
    assert row.latency_p99_ms is not None and row.latency_p99_ms >= row.latency_p50_ms
    env_row = db.get(StudyEnvironment, row.study_env_id)
    db.refresh(env_row)
    assert env_row.median_steps == 4.0
    session_row = db.get(PlaySession, hello["session_id"])
    db.refresh(session_row)
    assert session_row.ended_at is not None
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    assert len(steps) == 4
    timing = [json.loads(s.custom_data["timing"]) for s in steps]
    assert timing[1]["input_sent"] == 1000.0 and timing[1]["seen_step"] == 0
    assert timing[1]["acks"][0][0] == 0 and timing[1]["acks"][0][2] == 990.0
    assert timing[2]["acks"][0][0] == 1 and timing[2]["acks"][0][1] is not None
    assert json.loads(steps[1].custom_data["input"])["keys"] == ["KeyA"]


def test_frame_sent_is_stamped_before_the_client_can_have_it(factory, designer, db, live_server):
    """frame_sent_ms is taken as the frame is handed to the socket: never later than the
    moment the client received it (stamped after the send, it once was, by up to 4 ms).
    Over a real socket to uvicorn; the client's clock is the server's here."""
    import time

    from websockets.sync.client import connect

    from server.player.protocol import SUBPROTOCOL, unpack_frame

    study = factory.study(designer, spec(counter_env(episode_len=10_000)))
    cookies = "; ".join(f"{k}={v}" for k, v in factory.client(designer).cookies.items())
    url = f"{live_server.replace('http', 'ws', 1)}/ws/play?study={study.id}"
    received: dict[int, float] = {}
    with connect(url, subprotocols=[SUBPROTOCOL], origin=live_server,
                 additional_headers={"Cookie": cookies}) as ws:  # fmt: skip

        def next_message(kind: str | None = None):
            while True:
                message = ws.recv(timeout=30)
                if isinstance(message, bytes):
                    if kind is None:
                        return unpack_frame(message), time.time() * 1000
                elif json.loads(message)["type"] == kind:
                    return json.loads(message)

        next_message("hello")
        ws.send(json.dumps({"type": "start", "env_id": "counter"}))
        episode = next_message("episode_started")["episode"]
        ws.send(json.dumps({"type": "go"}))
        step = 0
        for _ in range(300):
            ws.send(json.dumps({"type": "input", "keys": ["KeyA"], "seen_step": step,
                                "client_ms": time.time() * 1000}))  # fmt: skip
            (index, step, *_), at = next_message()
            received[step] = at
            ws.send(json.dumps({"type": "ack", "episode": index, "step": step, "drawn_ms": at}))
            time.sleep(0.01)  # within the server's 120 inputs per second
        ws.send(json.dumps({"type": "cancel"}))
        next_message("episode_saved")
    with open_reader(db.get(Episode, episode["id"]).storage_path) as reader:
        acks = [ack for s in reader.steps for ack in json.loads(s.custom_data["timing"]).get(
            "acks", [])]  # fmt: skip
    assert len(acks) >= 250
    late = [(step, sent - received[step]) for step, sent, _ in acks if sent > received[step]]
    assert late == []
