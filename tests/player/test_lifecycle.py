"""Episode endings over the protocol: reject, cancel, pause, timeouts, reconnect, crashes."""

from __future__ import annotations

from server.models import EpisodeStatus
from server.recording.writer import open_reader
from tests.player.conftest import Player, counter_env, row_of, spec, wait_status


def _open(client, study):
    return client.websocket_connect(f"/ws/play?study={study.id}")


def _start(player, env_id="counter"):
    player.until("hello")
    player.send(type="start", env_id=env_id)
    episode = player.until("episode_started")["episode"]
    player.frame()
    return episode


def test_reject_after_the_end(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=2)))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = _start(player)
        player.step(["KeyB"])
        player.send(type="save", keep=True)  # wrong state: still playing
        assert player.until("error")["code"] == "wrong_state"
        player.step(["KeyB"])
        player.until("episode_ended")
        # a key pressed as the game ended crosses the end: ignored, not an error
        seen = len(player.seen)
        player.send(type="input", keys=["KeyA"], client_ms=2000.0)
        player.send(type="ping", client_ms=2001.0)
        assert player.until("pong")["client_ms"] == 2001.0
        assert [m["type"] for m in player.seen[seen:]] == ["pong"]
        player.send(type="cancel")  # wrong state: ended, waiting for save
        assert player.until("error")["code"] == "wrong_state"
        player.send(type="save", keep=False)
        assert player.until("episode_saved")["status"] == "rejected"
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.rejected and row.steps == 3 and row.total_reward == 4.0


def test_cancel_keeps_the_recorded_steps(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=50)))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = _start(player)
        for _ in range(4):
            player.step(["KeyA"])
        player.send(type="cancel")
        saved = player.until("episode_saved")
        assert saved["status"] == "canceled"
        player.send(type="start", env_id="counter")  # the next episode, same worker
        second = player.until("episode_started")["episode"]
        assert second["index"] == 2 and second["id"] != episode["id"]
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.canceled and row.steps == 5 and row.end_reason == "canceled"
    with open_reader(row.storage_path) as reader:
        assert len(list(reader.steps)) == 5


def test_pause_resume_and_pause_timeout(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=50), pause_timeout_s=0.5))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = _start(player)
        player.step(["KeyA"])
        player.send(type="pause")
        assert player.until("paused")["timeout_s"] == 0.5
        player.send(type="input", keys=["KeyA"], client_ms=1.0)
        assert player.until("error")["code"] == "wrong_state"
        player.send(type="resume")
        player.until("resumed")
        player.step(["KeyA"])
        player.send(type="pause")
        player.until("paused")
        saved = player.until("episode_saved")  # the pause outlived the study's timeout
        assert saved["status"] == "abandoned"
        assert player.until("error")["code"] == "pause_timeout"
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.abandoned and row.steps == 3
    assert row.end_reason == "pause_timeout"


def test_reload_resumes_the_same_episode_paused(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=6)))
    client = factory.client(designer)
    with _open(client, study) as ws:
        player = Player(ws)
        episode = _start(player)
        session_id = player.seen[0]["session_id"]
        player.step(["KeyA"])
        player.step(["KeyA"])
    with client.websocket_connect(f"/ws/play?study={study.id}&session={session_id}") as ws:
        player = Player(ws)
        hello = player.until("hello")
        assert hello["resumed"] is True and hello["phase"] == "paused"
        assert hello["episode"]["id"] == episode["id"] and hello["episode"]["step"] == 2
        assert player.frame()[1] == 2  # the last frame again
        player.send(type="resume")
        player.until("resumed")
        steps = [player.step(["KeyB"])[1] for _ in range(4)]
        assert steps == [3, 4, 5, 6]
        player.until("episode_ended")
        player.send(type="save", keep=True)
        player.until("episode_saved")
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.completed and row.steps == 7
    with open_reader(row.storage_path) as reader:
        assert len(list(reader.steps)) == 7


def test_dropped_connection_not_resumed_is_abandoned(factory, designer, db, app):
    app.state.settings.reconnect_grace_s = 0.3
    study = factory.study(designer, spec(counter_env(episode_len=50)))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = _start(player)
        player.step(["KeyA"])
    row = wait_status(db, episode["id"], EpisodeStatus.abandoned)
    assert row.steps == 2 and row.end_reason == "disconnected"


def test_env_crash_fails_the_episode_and_the_player_can_go_on(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=50, crash_at=2)))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = _start(player)
        player.step(["KeyA"])
        player.send(type="input", keys=["KeyA"], client_ms=5.0)
        failed = player.until("episode_failed")
        assert "boom at step 2" in failed["message"]
        player.send(type="start", env_id="counter")  # a fresh worker
        assert player.until("episode_started")["episode"]["index"] == 2
    row = row_of(db, episode["id"])
    assert row.status == EpisodeStatus.failed and "boom" in row.error and row.steps == 2


def test_worker_process_death_fails_the_episode(factory, designer, db):
    study = factory.study(designer, spec(counter_env(episode_len=50, exit_at=1)))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = _start(player)
        player.send(type="input", keys=["KeyA"], client_ms=5.0)
        assert "exited" in player.until("episode_failed")["message"]
    assert row_of(db, episode["id"]).status == EpisodeStatus.failed


def test_participant_quota_and_seeds_in_turn(factory, designer, db):
    from tests.player.conftest import activate, ticket_socket

    env = counter_env(episode_len=1, episodes_per_participant=1, seeds=[5, 6])
    study = activate(db, factory.study(designer, spec(env)))
    anon = factory.client()
    body = anon.post("/api/play/join", json={"token": study.permalink_token, "participant_id": "q"})
    with ticket_socket(anon, body.json()["ticket"]) as ws:
        player = Player(ws)
        episode = _start(player)
        assert episode["seed"] == 5
        player.step(["KeyA"])
        player.until("episode_ended")
        player.send(type="save", keep=True)
        assert player.until("episode_saved")["completed"] == {"counter": 1}
        player.send(type="start", env_id="counter")
        assert player.until("error")["code"] == "quota_reached"


def test_worker_limit_answers_busy(factory, designer, app):
    app.state.settings.max_workers = 1
    study = factory.study(designer, spec(counter_env(episode_len=50)))
    # Both sockets on one TestClient: each TestClient runs its own event loop, and a live
    # session must be closed on the loop that owns its worker (the server has one loop).
    client = factory.client(designer)
    with _open(client, study) as ws1, _open(client, study) as ws2:
        one, two = Player(ws1), Player(ws2)
        _start(one)
        two.until("hello")
        two.send(type="start", env_id="counter")
        error = two.until("error")
        assert error["code"] == "busy" and error["for"] == "start"
        one.send(type="cancel")
        one.until("episode_saved")
        one.send(type="end_session")  # frees the worker
        one.until("session_ended")
        two.send(type="start", env_id="counter")
        assert two.until("episode_started")["episode"]["index"] == 1
