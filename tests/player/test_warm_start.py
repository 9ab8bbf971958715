"""A play session starts on a warm worker (server/runtime/warm_pool.py) through the real
server: the socket's opening puts its study's environment in demand, the start takes the
warm worker (the episode records as any other), and a new one is warmed in its place."""

from __future__ import annotations

import time

import pytest

from server.models import EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import Player, activate, counter_env, spec, ticket_socket, wait_status


@pytest.fixture
def settings(settings):  # type: ignore[no-untyped-def]
    return settings.model_copy(update={"warm_workers_per_env": 1, "warm_workers_max": 2})


def _until(check, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.02)


def test_a_session_starts_on_the_warm_worker_and_another_is_warmed(factory, designer, db, app):
    pool = app.state.player_registry.warm
    study = factory.study(designer, spec(counter_env()))
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        _until(lambda: pool.ready() == 1)  # warmed as the session opened, before any start
        assert app.state.budget._players() == 1  # the warm worker counts against the budget
        player.send(type="start", env_id="counter")
        episode_id = player.until("episode_started")["episode"]["id"]
        player.frame()
        assert pool.counts.handed_out == 1
        player.step(["KeyA"])
        player.step(["KeyA"])
        _until(lambda: pool.ready() == 1)  # its replacement
        assert app.state.budget._players() == 2  # the player's worker and the warm one
        player.send(type="cancel")
        assert player.until("episode_saved")["status"] == "canceled"
    row = wait_status(db, episode_id, EpisodeStatus.canceled)
    with open_reader(row.storage_path) as reader:
        assert len(list(reader.steps)) == 3
    assert pool.counts.started == 2 and pool.counts.dropped == 0


def test_a_participant_joining_has_the_worker_warmed_before_consent(factory, designer, db, app):
    """Warming starts at the join (the consent form and instructions come first), and the
    participant's first episode starts on that worker."""
    pool = app.state.player_registry.warm
    study = activate(
        db, factory.study(designer, spec(counter_env(), crowd={"consent": "Do you agree?"}))
    )
    anon = factory.client()
    joined = anon.post(
        "/api/play/join",
        json={"token": study.permalink_token, "params": {"PROLIFIC_PID": "p-warm"}},
    )
    assert joined.status_code == 200, joined.text
    _until(lambda: pool.ready() == 1)  # before any socket is open
    ticket = joined.json()["ticket"]
    consent = anon.post(
        "/api/play/consent", json={"accept": True}, headers={"X-Play-Ticket": ticket}
    )
    assert consent.status_code == 200, consent.text
    with ticket_socket(anon, ticket) as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        player.until("episode_started")
        player.frame()
        assert pool.counts.handed_out == 1 and pool.counts.started == 1
        player.send(type="cancel")
        player.until("episode_saved")
