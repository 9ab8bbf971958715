"""The ready gate: a new episode shows its first frame and nothing steps until ``go``."""

from __future__ import annotations

from server.models import EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import Player, row_of, spec, wait_status
from tests.player.test_async_and_real_envs import CARTPOLE

FAST = {**CARTPOLE, "fps": 120, "max_steps": 1000, "countdown_s": 3}


def _round_trips(player, n):
    """``n`` ping round trips (the socket, the session lock and the loop all turned over)."""
    for i in range(n):
        player.send(type="ping", client_ms=i + 1)
        player.until("pong")


def test_async_episode_waits_for_go(factory, designer, db):
    study = factory.study(designer, spec(FAST))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws, auto_go=False)
        player.until("hello")
        player.send(type="start", env_id="cartpole")
        started = player.until("episode_started")
        assert started["ready_gate"] is True and started["countdown_s"] == 3
        episode_id = started["episode"]["id"]
        first = player.frame()
        assert first[1] == 0  # the first observation is on screen
        player.send(type="input", keys=["ArrowRight"], client_ms=1.9e12, seen_step=0)
        error = player.until("error")
        assert (error["code"], error["for"]) == ("wrong_state", "input")
        player.send(type="pause")
        assert player.until("error")["code"] == "wrong_state"
        _round_trips(player, 30)  # many frame periods of a 120 fps clock pass meanwhile
        assert [f for f in player.frames if f[1] > 0] == []
        assert row_of(db, episode_id).started_at is not None
        gate_time = row_of(db, episode_id).started_at
        player.send(type="cancel")
        assert player.until("episode_saved")["status"] == "canceled"
    row = wait_status(db, episode_id, EpisodeStatus.canceled)
    with open_reader(row.storage_path) as reader:
        assert len(list(reader.steps)) == 1  # the first observation only: nothing stepped
    assert row.steps == 1 and row.started_at == gate_time


def test_go_starts_the_clock_and_the_episode_time(factory, designer, db):
    study = factory.study(designer, spec(FAST))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws, auto_go=False)
        player.until("hello")
        player.send(type="start", env_id="cartpole")
        episode_id = player.until("episode_started")["episode"]["id"]
        reset_at = row_of(db, episode_id).started_at
        _round_trips(player, 5)
        player.send(type="go")
        assert player.until("started")["episode_id"] == episode_id
        while not [f for f in player.frames if f[1] >= 3]:  # the clock runs now
            player.frame()
        player.send(type="go")
        assert player.until("error")["code"] == "wrong_state"  # only once
        player.send(type="cancel")
        player.until("episode_saved")
    row = wait_status(db, episode_id, EpisodeStatus.canceled)
    assert row.started_at > reset_at  # time before the start is not part of the episode
    assert row.steps >= 4
