"""One live session per participant: a second tab is refused (4002) unless it takes over,
which closes the first tab's socket (4000); a session whose lease a takeover on another
replica took ends the same way at this replica's next heartbeat tick."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select, update

from server.models import EpisodeStatus, SessionLease
from server.player.protocol import SUBPROTOCOL
from tests.player.conftest import Player, activate, counter_env, spec, wait_status


def _socket(client, ticket, *extra):
    return client.websocket_connect(
        "/ws/play", subprotocols=[SUBPROTOCOL, f"ticket.{ticket}", *extra]
    )


def _closed_with(player):
    with pytest.raises(ConnectionError) as closed:
        for _ in range(50):
            player.receive()
    return closed.value.args[0]


def test_second_tab_is_refused_and_can_take_over(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env(episode_len=3))))
    anon = factory.client()
    join = {"token": study.permalink_token, "participant_id": "W-1"}
    ticket = anon.post("/api/play/join", json=join).json()["ticket"]
    with _socket(anon, ticket) as first_ws:
        first = Player(first_ws)
        session_id = first.until("hello")["session_id"]
        first.send(type="start", env_id="counter")
        first.until("episode_started")
        with _socket(anon, ticket) as second_ws:
            second = Player(second_ws)
            error = second.until("error")
            assert error["code"] == "open_elsewhere"
            assert _closed_with(second) == 4002
        first.send(type="ping", client_ms=1)
        assert first.until("pong")  # the first tab still plays
        with _socket(anon, ticket, "takeover") as third_ws:
            third = Player(third_ws)
            hello = third.until("hello")
            assert hello["session_id"] == session_id and hello["resumed"] is True
            assert hello["episode"] is not None  # the running episode, taken over
            assert _closed_with(first) == 4000
            third.send(type="ping", client_ms=2)
            assert third.until("pong")
        # ... or with ?takeover=1
        with anon.websocket_connect(
            "/ws/play?takeover=1", subprotocols=[SUBPROTOCOL, f"ticket.{ticket}"]
        ) as fourth_ws:
            assert Player(fourth_ws).until("hello")["session_id"] == session_id


def test_a_tab_left_behind_is_resumed_without_asking(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    join = {"token": study.permalink_token, "participant_id": "W-2"}
    ticket = anon.post("/api/play/join", json=join).json()["ticket"]
    with _socket(anon, ticket) as ws:
        session_id = Player(ws).until("hello")["session_id"]
    live = factory.app.state.player_registry.get(session_id)
    deadline = time.monotonic() + 10
    while live.outbox is not None and time.monotonic() < deadline:  # the server saw it go
        time.sleep(0.01)
    # the socket is gone (grace period): a new tab without ?session= gets the same session
    with _socket(anon, ticket) as ws:
        hello = Player(ws).until("hello")
    assert hello["session_id"] == session_id and hello["resumed"] is True


def test_an_unknown_session_starts_a_fresh_one_and_says_so(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    join = {"token": study.permalink_token, "participant_id": "W-3"}
    ticket = anon.post("/api/play/join", json=join).json()["ticket"]
    registry = factory.app.state.player_registry
    with _socket(anon, ticket) as ws:
        leftover = Player(ws).until("hello")["session_id"]
    deadline = time.monotonic() + 10
    while registry.get(leftover).outbox is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    with anon.websocket_connect(
        "/ws/play?session=0123456789abcdef", subprotocols=[SUBPROTOCOL, f"ticket.{ticket}"]
    ) as ws:
        hello = Player(ws).until("hello")
    assert hello["resumed"] is False and hello["session_not_found"] is True
    assert hello["session_id"] != leftover
    assert registry.get(leftover) is None  # one session per participant: the leftover ended


def test_an_unknown_session_with_nothing_left_over_starts_fresh_and_says_so(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env())))
    anon = factory.client()
    join = {"token": study.permalink_token, "participant_id": "W-4"}
    ticket = anon.post("/api/play/join", json=join).json()["ticket"]
    with anon.websocket_connect(
        "/ws/play?session=fedcba9876543210", subprotocols=[SUBPROTOCOL, f"ticket.{ticket}"]
    ) as ws:
        hello = Player(ws).until("hello")
        assert hello["resumed"] is False and hello["session_not_found"] is True
        assert hello["session_id"] != "fedcba9876543210"
    # a designer test-playing is told the same
    with factory.client(designer).websocket_connect(
        f"/ws/play?study={study.id}&session=fedcba9876543210"
    ) as ws:
        hello = Player(ws).until("hello")
    assert hello["resumed"] is False and hello["session_not_found"] is True
    with factory.client(designer).websocket_connect(f"/ws/play?study={study.id}") as ws:
        assert Player(ws).until("hello")["session_not_found"] is False  # none asked for


def test_a_session_whose_lease_another_replica_took_ends_as_a_takeover(factory, designer, db):
    study = activate(db, factory.study(designer, spec(counter_env(episode_len=100))))
    anon = factory.client()
    join = {"token": study.permalink_token, "participant_id": "W-5"}
    ticket = anon.post("/api/play/join", json=join).json()["ticket"]
    registry = factory.app.state.player_registry
    with _socket(anon, ticket) as ws:
        player = Player(ws)
        episode = player.start()
        for _ in range(3):
            player.step(["KeyA"])
        session_id = player.seen[0]["session_id"]
        lease = db.scalars(select(SessionLease).where(SessionLease.session_id == session_id)).one()
        assert lease.replica_id == factory.app.state.settings.replica_id
        # what a takeover on another replica does to the lease (server/services/crowd/leases.py)
        db.execute(update(SessionLease).values(session_id="elsewhere", replica_id="other"))
        db.commit()
        assert _closed_with(player) == 4000  # at this replica's next heartbeat tick
    row = wait_status(db, episode["id"], EpisodeStatus.abandoned)
    assert row.end_reason == "taken_over" and row.steps == 4  # steps 0..3, none lost
    deadline = time.monotonic() + 15  # the session leaves the registry once it is closed
    while registry.get(session_id) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert registry.get(session_id) is None
    db.expire_all()
    assert db.get(SessionLease, lease.participant_id).session_id == "elsewhere"  # untouched
