"""Two real app processes (``rlds-studio serve``) on one database: SQLite here, PostgreSQL
when ``STUDIO_TEST_DATABASE_URL`` is set.

A second replica starting leaves the first one's live episode alone (it used to abandon it);
both see each other's sessions on the live dashboard; kill -9 of one makes the other
abandon its episode, with steps and return from the log, within the heartbeat bound.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import select
from websockets.sync.client import ClientConnection, connect

from server.models import Episode, EpisodeStatus, LiveSessionRow, Replica
from server.player.protocol import unpack_frame
from server.services.live.replicas import REPLICA_LOST
from tests.player.conftest import counter_env, spec
from tests.test_server_crash import PASSWORD, _free_port
from tests.test_server_crash import _serve as serve

DEAD_AFTER_S = 3.0  # the bound these replicas run with (heartbeat every 0.5 s)


def _serve(settings: Any, port: int, replica_id: str) -> subprocess.Popen[bytes]:
    # one data root: the replicas share its secret key file, as they share a volume
    return serve(settings, port, replica_id=replica_id, heartbeat_interval_s="0.5",
                 replica_dead_after_s=str(DEAD_AFTER_S))  # fmt: skip


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def _login(base: str, email: str) -> httpx.Client:
    http = httpx.Client(base_url=base, timeout=10)
    res = http.post("/api/auth/login", json={"email": email, "password": PASSWORD})
    assert res.status_code == 200, res.text
    http.headers["X-CSRF-Token"] = res.json()["csrf_token"]
    return http


class Play:
    """A designer's test play over a real socket to one replica."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.step = -1

    def until(self, kind: str) -> dict[str, Any]:
        while True:
            message = self.ws.recv(timeout=30)
            if isinstance(message, str) and json.loads(message)["type"] == kind:
                return dict(json.loads(message))

    def press(self, n: int) -> int:
        for i in range(n):
            self.ws.send(json.dumps({"type": "input", "keys": ["KeyA"], "client_ms": 1000.0 + i}))
            message = self.ws.recv(timeout=30)
            while not isinstance(message, bytes):
                message = self.ws.recv(timeout=30)
            self.step = max(self.step, unpack_frame(message)[1])
        return self.step


@contextmanager
def _playing(port: int, http: httpx.Client, study_id: int) -> Iterator[tuple[Play, str]]:
    cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
    base = f"http://127.0.0.1:{port}"
    url = f"ws://127.0.0.1:{port}/ws/play?study={study_id}"
    with connect(url, origin=base, additional_headers={"Cookie": cookie}) as ws:
        play = Play(ws)
        play.until("hello")
        ws.send(json.dumps({"type": "start", "env_id": "counter"}))
        episode_id = play.until("episode_started")["episode"]["id"]
        ws.send(json.dumps({"type": "go"}))
        play.until("started")
        yield play, episode_id


def _wait(db: Any, check: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        db.expire_all()
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen in {seconds} s")


def test_second_replica_spares_the_first_ones_episode_and_takes_over_when_it_dies(settings, db):
    port_a, port_b = _free_port(), _free_port()
    a = _serve(settings, port_a, "replica-a")
    b: subprocess.Popen[bytes] | None = None
    try:
        http_a = _login(f"http://127.0.0.1:{port_a}", settings.admin_email)
        study = http_a.post("/api/studies", json={"spec": spec(counter_env(episode_len=1000))})
        assert study.status_code == 201, study.text
        study_id = study.json()["id"]
        with _playing(port_a, http_a, study_id) as (play, episode_id):
            assert play.press(10) == 10
            b = _serve(settings, port_b, "replica-b")  # migrates and bootstraps on start
            row = db.get(Episode, episode_id)
            db.refresh(row)
            assert row.status == EpisodeStatus.recording and row.replica_id == "replica-a"
            assert play.press(5) == 15  # the first replica's player goes on

            # the session A hosts is on B's dashboard (read from the shared database)
            http_b = _login(f"http://127.0.0.1:{port_b}", settings.admin_email)

            def seen_on_b() -> dict[str, Any] | None:
                sessions = http_b.get(f"/api/studies/{study_id}/live").json()["sessions"]
                return next((s for s in sessions if s["episode_id"] == episode_id
                             and s["step"] == 15), None)  # fmt: skip

            seen = _wait(db, seen_on_b, 15, "B showing A's session at step 15")
            assert seen["replica_id"] == "replica-a" and seen["phase"] == "playing"
            assert {r.id for r in db.scalars(select(Replica))} == {"replica-a", "replica-b"}

            os.kill(a.pid, signal.SIGKILL)
            a.wait(timeout=10)
            killed_at = time.monotonic()

        def abandoned() -> Episode | None:
            found = db.get(Episode, episode_id)
            return found if found.status == EpisodeStatus.abandoned else None

        # B sees A's heartbeat go stale after DEAD_AFTER_S and takes its episode over
        row = _wait(db, abandoned, DEAD_AFTER_S + 20, "B abandoning A's episode")
        took_s = time.monotonic() - killed_at
        assert row.end_reason == REPLICA_LOST
        assert row.steps >= 16  # counted from the log: every step the player saw (0..15)
        assert row.total_reward == float(row.steps - 1)
        assert took_s >= DEAD_AFTER_S - 1.0  # not before A's heartbeat went stale

        # the dead replica's row goes in the commit after its episodes' (one each)
        def replicas() -> set[str] | None:
            ids = {r.id for r in db.scalars(select(Replica))}
            return ids if ids == {"replica-b"} else None

        assert _wait(db, replicas, 10, "B dropping A's row") == {"replica-b"}
        assert db.scalars(select(LiveSessionRow)).all() == []  # A's live rows went with it
        # B still serves: a new episode starts there
        with _playing(port_b, http_b, study_id) as (play_b, episode_b):
            assert play_b.press(3) == 3
            assert db.get(Episode, episode_b).replica_id == "replica-b"
    finally:
        _stop(a)
        if b is not None:
            _stop(b)
