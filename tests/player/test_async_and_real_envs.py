"""Real-time (async) play and real Gymnasium environments over the protocol."""

from __future__ import annotations

import json
import time

from server.models import EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, row_of, spec

CARTPOLE = {
    "id": "cartpole", "name": "CartPole", "mode": "async", "fps": 60, "max_steps": 40,
    "source": {"kind": "gymnasium", "id": "CartPole-v1"},
    "controls": {"keys": {"ArrowLeft": 0, "ArrowRight": 1}, "noop": 0,
                 "labels": {"ArrowLeft": "push left"}},
}  # fmt: skip
DOORKEY = {
    "id": "doorkey", "name": "DoorKey", "mode": "sync", "max_steps": 5, "seeds": [1],
    "source": {"kind": "gymnasium", "id": "MiniGrid-DoorKey-5x5-v0"},
    "controls": {"keys": {"ArrowLeft": 0, "ArrowRight": 1, "ArrowUp": 2}},
}  # fmt: skip


def _drain_until_ended(player):
    """Receive (acking every frame) until the episode ends."""
    for _ in range(5000):
        got = player.receive()
        if isinstance(got, tuple):
            player.send(type="ack", episode=got[0], step=got[1], drawn_ms=2e12)
        elif got["type"] == "episode_ended":
            return got
    raise AssertionError("the episode did not end")


def test_async_cartpole_plays_by_the_clock(factory, designer, db):
    study = factory.study(designer, spec({**CARTPOLE, "speed_choices": [1, 2]}))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        hello = player.until("hello")
        assert hello["study"]["environments"][0]["speed_choices"] == [1, 2]
        player.send(type="start", env_id="cartpole")
        env = player.until("env_ready")
        assert env["mode"] == "async" and env["fps"] == 60
        assert {"input": "ArrowLeft", "label": "push left"} in env["controls"]["legend"]
        assert env["controls"]["keys"] == ["ArrowLeft", "ArrowRight"]
        episode = player.until("episode_started")["episode"]
        player.send(type="input", keys=["ArrowRight"], client_ms=1.9e12, seen_step=0)
        player.send(type="set_speed", speed=0.5)  # not one of the designer's choices
        assert player.until("error")["code"] == "speed_locked"
        player.send(type="set_speed", speed=2.0)
        assert player.until("setting")["speed"] == 2.0
        player.send(type="set_quality", quality="low")
        assert player.until("setting")["quality"] == "low"
        ended = _drain_until_ended(player)
        assert ended["steps"] >= 2 and ended["end_reason"] in ("terminated", "max_steps")
        player.send(type="save", keep=True)
        assert player.until("episode_saved")["status"] == "completed"
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.completed and row.steps == ended["steps"]
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    assert len(steps) == row.steps  # every step recorded, whatever reached the screen
    inputs = [json.loads(s.custom_data["input"]) for s in steps[1:]]
    assert {"keys": ["ArrowRight"], "buttons": {}, "axes": [], "devices": {}} in inputs
    sent = [json.loads(s.custom_data["timing"]).get("input_sent") for s in steps]
    assert 1.9e12 in sent  # the fresh input's client time, on the step that applied it
    # the speed in force, step by step: 1 until the player chose 2
    speeds = [json.loads(s.custom_data["timing"]).get("speed") for s in steps]
    assert speeds[0] == 1.0 and speeds[-1] == 2.0 and set(speeds) == {1.0, 2.0}
    assert speeds == sorted(speeds)
    page = factory.client(designer).get(f"/api/episodes/{episode['id']}/steps").json()
    assert [item["speed"] for item in page["items"]] == speeds[: len(page["items"])]  # replay


def test_async_pause_resume_and_camera(factory, designer, db):
    env = counter_env(episode_len=100_000, mode="async", fps=30)
    study = factory.study(designer, spec(env))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        cameras = player.until("env_ready")["cameras"]
        assert cameras == ["front", "top"]
        episode = player.until("episode_started")["episode"]
        player.frame()
        player.frame()  # the clock steps without input
        player.send(type="set_camera", camera="top")
        assert player.until("setting")["camera"] == "top"
        player.send(type="pause")
        player.until("paused")
        player.send(type="resume")
        player.until("resumed")
        player.frame()
        player.send(type="cancel")
        saved = player.until("episode_saved")
    row = row_of(db, episode["id"])
    assert saved["status"] == "canceled" and row.status == EpisodeStatus.canceled
    assert row.steps >= 3


def test_minigrid_sync_episode_truncated_by_max_steps(factory, designer, db):
    study = factory.study(designer, spec(DOORKEY))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="doorkey")
        episode = player.until("episode_started")["episode"]
        assert episode["seed"] == 1
        player.frame()
        steps = [player.step(["ArrowLeft"])[1] for _ in range(5)]
        ended = player.until("episode_ended")
        assert steps == [1, 2, 3, 4, 5] and ended["end_reason"] == "max_steps"
        player.send(type="save", keep=True)
        player.until("episode_saved")
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.completed and row.steps == 6
    assert row.latency_p50_ms == 5.0


def test_async_reconnect_resumes_paused_and_records_every_step(factory, designer, db):
    env = counter_env(episode_len=100_000, mode="async", fps=30)
    study = factory.study(designer, spec(env))
    client = factory.client(designer)
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        session_id = player.until("hello")["session_id"]
        player.send(type="start", env_id="counter")
        episode = player.until("episode_started")["episode"]
        for _ in range(3):
            player.frame()
    with client.websocket_connect(f"/ws/play?study={study.id}&session={session_id}") as ws:
        player = Player(ws)
        hello = player.until("hello")
        assert hello["phase"] == "paused" and hello["episode"]["id"] == episode["id"]
        paused_at = player.frame()[1]
        player.send(type="resume")
        player.until("resumed")
        assert player.frame()[1] > paused_at
        player.send(type="cancel")
        saved = player.until("episode_saved")
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.canceled and row.steps == saved["steps"]
    with open_reader(row.storage_path) as reader:
        steps = list(reader.steps)
    assert len(steps) == row.steps
    offset = episode["seed"] % 7  # the counter env's observation is (t + offset) % 256
    observed = [int(s.timestep.observation[0, 0, 0]) for s in steps]
    assert observed == [(t + offset) % 256 for t in range(len(steps))]  # nothing skipped


def test_async_acks_are_recorded_without_a_made_up_input(factory, designer, db):
    """Acks reach the log on their own: no step gets an input the player did not send."""
    env = counter_env(episode_len=100_000, mode="async", fps=60)
    study = factory.study(designer, spec(env))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        episode = player.until("episode_started")["episode"]
        player.send(type="input", keys=["KeyA"], client_ms=1.9e12, seen_step=0)
        acked = []
        while len(acked) < 45:  # more than one batch of acks (30) for the worker
            index, step = player.frame()[:2]
            player.send(type="ack", episode=index, step=step, drawn_ms=2e12 + step)
            acked.append(step)
        for _ in range(3):  # steps after the batch, which record it
            player.frame()
        player.send(type="cancel")
        player.until("episode_saved")
    with open_reader(row_of(db, episode["id"]).storage_path) as reader:
        timings = [json.loads(s.custom_data["timing"]) for s in reader.steps]
    recorded = [a[0] for t in timings for a in t.get("acks", [])]
    assert len(recorded) >= 30 and recorded == acked[: len(recorded)]
    assert [t for t in timings if "input_recv" in t and "input_sent" not in t] == []
    assert sum("input_sent" in t for t in timings) == 1  # the one input the player sent


def test_the_speed_is_fixed_unless_the_designer_offers_choices(factory, designer):
    study = factory.study(designer, spec({**CARTPOLE, "speed": 0.5}))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        env = player.until("hello")["study"]["environments"][0]
        assert (env["speed"], env["speed_choices"]) == (0.5, [])
        player.send(type="start", env_id="cartpole")
        assert player.until("env_ready")["speed"] == 0.5  # the designer's speed is in force
        player.until("episode_started")
        player.send(type="set_speed", speed=1.0)
        refused = player.until("error")
        assert refused["code"] == "speed_locked" and "0.5 (fixed)" in refused["message"]


def test_a_cancel_behind_a_burst_of_inputs_to_a_clock_running_behind_is_answered_at_once(
    factory, designer, db
):
    """A clock whose step (60 ms) is longer than its period (20 ms) steps back to back; the
    worker still serves every command waiting before its next step, so 100 inputs sent at
    once are taken in a few steps and the cancel behind them is answered at once (the worker
    used to serve one command per step: the cancel waited 100 steps, a minute for a starved
    MuJoCo game, the session silent all along)."""
    env = counter_env(episode_len=100_000, step_sleep=0.06, mode="async", fps=50)
    study = factory.study(designer, spec(env))
    inputs = 100
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        episode = player.start()  # and go
        player.until("started")
        time.sleep(1.0)  # the clock runs behind now, stepping back to back
        for i in range(inputs):
            player.send(type="input", keys=[["KeyA"], ["KeyB"]][i % 2], client_ms=1e12 + i,
                        seen_step=0)  # fmt: skip
        player.send(type="cancel")
        saved = player.until("episode_saved", limit=20_000)
    assert saved["status"] == "canceled"
    row = row_of(db, episode["id"])
    # about 17 steps in the second before the burst; one more per input (117 steps, 8 s)
    # when the worker served a command per step
    assert row.steps < inputs // 2, row.steps
    with open_reader(row.storage_path) as reader:
        assert len(reader.steps) == row.steps
