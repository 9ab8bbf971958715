"""Pause and resume set one state: a repeated ``pause`` or ``resume`` (Esc pressed again before
the first one's answer) is answered with the current state, never an error."""

from __future__ import annotations

from server.models import EpisodeStatus
from tests.player.conftest import Player, counter_env, row_of, spec


def _open(client, study):
    return client.websocket_connect(f"/ws/play?study={study.id}")


def _types_until_pong(player, since, client_ms):
    """The types of the messages after ``since``, up to the answer of a ping."""
    player.send(type="ping", client_ms=client_ms)
    assert player.until("pong")["client_ms"] == client_ms
    return [m["type"] for m in player.seen[since:] if m["type"] != "stats"]


def test_pause_twice_and_resume_twice_answer_the_current_state(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=50), pause_timeout_s=30))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        episode = player.until("episode_started")["episode"]
        player.frame()
        player.step(["KeyA"])
        seen = len(player.seen)
        player.send(type="pause")
        player.send(type="pause")  # sent before the first's answer came
        first = player.until("paused")
        second = player.until("paused")
        assert first["timeout_s"] == 30
        assert 0 < second["timeout_s"] <= 30  # the countdown runs on: not restarted
        assert _types_until_pong(player, seen, 1.0) == ["paused", "paused", "pong"]
        player.send(type="input", keys=["KeyA"], client_ms=2.0)  # still paused
        assert player.until("error")["code"] == "wrong_state"

        seen = len(player.seen)
        player.send(type="resume")
        player.send(type="resume")
        player.until("resumed")
        player.until("resumed")
        assert _types_until_pong(player, seen, 3.0) == ["resumed", "resumed", "pong"]
        frame = player.step(["KeyA"])  # playing: the game steps on input
        assert frame[1] == 2 and frame[3] == 2.0
        player.send(type="cancel")
        assert player.until("episode_saved")["status"] == "canceled"
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.canceled and row.steps == 3


def test_a_pause_that_crosses_the_episodes_end_is_no_error(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=1)))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        player.until("episode_started")
        player.frame()
        player.step(["KeyA"])
        player.until("episode_ended")
        seen = len(player.seen)
        player.send(type="pause")  # Esc as the game ended: the two crossed
        player.send(type="resume")
        assert _types_until_pong(player, seen, 4.0) == ["pong"]
        player.send(type="save", keep=True)
        assert player.until("episode_saved")["status"] == "completed"
        player.send(type="pause")  # between episodes there is nothing to pause: an error
        error = player.until("error")
        assert (error["code"], error["for"]) == ("wrong_state", "pause")
