"""The live dashboard's API and socket: who may see it, what it pushes, one read per tick
shared by a study's viewers, and the worker caps counted over every live replica."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from starlette.websockets import WebSocketDisconnect

from server.models import LiveSessionRow, Replica, Role, utcnow
from tests.player.conftest import Player, counter_env, spec


@pytest.fixture
def designer(factory):  # type: ignore[no-untyped-def]
    return factory.user()


@pytest.fixture(autouse=True)
def fast_ticks(settings):  # type: ignore[no-untyped-def]
    settings.heartbeat_interval_s = 0.2


def _live_messages(ws, n: int) -> list[dict]:  # type: ignore[no-untyped-def]
    return [json.loads(ws.receive_text()) for _ in range(n)]


def test_only_designers_managing_the_study_see_it(factory, designer):
    study = factory.study(designer, spec(counter_env(), name="Live one"))
    res = factory.client(designer).get(f"/api/studies/{study.id}/live")
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["study"]["name"] == "Live one" and body["sessions"] == []
    assert body["quotas"] == [{"env_key": "counter", "name": "Counter", "total": None,
                               "completed": 0, "recording": 0, "tasks": []}]  # fmt: skip
    assert body["participants"] == {"joined": 0, "started": 0, "completed": 0, "screened_out": 0}
    assert body["episodes_today"]["recording"] == 0 and body["replicas"] == 1
    admin = factory.client(factory.user(role=Role.admin))
    assert admin.get(f"/api/studies/{study.id}/live").status_code == 200
    other = factory.client(factory.user())
    assert other.get(f"/api/studies/{study.id}/live").status_code == 404
    assert factory.client().get(f"/api/studies/{study.id}/live").status_code == 401
    assert factory.client(designer).get("/api/studies/0/live").status_code == 422


def _refused(client, url: str, **kwargs) -> tuple[str | None, int]:  # type: ignore[no-untyped-def]
    """The error a refused socket got (if any) and its close code."""
    message = None
    with pytest.raises(WebSocketDisconnect) as err:
        with client.websocket_connect(url, **kwargs) as ws:
            message = json.loads(ws.receive_text())["message"]
            ws.receive_text()
    return message, err.value.code


def test_the_socket_refuses_strangers_and_messages(factory, designer):
    study = factory.study(designer, spec(counter_env()))
    url = f"/ws/studies/{study.id}/live"
    other = factory.client(factory.user())
    assert _refused(other, url) == ("no such study, or not yours", 1008)
    assert _refused(factory.client(), url) == ("log in first", 1008)
    assert _refused(other, "/ws/studies/99999999999/live") == ("no such study, or not yours", 1008)
    owner = factory.client(designer)
    evil = {"origin": "http://evil.example"}
    assert _refused(owner, url, headers=evil)[1] == 1008
    with pytest.raises(WebSocketDisconnect) as err:
        with owner.websocket_connect(url) as ws:
            assert json.loads(ws.receive_text())["type"] == "live"
            ws.send_text("hello")
            for _ in range(50):
                message = json.loads(ws.receive_text())
                if message["type"] == "error":
                    assert message["message"] == "this socket takes no messages"
    assert err.value.code == 1008


def test_a_live_session_is_pushed_and_viewers_share_one_read(factory, designer, app):
    study = factory.study(designer, spec(counter_env(episode_len=100)))
    client = factory.client(designer)
    with client.websocket_connect(f"/ws/play?study={study.id}") as play_ws:
        player = Player(play_ws)
        episode = player.start()
        for _ in range(3):
            player.step(["KeyA"])
        url = f"/ws/studies/{study.id}/live"
        with client.websocket_connect(url) as one, client.websocket_connect(url) as two:
            for _ in range(100):  # ticks until the heartbeat wrote the session at step 3
                data = json.loads(one.receive_text())
                if data["sessions"] and data["sessions"][0]["step"] == 3:
                    break
            session = data["sessions"][0]
            assert session["episode_id"] == episode["id"] and session["phase"] == "playing"
            assert session["participant"].startswith("designer ")
            assert session["env_key"] == "counter"
            assert session["replica_id"] == app.state.settings.replica_id
            # a designer's test play: counted apart from participants' episodes
            assert data["episodes_today"]["recording"] == 0 and data["test_plays_today"] == 1
            channels = app.state.live_feed.channels
            assert list(channels) == [study.id] and len(channels[study.id].viewers) == 2
            # both viewers get the very same reads (one per tick), not one read each
            seen_one = {m["at"] for m in _live_messages(one, 4)}
            seen_two = {m["at"] for m in _live_messages(two, 4)}
            assert seen_one & seen_two
    assert app.state.live_feed.channels == {}  # the channel stops with its last viewer


def _other_replica_workers(db, study_id: int, n: int, *, age_s: float = 0.0) -> None:
    at = utcnow() - timedelta(seconds=age_s)
    rid = f"other-{study_id}-{age_s}"
    db.add(Replica(id=rid, host="elsewhere", pid=1, address="x:1", started_at=at, heartbeat_at=at))
    db.flush()
    for i in range(n):
        db.add(LiveSessionRow(session_id=f"{rid}-{i}"[:32], replica_id=rid, study_id=study_id,
                              phase="playing", has_worker=True, frames_dropped=0,
                              updated_at=at))  # fmt: skip
    db.commit()


def _start_error(client, study) -> str | None:  # type: ignore[no-untyped-def]
    with client.websocket_connect(f"/ws/play?study={study.id}") as ws:
        player = Player(ws)
        player.until("hello")
        player.send(type="start", env_id="counter")
        for _ in range(50):
            got = player.receive()
            if isinstance(got, dict) and got["type"] == "error":
                return str(got["code"])
            if isinstance(got, dict) and got["type"] == "episode_started":
                return None
    raise AssertionError("no answer to start")


def test_worker_caps_count_every_live_replica(factory, designer, db, settings):
    one = factory.study(designer, spec(counter_env()))
    two = factory.study(designer, spec(counter_env()))
    client = factory.client(designer)
    _other_replica_workers(db, two.id, 2)  # a live replica runs two workers of study two
    _other_replica_workers(db, one.id, 5, age_s=60)  # a dead one's rows do not count
    settings.max_workers_total = 2
    assert _start_error(client, one) == "busy"  # 2 elsewhere + 0 here: the total is reached
    settings.max_workers_total = 3
    assert _start_error(client, one) is None
    settings.max_workers_total = 0
    settings.max_workers_per_study = 2
    assert _start_error(client, one) is None  # study one: nothing elsewhere
    assert _start_error(client, two) == "busy"  # study two: 2 on the other replica
