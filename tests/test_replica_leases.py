"""One live session per participant across two real app processes (``rlds-studio serve``) on
one database: SQLite here, PostgreSQL when ``STUDIO_TEST_DATABASE_URL`` is set.

A participant's second tab that lands on the other replica is refused with the takeover
offer, as a second tab on the same replica is; taking over there ends the first replica's
session at its next heartbeat tick (its tab is closed with 4000, its episode abandoned with
every step it recorded); two tabs opening at once on the two replicas give one session.
"""

from __future__ import annotations

import json
import subprocess
import threading
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from server.models import Episode, EpisodeStatus
from server.player.protocol import SUBPROTOCOL, TAKEOVER
from tests.player.conftest import counter_env, spec
from tests.test_replicas import Play, _login, _serve, _stop, _wait
from tests.test_server_crash import _free_port


def _tab(port: int, ticket: str, *extra: str, query: str = "") -> ClientConnection:
    url = f"ws://127.0.0.1:{port}/ws/play{query}"
    return connect(url, subprotocols=[SUBPROTOCOL, f"ticket.{ticket}", *extra], open_timeout=30)


def _first(ws: ClientConnection) -> dict[str, Any]:
    """The socket's first control message: ``hello``, or the ``error`` that refuses it."""
    while True:
        message = ws.recv(timeout=30)
        if isinstance(message, str):
            found = dict(json.loads(message))
            if found["type"] in ("hello", "error"):
                return found


def _closed_with(ws: ClientConnection) -> int:
    try:
        while True:
            ws.recv(timeout=30)
    except ConnectionClosed as closed:
        assert closed.rcvd is not None
        return closed.rcvd.code


def _study(base: str, admin: httpx.Client) -> str:
    """An active study's permalink token."""
    study = admin.post("/api/studies", json={"spec": spec(counter_env(episode_len=1000))})
    assert study.status_code == 201, study.text
    active = admin.post(
        f"/api/studies/{study.json()['id']}/state",
        json={"state": "active", "acknowledge_warnings": True},
    )
    assert active.status_code == 200, active.text
    return str(active.json()["permalink_token"])


def _ticket(base: str, token: str, who: str) -> str:
    joined = httpx.post(f"{base}/api/play/join", json={"token": token, "participant_id": who})
    assert joined.status_code == 200, joined.text
    return str(joined.json()["ticket"])


def _second_tab_is_refused_then_takes_over(db: Any, port_a: int, port_b: int, ticket: str):
    with _tab(port_a, ticket) as first_ws:
        first = Play(first_ws)
        assert _first(first_ws)["type"] == "hello"
        first_ws.send(json.dumps({"type": "start", "env_id": "counter"}))
        episode_id = first.until("episode_started")["episode"]["id"]
        first_ws.send(json.dumps({"type": "go"}))
        first.until("started")
        assert first.press(5) == 5

        with _tab(port_b, ticket) as second_ws:  # another tab, on the other replica
            refused = _first(second_ws)
            assert refused["code"] == "open_elsewhere"
            assert refused["message"] == "This study is open in another tab or window."
            assert _closed_with(second_ws) == 4002
        assert first.press(2) == 7  # the first tab plays on

        with _tab(port_b, ticket, TAKEOVER) as third_ws:  # "Continue here", on B
            hello = _first(third_ws)
            assert hello["type"] == "hello" and hello["resumed"] is False
            # A sees the lease gone at its next heartbeat tick: the first tab is told
            assert _closed_with(first_ws) == 4000
            row = _wait(db, lambda: _ended(db, episode_id), 30, "A ending its episode")
            assert row.status == EpisodeStatus.abandoned and row.end_reason == "taken_over"
            assert row.steps == 8  # every step accepted on A (0..7) is kept
            third = Play(third_ws)
            third_ws.send(json.dumps({"type": "start", "env_id": "counter"}))
            taken = third.until("episode_started")["episode"]["id"]
            third_ws.send(json.dumps({"type": "go"}))
            third.until("started")
            assert third.press(3) == 3  # B plays the participant's session now
            assert db.get(Episode, taken).replica_id == "replica-b"

            # a reload of B's session that reaches A continues there, told it is a new one
            query = f"?session={hello['session_id']}"
            with _tab(port_a, ticket, query=query) as reload_ws:
                again = _first(reload_ws)
                assert again["type"] == "hello" and again["session_not_found"] is True
                assert again["session_id"] != hello["session_id"]
                assert _closed_with(third_ws) == 4000


def _ended(db: Any, episode_id: str) -> Episode | None:
    row = db.get(Episode, episode_id)
    return row if row.status != EpisodeStatus.recording else None


def _open_at_once(port_a: int, port_b: int, ticket: str) -> list[dict[str, Any]]:
    """Two tabs of one participant opening at the same instant, one on each replica."""
    gate = threading.Barrier(2, timeout=60)
    found: list[dict[str, Any]] = []

    def tab(port: int) -> None:
        gate.wait()
        with _tab(port, ticket) as ws:
            found.append(_first(ws))
            gate.wait()  # both answered before either tab closes (no resume of a leftover)

    threads = [threading.Thread(target=tab, args=(port,)) for port in (port_a, port_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    return found


def test_one_live_session_per_participant_across_replicas(settings, db):
    port_a, port_b = _free_port(), _free_port()
    a = _serve(settings, port_a, "replica-a")
    b: subprocess.Popen[bytes] | None = None
    try:
        b = _serve(settings, port_b, "replica-b")
        base = f"http://127.0.0.1:{port_a}"
        token = _study(base, _login(base, settings.admin_email))
        ticket = _ticket(base, token, "W-1")
        _second_tab_is_refused_then_takes_over(db, port_a, port_b, ticket)

        for n in range(3):
            answers = _open_at_once(port_a, port_b, _ticket(base, token, f"W-race-{n}"))
            kinds = sorted(answer["type"] for answer in answers)
            assert kinds == ["error", "hello"], answers  # exactly one gets the session
            assert next(x for x in answers if x["type"] == "error")["code"] == "open_elsewhere"
    finally:
        _stop(a)
        if b is not None:
            _stop(b)
