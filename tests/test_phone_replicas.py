"""A phone paired with a session on one of two real app processes (``rlds-studio serve``) on
one database: SQLite here, PostgreSQL when ``STUDIO_TEST_DATABASE_URL`` is set.

The player's session runs on replica A; the phone, another browser, reaches replica B: its
code is redeemed there (the codes are in the database), and the answer names A. Its socket on
B is refused with a ``wrong_server`` error naming A; on A it moves the session (a step with the
phone's axes and button recorded). Two phones racing one code through A and B: one wins. An
expired code and the code of an ended session are refused on B; wrong codes sent to both
replicas count against one limit (docs/deploy.md, "Sticky sessions (HAProxy)").
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import update
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from server.models import Episode, EpisodeStatus, PhoneCode, utcnow
from server.player.phone import PHONE_SUBPROTOCOL
from server.recording.writer import open_reader
from server.services.crowd.phone_codes import CODE_ALPHABET
from tests.player.conftest import counter_env, spec
from tests.test_replicas import Play, _login, _serve, _stop
from tests.test_server_crash import _free_port

AXES = [0.5, -0.25, 0.0]


@contextmanager
def _player(port: int, http: httpx.Client, study_id: int) -> Iterator[Play]:
    """The designer's test play on the replica at ``port``, past its hello."""
    cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
    url = f"ws://127.0.0.1:{port}/ws/play?study={study_id}"
    with connect(url, origin=f"http://127.0.0.1:{port}",
                 additional_headers={"Cookie": cookie}) as ws:  # fmt: skip
        play = Play(ws)
        play.until("hello")
        yield play


def _code(play: Play) -> str:
    play.ws.send(json.dumps({"type": "phone_pair", "origin": "http://studio.example"}))
    return str(play.until("phone_pairing")["code"])


def _phone(port: int, ticket: str, replica: str) -> ClientConnection:
    """The phone's socket as its page opens it, straight to the replica at ``port``."""
    return connect(f"ws://127.0.0.1:{port}/ws/phone?replica={replica}",
                   subprotocols=[PHONE_SUBPROTOCOL, f"ticket.{ticket}"],  # type: ignore[list-item]
                   open_timeout=30)  # fmt: skip


def _messages_until_closed(ws: ClientConnection) -> tuple[list[dict[str, Any]], int]:
    got = []
    try:
        while True:
            got.append(json.loads(ws.recv(timeout=30)))
    except ConnectionClosed as closed:
        assert closed.rcvd is not None
        return got, closed.rcvd.code


def _pair(base: str, code: str) -> httpx.Response:
    """The phone's code, sent without any cookie (a browser of its own)."""
    return httpx.post(f"{base}/api/phone/pair", json={"code": code}, timeout=30)


def test_a_phone_pairs_and_plays_whichever_replica_it_reaches(settings, db):
    port_a, port_b = _free_port(), _free_port()
    base_a, base_b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
    a = _serve(settings, port_a, "replica-a")
    b = _serve(settings, port_b, "replica-b")
    try:
        http = _login(base_a, settings.admin_email)
        env = counter_env(episode_len=3)
        env["controls"]["keys"]["PhoneGrip"] = 2  # the study binds the phone
        created = http.post("/api/studies", json={"spec": spec(env)})
        assert created.status_code == 201, created.text
        study_id = created.json()["id"]
        with _player(port_a, http, study_id) as play:
            # the code shown on A is redeemed on B, which names A
            paired = _pair(base_b, _code(play))
            assert paired.status_code == 200, paired.text
            ticket, replica = paired.json()["ticket"], paired.json()["replica"]
            assert replica == "replica-a"

            # a socket on the wrong replica is told where the session is, and closed
            with _phone(port_b, ticket, replica) as wrong:
                got, code = _messages_until_closed(wrong)
            assert code == 1008 and got[0]["code"] == "wrong_server", got
            assert "/ws/phone?replica=replica-a" in got[0]["message"]

            # on A the phone moves the session
            play.ws.send(json.dumps({"type": "start", "env_id": "counter"}))
            episode_id = play.until("episode_started")["episode"]["id"]
            play.ws.send(json.dumps({"type": "go"}))
            play.until("started")
            with _phone(port_a, ticket, replica) as phone:
                assert json.loads(phone.recv(timeout=30))["type"] == "phone_hello"
                assert play.until("phone")["state"] == "connected"
                phone.send(json.dumps({"type": "phone_input", "axes": AXES,
                                       "keys": ["PhoneGrip"]}))  # fmt: skip
                phone.send(json.dumps({"type": "ping"}))  # answered once the input is in
                assert json.loads(phone.recv(timeout=30))["type"] == "pong"
                for n in range(3):  # the page holds nothing: the phone's button acts
                    play.ws.send(json.dumps({"type": "input", "keys": [], "client_ms": 1.0 + n}))
                play.until("episode_ended")
            play.ws.send(json.dumps({"type": "save", "keep": True}))
            assert play.until("episode_saved")["status"] == "completed"

            # two phones send one code at once, one through each replica: one wins
            racing = _code(play)
            gate = threading.Barrier(2)
            answers: list[int] = []

            def phone_sends(base: str) -> None:
                gate.wait()
                answers.append(_pair(base, racing).status_code)

            threads = [threading.Thread(target=phone_sends, args=(x,)) for x in (base_a, base_b)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert sorted(answers) == [200, 404]

            # an expired code is refused on the replica that did not issue it
            expired = _code(play)
            db.execute(update(PhoneCode).values(expires_at=utcnow() - timedelta(seconds=1)))
            db.commit()
            assert _pair(base_b, expired).status_code == 404
            spare = _code(play)  # unused when the session ends
            play.ws.send(json.dumps({"type": "end_session"}))
            play.until("session_ended")
        assert _pair(base_b, spare).status_code == 404
        assert db.query(PhoneCode).count() == 0  # the session's end dropped its codes

        # three wrong codes so far (the race's loser, the expired one, the ended session's);
        # seven more, to A and B in turn, reach the limit of ten on both replicas at once
        wrong = "".join(CODE_ALPHABET[0] for _ in range(6))
        for n in range(7):
            assert _pair([base_a, base_b][n % 2], wrong).status_code == 404
        for base in (base_a, base_b):
            limited = _pair(base, wrong)
            assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0

        row = db.get(Episode, episode_id)
        db.refresh(row)
        assert row.status == EpisodeStatus.completed
        with open_reader(row.storage_path) as reader:
            steps = list(reader.steps)
        inputs = [json.loads(s.custom_data["input"] or "null") or {} for s in steps[1:]]
        assert [s.action for s in steps[1:]] == [2, 2, 2]  # PhoneGrip's action, from the phone
        assert all(i["devices"]["phone"] == AXES and i["keys"] == ["PhoneGrip"] for i in inputs)
    finally:
        _stop(a)
        _stop(b)
