"""The shipped deployment, natively: PostgreSQL, two app replicas started by docker/start.sh
on one shared data root, HAProxy with docker/haproxy.cfg. Players on both replicas through
the load balancer, a reload resumes on the right replica, exports submitted at once each run
once, and kill -9 of a replica: nothing recorded is lost and its players play on."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from server.core.db import make_engine, make_sessionmaker
from server.export.runner import export_dir
from server.models import Episode, EpisodeStatus, ExportJob, JobState
from server.player.phone import PHONE_SUBPROTOCOL
from server.player.protocol import SUBPROTOCOL
from server.recording.writer import open_reader
from tests.deploy.harness import COOKIE, SERVERS, Deployment, deployment, postgres_answers
from tests.player.conftest import Player, counter_env, spec
from tests.runtime.fake_envs import FACTORIES
from tests.test_server_crash import _log_steps

ADMIN = {"email": "admin@example.com", "password": "admin-password-123"}
# Replica heartbeats (docs/deploy.md, "Replicas, heartbeats and failover").
DEAD_AFTER_S = 3.0
HEARTBEAT_S = 1.0

pytestmark = [
    pytest.mark.skipif(
        bool(os.environ.get("STUDIO_TEST_DATABASE_URL")),
        reason="runs in the SQLite pass: the deployment always has a PostgreSQL of its own",
    ),
    pytest.mark.skipif(
        not postgres_answers(), reason="the deployment needs PostgreSQL at 127.0.0.1:5432"
    ),
]


class SyncSocket:
    """A real WebSocket (``websockets``) with the TestClient methods :class:`Player` uses."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    def send_text(self, data: str) -> None:
        self.ws.send(data)

    def receive(self) -> dict[str, Any]:
        try:
            message = self.ws.recv(timeout=30)
        except ConnectionClosed as exc:
            return {"type": "websocket.close", "code": exc.rcvd.code if exc.rcvd else None}
        if isinstance(message, bytes):
            return {"type": "websocket.receive", "bytes": message}
        return {"type": "websocket.receive", "text": message}


class Browser:
    """One browser: its own cookie jar, pinned by HAProxy's cookie to one replica."""

    def __init__(self, dep: Deployment) -> None:
        self.dep = dep
        self.http = httpx.Client(base_url=dep.url, timeout=30)
        self.http.get("/api/health").raise_for_status()  # HAProxy inserts its cookie

    @property
    def server(self) -> str:
        return str(self.http.cookies[COOKIE])

    def login(self) -> Browser:
        res = self.http.post("/api/auth/login", json=ADMIN)
        assert res.status_code == 200, res.text
        self.http.headers["X-CSRF-Token"] = res.json()["csrf_token"]
        return self

    def socket(self, ticket: str, query: str = "") -> ClientConnection:
        """The player's WebSocket through the load balancer, carrying this browser's cookies."""
        cookie = "; ".join(f"{k}={v}" for k, v in self.http.cookies.items())
        return connect(
            f"ws://127.0.0.1:{self.dep.port}/ws/play" + (f"?{query}" if query else ""),
            subprotocols=[SUBPROTOCOL, f"ticket.{ticket}"],  # type: ignore[list-item]
            additional_headers={"Cookie": cookie},
            origin=self.dep.url,  # type: ignore[arg-type]
        )


def browsers_on_each_replica(dep: Deployment, login: bool = False) -> dict[str, Browser]:
    """One browser pinned to each replica (HAProxy assigns them round robin)."""
    found: dict[str, Browser] = {}
    for _ in range(10):
        b = Browser(dep)
        found.setdefault(b.server, b.login() if login else b)
        if len(found) == len(SERVERS):
            return found
    raise AssertionError(f"HAProxy pinned browsers only to {sorted(found)}")


@pytest.fixture(scope="module")
def dep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    env = {
        "STUDIO_DM_ENV_FACTORIES": ",".join(FACTORIES),
        "STUDIO_JOB_HEARTBEAT_S": "1",
        "STUDIO_JOB_STALE_S": "8",
        "STUDIO_HEARTBEAT_INTERVAL_S": str(HEARTBEAT_S),
        "STUDIO_REPLICA_DEAD_AFTER_S": str(DEAD_AFTER_S),
    }
    with deployment(tmp_path_factory.mktemp("deploy"), replicas=2, env=env) as running:
        yield running


@pytest.fixture(scope="module")
def study(dep: Deployment) -> dict[str, Any]:
    admin = Browser(dep).login()
    body = spec(counter_env("short", episode_len=3, episodes_per_participant=100),
                counter_env("long", episode_len=100_000))  # fmt: skip
    created = admin.http.post("/api/studies", json={"spec": body})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    active = admin.http.post(
        f"/api/studies/{sid}/state", json={"state": "active", "acknowledge_warnings": True}
    )
    assert active.status_code == 200, active.text
    return {"id": sid, "token": active.json()["permalink_token"]}


def join(browser: Browser, token: str, who: str) -> str:
    res = browser.http.post("/api/play/join", json={"token": token, "participant_id": who})
    assert res.status_code == 200, res.text
    return str(res.json()["ticket"])


def play_to_end(player: Player, steps: int) -> None:
    """The episode's last ``steps`` steps, then its end."""
    mark = len(player.seen)
    for _ in range(steps):
        player.step(["KeyB"])
    if not any(m["type"] == "episode_ended" for m in player.seen[mark:]):
        player.until("episode_ended")


def db_session(dep: Deployment) -> Any:
    return make_sessionmaker(make_engine(dep.database_url))()


def test_players_on_both_replicas_reload_resumes_and_exports_run_once(dep, study) -> None:  # type: ignore[no-untyped-def]
    browsers = browsers_on_each_replica(dep)
    for server, browser in browsers.items():
        # every request of this browser reaches its replica
        replicas = {browser.http.get("/api/health").json()["replica"] for _ in range(6)}
        assert replicas == {dep.replica(server).replica_id}

    sessions: dict[str, tuple[str, str, str]] = {}
    for server, browser in browsers.items():
        ticket = join(browser, study["token"], f"player-{server}")
        with browser.socket(ticket) as ws:
            player = Player(SyncSocket(ws))
            session_id = player.until("hello")["session_id"]
            player.send(type="start", env_id="short")
            episode = player.until("episode_started")["episode"]["id"]
            player.step(["KeyA"])
        sessions[server] = (ticket, session_id, episode)

    # The sockets dropped (a reload): each reconnects, through the load balancer, to the
    # replica holding its session and resumes the same episode where it was.
    for server, browser in browsers.items():
        ticket, session_id, episode = sessions[server]
        with browser.socket(ticket, f"session={session_id}") as ws:
            player = Player(SyncSocket(ws))
            hello = player.until("hello")
            assert hello["resumed"] is True and hello["episode"]["id"] == episode
            player.send(type="resume")
            player.until("resumed")
            play_to_end(player, 2)
            player.send(type="save", keep=True)
            assert player.until("episode_saved")["status"] == "completed"

    # A reload that lands on the other replica (a lost cookie) continues there: one live
    # session per participant across replicas (services/crowd/leases.py), said to the page.
    server = SERVERS[0]
    ticket, session_id, _ = sessions[server]
    other = browsers[SERVERS[1]]
    with other.socket(ticket, f"session={session_id}") as ws:  # the wrong replica's cookie
        hello = Player(SyncSocket(ws), auto_go=False).until("hello")
        assert hello["resumed"] is False and hello["session_not_found"] is True, hello

    # Both replicas' episodes are on the shared data root and complete in the database.
    with db_session(dep) as db:
        rows = {sessions[s][2]: db.get(Episode, sessions[s][2]) for s in SERVERS}
        assert all(r is not None and r.status == EpisodeStatus.completed for r in rows.values())
        assert all(Path(r.storage_path).is_dir() for r in rows.values() if r is not None)

    # The same export submitted at once through both replicas: two jobs, each run once.
    admins = browsers_on_each_replica(dep, login=True)
    answers: dict[str, httpx.Response] = {}
    go = threading.Barrier(len(admins))

    def submit(server: str) -> None:
        go.wait()
        answers[server] = admins[server].http.post(
            f"/api/studies/{study['id']}/exports",
            json={"selection": {"environments": ["short"]}, "options": {"archive": "zip"}},
        )

    threads = [threading.Thread(target=submit, args=(s,)) for s in admins]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(a.status_code == 202 for a in answers.values()), {
        s: (a.status_code, a.text) for s, a in answers.items()
    }
    ids = [a.json()["id"] for a in answers.values()]
    deadline = time.monotonic() + 180
    with db_session(dep) as db:
        while time.monotonic() < deadline:
            db.expire_all()
            jobs = db.scalars(select(ExportJob).where(ExportJob.id.in_(ids))).all()
            if all(j.state not in (JobState.queued, JobState.running) for j in jobs):
                break
            time.sleep(0.2)
    assert [(j.state, j.attempts, j.message) for j in jobs] == [("succeeded", 1, None)] * 2
    assert all(j.claimed_by in {r.replica_id for r in dep.replicas} for j in jobs)
    for j in jobs:
        assert [p.name for p in export_dir(dep.data_root, j.id).iterdir()] == [
            f"{j.options['name']}.zip"
        ]
        # either replica serves the download (shared storage)
        for admin in admins.values():
            got = admin.http.get(f"/api/exports/{j.id}/download")
            assert got.status_code == 200 and got.content[:2] == b"PK"


def test_a_phone_reaches_the_players_replica_through_the_load_balancer(dep) -> None:  # type: ignore[no-untyped-def]
    """The phone is another browser, pinned by its own cookie to the other replica: its code
    is redeemed there (the codes are in the database), and its socket, opened with the
    pairing's ``?replica=``, goes to the player's replica all the same (haproxy.cfg's
    use-server comes before the cookie) and moves the session. Without ``?replica=`` the
    cookie's replica answers ``wrong_server``."""
    admin = Browser(dep).login()
    env = counter_env("phone", episode_len=3, episodes_per_participant=100)
    env["controls"]["keys"]["PhoneGrip"] = 2  # the study binds the phone
    created = admin.http.post("/api/studies", json={"spec": spec(env)})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    active = admin.http.post(
        f"/api/studies/{sid}/state", json={"state": "active", "acknowledge_warnings": True}
    )
    assert active.status_code == 200, active.text
    browsers = browsers_on_each_replica(dep)
    phones = browsers_on_each_replica(dep)  # a phone pinned to each replica too
    axes = [0.25, -0.5, 0.75]
    for server, other in zip(SERVERS, reversed(SERVERS), strict=True):
        browser, phone = browsers[server], phones[other]
        ticket = join(browser, active.json()["permalink_token"], f"phone-player-{server}")
        with browser.socket(ticket) as ws:
            player = Player(SyncSocket(ws))
            player.until("hello")
            player.send(type="phone_pair", origin=dep.url)
            pairing = player.until("phone_pairing")
            assert pairing["url"].endswith(f"&replica={server}")
            paired = phone.http.post("/api/phone/pair", json={"code": pairing["code"]})
            assert paired.status_code == 200, paired.text  # answered by the other replica
            assert paired.json()["replica"] == server
            for query in ("", f"?replica={server}"):
                cookie = f"{COOKIE}={other}"
                with connect(
                    f"ws://127.0.0.1:{dep.port}/ws/phone{query}",
                    subprotocols=[PHONE_SUBPROTOCOL, f"ticket.{paired.json()['ticket']}"],  # type: ignore[list-item]
                    additional_headers={"Cookie": cookie},
                ) as phone_ws:
                    first = json.loads(phone_ws.recv(timeout=30))
                    if not query:  # the cookie's replica: not the session's
                        assert first["code"] == "wrong_server", first
                        assert f"/ws/phone?replica={server}" in first["message"]
                        continue
                    assert first["type"] == "phone_hello", first
                    phone_ws.send(json.dumps({"type": "phone_input", "axes": axes,
                                              "keys": ["PhoneGrip"]}))  # fmt: skip
                    phone_ws.send(json.dumps({"type": "ping"}))
                    assert json.loads(phone_ws.recv(timeout=30))["type"] == "pong"
                    player.send(type="start", env_id="phone")
                    episode = player.until("episode_started")["episode"]["id"]
                    mark = len(player.seen)
                    for _ in range(3):
                        player.step([])  # the page holds nothing; the phone's button acts
                    if not any(m["type"] == "episode_ended" for m in player.seen[mark:]):
                        player.until("episode_ended")
            player.send(type="save", keep=True)
            assert player.until("episode_saved")["status"] == "completed"
        with db_session(dep) as db:
            row = db.get(Episode, episode)
            assert row is not None and row.replica_id == server
            with open_reader(row.storage_path) as reader:
                steps = list(reader.steps)[1:]
        assert [s.action for s in steps] == [2, 2, 2]
        assert all(json.loads(s.custom_data["input"])["devices"]["phone"] == axes for s in steps)


def test_a_killed_replica_loses_nothing_its_players_play_on_its_episode_is_abandoned(dep, study):  # type: ignore[no-untyped-def]
    browsers = browsers_on_each_replica(dep)
    victim = dep.replica("app2")
    browser = browsers["app2"]
    ticket = join(browser, study["token"], "player-killed")
    with browser.socket(ticket) as ws:
        player = Player(SyncSocket(ws))
        session_id = player.until("hello")["session_id"]
        player.send(type="start", env_id="long")
        episode = player.until("episode_started")["episode"]["id"]
        accepted = max(player.step(["KeyA"])[1] for _ in range(20))
        victim.kill()
        with pytest.raises(ConnectionError):
            player.until("never")
    killed_at = time.monotonic()

    with db_session(dep) as db:
        row = db.get(Episode, episode)
        assert row is not None
        # the orphaned worker finalizes the log on the shared data root
        assert _log_steps(row.storage_path, accepted + 1) >= accepted + 1

    # The reload: the cookie names the dead replica; HAProxy sends it to the live one, which
    # pins the browser to itself, and the player starts a new episode there.
    with browser.socket(ticket, f"session={session_id}") as ws:
        cookie = ws.response.headers.get("set-cookie", "")
        assert f"{COOKIE}=app1" in cookie
        player = Player(SyncSocket(ws))
        assert player.until("hello")["resumed"] is False
        player.send(type="start", env_id="short")
        started = player.until("episode_started")["episode"]["id"]
        assert started != episode
        play_to_end(player, 3)
        player.send(type="save", keep=True)
        assert player.until("episode_saved")["status"] == "completed"
    assert {browser.http.get("/api/health").json()["replica"] for _ in range(4)} == {
        dep.replica("app1").replica_id
    }
    _abandoned_within_the_bound(dep, episode, killed_at)


def _abandoned_within_the_bound(dep: Deployment, episode: str, killed_at: float) -> None:
    """The killed replica's episode is abandoned by the live one within the documented bound,
    with as many steps as its log."""
    bound = DEAD_AFTER_S + 2 * HEARTBEAT_S + 2.0  # docs/deploy.md
    with db_session(dep) as db:
        while True:
            db.expire_all()
            row = db.get(Episode, episode)
            if row.status == EpisodeStatus.abandoned or time.monotonic() - killed_at > bound:
                break
            time.sleep(0.2)
        assert row.status == EpisodeStatus.abandoned, json.dumps(row.status)
        assert row.steps == _log_steps(row.storage_path, row.steps)
