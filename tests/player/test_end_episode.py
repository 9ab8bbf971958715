"""The participant ends an episode ("I'm done", ``end_episode``): it is asked to save as an
ending, truncated, ``ended_by`` participant, with every step the worker recorded; refused
clearly before the first step, twice, or where the environment does not allow it."""

from __future__ import annotations

import time

from server.models import EpisodeStatus
from server.services.crowd import episodes
from server.services.review import quality
from tests.player.conftest import FAKE, Player, counter_env, row_of, spec


def _open(client, study):
    return client.websocket_connect(f"/ws/play?study={study.id}")


def _ending(env_id: str = "counter", **kwargs) -> dict:
    """A counter environment whose participants may end an episode."""
    return {**counter_env(env_id, **kwargs), "allow_end": True}


def _succeeding(env_id: str, **kwargs) -> dict:
    """An environment reporting success (info is_success) from step 2 on, as robot tasks do."""
    env = _ending(env_id)
    env["source"] = {"kind": "dm_env", "factory": f"{FAKE}:succeeding", "kwargs": kwargs}
    return env


def _listed(client, study) -> dict[str, dict]:
    items = client.get(f"/api/studies/{study.id}/episodes?include_tests=true").json()["items"]
    return {e["id"]: e for e in items}


def test_the_participant_ends_an_episode_and_saves_it(factory, designer, db):
    study = factory.study(designer, spec(_ending(episode_len=50)))
    client = factory.client(designer)
    with _open(client, study) as ws:
        player = Player(ws)
        episode = player.start()
        assert player.seen[0]["study"]["environments"][0]["allow_end"] is True  # the hello
        for i in range(3):
            player.step(["KeyA"], 1000.0 + i)
        player.send(type="end_episode")
        ended = player.until("episode_ended")
        assert ended["ask_save"] is True
        assert (ended["end_reason"], ended["ended_by"]) == ("participant", "participant")
        assert ended["steps"] == 4  # three actions and the first observation
        player.send(type="input", keys=["KeyA"], client_ms=2000.0)  # crossed the end: dropped
        player.send(type="save", keep=True)
        saved = player.until("episode_saved")
        assert saved["status"] == "completed" and saved["steps"] == 4
    row = row_of(db, episode["id"])
    assert (row.status, row.end_reason, row.ended_by) == ("completed", "participant", "participant")
    assert row.steps == 4 and row.env_outcome is None  # the counter reports no success
    recorded = quality.read_log(row.storage_path)
    assert recorded is not None and len(recorded) == 4
    assert recorded.is_last[-1] and not recorded.is_terminal[-1]  # truncated, not terminal
    listed = _listed(client, study)[episode["id"]]
    assert (listed["ended_by"], listed["steps"], listed["actions"]) == ("participant", 4, 3)


def test_a_reload_after_ending_asks_the_save_question_again(factory, designer, db):
    study = factory.study(designer, spec(_ending(episode_len=50)))
    client = factory.client(designer)
    with _open(client, study) as ws:
        player = Player(ws)
        episode = player.start()
        session_id = player.seen[0]["session_id"]
        player.step(["KeyA"])
        player.send(type="end_episode")
        player.until("episode_ended")
    with client.websocket_connect(f"/ws/play?study={study.id}&session={session_id}") as ws:
        player = Player(ws)
        hello = player.until("hello")
        assert hello["phase"] == "ended" and hello["episode"]["ended_by"] == "participant"
        assert player.until("episode_ended")["ended_by"] == "participant"  # asked again
        player.send(type="save", keep=True)
        assert player.until("episode_saved")["status"] == "completed"
    assert row_of(db, episode["id"]).ended_by == "participant"


def test_ending_refused_before_the_first_step_and_where_not_allowed(factory, designer, db):
    study = factory.study(designer, spec(_ending(episode_len=50), counter_env("plain")))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws, auto_go=False)
        player.until("hello")
        player.send(type="end_episode")  # nothing runs
        assert player.until("error")["code"] == "wrong_state"
        player.send(type="start", env_id="counter")
        player.until("episode_started")
        player.frame()
        player.send(type="end_episode")  # at the ready gate
        error = player.until("error")
        assert (error["code"], error["for"]) == ("nothing_to_end", "end_episode")
        player.send(type="go")
        player.until("started")
        player.send(type="end_episode")  # playing, but no step yet
        assert player.until("error")["code"] == "nothing_to_end"
        # malformed: a field the message does not have, a wrong type
        player.send(type="end_episode", keep=True)
        assert player.until("error")["code"] == "invalid"
        ws.send_text('{"type": ["end_episode"]}')
        assert player.until("error")["code"] == "unknown_type"
        # none of it ended the episode: it plays on and its steps count
        assert player.step(["KeyA"])[1] == 1
        player.send(type="cancel")
        assert player.until("episode_saved")["status"] == "canceled"

        player.send(type="start", env_id="plain")  # its environment does not allow it
        player.until("episode_started")
        player.frame()
        player.send(type="go")
        player.until("started")
        player.step(["KeyA"])
        player.send(type="end_episode")
        assert player.until("error")["code"] == "not_allowed"
        player.send(type="cancel")
        assert player.until("episode_saved")["status"] == "canceled"


def test_ending_twice_at_once_ends_once(factory, designer, db):
    study = factory.study(designer, spec(_ending(episode_len=50)))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = player.start()
        player.step(["KeyA"])
        player.step(["KeyB"])
        player.send(type="end_episode")
        player.send(type="end_episode")  # a double click: sent before the first's answer
        player.until("episode_ended")
        error = player.until("error")
        assert error["code"] == "already_ended" and "save question" in error["message"]
        assert [m["type"] for m in player.seen].count("episode_ended") == 1
        player.send(type="save", keep=False)  # discarded: rejected, its steps kept
        assert player.until("episode_saved")["status"] == "rejected"
    row = row_of(db, episode["id"])
    assert (row.status, row.ended_by, row.steps) == (EpisodeStatus.rejected, "participant", 3)


def test_ending_while_paused_keeps_every_step_the_clock_took(factory, designer, db):
    env = _ending(episode_len=100000, mode="async", fps=30)
    study = factory.study(designer, spec(env, pause_timeout_s=30))
    with _open(factory.client(designer), study) as ws:
        player = Player(ws)
        episode = player.start()
        player.until("started")
        player.send(type="input", keys=["KeyA"], client_ms=1000.0)
        deadline = time.monotonic() + 20
        while (player.frames[-1][1] if player.frames else 0) < 5:  # the clock steps
            player.receive()
            assert time.monotonic() < deadline, "the clock did not step"
        player.send(type="pause")
        player.until("paused")
        player.send(type="end_episode")
        ended = player.until("episode_ended")
        assert ended["ended_by"] == "participant" and ended["steps"] >= 6
        player.send(type="save", keep=True)
        saved = player.until("episode_saved")
    row = row_of(db, episode["id"])
    assert row.ended_by == "participant" and row.status == "completed"
    # every step the worker recorded, frames sent or not, is in the row's count and the log
    assert episodes.log_totals(row.storage_path)[0] == row.steps == saved["steps"]
    assert row.steps >= max(f[1] for f in player.frames) + 1


def test_the_environments_success_is_recorded_with_any_ending(factory, designer, db):
    envs = (_succeeding("lifts", episode_len=50), _succeeding("short", episode_len=3))
    study = factory.study(designer, spec(*envs))
    client = factory.client(designer)
    ids = []
    with _open(client, study) as ws:
        player = Player(ws)
        player.until("hello")
        for env_id, steps, end in (("lifts", 1, True), ("lifts", 3, True), ("short", 3, False)):
            player.send(type="start", env_id=env_id)
            ids.append(player.until("episode_started")["episode"]["id"])
            player.frame()
            for i in range(steps):
                player.step(["KeyA"], 1000.0 + i)
            if end:
                player.send(type="end_episode")
            ended = player.until("episode_ended")
            assert ended["ended_by"] == ("participant" if end else "environment")
            player.send(type="save", keep=True)
            player.until("episode_saved")
    rows = [row_of(db, i) for i in ids]
    assert [(r.ended_by, r.env_outcome) for r in rows] == [
        ("participant", "failure"),
        ("participant", "success"),
        ("environment", "success"),
    ]
    listed = _listed(client, study)
    assert [listed[i]["env_outcome"] for i in ids] == ["failure", "success", "success"]
